"""checkpoint: the checked reader of headcount checkpoints, in Python's standard library.

read(path) validates a checkpoint (docs/checkpoint.md, versions 1 and 2) in the
order trainer/ckpt.c's reader does, with the same rules, and raises
CheckpointError carrying the C reader's message for the same defect. Nothing the
header claims is allocated before the header has passed its limits and the real
file size equals the size the header implies, so a small file that claims
billions of parameters costs nothing. A Checkpoint it returns holds the
dimensions, the tokenizer's alphabet and merges, the parameters as raw float32
bytes, and the training settings when the file has them. Building a model is
headcount.py's (it imports this module); tests/test_ckpt_py.c runs this reader
and the C one over the same damaged files.
"""
import errno
import math
import os
import stat
import struct
import sys
from array import array

MAGIC = 20261122
VERSION, VERSION_MERGES = 1, 2          # byte-level; with byte-pair merges
HEADER_INTS = 256
HEADER_BYTES = 4 * HEADER_INTS
ALPHABET_BYTES = 256
HDR_MERGES = 10                         # header int holding the merge count
FLAG_TRAIN_STATE = 1
FLAG_GATES = 2                          # the model has head gates: log_alpha[L][H] last
FLAG_ROUTE = 4                          # routed to K heads (header int 11): router.w, .b last
HDR_ROUTE_K = 11
STATE_MARKER = b"HCSTATE1"
STATE_INTS = STATE_DOUBLES = 32
PATH_BYTES = 512                        # the training state's data path (CKPT_PATH_MAX)

# model/config.h, data/tokenizer.h, trainer/limits.h.
DIM_LIMITS = (("V", "vocabulary size V", 32768), ("T", "block size T", 4096),
              ("L", "layers L", 64), ("H", "heads H", 256),
              ("C", "embedding width C", 8192), ("D", "head size D", 4096))
MAX_PARAMS = 1 << 30
PIECES_MAX = 1 << 28
STEPS_MAX = 100000000
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# The run's position in the integer array (trainer/ckpt.c's STATE_INT_SLOTS):
# name, slot, range. best_val, the one such double, accepts every finite value.
POSITION_SLOTS = (("step", 0, 0, STEPS_MAX), ("batch_rng", 8, INT64_MIN, INT64_MAX),
                  ("data_size", 9, 0, INT64_MAX), ("data_hash", 10, INT64_MIN, INT64_MAX),
                  ("best_step", 12, -1, STEPS_MAX), ("accum", 13, 0, 4096))
BEST_VAL_SLOT = 9

# The stored settings in trainer/ckpt.c's order (CKPT_STATE_SETTINGS, the order
# the C reader checks them): key, "int" or "real" array, slot, and the range a value must lie in (the
# flag's, with 0 where the flag's 0 means off). seed takes any value and is not
# listed. tests/test_ckpt_py.c compares this table with the C one.
STORED_SETTINGS = (
    ("save_every", "int", 6, 0, 100000000),
    ("allow_binary", "int", 11, 0, 1),
    ("vocab", "int", 14, 0, 32768),
    ("batch", "int", 2, 1, 65536),
    ("steps", "int", 1, 1, 100000000),
    ("lr", "real", 0, 1e-9, 10.0),
    ("min_lr", "real", 1, 0.0, 10.0),
    ("warmup", "int", 3, 0, 100000000),
    ("wd", "real", 2, 0.0, 10.0),
    ("pos_decay", "int", 16, 0, 1),
    ("beta1", "real", 6, 0.0, 0.9999999),
    ("beta2", "real", 7, 0.0, 0.9999999),
    ("eps", "real", 8, 1e-30, 1.0),
    ("clip", "real", 3, 0.0, 1e6),
    ("dropout", "real", 4, 0.0, 0.95),
    ("head_dropout", "real", 10, 0.0, 0.95),
    ("head_gates", "real", 11, 0.0, 100.0),
    ("routing_balance", "real", 12, 0.0, 100.0),
    ("precision", "int", 15, 0, 1),
    ("val_frac", "real", 5, 0.0, 0.9),
    ("eval_every", "int", 4, 0, 100000000),
    ("eval_iters", "int", 5, 1, 100000),
)
SEED_SLOT = 7


class CheckpointError(Exception):
    """A checkpoint refused: str(e) is the C reader's one-line message."""


