#!/usr/bin/env python3
"""Writes the assembly of N small functions, each with call frame
information of its own (an FDE of five rows: two registers pushed and
popped), for cfi_flood.c: a binary whose unwind table is large (about 60
bytes a function in the recorder) and cheap to build, so that
unwind_flood.sh floods the unwind tables with a few files.

    cfi_flood_gen.py N OUTPUT
"""
import sys

n, out = int(sys.argv[1]), sys.argv[2]
with open(out, "w") as f:
    f.write("\t.text\n")
    for i in range(n):
        f.write(
            f".Lfl{i}:\n"
            "\t.cfi_startproc\n"
            "\tpushq %rbx\n\t.cfi_def_cfa_offset 16\n\t.cfi_offset %rbx, -16\n"
            "\tpushq %rbp\n\t.cfi_def_cfa_offset 24\n\t.cfi_offset %rbp, -24\n"
            "\tpopq %rbp\n\t.cfi_def_cfa_offset 16\n"
            "\tpopq %rbx\n\t.cfi_def_cfa_offset 8\n"
            "\tret\n\t.cfi_endproc\n"
        )
    f.write('\t.section .note.GNU-stack,"",@progbits\n')
