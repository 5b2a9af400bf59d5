# A named Python call chain for jit_python.sh: main -> collect_rows ->
# score_row -> a busy loop, for as many seconds as the first argument says.
import os
import sys
import time


def score_row(i):
    h = i
    for k in range(2000):
        h = (h * 16777619 ^ k) & 0xFFFFFFFF
    return h


def collect_rows(n):
    return [score_row(i) & 0xFF for i in range(n)]


def main(seconds):
    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        total += len(collect_rows(50))
    return total


print("pid=%d" % os.getpid(), flush=True)
print("rows=%d" % main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0), flush=True)
