"""ckpt_readers: scripts/checkpoint.py's verdict on each file that a list names,
for tests/test_ckpt_py.c, which compares it with trainer/ckpt.c's.

    python3 tests/ckpt_readers.py LIST      # LIST: one path per line

prints one line per path, in order: "ok", or "refused MESSAGE" for a
CheckpointError, or "crash TYPE: MESSAGE" for any other exception (a bug).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import checkpoint  # noqa: E402


def main(list_path):
    with open(list_path, "rb") as f:
        paths = f.read().split(b"\n")[:-1]
    for p in paths:
        try:
            checkpoint.read(p)
            print("ok")
        except checkpoint.CheckpointError as e:
            print("refused", e)
        except Exception as e:  # the test reports it as the reader's bug
            print("crash %s: %s" % (type(e).__name__, str(e).replace("\n", " ")))


if __name__ == "__main__":
    main(sys.argv[1])
