#!/usr/bin/env python3
"""Cumulative shares of functions in one process's samples, from two
independent readers of two profilers, compared (for unwind_vs_perf.sh).

  cum_shares.py --perf SCRIPT --pprof RAW --pid PID [--require F,...]
                [--inline F,...] [--truth NAME=SHARE,...] [--tolerance PTS]
                [--min-share PCT] [--perf-min-wait MS] [--drop FRAME,...]
                [--user-only]

SCRIPT: `perf script --no-inline --no-demangle -F comm,pid,tid,ip,sym` of a
`perf record --call-graph dwarf` file. RAW: `go tool pprof -raw` of a
flightrec profile. The cumulative share of a function is the share of the
process's samples whose stack holds it at least once, the way
`pprof -top -cum` and `perf report --children` count it.

Off-CPU waits (offcpu_vs_perf.sh): SCRIPT is of `perf record -e
sched:sched_switch --switch-events`, printed with the time field (-F
comm,pid,tid,time,ip,sym) and --show-switch-events. With --perf-min-wait
only the switches out after which the thread came back at least MS later
count (those a recorder whose min_wait is MS gives a stack; a switch out
after which the thread never came back, its exit, counts for neither), and
--drop leaves out the flightrec samples whose stack holds one of the
FRAMEs (the recorder's marker of the shorter waits). Both print what they
left out. --user-only compares user functions alone: where each profiler
takes the kernel's stack of a switch differs (a BPF program and a
tracepoint skip different frames of the scheduler), not what is compared.

Both sides are compared on the functions of the symbol table, not on
inlined ones: perf resolves inline frames by running addr2line on every
address (minutes for a 999 Hz recording, and it runs in the test's time
budget), so its inline frames are off, and on the flightrec side only the
outermost Line of each Location (the function the code was compiled into)
counts. The inlined frames are checked apart (--inline): they must appear
as inner Lines in flightrec's profile.

Names are compared after dropping what only one reader keeps: symbol
versions (__libc_start_main@@GLIBC_2.34), the suffixes of the parts GCC
splits a function into (.cold, .part.N, .isra.N, .constprop.N), which are
one function to a reader of the source (and their demangled form, " [clone
.cold]"), and the prefixes that tell aliases of one address apart
(__GI___qsort_r, __qsort_r and qsort_r are one function; each reader picks
its own alias). C++ names are compared demangled (c++filt): flightrec's
profile names functions demangled, perf script is asked for symbols as
the symbol table spells them. Names are printed that way.

Compared: the --require functions (which must be on both sides), and every
function named on both sides whose share is at least --min-share (default
5%) on either. Exits 1 when a compared share differs by more than
--tolerance percentage points (default 2), a required function is missing,
or an --inline function never appears inlined; prints both tables.
--truth gives shares known by construction (the program measured them
itself) for a third column, printed, not compared.
"""
import argparse
import bisect
import re
import subprocess
import sys

SPLIT = re.compile(r"(\.(cold|part|isra|constprop|lto_priv)(\.\d+)*)+$")
UNNAMED = re.compile(r"^\[unknown\]|\+0x[0-9a-f]+$|^0x[0-9a-f]+$")
MARK = "[truncated: "
CLONE = re.compile(r"( \[clone \.[^\]]*\])+$")
DEMANGLED = {}


