#!/usr/bin/env python3
"""ablate_sweep: runs the head-count ablation (issue 5) and writes its report.

Two arms over H in --heads and --seeds seeds: fixed width (C fixed, D = C/H) and
fixed head size (D fixed, attention width H·D). Each run is ./train, then
./infer --eval on the validation split, then ./infer --heads on it; the results
go to DIR/runs/NAME/ and the sweep's tables and plots are rebuilt by
ablate_report.py after every finished run. Called by scripts/ablate.sh, which
documents the flags (docs/ablation.md has the design).

Resuming: a run works in DIR/runs/NAME.partial and becomes DIR/runs/NAME (with
done.json, written last) only when train, eval and heads are all done; a rerun
skips finished runs and continues an interrupted one from its checkpoint with
./train --resume (bit-exact), so an interrupted sweep loses at most the steps
since the last save. Standard library only.
"""
import argparse
import hashlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import ablate_check  # noqa: E402
import ablate_report  # noqa: E402

REPO = os.path.dirname(HERE)
DEFAULT_DATA = os.path.normpath(os.path.join(REPO, "..", "shared", "data", "tinyshakespeare.txt"))
VAL_FRAC = 0.1                       # train's default --val-frac
MODEL = {"layers": 4, "embd": 128, "block": 64, "batch": 12}   # train's defaults
QUICK = {"layers": 1, "embd": 32, "block": 32, "batch": 12, "steps": 30, "heads": "1 4",
         "seeds": 2, "slice_bytes": 100000,
         "train_args": ["--warmup", "10", "--eval-every", "10", "--eval-iters", "4"],
         "heads_args": ["--windows", "2"]}
# --long: induction heads are reported to form after about 10^5.7 * sqrt(B*T) tokens
# (Aoyama, Wilcox & Schneider 2025); we give at least 1.5e7 tokens, 10% above that.
LONG_TOKENS = max(1.5e7, 1.1 * 10 ** 5.7 * math.sqrt(MODEL["batch"] * MODEL["block"]))


