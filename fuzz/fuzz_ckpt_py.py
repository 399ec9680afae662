"""fuzz_ckpt_py: the two checkpoint readers against each other on mutated files.

    python3 fuzz/fuzz_ckpt_py.py VERDICTS SECONDS WORKDIR SEED_OR_DIR...

A seeded random mutation loop (seed 1, so a run repeats itself): each round
takes 200 inputs, each a file from the SEED_OR_DIR arguments (checkpoints, and
whatever libFuzzer's corpus for fuzz/fuzz_ckpt.c holds) changed in one to three
ways: bytes flipped, a header int or a training-state int or double set to a
value near a limit, the alphabet or a merge changed, cut or lengthened, and
often resealed (its checksum recomputed, so that the checks behind it speak).
VERDICTS (fuzz/ckpt_verdicts.c) gives trainer/ckpt.c's verdict on each, and
scripts/checkpoint.py's must be the same: both accept, or both refuse with the
same message (the size refusal's parenthesis of dimensions aside, as in
tests/test_ckpt_py.c). The first disagreement is kept as WORKDIR/mismatch.ckpt,
both verdicts are printed, and the exit status is 1; otherwise 0 after SECONDS.
"""
import os
import random
import re
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import checkpoint  # noqa: E402

INT32 = (-2**31, -1, 0, 1, 2, 3, 4, 5, 8, 255, 256, 257, 4096, 4097, 8192, 16384, 32767,
         32768, 32769, 2**30, 2**31 - 1)
INT64 = (-2**63, -2, -1, 0, 1, 2, 30, 4096, 4097, 32768, 32769, 65536, 65537, 100000,
         100001, 10**8, 10**8 + 1, 2**63 - 1)
REAL = (float("nan"), float("-inf"), float("inf"), -0.5, -0.0, 0.0, 1e-31, 1e-30, 1e-9,
        0.5, 0.9, 0.95, 0.96, 0.9999999, 1.0, 10.0, 11.0, 1e6, 1e7)


def state_at(b):
    """Offset of the training state in b, from its header, or None."""
    if len(b) < 1280:
        return None
    V, T, L, H, C = struct.unpack_from("<5i", b, 8)
    flags, D, M = struct.unpack_from("<i", b, 28)[0], *struct.unpack_from("<2i", b, 36)
    dims = dict(V=V, T=T, L=L, H=H, C=C, D=D)
    if not flags & 1 or any(v < 1 or v > 65536 for v in dims.values()) or not 0 <= M < 65536:
        return None
    at = 1280 + 4 * M + 4 * checkpoint.parameter_count(dims)
    return at if at + 1040 <= len(b) else None


def reseal(b):
    if len(b) >= 8:
        b[-8:] = struct.pack("<Q", checkpoint.fnv1a64(bytes(b[:-8])))


def mutate(rng, b):
    """b (a bytearray) changed in one to three ways."""
    for _ in range(rng.randint(1, 3)):
        kind, S = rng.randrange(7), state_at(b)
        if kind == 0 and b:
            b[rng.randrange(len(b))] ^= rng.randint(1, 255)
        elif kind == 1 and len(b) >= 1024:
            i = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, rng.randrange(256)))
            struct.pack_into("<i", b, 4 * i, rng.choice(INT32))
        elif kind == 2 and S is not None:
            struct.pack_into("<q", b, S + 8 + 8 * rng.randrange(32), rng.choice(INT64))
        elif kind == 3 and S is not None:
            struct.pack_into("<d", b, S + 264 + 8 * rng.randrange(32), rng.choice(REAL))
        elif kind == 4 and len(b) >= 1301:
            at = rng.randrange(1024, 1300)
            b[at] = rng.choice((0, 1, b[at - 1], b[at + 1], 255, rng.randrange(256)))
        elif kind == 5 and b:
            del b[rng.randrange(len(b)):]
        elif kind == 6:
            b += bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 8, 100))))
    if rng.random() < 0.6 and state_at(b) is not None:
        reseal(b)
    return b


def without_dims(msg):
    return re.sub(r" \(V=[^)]*\)", "", msg) if " implies " in msg else msg


def python_verdict(path):
    try:
        checkpoint.read(path)
        return "ok"
    except checkpoint.CheckpointError as e:
        return "refused %s" % e


def inputs(args):
    out = []
    for a in args:
        names = [os.path.join(a, n) for n in sorted(os.listdir(a))] if os.path.isdir(a) else [a]
        out += [n for n in names if os.path.isfile(n)]
    return out


def main(verdicts, seconds, work, *seed_args):
    rng, seeds = random.Random(1), inputs(seed_args)
    if not seeds:
        sys.exit("fuzz_ckpt_py: error: no seed files in %s" % " ".join(seed_args))
    os.makedirs(work, exist_ok=True)
    data = {p: open(p, "rb").read() for p in seeds}
    end, tried, refused = time.time() + float(seconds), 0, 0
    while time.time() < end:
        paths = []
        for k in range(200):
            p = os.path.join(work, "in%03d.ckpt" % k)
            with open(p, "wb") as f:
                f.write(mutate(rng, bytearray(data[rng.choice(seeds)])))
            paths.append(p)
        with open(os.path.join(work, "list"), "w") as f:
            f.write("".join(p + "\n" for p in paths))
        r = subprocess.run([verdicts, os.path.join(work, "list")], capture_output=True)
        if r.returncode != 0:
            sys.exit("fuzz_ckpt_py: error: %s failed: %s" % (verdicts, r.stderr.decode()))
        c_lines = r.stdout.decode("utf-8", "replace").split("\n")
        for p, c in zip(paths, c_lines):
            py = python_verdict(p)
            tried, refused = tried + 1, refused + (c != "ok")
            if without_dims(py) != without_dims(c):
                os.replace(p, os.path.join(work, "mismatch.ckpt"))
                print("fuzz_ckpt_py: the readers disagree on %s/mismatch.ckpt\n  C:      %s\n"
                      "  Python: %s" % (work, c, py), file=sys.stderr)
                return 1
    print("fuzz_ckpt_py: %d files, %d refused by both, %d accepted by both; no disagreement"
          % (tried, refused, tried - refused), file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