def demangle(name):
    """c++filt's spelling of a mangled C++ name (the name itself without
    c++filt); the demangler is libiberty's, as libstdc++'s is."""
    if name not in DEMANGLED:
        try:
            out = subprocess.run(["c++filt", name], capture_output=True, text=True,
                                 check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            out = name
        DEMANGLED[name] = out or name
    return DEMANGLED[name]


def norm(name):
    if not name.endswith("@plt"):
        name = name.split("@", 1)[0]
    name = SPLIT.sub("", name)
    # Aliases of one address: glibc's internal __GI_ names (from its debug
    # file's symbol table) and the underscored twins of public names
    # (__random and random, __qsort_r and qsort_r); C++ names keep theirs.
    if name.startswith("__GI_"):
        name = name[5:]
    if name.startswith("_Z"):
        return CLONE.sub("", demangle(name))
    if "(" in name or "::" in name:
        return CLONE.sub("", name)
    return name.lstrip("_") or name


def named(name):
    return not UNNAMED.search(name)


def read_perf(path, pid, min_wait_ms=None, user_only=False):
    """Samples of pid: a list of (stack, 1), each stack a list of names,
    leaf first (user_only: without the kernel's frames). With min_wait_ms,
    the switches out whose thread came back at least that much later (the
    next PERF_RECORD_SWITCH IN of its tid)."""
    # "comm pid/tid" or, with the time field, "comm pid/tid TIME: REST"
    # (REST "PERF_RECORD_SWITCH IN" for a switch event): the comm may hold
    # spaces, pid/tid is after it.
    head = re.compile(r"(\d+)/(\d+)\s*(?:(\d+\.\d+):(.*))?$")
    samples, ins, cur, keep = [], {}, None, False
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if cur is not None and keep:
                    samples.append(cur)
                cur = None
                continue
            if not line[0].isspace():
                if cur is not None and keep:
                    samples.append(cur)
                cur = None
                m = head.search(line)
                keep = bool(m) and int(m.group(1)) == pid
                if not keep:
                    continue
                tid, t = int(m.group(2)), float(m.group(3)) if m.group(3) else None
                rest = (m.group(4) or "").strip()
                if rest.startswith("PERF_RECORD_SWITCH"):
                    if rest.split()[1:2] == ["IN"]:
                        ins.setdefault(tid, []).append(t)
                    continue
                cur = (tid, t, [])
                continue
            if cur is not None:
                parts = line.split(None, 1)
                if user_only and is_kernel(parts[0]):
                    continue
                cur[2].append(parts[1].strip() if len(parts) > 1 else "[unknown]")
    if cur is not None and keep:
        samples.append(cur)
    if min_wait_ms is None:
        return [(s, 1) for _, _, s in samples]
    if any(t is None for _, t, _ in samples):
        sys.exit("--perf-min-wait needs perf script's time field")
    out, short, gone = [], 0, 0
    for tid, t, stack in samples:
        back = ins.get(tid, [])
        i = bisect.bisect_right(back, t)
        if i == len(back):
            gone += 1
        elif (back[i] - t) * 1000 < min_wait_ms:
            short += 1
        else:
            out.append((stack, 1))
    print(f"perf: {len(out)} switches out of pid {pid} back {min_wait_ms} ms or more later "
          f"kept; {short} shorter, {gone} never back (exits), left out")
    return out


def drop_frames(stacks, frames):
    """The flightrec stacks without one of `frames`, and how many samples
    were left out."""
    if not frames:
        return stacks, 0
    kept = [(s, c) for s, c in stacks if not frames & set(s)]
    return kept, sum(c for _, c in stacks) - sum(c for _, c in kept)


def is_kernel(address):
    """Whether a hexadecimal address is the kernel's (x86-64: the upper
    half)."""
    try:
        return int(address, 16) >= 0xFFFF800000000000
    except ValueError:
        return False


def read_pprof(path, user_only=False):
    """(stacks with their sample counts, {location: [names, innermost first]})
    from `go tool pprof -raw` (user_only: without the kernel's frames)."""
    sec, samples, locs, last, kernel = None, [], {}, None, set()
    loc_re = re.compile(r"^\s+(\d+): 0x([0-9a-f]+) (?:M=\d+ )?(.*)$")
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("Samples:"):
                sec = "s"
                continue
            if line.startswith("Locations"):
                sec = "l"
                continue
            if line.startswith("Mappings"):
                sec = None
                continue
            if sec == "s":
                m = re.match(r"^\s+(\d+)\s+\d+: ([\d ]+)$", line)
                if m:
                    samples.append((int(m.group(1)), [int(x) for x in m.group(2).split()]))
            elif sec == "l":
                m = loc_re.match(line)
                if m:
                    last = int(m.group(1))
                    locs[last] = [line_name(m.group(3))]
                    if is_kernel(m.group(2)):
                        kernel.add(last)
                elif last is not None and line.startswith("             "):
                    locs[last].append(line_name(line.strip()))
    stacks = []
    for count, ids in samples:
        # The function each location was compiled into: its last Line.
        stacks.append(([locs.get(i, ["[unknown]"])[-1] for i in ids
                        if not (user_only and i in kernel)], count))
    return stacks, locs


def line_name(text):
    """The function of one Line as -raw prints it: "NAME FILE:LINE s=N"
    (NAME may hold spaces: C++ names from DWARF)."""
    parts = text.split()
    if len(parts) >= 3 and parts[-1].startswith("s="):
        return " ".join(parts[:-2])
    return text


def shares(stacks):
    total = sum(c for _, c in stacks)
    cum, marks = {}, {}
    for names, c in stacks:
        for n in {norm(x) for x in names if named(x)}:
            cum[n] = cum.get(n, 0) + c
        for x in names:
            if x.startswith(MARK):
                marks[x] = marks.get(x, 0) + c
    return total, {n: 100.0 * v / total for n, v in cum.items()} if total else {}, marks


def short(name, width=60):
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perf", required=True)
    ap.add_argument("--pprof", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--require", default="")
    ap.add_argument("--inline", default="")
    ap.add_argument("--truth", default="")
    ap.add_argument("--tolerance", type=float, default=2.0)
    ap.add_argument("--min-share", type=float, default=5.0)
    ap.add_argument("--perf-min-wait", type=float, default=None)
    ap.add_argument("--drop", default="")
    ap.add_argument("--user-only", action="store_true")
    a = ap.parse_args()

    pn, ps, _ = shares(read_perf(a.perf, a.pid, a.perf_min_wait, a.user_only))
    fstacks, locs = read_pprof(a.pprof, a.user_only)
    fstacks, dropped = drop_frames(fstacks, set(filter(None, a.drop.split(","))))
    if a.drop:
        print(f"flightrec: {dropped} samples with {a.drop} left out")
    fn, fs, marks = shares(fstacks)
    required = [norm(x) for x in a.require.split(",") if x]
    truth = {}
    for kv in filter(None, a.truth.split(",")):
        k, v = kv.split("=")
        truth[norm(k)] = float(v)
    bad = []
    if pn < 500 or fn < 500:
        bad.append(f"too few samples to compare shares: perf {pn}, flightrec {fn}")

    both = set(ps) & set(fs)
    compared = set(required) | {n for n in both if max(ps[n], fs[n]) >= a.min_share}
    if not compared:
        bad.append("no function to compare: none required, none named by both")
    print(f"cumulative shares of pid {a.pid}: perf {pn} samples, flightrec {fn} samples")
    print(f"{'perf %':>8} {'flightrec %':>11} {'diff':>6} {'truth %':>8}  function")
    for n in sorted(compared, key=lambda n: -max(ps.get(n, 0), fs.get(n, 0))):
        p, f = ps.get(n), fs.get(n)
        t = f"{truth[n]:8.2f}" if n in truth else f"{'':8}"
        if p is None or f is None:
            print(f"{p or 0:8.2f} {f or 0:11.2f} {'':>6} {t}  {short(n)}  <- missing")
            bad.append(f"{n} is missing from {'perf' if p is None else 'flightrec'}")
            continue
        flag = "  <- differs" if abs(p - f) > a.tolerance else ""
        print(f"{p:8.2f} {f:11.2f} {f - p:+6.2f} {t}  {short(n)}{flag}")
        if flag:
            bad.append(f"{n}: perf {p:.2f}%, flightrec {f:.2f}%")
    only = sorted(
        (n for n in set(ps) ^ set(fs) if max(ps.get(n, 0), fs.get(n, 0)) >= a.min_share),
        key=lambda n: -max(ps.get(n, 0), fs.get(n, 0)),
    )
    for n in only:
        side = "perf" if n in ps else "flightrec"
        print(f"  named only by {side} ({max(ps.get(n, 0), fs.get(n, 0)):.2f}%): {short(n)}")
    for m, c in sorted(marks.items()):
        print(f"  flightrec {m}: {c} samples ({100.0 * c / fn:.2f}%)")

    # Inlined frames: inner Lines (not the last) of flightrec's locations.
    inlined = {norm(x) for names in locs.values() for x in names[:-1]}
    for want in filter(None, a.inline.split(",")):
        hits = sorted(n for n in inlined if n == want or n.startswith(want + "<"))
        if hits:
            print(f"  inlined frame {want}: {short(hits[0])}")
        else:
            bad.append(f"no inlined frame {want} in flightrec's profile")
    for b in bad:
        print("MISMATCH: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
