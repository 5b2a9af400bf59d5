#!/usr/bin/env python3
"""Test helper: lists the chunks of a flightrec ring and damages copies of it.

    ringtool.py chunks RING                  one line per chunk: offset length seq
    ringtool.py damage RING MODE OUT [SEED]  writes a damaged copy, prints how
                                             many chunks must stay readable

Modes: flip (bits flipped in chunk bytes), zero (a zeroed 4 KiB page),
truncate (file cut in the middle of the chunks), segment (a whole segment
overwritten with garbage), length (a chunk header claiming an absurd
length, with a valid header crc). The layout is the one documented in
core/ring.h and core/chunk.h.
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


def geometry(buf):
    if buf[:16] != b"FLIGHTREC-RING\0\0":
        sys.exit("not a flightrec ring")
    file_size, seg_size, nseg = struct.unpack_from("<QQI", buf, 24)
    return seg_size, nseg


def intact(buf, off, length):
    """Whether the chunk at `off` has its payload crc right."""
    crc, = struct.unpack_from("<I", buf, off + 56)
    return off + length <= len(buf) and crc32c(bytes(buf[off + HDR:off + length])) == crc


def chunks(buf):
    """(offset, length, seq) of every chunk with a valid header, in file order."""
    seg_size, nseg = geometry(buf)
    out = []
    for s in range(nseg):
        base = SB_LEN + s * seg_size
        off = 0
        while off + HDR <= seg_size and base + off + HDR <= len(buf):
            h = buf[base + off:base + off + HDR]
            magic, = struct.unpack_from("<I", h, 0)
            if magic != CHUNK_MAGIC or crc32c(h[:60]) != struct.unpack_from("<I", h, 60)[0]:
                break
            seq, = struct.unpack_from("<Q", h, 8)
            comp_len, = struct.unpack_from("<I", h, 40)
            length = HDR + comp_len
            out.append((base + off, length, seq))
            off += (length + 7) & ~7
    return out


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    buf = bytearray(open(path, "rb").read())
    cs = chunks(buf)
    if cmd == "chunks":
        for off, length, seq in cs:
            print(off, length, seq)
        return
    mode, out = sys.argv[3], sys.argv[4]
    rnd = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    seg_size, _ = geometry(buf)
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
        seg = (cs[len(cs) // 2][0] - SB_LEN) // seg_size
        lo = SB_LEN + seg * seg_size
        buf[lo:lo + seg_size] = bytes(rnd.randrange(256) for _ in range(seg_size))
        hit(lo, lo + seg_size)
    elif mode == "length":
        off, length, _ = cs[len(cs) // 2]
        struct.pack_into("<I", buf, off + 40, 0x7FFFFFF0)
        struct.pack_into("<I", buf, off + 60, crc32c(bytes(buf[off:off + 60])))
        hit(off, off + 1)
    else:
        sys.exit("unknown mode " + mode)
    open(out, "wb").write(buf)
    print(len(cs) - len(damaged))


if __name__ == "__main__":
    main()