class Checkpoint:
    """A validated checkpoint. dims: V, T, L, H, C, D; alphabet: the nbytes byte
    values of tokens 0..nbytes-1; merges: [(left, right)] defining tokens nbytes..;
    params: the P float32 values as little-endian bytes, in parameter_table order;
    settings: None, or the training state's fields by name (and data_path, bytes)."""

    def __init__(self, version, dims, steps, alphabet, merges, params, settings):
        self.version, self.dims, self.steps = version, dims, steps
        self.alphabet, self.merges, self.params = alphabet, merges, params
        self.settings = settings


def parameter_table(d: dict) -> list:
    """model/params.c's table: (name, rows, cols) in file order, for dims d (with
    d["gates"], the head gates' log_alpha last; with d["route_k"] > 0, the routers
    after them)."""
    V, T, L, C, A = d["V"], d["T"], d["L"], d["C"], d["H"] * d["D"]
    out = [("wte", V, C), ("wpe", T, C)]
    for l in range(L):
        p = "h%d." % l
        out += [(p + "ln1.w", 1, C), (p + "ln1.b", 1, C), (p + "qkv.w", 3 * A, C),
                (p + "qkv.b", 1, 3 * A), (p + "proj.w", C, A), (p + "proj.b", 1, C),
                (p + "ln2.w", 1, C), (p + "ln2.b", 1, C), (p + "fc.w", 4 * C, C),
                (p + "fc.b", 1, 4 * C), (p + "fcproj.w", C, 4 * C), (p + "fcproj.b", 1, C)]
    out += [("lnf.w", 1, C), ("lnf.b", 1, C)]
    if d.get("gates"):
        out += [("gates.log_alpha", L, d["H"])]
    if d.get("route_k"):
        out += [("router.w", L * d["H"], C), ("router.b", L, d["H"])]
    return out


def parameter_count(d: dict) -> int:
    """P (docs/checkpoint.md), from dimensions within their limits."""
    V, T, L, C, A = d["V"], d["T"], d["L"], d["C"], d["H"] * d["D"]
    gates = L * d["H"] if d.get("gates") else 0
    router = L * d["H"] * (C + 1) if d.get("route_k") else 0
    return V * C + T * C + L * (8 * C * C + 4 * A * C + 3 * A + 10 * C) + 2 * C + gates + router


def fnv1a64(data: bytes, h: int = 0xcbf29ce484222325) -> int:
    """FNV-1a 64 of data, continuing from h (util/hash.h)."""
    prime, mask = 0x100000001b3, 0xFFFFFFFFFFFFFFFF
    for b in data:
        h = (h ^ b) * prime & mask
    return h


def _g(x):
    """x as C's printf %g writes it (glibc: a NaN with its sign bit set is -nan)."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%g" % x


def _check_dims(d):
    """model/config.c's config_validate: the reason, or None."""
    for key, name, hi in DIM_LIMITS:
        if not 1 <= d[key] <= hi:
            return "%s must be in [1, %d], got %d" % (name, hi, d[key])
    if not 0 <= d.get("route_k", 0) <= d["H"]:
        return "routed heads K must be in [0, %d], got %d" % (d["H"], d["route_k"])
    if d["H"] * d["D"] > 2 * 8192:
        return "attention width H*D = %d*%d exceeds %d" % (d["H"], d["D"], 2 * 8192)
    n = parameter_count(d)
    if n > MAX_PARAMS:
        return "model has %d parameters, more than the limit %d" % (n, MAX_PARAMS)
    return None


