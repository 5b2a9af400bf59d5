#!/usr/bin/env python3
"""The samples of a pprof file, with their labels and frames, for the
labels tests (labels_trust.sh, labels_waves.sh, otel_ctx.sh, ...).

go tool pprof -raw prints a sample's string labels as key:[value], which
cannot be read back when a value holds spaces, brackets or newlines (the
values hostile processes write): this reads the protobuf itself, with
nothing but the standard library.

As a module: samples(path) yields one dict per sample:
  {"values": [..], "str": {key: value}, "num": {key: int}, "frames": [..]}
(frames leaf first, every function of every location, inlined ones
included; a key with more than one value keeps the last; "multi" lists
the keys that had more than one; "lines": each frame's (function, file,
line, function's start line)), and sample_types(path) the (type, unit)
pairs.

As a command:
  pprof_samples.py keys FILE          the distinct label keys, one a line
  pprof_samples.py count FILE K=V     how many samples carry K=V
  pprof_samples.py jsonl FILE         one JSON object per sample
  pprof_samples.py sum FILE TYPE [pid=N] FUNC...
                                      for each FUNC the sum of sample type
                                      TYPE over the samples whose frames
                                      hold it, then the total (of pid N's
                                      samples only, with pid=N)
"""
import gzip
import json
import sys


def _varint(b, i):
    v = 0
    shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _fields(b):
    """(field number, wire type, value) of a message; value is an int for
    varints and fixed ints, bytes for length-delimited fields."""
    i = 0
    n = len(b)
    while i < n:
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 2:
            ln, i = _varint(b, i)
            v = b[i:i + ln]
            i += ln
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def _ints(wt, v):
    """A repeated integer field's values: packed or not."""
    if wt != 2:
        return [v]
    out = []
    i = 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def _read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


class Profile:
    def __init__(self, path):
        data = _read(path)
        self.strings = []
        raw_samples = []
        raw_types = []
        locations = {}
        functions = {}
        for f, wt, v in _fields(data):
            if f == 6:
                self.strings.append(v.decode("utf-8", "replace"))
            elif f == 2:
                raw_samples.append(v)
            elif f == 1:
                raw_types.append(v)
            elif f == 4:
                lid, funcs = 0, []
                for g, gwt, gv in _fields(v):
                    if g == 1:
                        lid = gv
                    elif g == 4:
                        fn, ln = 0, 0
                        for h, _, hv in _fields(gv):
                            if h == 1:
                                fn = hv
                            elif h == 2:
                                ln = _signed(hv)
                        funcs.append((fn, ln))
                locations[lid] = funcs
            elif f == 5:
                fid, name, fname, start = 0, 0, 0, 0
                for g, _, gv in _fields(v):
                    if g == 1:
                        fid = gv
                    elif g == 2:
                        name = gv
                    elif g == 4:
                        fname = gv
                    elif g == 5:
                        start = _signed(gv)
                functions[fid] = (name, fname, start)
        s = self.strings
        self.types = []
        for t in raw_types:
            typ = unit = 0
            for g, _, gv in _fields(t):
                if g == 1:
                    typ = gv
                elif g == 2:
                    unit = gv
            self.types.append((s[typ], s[unit]))
        self._raw = raw_samples
        self._loc = locations
        self._fn = functions

    def samples(self):
        s = self.strings
        for raw in self._raw:
            locs, values, sl, nl, multi = [], [], {}, {}, []
            for f, wt, v in _fields(raw):
                if f == 1:
                    locs += _ints(wt, v)
                elif f == 2:
                    values += [_signed(x) for x in _ints(wt, v)]
                elif f == 3:
                    key = sv = 0
                    num = None
                    for g, _, gv in _fields(v):
                        if g == 1:
                            key = gv
                        elif g == 2:
                            sv = gv
                        elif g == 3:
                            num = _signed(gv)
                    k = s[key]
                    if k in sl or k in nl:
                        multi.append(k)
                    # As pprof reads it: a label without a string is a
                    # number (0 when the field is left out).
                    if sv:
                        sl[k] = s[sv]
                    else:
                        nl[k] = num or 0
            frames, lines = [], []
            for lid in locs:
                for fid, ln in self._loc.get(lid, []):
                    name, fname, start = self._fn.get(fid, (0, 0, 0))
                    frames.append(s[name])
                    lines.append((s[name], s[fname], ln, start))
            yield {"values": values, "str": sl, "num": nl, "frames": frames, "multi": multi,
                   "lines": lines}


def samples(path):
    return Profile(path).samples()


def sample_types(path):
    return Profile(path).types


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    cmd, path = argv[1], argv[2]
    if cmd == "keys":
        keys = set()
        for x in samples(path):
            keys.update(x["str"])
            keys.update(x["num"])
        for k in sorted(keys):
            print(k)
    elif cmd == "count" and len(argv) == 4:
        k, _, v = argv[3].partition("=")
        print(sum(x["values"][0] for x in samples(path) if x["str"].get(k) == v))
    elif cmd == "jsonl":
        for x in samples(path):
            print(json.dumps(x))
    elif cmd == "sum" and len(argv) >= 4:
        i = [t for t, _ in sample_types(path)].index(argv[3])
        funcs = argv[4:]
        pid = None
        if funcs and funcs[0].startswith("pid="):
            pid = int(funcs.pop(0)[4:])
        by = [0] * len(funcs)
        total = 0
        for x in samples(path):
            if pid is not None and x["num"].get("pid") != pid:
                continue
            v = x["values"][i]
            total += v
            for j, f in enumerate(funcs):
                if f in x["frames"]:
                    by[j] += v
        print(" ".join(str(v) for v in by + [total]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
