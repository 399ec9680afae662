#!/usr/bin/python3
"""Scores a text file with a headcount checkpoint in PyTorch, the way
`./infer --eval` does, printing the same line. The model and the checkpoint
reader are in scripts/headcount.py, built from docs/checkpoint.md alone, so
agreement with ./infer (to about 1e-5) shows that the format and the model are
what the documentation says.

usage: /usr/bin/python3 scripts/torch_eval.py CKPT FILE   (Debian's python3-torch)"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import headcount  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    headcount.main(["eval"] + sys.argv[1:])