def _check_header(h, path):
    """trainer/ckpt.c's check_header: the dimensions, or CheckpointError."""
    if h[0] != MAGIC:
        raise CheckpointError("%s: not a headcount checkpoint (magic %d, expected %d)"
                              % (path, h[0], MAGIC))
    if h[1] not in (VERSION, VERSION_MERGES):
        raise CheckpointError("%s: checkpoint version %d, this build reads versions %d and %d"
                              % (path, h[1], VERSION, VERSION_MERGES))
    if h[7] & ~(FLAG_TRAIN_STATE | FLAG_GATES | FLAG_ROUTE):
        raise CheckpointError("%s: unknown flags 0x%x in the header" % (path, h[7] & 0xFFFFFFFF))
    if h[8] < 0:
        raise CheckpointError("%s: negative step count %d in the header" % (path, h[8]))
    routed = bool(h[7] & FLAG_ROUTE)
    if (h[HDR_ROUTE_K] < 1) if routed else (h[HDR_ROUTE_K] != 0):
        raise CheckpointError("%s: header field %d is %d with the routing flag %s, expected %s"
                              % (path, HDR_ROUTE_K, h[HDR_ROUTE_K], "set" if routed else "clear",
                                 "K >= 1" if routed else "0"))
    for i in range(HDR_ROUTE_K + 1, HEADER_INTS):
        if h[i] != 0:
            raise CheckpointError("%s: header field %d is %d, expected 0 (reserved)"
                                  % (path, i, h[i]))
    d = dict(V=h[2], T=h[3], L=h[4], H=h[5], C=h[6], D=h[9], gates=bool(h[7] & FLAG_GATES),
             route_k=h[HDR_ROUTE_K])
    why = _check_dims(d)
    if why:
        raise CheckpointError("%s: bad dimensions in the header: %s" % (path, why))
    M = h[HDR_MERGES]
    if h[1] == VERSION and M != 0:
        raise CheckpointError("%s: header field %d is %d, expected 0 (reserved: a version %d "
                              "checkpoint has no merges)" % (path, HDR_MERGES, M, VERSION))
    if h[1] == VERSION_MERGES and (M < 1 or M >= d["V"] or d["V"] - M > ALPHABET_BYTES):
        raise CheckpointError("%s: %d merges in a version %d checkpoint with V = %d: expected "
                              "1 to V - 1 merges leaving 1 to %d bytes"
                              % (path, M, VERSION_MERGES, d["V"], ALPHABET_BYTES))
    if h[1] == VERSION and d["V"] > ALPHABET_BYTES:
        raise CheckpointError("%s: bad dimensions in the header: V = %d in a version %d "
                              "checkpoint, which holds at most %d byte tokens"
                              % (path, d["V"], VERSION, ALPHABET_BYTES))
    return d


def _check_vocabulary(alphabet, merges):
    """data/tokenizer.c's tok_from_parts and data/bpe_encode.c's encoder checks:
    the reason, or None."""
    nbytes = len(alphabet)
    for i in range(1, nbytes):
        if alphabet[i] <= alphabet[i - 1]:
            return ("byte alphabet is not strictly ascending at entry %d (0x%02x after 0x%02x)"
                    % (i, alphabet[i], alphabet[i - 1]))
    for k, (left, right) in enumerate(merges):
        if left >= nbytes + k or right >= nbytes + k:
            return ("merge %d joins tokens %d and %d, but only tokens below %d exist before it"
                    % (k, left, right, nbytes + k))
    seen = {}
    for k, pair in enumerate(merges):
        if pair in seen:
            return "bpe: merge %d repeats merge %d (ids %d and %d)" % (k, seen[pair], *pair)
        seen[pair] = k
    lengths, total = [1] * nbytes, nbytes
    for k, (left, right) in enumerate(merges):
        lengths.append(lengths[left] + lengths[right])
        total += lengths[-1]
        if total > PIECES_MAX:
            return ("the tokens up to %d stand for more than %d bytes together: the merges "
                    "build pieces too long to keep" % (nbytes + k, PIECES_MAX))
    return None


def _floats(data):
    """The little-endian float32 values in the bytes data, as an array."""
    values = array("f")
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _first_nonfinite(data):
    """(index, value) of the first non-finite float32 in the bytes data, or None."""
    values = _floats(data)
    if all(map(math.isfinite, values)):
        return None
    i = next(i for i, x in enumerate(values) if not math.isfinite(x))
    return i, values[i]


def _where(table, i):
    """The tensor and index of flat parameter index i, as the C messages name it."""
    for name, rows, cols in table:
        if i < rows * cols:
            return "%s[%d]" % (name, i)
        i -= rows * cols
    return "#%d" % i