def duration(s):
    """Seconds as 45s, 1m21s, 2h03m (as train prints them)."""
    s = max(0, int(round(s)))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60)
    return "%dh%02dm" % (s // 3600, s % 3600 // 60)


def usage_error(msg):
    print("ablate: error: %s" % msg, file=sys.stderr)
    sys.exit(2)


def write_atomic(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def write_json(path, obj):
    write_atomic(path, (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="scripts/ablate.sh",
        description="Head-count ablation: trains every (arm, H, seed), scores it, analyses "
                    "its heads, and writes ablation.csv, ablation.md, plots/*.svg and "
                    "index.html into --out. Rerunning skips finished runs and resumes "
                    "interrupted ones. See docs/ablation.md.")
    p.add_argument("--data", metavar="FILE", help="text to train on (default: %s if present, "
                   "else the built-in corpus)" % os.path.relpath(DEFAULT_DATA, REPO))
    p.add_argument("--builtin", action="store_true", help="use the built-in corpus even if "
                   "the default file exists")
    p.add_argument("--out", metavar="DIR", help="output directory (default: runs/ablation, "
                   "runs/ablation-quick with --quick, runs/ablation-long with --long)")
    p.add_argument("--heads", metavar="LIST", help='head counts H (default: "1 4 8 16"; '
                   'quick: "1 4")')
    p.add_argument("--seeds", type=int, metavar="N", help="seeds 1..N per (arm, H) "
                   "(default: 3; quick: 2)")
    p.add_argument("--arm", choices=["width", "headsize", "both"], default="both",
                   help="width: C fixed, D = C/H; headsize: D fixed; both (default)")
    p.add_argument("--head-size", type=int, metavar="D", help="the fixed D of the head-size "
                   "arm (default: C/4, i.e. 32, the head size of train's default H=4)")
    p.add_argument("--steps", type=int, metavar="N", help="optimizer steps per run (default: "
                   "2000; quick: 30; long: %d)" % long_steps())
    p.add_argument("--jobs", type=int, metavar="N", help="runs in parallel (default: the "
                   "number of cores)")
    p.add_argument("--threads", type=int, metavar="N", help="OpenMP threads per run (default: "
                   "cores / jobs; jobs x threads may not exceed the cores)")
    p.add_argument("--quick", action="store_true", help="tiny models (L=1, C=32, T=32), 30 "
                   "steps, H in 1 4, 2 seeds, a 100 kB data slice: the whole pipeline in "
                   "about a minute (CI)")
    p.add_argument("--long", action="store_true", help="%d steps (%.2g tokens) per run, "
                   "enough for induction heads to have a chance to form" %
                   (long_steps(), long_steps() * MODEL["batch"] * MODEL["block"]))
    p.add_argument("--bin", metavar="DIR", default=REPO, help="where train and infer are "
                   "(default: the repository root)")
    p.add_argument("--check", action="store_true", help="only check that the outputs in "
                   "--out exist and are well formed; exit 1 if not")
    p.add_argument("--report-only", action="store_true", help="only rebuild the report from "
                   "the finished runs in --out")
    a = p.parse_args(argv)
    if a.quick and a.long:
        usage_error("--quick and --long are exclusive")
    if a.data and a.builtin:
        usage_error("--data and --builtin are exclusive")
    return a


def long_steps():
    per_step = MODEL["batch"] * MODEL["block"]
    return int(math.ceil(LONG_TOKENS / per_step / 1000.0) * 1000)


def positive(name, v):
    if v is not None and v < 1:
        usage_error("--%s %d: must be at least 1" % (name, v))
    return v


class Plan:
    """The settings of a sweep, the val split, and the list of distinct runs."""

    def __init__(self, a):
        self.mode = "quick" if a.quick else "long" if a.long else "default"
        model = dict(MODEL)
        if a.quick:
            model.update({k: QUICK[k] for k in MODEL})
        self.C = model["embd"]
        self.fixed_D = positive("head-size", a.head_size) or self.C // 4
        self.steps = positive("steps", a.steps) or (QUICK["steps"] if a.quick else
                                                    long_steps() if a.long else 2000)
        heads = a.heads if a.heads is not None else QUICK["heads"] if a.quick else "1 4 8 16"
        try:
            self.heads = sorted({int(x) for x in re.split(r"[\s,]+", heads.strip()) if x})
        except ValueError:
            usage_error("--heads '%s': expected whole numbers like \"1 4 8 16\"" % heads)
        if not self.heads or min(self.heads) < 1:
            usage_error("--heads '%s': give one or more counts, each at least 1" % heads)
        n = positive("seeds", a.seeds) or (QUICK["seeds"] if a.quick else 3)
        self.seeds = list(range(1, n + 1))
        self.arms = ["width", "headsize"] if a.arm == "both" else [a.arm]
        if "width" in self.arms:
            bad = [H for H in self.heads if self.C % H]
            if bad:
                usage_error("--heads: H=%s do not divide C=%d, which the fixed-width arm needs"
                            % (",".join(map(str, bad)), self.C))
        default_out = {"default": "runs/ablation", "quick": "runs/ablation-quick",
                       "long": "runs/ablation-long"}[self.mode]
        self.out = os.path.abspath(a.out) if a.out else os.path.join(REPO, default_out)
        self.bin = os.path.abspath(a.bin)
        self.train_args = list(QUICK["train_args"]) if a.quick else []
        self.heads_args = list(QUICK["heads_args"]) if a.quick else []
        if a.builtin:
            self.source = None
        elif a.data:
            self.source = os.path.abspath(a.data)
            if not os.path.isfile(self.source):
                usage_error("--data %s: no such file" % a.data)
        else:
            self.source = DEFAULT_DATA if os.path.isfile(DEFAULT_DATA) else None
        self.slice = QUICK["slice_bytes"] if a.quick else None
        size = os.path.getsize(self.source) if self.source else 1000000
        self.val_bytes = int(min(size, self.slice or size) * VAL_FRAC)
        self.model = model
        self.runs = self._runs()

    def _runs(self):
        """Distinct (H, D, seed) runs, seed by seed, the costliest first within a seed
        (so parallel jobs finish together). An H in both arms with the same D is one run."""
        runs = {}
        for seed in self.seeds:
            for arm in self.arms:
                for H in self.heads:
                    D = self.C // H if arm == "width" else self.fixed_D
                    key = "H%02d-D%03d-s%d" % (H, D, seed)
                    runs.setdefault(key, {"name": key, "H": H, "D": D, "seed": seed,
                                          "arms": []})["arms"].append(arm)
        out = list(runs.values())
        out.sort(key=lambda r: (r["seed"], -self.step_cost(r)))
        return out

    def run_steps(self):
        """A run's work in training steps: its steps plus its evaluations (train's
        whole-split eval and ./infer --eval each a forward pass over the val split,
        a forward being about a third of a training step; heads analysis not counted)."""
        val_bytes = self.val_bytes or 0
        tokens = self.model["batch"] * self.model["block"]
        return self.steps + 2.0 * val_bytes / 3.0 / tokens

    def step_cost(self, r):
        """Rough multiply-adds per token: attention and MLP matrices, attention scores,
        the output layer. Only ratios matter (the ETA)."""
        L, C, T, HD = self.model["layers"], self.C, self.model["block"], r["H"] * r["D"]
        return L * (4 * C * HD + 8 * C * C + T * HD) + C * 65

    def fingerprint(self, data_path):
        """What every run of a sweep shares; a rerun into the same --out must match it."""
        blob = None
        if data_path:
            with open(data_path, "rb") as f:
                blob = f.read()
        fp = {"data": self.source if blob is not None else None,
              "data_bytes": len(blob) if blob is not None else None,
              "data_sha256": hashlib.sha256(blob).hexdigest() if blob is not None else None,
              "data_slice": self.slice if blob is not None else None, "val_frac": VAL_FRAC,
              "steps": self.steps, "fixed_head_size": self.fixed_D,
              "train_args": self.train_args}
        fp.update(self.model)
        return fp


class Sweep:
    def __init__(self, plan, jobs, threads):
        self.plan, self.jobs, self.threads = plan, jobs, threads
        self.train = os.path.join(plan.bin, "train")
        self.infer = os.path.join(plan.bin, "infer")
        self.rundir = os.path.join(plan.out, "runs")
        self.lock = threading.Lock()
        self.procs = set()
        self.stop = 0
        self.events = []
        self.heads_unavailable = None
        self.progress = {}          # name -> (stage, step, start_step)
        self.finished_units = 0.0

    # ---- setup ----

    def prepare(self):
        p = self.plan
        for exe in (self.train, self.infer):
            if not os.access(exe, os.X_OK):
                usage_error("%s: not found or not executable (build it, or give --bin DIR)" % exe)
        os.makedirs(self.rundir, exist_ok=True)
        self.data = p.source
        if p.source and p.slice:
            with open(p.source, "rb") as f:
                blob = f.read(p.slice)
            self.data = os.path.join(p.out, "data.txt")
            if not os.path.exists(self.data) or open(self.data, "rb").read() != blob:
                write_atomic(self.data, blob)
        fp = p.fingerprint(self.data)
        path = os.path.join(p.out, "sweep.json")
        old = ablate_report.read_json(path) if os.path.exists(path) else None
        if old and old["fingerprint"] != fp:
            diff = ", ".join("%s: %s here, %s there" % (k, fp.get(k), old["fingerprint"].get(k))
                             for k in sorted(set(fp) | set(old["fingerprint"]))
                             if fp.get(k) != old["fingerprint"].get(k))
            usage_error("%s holds a sweep with other settings (%s); give another --out or "
                        "remove it" % (p.out, diff))
        union = lambda k, new: sorted(set(old[k] if old else []) | set(new))  # noqa: E731
        self.val = self.write_val()
        self.sweep = {"version": 1, "fingerprint": fp, "mode": p.mode,
                      "arms": [x for x in ("width", "headsize")
                               if x in union("arms", p.arms)],
                      "heads": union("heads", p.heads), "seeds": union("seeds", p.seeds),
                      "val_file": os.path.basename(self.val) if self.val else None}
        write_json(path, self.sweep)

    def write_val(self):
        """DIR/val.txt: the bytes ./train holds out (the last n - floor((1 - f) n)), so
        ./infer --eval and --heads see exactly its val split. From ./train --dump-val
        when the trainer has it, else cut here; none for the built-in corpus without it."""
        path = os.path.join(self.plan.out, "val.txt")
        help_text = subprocess.run([self.train, "--help"], capture_output=True, text=True).stdout
        if "--dump-val" in help_text:
            cmd = [self.train, "--dump-val", path, "--val-frac", str(VAL_FRAC)]
            cmd += ["--data", self.data] if self.data else []
            if subprocess.run(cmd, capture_output=True).returncode == 0:
                return path
        if not self.data:
            return None
        with open(self.data, "rb") as f:
            blob = f.read()
        cut = int(len(blob) * (1.0 - VAL_FRAC))   # the same double arithmetic as corpus.c
        if not os.path.exists(path) or open(path, "rb").read() != blob[cut:]:
            write_atomic(path, blob[cut:])
        return path

    # ---- running one command ----

    def call(self, cmd, out_path, capture=False):
        """Runs cmd with its stderr (and stdout unless captured) appended to out_path.
        Returns (exit status, captured stdout). Not started once a stop was asked."""
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads))
        with open(out_path, "a") as log:
            log.write("\n== %s: %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), " ".join(cmd)))
            log.flush()
            with self.lock:
                if self.stop:
                    return None, ""
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else log,
                                        stderr=log, env=env, start_new_session=True, text=True)
                self.procs.add(proc)
            out, _ = proc.communicate()
            with self.lock:
                self.procs.discard(proc)
        return proc.returncode, out or ""

    def signal_all(self, sig):
        with self.lock:
            for proc in self.procs:
                try:
                    proc.send_signal(sig)
                except ProcessLookupError:
                    pass

    # ---- the stages of a run ----

    def set_stage(self, r, stage):
        """progress[name] = (stage, step reached, step this invocation started from)."""
        first = self.progress.get(r["name"], (None, 0, self.plan.steps))[2]
        self.progress[r["name"]] = (stage, self.plan.steps, first)

    def do_train(self, r, part):
        ckpt, log, err = (os.path.join(part, x) for x in ("model.ckpt", "run.jsonl", "train.err"))
        rec = ablate_report.read_log(log)
        if os.path.exists(ckpt) and rec["final"] and rec["final"]["step"] == self.plan.steps:
            self.progress[r["name"]] = ("train", self.plan.steps, self.plan.steps)
            return True
        common = ["--out", ckpt, "--log", log, "--threads", str(self.threads)]
        if os.path.exists(ckpt):
            last = rec["steps"][-1]["step"] if rec["steps"] else 0
            self.progress[r["name"]] = ("train", last, last)
            cmd = [self.train, "--resume", ckpt] + (["--data", self.data] if self.data else [])
            rc, _ = self.call(cmd + common, err)
            if rc == 0 or self.stop:
                return rc == 0
            with open(err, "a") as f:
                f.write("ablate: resuming failed (exit %s); starting this run again\n" % rc)
        for name in ("model.ckpt", "run.jsonl"):
            if os.path.exists(os.path.join(part, name)):
                os.remove(os.path.join(part, name))
        self.progress[r["name"]] = ("train", 0, 0)
        m = self.plan.model
        cmd = [self.train, "--layers", str(m["layers"]), "--embd", str(m["embd"]),
               "--block", str(m["block"]), "--batch", str(m["batch"]), "--heads", str(r["H"]),
               "--head-size", str(r["D"]), "--steps", str(self.plan.steps),
               "--seed", str(r["seed"])] + (["--data", self.data] if self.data else [])
        rc, _ = self.call(cmd + self.plan.train_args + common, err)
        return rc == 0

    def do_eval(self, r, part):
        """val loss, ppl, bpc, tokens: ./infer --eval on the val file, or the train log's
        final record (the same number) when there is no file."""
        final = ablate_report.read_log(os.path.join(part, "run.jsonl"))["final"]
        if not self.val:
            loss = final["val_loss"]
            return {"val_loss": loss, "ppl": math.exp(loss), "bpc": loss / math.log(2),
                    "val_tokens": final["val_tokens"], "val_source": "train final record"}
        self.set_stage(r, "eval")
        cmd = [self.infer, "--ckpt", os.path.join(part, "model.ckpt"), "--eval", self.val,
               "--threads", str(self.threads)]
        rc, out = self.call(cmd, os.path.join(part, "eval.err"), capture=True)
        m = re.match(r"eval loss (\S+) ppl (\S+) bpc (\S+) tokens (\d+)\s*$", out)
        if rc != 0 or not m:
            return None
        write_atomic(os.path.join(part, "eval.txt"), out.encode())
        res = {"val_loss": float(m.group(1)), "ppl": float(m.group(2)), "bpc": float(m.group(3)),
               "val_tokens": int(m.group(4)), "val_source": "infer --eval"}
        res["val_check"] = res["val_loss"] - final["val_loss"]   # should be ~0
        return res

    def do_heads(self, r, rdir):
        """./infer --heads into rdir/heads (via heads.tmp); returns the status string."""
        if not self.val:
            return ("skipped: no validation file (the built-in corpus; needs "
                    "./train --dump-val)")
        if self.heads_unavailable:
            return self.heads_unavailable
        tmp, final = os.path.join(rdir, "heads.tmp"), os.path.join(rdir, "heads")
        for d in (tmp, final):
            if os.path.isdir(d):
                subprocess.run(["rm", "-rf", d], check=True)
        self.set_stage(r, "heads")
        err = os.path.join(rdir, "heads.err")
        cmd = [self.infer, "--ckpt", os.path.join(rdir, "model.ckpt"), "--heads", self.val,
               "--report", tmp, "--threads", str(self.threads)] + self.plan.heads_args
        rc, _ = self.call(cmd, err)
        if rc == 0 and os.path.exists(os.path.join(tmp, "summary.json")):
            os.rename(tmp, final)
            return "ok"
        with open(err) as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("== ")]
        last = lines[-1] if lines else "exit %s" % rc
        if rc is None:
            return "skipped: sweep interrupted"
        if "not implemented" in last:
            self.heads_unavailable = "unavailable: %s" % last
            return self.heads_unavailable
        return "failed: %s" % last

    def finish(self, r, part, ev, heads_status, seconds):
        log = ablate_report.read_log(os.path.join(part, "run.jsonl"))
        tr = sum(s["ms"] for s in log["steps"]) / 1000.0
        m = self.plan.model
        tokens = self.plan.steps * m["batch"] * m["block"]
        done = {"name": r["name"], "H": r["H"], "D": r["D"], "C": self.plan.C,
                "seed": r["seed"], "steps": self.plan.steps, "tokens": tokens,
                "params": log["settings"]["params"], "train_loss": log["final"]["train_loss"],
                "train_seconds": round(tr, 3), "tok_s": round(tokens / tr, 1) if tr else None,
                "wall_seconds": round(seconds, 3), "threads": self.threads,
                "heads_status": heads_status, "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
        done.update(ev)
        write_json(os.path.join(part, "done.json"), done)
        os.rename(part, os.path.join(self.rundir, r["name"]))
        return done

    def run_one(self, r):
        final = os.path.join(self.rundir, r["name"])
        part = final + ".partial"
        os.makedirs(part, exist_ok=True)
        t0 = time.time()
        timing = os.path.join(part, "seconds.txt")
        before = float(open(timing).read()) if os.path.exists(timing) else 0.0
        if not os.path.exists(os.path.join(part, "done.json")):
            ok = self.do_train(r, part)
            ev = self.do_eval(r, part) if ok and not self.stop else None
            status = self.do_heads(r, part) if ev and not self.stop else None
            write_atomic(timing, b"%.3f" % (before + time.time() - t0))
            if self.stop or not ok or ev is None:
                if not self.stop:
                    self.event("FAILED %s: %s; see %s" % (r["name"], "training" if not ok else
                               "evaluation", os.path.join(part, "train.err" if not ok
                                                          else "eval.err")))
                return False
            done = self.finish(r, part, ev, status, before + time.time() - t0)
        else:
            os.rename(part, final)
            done = ablate_report.read_json(os.path.join(final, "done.json"))
        with self.lock:
            self.done_count += 1
            self.finished_units += self.plan.step_cost(r) * (
                self.plan.run_steps() - self.progress.get(r["name"], (0, 0, 0))[2])
        self.event("done %s (arm %s): val loss %.4f, ppl %.3f, bpc %.3f; %s; heads: %s"
                   % (r["name"], "+".join(r["arms"]), done["val_loss"], done["ppl"], done["bpc"],
                      duration(done["wall_seconds"]), done["heads_status"]), report=True)
        return True

    def retry_heads(self, r):
        """A finished run whose heads analysis is missing: try it again."""
        rdir = os.path.join(self.rundir, r["name"])
        path = os.path.join(rdir, "done.json")
        done = ablate_report.read_json(path)
        status = self.do_heads(r, rdir)
        if self.stop:
            return
        if status != done["heads_status"]:
            done["heads_status"] = status
            write_json(path, done)
            self.event("heads %s: %s" % (r["name"], status), report=True)

    # ---- the sweep ----

    def event(self, msg, report=False):
        with self.lock:
            self.events.append((msg, report))

    def worker(self, queue):
        while not self.stop:
            with self.lock:
                if not queue:
                    return
                kind, r = queue.pop(0)
            try:
                if kind == "run":
                    self.run_one(r)
                else:
                    self.retry_heads(r)
            except Exception as e:  # keep the sweep going; the run stays unfinished
                self.event("FAILED %s: %s: %s" % (r["name"], type(e).__name__, e))
            self.progress.pop(r["name"], None)

    def status_line(self, start, total):
        el = time.time() - start
        units, running = self.finished_units, []
        whole, extra = self.plan.run_steps(), self.plan.run_steps() - self.plan.steps
        remaining = sum(self.plan.step_cost(r) * whole for r in self.pending
                        if r["name"] not in self.progress and not self.is_done(r))
        for name, (stage, step, first) in list(self.progress.items()):
            r = next(x for x in self.plan.runs if x["name"] == name)
            if stage == "train":
                log = ablate_report.read_log(os.path.join(self.rundir, name + ".partial",
                                                          "run.jsonl"))
                step = log["steps"][-1]["step"] if log["steps"] else first
                running.append("%s %d/%d" % (name, step, self.plan.steps))
            else:
                step = self.plan.steps
                running.append("%s %s" % (name, stage))
            units += self.plan.step_cost(r) * (step - first)
            remaining += self.plan.step_cost(r) * (self.plan.steps - step + extra)
        eta = duration(remaining * el / units) if units > 0 and el > 5 else "…"
        return ("ablation: %d/%d runs done | running: %s | elapsed %s | eta %s"
                % (self.done_count, total, ", ".join(running) or "-", duration(el), eta))

    def is_done(self, r):
        return os.path.exists(os.path.join(self.rundir, r["name"], "done.json"))

    def run(self):
        p = self.plan
        total = len(p.runs)
        self.pending = [r for r in p.runs if not self.is_done(r)]
        self.done_count = total - len(self.pending)
        queue = [("run", r) for r in self.pending]
        if self.val:
            for r in p.runs:
                if self.is_done(r) and ablate_report.read_json(os.path.join(
                        self.rundir, r["name"], "done.json"))["heads_status"] != "ok":
                    queue.append(("heads", r))
        shared = sum(len(r["arms"]) for r in p.runs) - total
        print("ablation: %s sweep into %s: %d runs (%d arm-runs; %d shared by both arms), "
              "%d finished earlier, %d to do; %d job(s) x %d thread(s); data %s; val file %s"
              % (p.mode, p.out, total, total + shared, shared, self.done_count,
                 len(self.pending), self.jobs, self.threads, self.data or "built-in corpus",
                 self.val or "none"), file=sys.stderr, flush=True)
        start = time.time()
        workers = [threading.Thread(target=self.worker, args=(queue,), daemon=True)
                   for _ in range(self.jobs)]
        for w in workers:
            w.start()
        interval, last = (5 if p.mode == "quick" else 30), time.time()
        while any(w.is_alive() for w in workers):
            time.sleep(0.2)
            with self.lock:
                events, self.events = self.events, []
            for msg, report in events:
                print("ablation: %s" % msg, file=sys.stderr, flush=True)
                if report:
                    self.report(quiet=True)
            if events or time.time() - last >= interval:
                print(self.status_line(start, total), file=sys.stderr, flush=True)
                last = time.time()
        for msg, _ in self.events:
            print("ablation: %s" % msg, file=sys.stderr)
        self.report()
        if self.stop:
            print("ablation: interrupted after %s with %d/%d runs done; run the same command "
                  "again to continue (unfinished runs resume from their checkpoints)"
                  % (duration(time.time() - start), self.done_count, total), file=sys.stderr)
            return 130
        missing = total - self.done_count
        print("ablation: %d/%d runs done in %s%s; report: %s" % (
            self.done_count, total, duration(time.time() - start),
            "; %d FAILED (see above; rerun to retry)" % missing if missing else "",
            os.path.join(p.out, "index.html")), file=sys.stderr)
        return 1 if missing else 0

    def report(self, quiet=False):
        try:
            n = ablate_report.write_all(self.plan.out)
            if not quiet:
                print("ablation: report rebuilt (%d rows): %s" % (n, os.path.join(
                    self.plan.out, "ablation.md")), file=sys.stderr)
        except Exception as e:
            print("ablation: warning: report not rebuilt: %s: %s" % (type(e).__name__, e),
                  file=sys.stderr)

    def on_signal(self, sig, frame):
        """First signal: stop starting runs, ask each running train to save and exit
        (SIGINT, which train turns into a checkpoint). Second: train exits at once."""
        with self.lock:
            self.stop += 1
        if self.stop == 1:
            print("\nablation: stopping: waiting for running trains to save their checkpoints "
                  "(signal again to stop at once)", file=sys.stderr, flush=True)
        self.signal_all(signal.SIGINT)


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def main(argv):
    a = parse_args(argv)
    plan = Plan(a)
    if a.check:
        problems = ablate_check.check(plan.out)
        for msg in problems:
            print("ablate --check: %s" % msg, file=sys.stderr)
        print("ablate --check: %s: %s" % (plan.out, "%d problem(s)" % len(problems)
                                          if problems else "all outputs present and well formed"),
              file=sys.stderr)
        return 1 if problems else 0
    if a.report_only:
        print("ablation: report: %d rows" % ablate_report.write_all(plan.out), file=sys.stderr)
        return 0
    n = cores()
    todo = [r for r in plan.runs
            if not os.path.exists(os.path.join(plan.out, "runs", r["name"], "done.json"))]
    jobs = positive("jobs", a.jobs) or max(1, min(n, len(todo)))
    threads = positive("threads", a.threads) or max(1, n // jobs)
    if jobs * threads > n:
        usage_error("--jobs %d x --threads %d = %d threads, more than the %d cores; runs would "
                    "slow each other down" % (jobs, threads, jobs * threads, n))
    sweep = Sweep(plan, jobs, threads)
    sweep.prepare()
    signal.signal(signal.SIGINT, sweep.on_signal)
    signal.signal(signal.SIGTERM, sweep.on_signal)
    return sweep.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
