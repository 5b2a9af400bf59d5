#!/usr/bin/env python3
"""Test helper: lists the chunks of a flightrec ring and damages copies of it.

    ringtool.py chunks RING                  one line per chunk of the segments:
                                             offset length seq segment
    ringtool.py damage RING MODE OUT [SEED]  writes a damaged copy of the
                                             segments, prints how many chunks
                                             must stay readable

Modes: flip (bits flipped in chunk bytes), zero (a zeroed 4 KiB page),
truncate (file cut in the middle of the chunks), segment (a whole segment
overwritten with garbage), length (a chunk header claiming an absurd
length, with a valid header crc); and for the superblock: sbflip (one bit
of the superblock flipped, which bit chosen by the seed), sbzero (the
first page zeroed), sbboth (one bit flipped in the superblock and one in
its copy at the end of the file: every chunk intact, the geometry lost). The layout is the one documented in
core/store/ring.h and core/store/chunk.h. Damage goes to the segments; the journal's
chunks that recovery then takes as current (numbered above the newest
intact chunk of the segments: the parts of a damaged merged chunk) count as
readable too.
"""
import random
import shutil
import struct
import sys

SB_LEN = 4096
CHUNK_MAGIC = 0x4B435246
HDR = 64


def crc32c(data, crc=0):
    poly = 0x82F63B78
    table = crc32c.table
    if table is None:
        table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ poly if c & 1 else c >> 1
            table.append(c)
        crc32c.table = table
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32c.table = None


def superblock_ok(sb):
    """Whether a superblock image has the magic and its crc right."""
    if len(sb) < SB_LEN or sb[:16] != b"FLIGHTREC-RING\0\0":
        return False
    version, = struct.unpack_from("<I", sb, 16)
    at = 72 if version == 1 else 80
    return crc32c(bytes(sb[:at])) == struct.unpack_from("<I", sb, at)[0]


def superblock(buf):
    """The superblock in force: the primary, else its copy (the file's
    last page, core/store/ring.h)."""
    if superblock_ok(buf[:SB_LEN]):
        return buf[:SB_LEN]
    if superblock_ok(buf[-SB_LEN:]):
        return buf[-SB_LEN:]
    sys.exit("not a flightrec ring, or both superblocks damaged")


def geometry(buf):
    """(segment size, segments, journal size)."""
    sb = superblock(buf)
    version, = struct.unpack_from("<I", sb, 16)
    file_size, seg_size, nseg = struct.unpack_from("<QQI", sb, 24)
    journal = struct.unpack_from("<Q", sb, 72)[0] if version >= 2 else 0
    return seg_size, nseg, journal


def header(buf, off):
    """(seq, length) of a chunk header with a good crc at `off`, or None."""
    h = buf[off:off + HDR]
    if len(h) < HDR:
        return None
    magic, = struct.unpack_from("<I", h, 0)
    if magic != CHUNK_MAGIC or crc32c(h[:60]) != struct.unpack_from("<I", h, 60)[0]:
        return None
    seq, = struct.unpack_from("<Q", h, 8)
    comp_len, = struct.unpack_from("<I", h, 40)
    return seq, HDR + comp_len


def journal_chunks(buf):
    """(offset, length, seq) of every intact chunk in the journal."""
    _, _, journal = geometry(buf)
    out = []
    off = SB_LEN
    while off + HDR <= SB_LEN + journal:
        h = header(buf, off)
        if h and off + h[1] <= SB_LEN + journal and intact(buf, off, h[1]):
            out.append((off, h[1], h[0]))
            off += (h[1] + 7) & ~7
        else:
            off += 8
    return out


def intact(buf, off, length):
    """Whether the chunk at `off` has its payload crc right."""
    crc, = struct.unpack_from("<I", buf, off + 56)
    return off + length <= len(buf) and crc32c(bytes(buf[off + HDR:off + length])) == crc


def chunks(buf):
    """(offset, length, seq) of every chunk of the segments with a valid
    header, in file order."""
    seg_size, nseg, journal = geometry(buf)
    out = []
    for s in range(nseg):
        base = SB_LEN + journal + s * seg_size
        off = 0
        while off + HDR <= seg_size and base + off + HDR <= len(buf):
            h = header(buf, base + off)
            if not h:
                break
            out.append((base + off, h[1], h[0]))
            off += (h[1] + 7) & ~7
    return out


def segment_of(buf, off):
    seg_size, _, journal = geometry(buf)
    return (off - SB_LEN - journal) // seg_size


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    buf = bytearray(open(path, "rb").read())
    cs = chunks(buf)
    if cmd == "chunks":
        for off, length, seq in cs:
            print(off, length, seq, segment_of(buf, off))
        return
    mode, out = sys.argv[3], sys.argv[4]
    rnd = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    seg_size, _, journal = geometry(buf)
    journal_before = journal_chunks(buf)
    damaged = set()

    def hit(lo, hi):
        for i, (off, length, _) in enumerate(cs):
            if off < hi and lo < off + length:
                damaged.add(i)

    if mode == "flip":
        for _ in range(6):
            i = rnd.randrange(len(cs))
            off, length, _ = cs[i]
            pos = off + rnd.randrange(length)
            buf[pos] ^= 1 << rnd.randrange(8)
            hit(pos, pos + 1)
    elif mode == "zero":
        off, length, _ = cs[len(cs) // 2]
        page = (off + length // 2) & ~4095
        buf[page:page + 4096] = bytes(4096)
        hit(page, page + 4096)
    elif mode == "truncate":
        off, length, _ = cs[len(cs) // 2]
        cut = off + length // 2
        del buf[cut:]
        hit(cut, 1 << 62)
    elif mode == "segment":
        seg = segment_of(buf, cs[len(cs) // 2][0])
        lo = SB_LEN + journal + seg * seg_size
        buf[lo:lo + seg_size] = bytes(rnd.randrange(256) for _ in range(seg_size))
        hit(lo, lo + seg_size)
    elif mode == "sbflip":
        # A bit of the fields in use (magic, version, geometry, id, crc).
        pos = rnd.randrange(84)
        buf[pos] ^= 1 << rnd.randrange(8)
    elif mode == "sbzero":
        buf[0:SB_LEN] = bytes(SB_LEN)
    elif mode == "sbboth":
        buf[24] ^= 1 << rnd.randrange(8)
        buf[len(buf) - SB_LEN + 32] ^= 1 << rnd.randrange(8)
    elif mode == "length":
        off, length, _ = cs[len(cs) // 2]
        struct.pack_into("<I", buf, off + 40, 0x7FFFFFF0)
        struct.pack_into("<I", buf, off + 60, crc32c(bytes(buf[off:off + 60])))
        hit(off, off + 1)
    else:
        sys.exit("unknown mode " + mode)
    open(out, "wb").write(buf)
    if mode.startswith("sb"):
        newest = max((q for _, _, q in cs), default=0)
        print(len(cs) + len([1 for _, _, seq in journal_before if seq > newest]))
        return
    kept = [seq for i, (_, _, seq) in enumerate(cs) if i not in damaged]
    newest = max(kept) if kept else 0
    current = {seq for _, _, seq in journal_chunks(buf) if seq > newest}
    print(len(kept) + len(current))


if __name__ == "__main__":
    main()