def _check_settings(iv, dv):
    """trainer/ckpt.c's check_settings: the reason, or None."""
    for name, slot, lo, hi in POSITION_SLOTS:
        if not lo <= iv[slot] <= hi:
            return "%s %d outside [%d, %d]" % (name, iv[slot], lo, hi)
    for key, kind, slot, lo, hi in STORED_SETTINGS:
        if kind == "int" and not lo <= iv[slot] <= hi:
            return "%s %d outside [%d, %d]" % (key, iv[slot], lo, hi)
        if kind == "real" and not lo <= dv[slot] <= hi:
            return "%s %s outside [%s, %s]" % (key, _g(dv[slot]), _g(lo), _g(hi))
    slot = {key: s for key, _, s, _, _ in STORED_SETTINGS}
    if iv[0] > iv[slot["steps"]]:
        return "step %d beyond the run's %d steps" % (iv[0], iv[slot["steps"]])
    if dv[slot["min_lr"]] > dv[slot["lr"]]:
        return "min_lr %s above lr %s" % (_g(dv[slot["min_lr"]]), _g(dv[slot["lr"]]))
    if iv[12] > iv[0]:
        return "best_step %d after step %d" % (iv[12], iv[0])
    return None


def _read_moments(f, P, h, path):
    """The two Adam moments ([P] float32 each) read from f through the checksum
    in chunks, never held whole: the hash continued from h, and for each moment
    the (index, value) of its first non-finite value or None."""
    bad, chunk = [None, None], 1 << 18
    for k in range(2):
        for at in range(0, P, chunk):
            n = min(chunk, P - at)
            b = _read_exactly(f, 4 * n, path, "the Adam moments")
            h = fnv1a64(b, h)
            if bad[k] is None:
                got = _first_nonfinite(b)
                bad[k] = got and (at + got[0], got[1])
    return h, bad


def _read_state(f, P, table, path, h, hashed):
    """The training state, read from f and checked as trainer/ckpt.c's load_state
    does; hashed is the checksum of the file before it. Its fields by name."""
    fixed = _read_exactly(f, 8 + 8 * STATE_INTS + 8 * STATE_DOUBLES + PATH_BYTES, path,
                          "the training state")
    hashed = fnv1a64(fixed, hashed)
    iv = struct.unpack_from("<%dq" % STATE_INTS, fixed, 8)
    dv = struct.unpack_from("<%dd" % STATE_DOUBLES, fixed, 8 + 8 * STATE_INTS)
    data_path = fixed[8 + 8 * STATE_INTS + 8 * STATE_DOUBLES:]
    if fixed[:8] != STATE_MARKER:
        raise CheckpointError("%s: training state section has a bad marker" % path)
    if data_path[-1] != 0:
        raise CheckpointError("%s: data path in the training state is not terminated" % path)
    for i, x in enumerate(dv):
        if not math.isfinite(x):
            raise CheckpointError("%s: training setting %d is not finite" % (path, i))
    why = _check_settings(iv, dv)
    if why:
        raise CheckpointError("%s: training state holds impossible settings: %s" % (path, why))
    gated = dv[11] > 0
    if gated != bool(h[7] & FLAG_GATES):
        raise CheckpointError("%s: training state says head gates %s, but the header says the "
                              "model has %s" % (path, _g(dv[11]), "gates" if h[7] & FLAG_GATES
                                                else "none"))
    computed, bad = _read_moments(f, P, hashed, path)
    (stored,) = struct.unpack("<Q", _read_exactly(f, 8, path, "the checksum"))
    if stored != computed:
        raise CheckpointError("%s: checksum mismatch (stored %016x, computed %016x): the file "
                              "is damaged" % (path, stored, computed))
    for k, which in enumerate(("first", "second")):
        if bad[k]:
            raise CheckpointError("%s: Adam %s moment %s is not finite (%s)"
                                  % (path, which, _where(table, bad[k][0]), _g(bad[k][1])))
    if iv[0] != h[8]:
        raise CheckpointError("%s: header says %d steps, training state says %d"
                              % (path, h[8], iv[0]))
    settings = {name: iv[slot] for name, slot, _, _ in POSITION_SLOTS}
    for key, kind, slot, _, _ in STORED_SETTINGS:
        settings[key] = iv[slot] if kind == "int" else dv[slot]
    settings["seed"] = iv[SEED_SLOT] & 0xFFFFFFFFFFFFFFFF
    settings["best_val"] = dv[BEST_VAL_SLOT]
    settings["accum"] = max(settings["accum"], 1)
    settings["data_path"] = data_path.split(b"\0", 1)[0]
    return settings


