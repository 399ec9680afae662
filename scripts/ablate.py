#!/usr/bin/env python3
"""ablate: runs the head-count ablation (docs/ablation.md) and writes its report.

Two arms over H in --heads and seeds 1..N: fixed width (C fixed, D = C/H) and fixed
head size (D fixed). Every distinct (H, D, seed) is one *job*: ./train, then
./infer --heads on the validation split, into DIR/runs/NAME. A job is one shell
command (`--print-jobs` prints them: hand them to any scheduler); without it this
script runs the same commands itself, --jobs at a time, with progress and an ETA.

--quick, --lesson and --long are presets (docs/ablation.md, "Presets"); without --out
the sweep's directory names the settings that change a run (default_out).

--head-gates LIST adds a gate sweep: every (H, D, seed) is trained once more per
LAMBDA > 0 with train's --head-gates LAMBDA (run name H..-D..-s..-gLAMBDA); LAMBDA = 0
is the plain run, the one the gated runs are compared with (ablate_gates.py).
--head-routing LIST adds a routing sweep: every (H, D, seed) with H > K is trained
once more per K with train's --head-routing K (run name H..-D..-s..-rK), and compared
with the plain runs of H = K and of its own H (ablate_route.py); K >= H would route
every head, the plain run, so it is not trained. A sweep has gates or routes, not both.

The training text is the file --data names, or else one of train's built-in
corpora, --corpus text (the default) or induction: the script reads no file it was
not given. --corpus is passed to every ./train call, so the induction task's own
recipe is the sweep's; its jobs also log per-head scores (--heads-every) for the
phase-change analysis in the report.

Train's settings are never copied here: `./train --print-settings` gives them. A job
works in runs/NAME.partial and renames it to runs/NAME (done.json written last) once
both steps are done; run again, it skips a finished run and resumes an interrupted
training from its checkpoint with ./train --resume. The tables, plots and checks
are in ablate_report.py. Called by scripts/ablate.sh; standard library only.
"""
import argparse
import hashlib
import json
import math
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ablate_report as rep  # noqa: E402
import checkpoint  # noqa: E402
import cli  # noqa: E402
import runlog  # noqa: E402

REPO = os.path.dirname(HERE)
QUICK_TRAIN = ["--layers", "1", "--embd", "32", "--block", "32", "--steps", "30",
               "--warmup", "10", "--eval-every", "10", "--eval-iters", "4"]
QUICK = {"heads": "1 4", "seeds": 2, "slice": 100000, "heads_args": ["--windows", "2"]}
# --corpus induction: an induction head needs a second layer, so its quick models keep
# two; every job logs the per-head repeat scores (--heads-every) for induction_phase.py.
QUICK_INDUCTION = ["--layers", "2", "--embd", "32", "--block", "32", "--batch", "8",
                   "--steps", "40", "--warmup", "10", "--eval-every", "10", "--eval-iters", "4"]
# --lesson: a sweep a class can run in a lesson (30 minutes on 2 Zen 3 cores, over its
# 15-minute aim: docs/ablation.md) that answers the head-count question where it can
# show (docs/ablation.md, "Presets"): the width arm at depths 1 and 2 (at one layer no
# other layer's heads can stand in for a head; a name is copied only from two layers
# on), H = 1, 4 and 16, three seeds for a seed spread, the recipe's 4,000 steps (at
# 2,500 a one-layer model of the corpus from the lexicon learned agreement, the
# determiner and the pronoun at no H, and H's effect was within the seed noise), on the
# built-in corpus unless --data or --corpus.
LESSON = {"heads": "1 4 16", "seeds": 3, "arm": "width", "steps": 4000, "layers": "1 2"}
# The default sweep (make ablation) crosses these depths with H: at one layer a head
# cannot be stood in for by the heads of other layers (docs/ablation.md). --quick,
# --long and the induction task keep train's one depth.
DEFAULT_LAYERS = "1 2 4"
HEADS_EVERY = {"default": 50, "quick": 10}
SEEDS = {"text": 3, "induction": 5}
# The most models ./infer --explore puts on one compare page.
MAX_COMPARE = 16
# Settings that differ between the runs of a sweep, or do not change a run's numbers.
PER_RUN = ("data", "out", "heads", "head_size", "seed", "threads", "progress_every", "version")


def fail(msg, code=2):
    raise cli.Error(msg, code)


def say(msg):
    print("ablation: %s" % msg, file=sys.stderr, flush=True)