def _open_regular(path):
    """The open file at path after trainer/ckpt.c's checks of what path names,
    and its size. Opened without blocking, so a FIFO swapped in after the stat
    is refused rather than waited on."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise CheckpointError("%s: %s" % (path, "no such checkpoint file" if e.errno == errno.ENOENT
                                          else os.strerror(e.errno))) from None
    if stat.S_ISDIR(st.st_mode):
        raise CheckpointError("%s: is a directory, expected a checkpoint file" % path)
    not_regular = ("%s: not a regular file (a FIFO, device or socket); a checkpoint is a "
                   "plain file" % path)
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointError(not_regular)
    if st.st_size < HEADER_BYTES + ALPHABET_BYTES:
        raise CheckpointError("%s: %d bytes is too short for a checkpoint (the header and "
                              "vocabulary alone take %d): truncated or not a checkpoint"
                              % (path, st.st_size, HEADER_BYTES + ALPHABET_BYTES))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise CheckpointError("%s: cannot open: %s" % (path, os.strerror(e.errno))) from None
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise CheckpointError(not_regular)
    return f, st.st_size


def _read_exactly(f, n, path, what):
    try:
        b = f.read(n)
    except OSError as e:
        raise CheckpointError("%s: read error in %s: %s" % (path, what, os.strerror(e.errno))) \
            from None
    if len(b) != n:
        raise CheckpointError("%s: read error in %s" % (path, what))
    return b


def _open_sized(path):
    """The open checkpoint at path once what path names, the header and the file's
    size against the size the header implies have passed trainer/ckpt.c's checks:
    (file, header bytes, header ints, dimensions, P, M, with_state)."""
    f, size = _open_regular(path)
    try:
        head = _read_exactly(f, HEADER_BYTES + ALPHABET_BYTES, path, "the header")
        h = struct.unpack_from("<%di" % HEADER_INTS, head, 0)
        d = _check_header(h, path)
        P, M = parameter_count(d), h[HDR_MERGES]
        with_state = h[7] & FLAG_TRAIN_STATE
        expect = (HEADER_BYTES + ALPHABET_BYTES + 4 * M + 4 * P
                  + (1040 + 8 * P if with_state else 0))
        if size != expect:
            raise CheckpointError(
                "%s: file is %d bytes but its header (V=%d T=%d L=%d H=%d C=%d D=%d%s%s) "
                "implies %d: %s" % (path, size, d["V"], d["T"], d["L"], d["H"], d["C"], d["D"],
                                    ", merges %d" % M if M else "",
                                    ", with training state" if with_state else "", expect,
                                    "truncated" if size < expect else "trailing bytes"))
    except BaseException:
        f.close()
        raise
    return f, head, h, d, P, M, with_state


def check_size(path) -> None:
    """read()'s first checks of the checkpoint at path (what path names, the
    header, the file's size against the size the header implies: a truncated
    file) without reading the rest, cheap enough to ask of every run of a sweep;
    CheckpointError with read()'s message."""
    _open_sized(os.fsdecode(path))[0].close()


def read(path) -> Checkpoint:
    """Reads and validates the checkpoint at path: a Checkpoint, or CheckpointError
    with the message trainer/ckpt.c gives for the same file."""
    path = os.fsdecode(path)
    f, head, h, d, P, M, with_state = _open_sized(path)
    with f:
        nbytes = d["V"] - M
        alphabet = head[HEADER_BYTES:HEADER_BYTES + nbytes]
        merge_bytes = _read_exactly(f, 4 * M, path, "the merges")
        merges = list(struct.iter_unpack("<2H", merge_bytes))
        why = _check_vocabulary(alphabet, merges)
        if why:
            raise CheckpointError("%s: bad vocabulary: %s" % (path, why))
        for i in range(nbytes, ALPHABET_BYTES):
            if head[HEADER_BYTES + i] != 0:
                raise CheckpointError("%s: vocabulary padding byte %d is not zero" % (path, i))
        params = _read_exactly(f, 4 * P, path, "the parameters")
        table = parameter_table(d)
        bad = _first_nonfinite(params)
        if bad:
            raise CheckpointError("%s: parameter %s is not finite (%s)"
                                  % (path, _where(table, bad[0]), _g(bad[1])))
        settings = None
        if with_state:
            hashed = fnv1a64(params, fnv1a64(merge_bytes, fnv1a64(head)))
            settings = _read_state(f, P, table, path, h, hashed)
    return Checkpoint(h[1], d, h[8], alphabet, merges, params, settings)