def duration(s):
    """Seconds as 45s, 1m21s, 2h03m (as train prints them)."""
    s = max(0, int(round(s)))
    if s < 3600:
        return "%ds" % s if s < 60 else "%dm%02ds" % (s // 60, s % 60)
    return "%dh%02dm" % (s // 3600, s % 3600 // 60)


def parse_args(argv):
    p = cli.Parser(prog="scripts/ablate.sh", description="The head-count ablation; "
                   "docs/ablation.md explains it and every flag.")
    add = p.add_argument
    add("--data", metavar="FILE", help="training text (default: none, the built-in corpus)")
    add("--heads-file", metavar="FILE", help="the file every model's ./infer --heads reads "
        "(default: the held-out split of the training text, val.txt); a treebank's dev "
        "split (.conllu) scores the heads against its gold dependencies too")
    add("--corpus", choices=["text", "induction"], help="a built-in corpus instead of a file: "
        "text (docs/corpus.md) or the induction task with its own recipe (default: text "
        "when no --data)")
    add("--builtin", action="store_true", help="the same as --corpus text")
    add("--out", metavar="DIR", help="default: runs/ablation followed by the settings that "
        "differ from the default sweep's, e.g. runs/ablation-v1024-steps300")
    add("--heads", metavar="LIST", help='head counts (default "1 4 8 16"; quick "1 4")')
    add("--layers", metavar="LIST", help='depths L crossed with every H, e.g. "1 2 4" '
        '(default: train\'s, one depth); a run of another depth than train\'s is named '
        'L<L>-H..-D..-s..')
    add("--seeds", type=int, metavar="N", help="seeds 1..N (default 3, induction 5; quick 2)")
    add("--arm", choices=["width", "headsize", "both"], help="default: both (lesson: width)")
    add("--head-size", type=int, metavar="D", help="D of the head-size arm (default: train's)")
    add("--steps", type=int, metavar="N", help="steps per run (default: train's; quick 30)")
    add("--vocab", type=int, metavar="N", help="train's --vocab: byte-pair tokens learned from "
        "the train split (default: train's, 1536 on the built-in text corpus and bytes with "
        "--data; docs/tokenizer.md)")
    add("--head-dropout", type=float, metavar="P", help="train's --head-dropout for every "
        "run (default: train's, 0); the default --out gets -hdP")
    add("--head-gates", metavar="LIST", help='gate sweep: train\'s --head-gates values, '
        'e.g. "0.01,0.05"; each (H, D, seed) is trained once more per LAMBDA > 0 and compared '
        'with its plain run (LAMBDA = 0; docs/ablation.md, "Gate sweep")')
    add("--head-routing", metavar="LIST", help='routing sweep: train\'s --head-routing values, '
        'e.g. "1 2"; each (H, D, seed) with H > K is trained once more per K and compared with '
        'the plain runs of H = K and of its H (docs/ablation.md, "Routing sweep")')
    add("--jobs", type=int, metavar="N", help="runs at once (default: the cores)")
    add("--threads", type=int, metavar="N", help="threads per run (default: cores / jobs)")
    add("--quick", action="store_true", help="tiny models, 30 steps, H 1 4, 2 seeds, 100 kB")
    add("--long", action="store_true", help="enough tokens for induction heads to form")
    add("--lesson", action="store_true", help="about 30 minutes on 2 cores: width arm, L 1 2, "
        "H 1 4 16, 3 seeds, 4000 steps, built-in corpus unless --data or --corpus")
    add("--bin", metavar="DIR", default=REPO, help="where train and infer are")
    add("--check", action="store_true", help="check the outputs in --out; exit 1 if bad")
    add("--report-only", action="store_true", help="rebuild the report from finished runs")
    add("--print-jobs", action="store_true", help="print one command per unfinished run")
    add("--job", metavar="NAME", help=argparse.SUPPRESS)  # one run; what --print-jobs prints
    a = p.parse_args(argv)
    if a.builtin and a.corpus not in (None, "text"):
        fail("--builtin is --corpus text; it contradicts --corpus %s" % a.corpus)
    a.corpus = a.corpus or ("text" if a.builtin else None)
    if a.quick + a.long + a.lesson > 1 or (a.data and a.corpus):
        fail("--quick, --long and --lesson, and --data and --corpus/--builtin, are exclusive")
    if a.lesson:
        a.heads = a.heads or LESSON["heads"]
        a.seeds = a.seeds or LESSON["seeds"]
        a.arm = a.arm or LESSON["arm"]
        a.steps = a.steps or LESSON["steps"]
        a.layers = a.layers or LESSON["layers"]
    a.corpus = a.corpus or (None if a.data else "text")
    a.arm = a.arm or "both"
    if not (a.quick or a.long or a.lesson or a.corpus == "induction"):
        a.layers = a.layers or DEFAULT_LAYERS
    for k in ("seeds", "head_size", "steps", "jobs", "threads", "vocab"):
        if getattr(a, k) is not None and getattr(a, k) < 1:
            fail("--%s %d: must be at least 1" % (k.replace("_", "-"), getattr(a, k)))
    if a.heads is not None and not a.heads.replace(",", " ").split():
        fail("--heads '%s': expected whole numbers like \"1 4 8 16\"" % a.heads)
    a.layer_list = parse_layers(a.layers)
    a.gates = parse_gates(a.head_gates)
    a.routes = parse_routes(a.head_routing)
    if a.gates is not None and a.routes is not None:
        fail("--head-routing and --head-gates both choose which heads a token uses (train "
             "refuses the pair); give one per sweep")
    a.out = os.path.abspath(a.out or default_out(a))
    check_out(a.out, fresh=not (a.job or a.check or a.report_only))
    a.bin = os.path.abspath(a.bin)
    return a


def parse_layers(text):
    """--layers LIST as the sorted distinct depths (each checked against train's range
    in make_plan, before any training); None without the flag."""
    if text is None:
        return None
    words = text.replace(",", " ").split()
    bad = [w for w in words if not w.isdigit() or int(w) < 1]
    if not words or bad:
        fail("--layers '%s': %s; expected whole numbers of at least 1 like \"1 2 4\"" % (
            text, "'%s' is not one" % bad[0] if bad else "empty"))
    return sorted({int(w) for w in words})


def parse_gates(text):
    """--head-gates LIST as the sorted distinct LAMBDAs > 0 (0, the plain run, is in
    every sweep); None without the flag."""
    if text is None:
        return None
    try:
        vals = [float(x) for x in text.replace(",", " ").split()]
    except ValueError:
        vals = []
    if not vals or not all(math.isfinite(v) and v >= 0 for v in vals):
        fail("--head-gates '%s': expected numbers >= 0 like \"0.01,0.05\"" % text)
    return sorted({v for v in vals if v > 0})


def parse_routes(text):
    """--head-routing LIST as the sorted distinct K (train checks each in make_plan);
    None without the flag. K = 0 is train's "every head", the plain run every sweep
    has, so it is refused rather than read as nothing."""
    if text is None:
        return None
    words = text.replace(",", " ").split()
    bad = [w for w in words if not w.lstrip("+-").isdigit() or int(w) < 1]
    if not words or bad:
        fail("--head-routing '%s': %s; expected whole numbers K >= 1 like \"1 2\"" % (
            text, "'%s' is not one" % bad[0] if bad else "empty"))
    return sorted({int(w) for w in words})


def check_out(out, fresh):
    """--out is a sweep directory of ours (it holds sweep.json), or, for a new sweep
    (fresh), a new or empty directory: a file, a device or someone else's directory
    is refused before anything is written."""
    try:
        st = os.stat(out)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(out))
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            fail("--out %s: %s is not a directory" % (out, parent))
        return
    except OSError as e:
        fail("--out %s: %s" % (out, e.strerror))
    if not stat.S_ISDIR(st.st_mode):
        fail("--out %s exists and is not a directory; give a new directory name" % out)
    if os.path.exists(os.path.join(out, "sweep.json")):
        return
    names = os.listdir(out)
    if names or not fresh:
        fail("--out %s %s no sweep.json: not a sweep directory of this script; give a new or "
             "empty directory" % (out, "holds %d file(s) but" % len(names) if names else "has"))


def default_out(a):
    """runs/ablation, followed by every setting of a run that differs from the default
    sweep's (on the built-in text corpus): another corpus, the preset, the data file's
    name, --vocab, --steps, --head-size, --head-dropout. Two sweeps whose runs differ
    never share it; --heads, --seeds and --arm only add runs to a sweep, so they are not
    part of it."""
    parts = ["ablation"] + ([a.corpus] if a.corpus not in (None, "text") else []) + (
        ["quick" if a.quick else "long" if a.long else "lesson"]
        if a.quick or a.long or a.lesson else [])
    if a.data:
        parts.append("data-" + os.path.splitext(os.path.basename(a.data))[0])
    if a.heads_file:
        parts.append("heads-" + os.path.splitext(os.path.basename(a.heads_file))[0])
    parts += ["v%d" % a.vocab] if a.vocab else []
    parts += ["steps%d" % a.steps] if a.steps and not (
        a.lesson and a.steps == LESSON["steps"]) else []
    parts += ["D%d" % a.head_size] if a.head_size else []
    parts += ["hd%g" % a.head_dropout] if a.head_dropout else []
    return os.path.join(REPO, "runs", "-".join(parts))


def print_settings(train, flags):
    r = subprocess.run([train, "--print-settings"] + flags, capture_output=True, text=True)
    if r.returncode:
        # train's own first line says what is wrong (the second points to --help)
        fail("%s --print-settings %s: %s" % (train, " ".join(flags),
                                              (r.stderr.strip().splitlines() or ["failed"])[0]))
    return json.loads(r.stdout)


def check_gates(train, flags, text):
    """Each LAMBDA of --head-gates LIST, as train reads it (its range, and a number
    that would be 0 only by underflow), before anything trains: a value train
    refuses would fail every gated run."""
    for v in sorted(set(text.replace(",", " ").split())):
        r = subprocess.run([train, "--print-settings", "--head-gates", v] + flags,
                           capture_output=True, text=True)
        if r.returncode:
            lines = r.stderr.strip().splitlines() or ["exit %d" % r.returncode]
            fail("--head-gates '%s': %s" % (text, lines[0].replace("train: error: ", "train: ")))


def check_routes(train, flags, routes):
    """Each K of --head-routing LIST, as train reads it (its range), before anything
    trains; asked with --heads K, where routing K heads of K is allowed."""
    for K in routes:
        r = subprocess.run([train, "--print-settings", "--head-routing", str(K), "--heads",
                            str(K)] + flags, capture_output=True, text=True)
        if r.returncode:
            lines = r.stderr.strip().splitlines() or ["exit %d" % r.returncode]
            fail("--head-routing %d: %s" % (K, lines[0].replace("train: error: ", "train: ")))


def long_steps(s):
    """Induction heads form after about 10^5.7 sqrt(B T) tokens (Aoyama, Wilcox & Schneider
    2025); --long gives 10% more, at least 1.5e7, in whole thousands of steps."""
    tokens = max(1.5e7, 1.1 * 10 ** 5.7 * math.sqrt(s["batch"] * s["block"]))
    return int(math.ceil(tokens / (s["batch"] * s["block"]) / 1000.0) * 1000)


def make_plan(a):
    """sweep.json's contents: train's settings shared by every run (the fingerprint),
    what to train, and the flags jobs pass to train and infer."""
    train = os.path.join(a.bin, "train")
    if not os.access(train, os.X_OK) or not os.access(os.path.join(a.bin, "infer"), os.X_OK):
        fail("%s/train or infer: not found (build them, or give --bin DIR)" % a.bin)
    induction = a.corpus == "induction"
    source = os.path.abspath(a.data) if a.data else None
    # Jobs add --data to train's flags; the settings asked of train must have it too,
    # as a --data run keeps train's defaults where the built-in corpus has its recipe.
    data = ["--data", source] if source else []
    flags = ["--corpus", a.corpus] if a.corpus else []
    flags += (QUICK_INDUCTION if induction else QUICK_TRAIN) if a.quick else []
    flags += ["--vocab", str(a.vocab)] if a.vocab else []
    if a.steps or a.long:
        steps = a.steps or long_steps(print_settings(train, flags + data))
        flags += ["--steps", str(steps)]
        # The recipe warms up for a fifth of its 4,000 steps (800); a shorter sweep
        # warms up for a fifth of its own, or the warm-up would be most of the run.
        if a.corpus == "text" and not a.quick and steps // 5 < print_settings(
                train, flags)["warmup"]:
            flags += ["--warmup", str(max(1, steps // 5))]
    if a.head_dropout is not None:
        flags += ["--head-dropout", repr(a.head_dropout)]
    s = print_settings(train, flags + data)
    if a.head_gates is not None:
        check_gates(train, flags + data, a.head_gates)
    if a.routes:
        check_routes(train, flags + data, a.routes)
    try:
        given = a.heads if a.heads is not None else "1 4" if a.quick else "1 4 8 16"
        heads = sorted({int(x) for x in given.replace(",", " ").split()})
    except ValueError:
        fail("--heads '%s': expected whole numbers like \"1 4 8 16\"" % a.heads)
    arms = ["width", "headsize"] if a.arm == "both" else [a.arm]
    if not heads or heads[0] < 1 or ("width" in arms and any(s["embd"] % H for H in heads)):
        fail("--heads '%s': each H at least 1 and, for the width arm, dividing C=%d"
             % (a.heads, s["embd"]))
    # Every depth is train's to check (its range, its message), before anything runs.
    layers = a.layer_list or [s["layers"]]
    for L in layers:
        if L != s["layers"]:
            print_settings(train, flags + data + ["--layers", str(L)])
    blob = cli.read_input(source, "training file") if source else None
    conllu = bool(source) and source.endswith(".conllu")
    if blob is not None and a.quick:
        blob = blob[:QUICK["slice"]]
        if conllu:  # whole sentences: a CoNLL-U sentence ends at a blank line
            cut = blob.rfind(b"\n\n")
            blob = blob[:cut + 2] if cut >= 0 else blob
    heads_file = os.path.abspath(a.heads_file) if a.heads_file else None
    heads_sha = hashlib.sha256(cli.read_input(heads_file, "--heads-file")).hexdigest() \
        if heads_file else None
    fp = {k: v for k, v in s.items() if k not in PER_RUN}
    fp.update(data=source, data_bytes=len(blob) if source else None,
              data_sha256=hashlib.sha256(blob).hexdigest() if source else None,
              data_slice=QUICK["slice"] if a.quick and source else None,
              heads_file=heads_file, heads_file_sha256=heads_sha,
              fixed_head_size=a.head_size or s["embd"] // s["heads"])
    mode = "quick" if a.quick else "long" if a.long else "lesson" if a.lesson else "default"
    gates, routes = a.gates or [], a.routes or []
    nseeds = a.seeds or (QUICK["seeds"] if a.quick else SEEDS["induction" if induction else "text"])
    return {"version": 2, "fingerprint": fp, "mode": mode, "arms": arms, "heads": heads,
            "layers": layers,
            "seeds": list(range(1, nseeds + 1)), "train_args": flags,
            "log_args": ["--heads-every", str(HEADS_EVERY.get(mode, 50))] if induction else [],
            "heads_args": (QUICK["heads_args"] if a.quick else []) + (
                ["--prune-curve"] if gates else []), "gates": gates, "routes": routes,
            "train_data": (os.path.join(a.out, "data.conllu" if conllu else "data.txt")
                           if a.quick else source) if source else None,
            "val_file": heads_file or "val.txt"}, blob


def prepare(a, sweep, blob):
    """Writes DIR/sweep.json (refusing other settings), the --quick data slice and
    DIR/val.txt, the bytes ./train holds out (from ./train --dump-val)."""
    path = os.path.join(a.out, "sweep.json")
    try:
        old = rep.read_sweep(a.out) if os.path.exists(path) else None
    except ValueError as e:  # a sweep.json that is not ours
        fail(str(e), 1)
    if old and old["fingerprint"] != sweep["fingerprint"]:
        new, was = sweep["fingerprint"], old["fingerprint"]
        fail("%s holds a sweep with other settings (%s); give another --out or remove it" % (
            a.out, ", ".join("%s: %s here, %s there" % (k, new.get(k), was.get(k))
                             for k in sorted(set(new) | set(was)) if new.get(k) != was.get(k))))
    if old and "layers" not in old:  # a sweep from before --layers: train's depth only
        old["layers"] = [old["fingerprint"]["layers"]]
    for k in ("heads", "seeds", "arms", "gates", "layers", "routes"):  # a rerun may add
        sweep[k] = sorted(set(sweep[k]) | set(old.get(k, []) if old else []))
    if sweep["gates"] and sweep["routes"]:
        fail("%s holds a %s sweep; --%s would add the other kind of twin to it (train "
             "refuses the pair in one run); give another --out" % (
                 a.out, "gate" if (old or {}).get("gates") else "routing",
                 "head-routing" if (old or {}).get("gates") else "head-gates"))
    if sweep["gates"] and "--prune-curve" not in sweep["heads_args"]:
        sweep["heads_args"].append("--prune-curve")  # the gate report reads it
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    data = sweep["train_data"]
    if data and sweep["fingerprint"]["data_slice"]:
        if not os.path.exists(data) or open(data, "rb").read() != blob:
            cli.write_file(data, blob)
    cmd = [os.path.join(a.bin, "train"), "--dump-val", os.path.join(a.out, "val.txt")]
    r = subprocess.run(cmd + sweep["train_args"] + (["--data", data] if data else []),
                       capture_output=True, text=True)
    if r.returncode:
        fail("%s: %s" % (" ".join(cmd), r.stderr.strip()), 1)
    rep.write_json(path, sweep)


def job_command(a, name):
    """The self-contained shell command of one run (absolute paths)."""
    cmd = ["python3", os.path.join(HERE, "ablate.py"), "--job", name, "--out", a.out,
           "--bin", a.bin] + (["--threads", str(a.threads)] if a.threads else [])
    return shlex.join(cmd)


# ---- one job: train (or resume), then the heads analysis ----

def call(cmd, err):
    with open(err, "a") as f:
        f.write("$ %s\n" % shlex.join(cmd))
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=f).returncode


def sound_ckpt(path):
    """Whether path is a checkpoint as long as its header says (a truncated one is
    trained again)."""
    try:
        checkpoint.check_size(path)
        return True
    except checkpoint.CheckpointError:
        return False


def job_train(a, sweep, run, part):
    ckpt, log, err = (os.path.join(part, x) for x in ("model.ckpt", "run.jsonl", "train.err"))
    final = runlog.read(log).final if os.path.exists(log) else None
    steps = sweep["fingerprint"]["steps"]
    if os.path.exists(ckpt) and final and final["step"] == steps and sound_ckpt(ckpt):
        return 0
    data = ["--data", sweep["train_data"]] if sweep["train_data"] else []
    common = ["--out", ckpt, "--log", log] + sweep.get("log_args", []) + data + (
        ["--threads", str(a.threads)] if a.threads else [])
    train = os.path.join(a.bin, "train")
    if os.path.exists(ckpt):
        rc = call([train, "--resume", ckpt] + common, err)
        if rc == 0 or a.stopped:
            return rc
        with open(err, "a") as f:
            f.write("ablate: resuming failed (exit %d); starting this run again\n" % rc)
    for f in (ckpt, log):
        if os.path.exists(f):
            os.remove(f)
    # a gated or routed run: the plain run's command and its one flag more
    twin = ["--head-gates", repr(run["gate"])] if run.get("gate") else [
        "--head-routing", str(run["route"])] if run.get("route") else []
    # train's own depth gets no flag, so its runs keep the bits they had before --layers.
    depth = ["--layers", str(run["L"])] if run["L"] != sweep["fingerprint"]["layers"] else []
    return call([train] + sweep["train_args"] + depth + ["--heads", str(run["H"]),
                "--head-size", str(run["D"]), "--seed", str(run["seed"])] + twin + common, err)


def job_heads(a, sweep, part):
    tmp, out = os.path.join(part, "heads.tmp"), os.path.join(part, "heads")
    cmd = [os.path.join(a.bin, "infer"), "--ckpt", os.path.join(part, "model.ckpt"),
           "--heads", os.path.join(a.out, sweep["val_file"]), "--report", tmp]
    cmd += sweep["heads_args"] + (["--threads", str(a.threads)] if a.threads else [])
    rc = call(cmd, os.path.join(part, "heads.err"))
    if rc == 0:
        shutil.rmtree(out, ignore_errors=True)
        os.rename(tmp, out)
    return rc


def run_job(a):
    """--job NAME: one run start to finish; exit 0 done, 130 stopped by a signal."""
    try:
        sweep = rep.read_sweep(a.out)
    except ValueError as e:  # a sweep.json that is not ours
        fail(str(e), 1)
    run = next((r for r in rep.all_runs(sweep) if r["name"] == a.job), None)
    if run is None:
        fail("--job %s: not a run of the sweep in %s" % (a.job, a.out))
    final = os.path.join(a.out, "runs", a.job)
    why = rep.unfinished(a.out, run)
    if why is None:
        return 0
    part = final + ".partial"
    if os.path.lexists(final):
        set_aside(final, why)
    os.makedirs(part, exist_ok=True)
    a.stopped = False

    def on_signal(sig, frame):  # train got it too (same process group): let it save
        a.stopped = True
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    rc = job_train(a, sweep, run, part)
    if rc == 0 and not a.stopped:
        rc = job_heads(a, sweep, part)
    if rc or a.stopped:
        return 130 if a.stopped else 1
    rep.write_json(os.path.join(part, "done.json"), run)
    os.rename(part, final)
    return 0


def set_aside(final, why):
    """A run directory that is not a finished run (a damaged done.json or
    model.ckpt: why) is renamed to NAME.damaged (NAME.damaged.2, ... when taken),
    kept for a look, and the run is trained again."""
    for k in range(1, 1000):
        aside = final + ".damaged" + ("" if k == 1 else ".%d" % k)
        if not os.path.lexists(aside):
            break
    else:
        fail("%s is not a finished run (%s), and no name is free to set it aside"
             % (final, why), 1)
    try:
        os.rename(final, aside)
    except OSError as e:
        fail("%s is not a finished run (%s) and cannot be set aside: %s" % (final, why,
                                                                            e.strerror), 1)
    say("%s is not a finished run (%s): set aside as %s, training it again"
        % (final, why, os.path.basename(aside)))


# ---- the sweep: a short loop over job processes ----

def last_step(a, name):
    path = os.path.join(a.out, "runs", name + ".partial", "run.jsonl")
    steps = runlog.read(path).steps if os.path.exists(path) else []
    return steps[-1]["step"] if steps else 0


def is_done(a, r):
    return rep.unfinished(a.out, r) is None


def status_line(a, sweep, queue, procs, t0, work):
    """Progress, and an ETA from the work (multiply-adds per step x steps) done so far
    in this invocation; the heads analyses are not counted."""
    steps, left, running = sweep["fingerprint"]["steps"], 0.0, []
    for r, _, first in procs.values():
        step = last_step(a, r["name"])
        work, left = work + r["cost"] * (step - first), left + r["cost"] * (steps - step)
        running.append("%s %d/%d" % (r["name"], step, steps))
    left += sum(r["cost"] * steps for r in queue)
    el, runs = time.time() - t0, rep.all_runs(sweep)
    return "%d/%d runs done | running: %s | elapsed %s | eta %s" % (
        sum(map(lambda r: is_done(a, r), runs)), len(runs), ", ".join(running) or "-",
        duration(el), duration(left * el / work) if work > 0 and el > 5 else "…")


def first_error(a, name):
    """": " and the first error line train or infer wrote for a failed run, or ""."""
    for log in ("train.err", "heads.err"):
        path = os.path.join(a.out, "runs", name + ".partial", log)
        try:
            with open(path, "rb") as f:
                for line in f.read().decode("utf-8", "replace").splitlines():
                    if ": error: " in line:
                        return ": " + line.strip()
        except OSError:
            pass
    return ""


def sweep_loop(a, sweep, todo):
    """Runs the jobs' commands, --jobs at a time, each in its own process group so that
    one Ctrl-C reaches every train once, through us. Returns (failed, stopped, seconds)."""
    procs, failed, stop, work, queue = {}, [], [0], 0.0, list(todo)

    def on_signal(sig, frame):  # the first: trains save and exit; the second: at once
        stop[0] += 1
        say("stopping: running trains save their checkpoints (signal again: at once)")
        for _, p, _ in procs.values():
            os.killpg(p.pid, signal.SIGINT)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    t0, shown, interval = time.time(), 0.0, 5 if sweep["mode"] == "quick" else 30
    while procs or (queue and not stop[0]):
        while queue and len(procs) < a.jobs and not stop[0]:
            r = queue.pop(0)
            procs[r["name"]] = (r, subprocess.Popen(shlex.split(job_command(a, r["name"])),
                                                    start_new_session=True),
                                last_step(a, r["name"]))
        time.sleep(0.2)
        for name, (r, p, first) in list(procs.items()):
            if p.poll() is not None:
                del procs[name]
                shown = 0
                if p.returncode == 0:
                    work += r["cost"] * (sweep["fingerprint"]["steps"] - first)
                    fin = runlog.read(os.path.join(a.out, "runs", name, "run.jsonl")).final
                    say("done %s (arm %s): val loss %.4f" % (name, "+".join(r["arms"]),
                                                             fin["val_loss"]))
                    try:  # a report that fails must not orphan the running jobs
                        rep.write_all(a.out)
                    except Exception as e:
                        say("warning: report not rebuilt: %s: %s" % (type(e).__name__, e))
                elif not stop[0]:
                    failed.append(name)
                    say("FAILED %s (exit %d)%s; see %s/runs/%s.partial/*.err"
                        % (name, p.returncode, first_error(a, name), a.out, name))
        if time.time() - shown >= interval:
            say(status_line(a, sweep, queue, procs, t0, work))
            shown = time.time()
    return failed, stop[0], time.time() - t0


def compare_ckpts(a, sweep):
    """compare_gates.html's checkpoints: per (L, H, D), ordered so, the first seed's plain
    model and then its gated ones, finished runs only, at most MAX_COMPARE."""
    done = [r for r in rep.runs_of(sweep) + rep.gate_runs_of(sweep) if is_done(a, r) and
            os.path.isfile(os.path.join(a.out, "runs", r["name"], "model.ckpt"))]
    first = {}
    for r in done:
        k = (r["L"], r["H"], r["D"])
        first[k] = min(first.get(k, r["seed"]), r["seed"])
    pick = sorted((r for r in done if r["seed"] == first[r["L"], r["H"], r["D"]]),
                  key=lambda r: (r["L"], r["H"], r["D"], r["gate"]))
    return [os.path.join(a.out, "runs", r["name"], "model.ckpt") for r in pick][:MAX_COMPARE]


# The compare pages' text: the validation text from its first whole line (the split
# falls at a byte, often inside a word).
COMPARE_TEXT = "compare_text.txt"


def from_a_line_start(data):
    """data from the byte after its first newline, where one ends a line in the first
    4 kB and text follows it; else from after the first space; else all of it."""
    for sep in (b"\n", b" "):
        at = data.find(sep, 0, 4096)
        if at >= 0 and data[at + 1:].strip():
            return data[at + 1:]
    return data


def depth_ckpts(a, sweep):
    """{L: checkpoints} for the compare pages of a sweep of several depths: at each L
    the first seed's model of each plain H and D, finished runs only, by H then D."""
    done = [r for r in rep.runs_of(sweep) if is_done(a, r) and
            os.path.isfile(os.path.join(a.out, "runs", r["name"], "model.ckpt"))]
    first = {}
    for r in done:
        k = (r["L"], r["H"], r["D"])
        first[k] = min(first.get(k, r["seed"]), r["seed"])
    pages = {}
    for r in sorted(done, key=lambda r: (r["L"], r["H"], r["D"])):
        if r["seed"] == first[r["L"], r["H"], r["D"]]:
            pages.setdefault(r["L"], []).append(
                os.path.join(a.out, "runs", r["name"], "model.ckpt"))
    return pages


def write_compare(a, sweep):
    """index.html's compare pages (ablate_page.COMPARE), by ./infer --explore on the
    start of the validation text: compare.html from the sweep directory (the first
    seed of each plain H and D) or, where the sweep has several depths, one page per
    depth, compare-L<L>.html (H is compared at a fixed depth, and the full sweep's 21
    shapes would not fit on one page); with gated runs compare_gates.html. A page infer
    cannot write is left out with a warning; the report does not depend on it."""
    val = os.path.join(a.out, sweep.get("val_file", "val.txt"))
    if not os.path.isfile(val) or not any(
            is_done(a, r) and os.path.isfile(os.path.join(a.out, "runs", r["name"], "model.ckpt"))
            for r in rep.runs_of(sweep)):
        return  # nothing to show: no finished model, or no validation text
    if len(rep.depths(sweep)) > 1:
        pages = [("compare-L%d.html" % L, ckpts) for L, ckpts in
                 sorted(depth_ckpts(a, sweep).items())]
    else:
        pages = [("compare.html", [a.out])]
    if sweep.get("gates"):
        pages.append(("compare_gates.html", compare_ckpts(a, sweep)))
    text = os.path.join(a.out, COMPARE_TEXT)
    cli.write_file(text, from_a_line_start(cli.read_input(val)))
    for name, ckpts in pages:
        path = os.path.join(a.out, name)
        cmd = [os.path.join(a.bin, "infer")] + [x for c in ckpts for x in ("--ckpt", c)] + [
            "--explore", path + ".tmp", "--text-file", text, "--threads", str(a.threads or 1)]
        if os.path.exists(path + ".tmp"):
            os.remove(path + ".tmp")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            say("warning: %s not written: %s" % (name, r.stderr.strip().splitlines()[-1:]))
            continue
        os.replace(path + ".tmp", path)


def check_or_report(a):
    """--check and --report-only: read the sweep in --out, run nothing."""
    if not os.path.exists(os.path.join(a.out, "sweep.json")):
        fail("%s/sweep.json: missing (is --out a sweep directory?)" % a.out, 1)
    try:
        if a.report_only:
            rep.write_all(a.out)  # reads and checks every file of the sweep first
            write_compare(a, rep.read_sweep(a.out))
            say("report: %d rows in %s" % (rep.write_all(a.out), a.out))
            return 0
        problems = rep.check(a.out)
    except ValueError as e:  # a file of the sweep that is not what train and infer write
        fail(str(e), 1)
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        fail("%s: not a sweep this script wrote (%s: %s)" % (a.out, type(e).__name__, e), 1)
    for msg in problems + ["%s: %s" % (a.out, "%d problem(s)" % len(problems) if problems
                                       else "all outputs present and well formed")]:
        print("ablate --check: %s" % msg, file=sys.stderr)
    return 1 if problems else 0


def main(argv):
    a = parse_args(argv)
    if a.job:
        return run_job(a)
    if a.check or a.report_only:
        return check_or_report(a)
    sweep, blob = make_plan(a)
    prepare(a, sweep, blob)
    runs = rep.all_runs(sweep)
    todo = [r for r in runs if not is_done(a, r)]
    if a.print_jobs:
        for r in todo:
            print(job_command(a, r["name"]))
        say("%d job(s) for %s; afterwards: scripts/ablate.sh --report-only --out %s"
            % (len(todo), a.out, shlex.quote(a.out)))
        return 0
    cores = len(os.sched_getaffinity(0))
    a.jobs = a.jobs or max(1, min(cores, len(todo)))
    a.threads = a.threads or max(1, cores // a.jobs)
    if a.jobs * a.threads > cores:
        fail("--jobs %d x --threads %d = %d threads, more than the %d cores; runs would slow "
             "each other down" % (a.jobs, a.threads, a.jobs * a.threads, cores))
    shared = sum(len(r["arms"]) for r in runs) - len(runs)
    say("%s sweep into %s: %d runs (%d arm-runs; %d shared by both arms), %d finished earlier, "
        "%d to do; %d job(s) x %d thread(s); data %s" % (
            sweep["mode"], a.out, len(runs), len(runs) + shared, shared, len(runs) - len(todo),
            len(todo), a.jobs, a.threads, sweep["train_data"] or "built-in corpus"))
    failed, stopped, took = sweep_loop(a, sweep, todo)
    if not stopped:
        write_compare(a, sweep)
    n = rep.write_all(a.out)
    if stopped:
        say("interrupted after %s; run the same command again to continue (unfinished runs "
            "resume from their checkpoints)" % duration(took))
        return 130
    say("%d/%d runs done in %s%s; report (%d rows): %s" % (
        len(runs) - len(failed), len(runs), duration(took), "; %d FAILED (rerun to retry)"
        % len(failed) if failed else "", n, os.path.join(a.out, "ablation.md")))
    return 1 if failed else 0


if __name__ == "__main__":
    cli.run("ablate", main)
