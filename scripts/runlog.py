"""runlog: the one reader of ./train --log files (JSON lines, run.jsonl in an
ablation), shared by every script that draws, judges or reports a run
(plot_log.py, induction_phase.py, induction_table.py, ablate_report.py, ablate.py).

read(path) refuses what is not a plain file (cli.read_input: a FIFO or device
would block), then checks every line before a script uses it: UTF-8 text, as
JSON is (a path's other bytes belong escaped as \\u00XX, which reads), a JSON
object, and, for the records the scripts read, the fields they read with the
right types. A line that fails is a cli.Error naming the file, the line and what
is wrong. Records of other types, and other fields, are passed over, so newer
logs still read. The one line that may be cut is the last one without its
newline (a run still writing, or killed mid-line): it is skipped.

Resumed runs. ./train --resume appends to the log it continues: a settings
record, then records from the step after its checkpoint's. A run killed after
step 11 with its checkpoint at step 8 has logged steps 9 to 11 once already, and
the resumed part logs them again (and may log fewer of them, if it stops
earlier). The rule: a step record whose step is not past the last step record
kept starts a resumed part, and every step, eval and heads record kept at that
step or later is dropped, so the log reads as the one run it now describes. The
settings kept are the first record's (the run as started); the final record
kept is the last one.
"""
import json

import checkpoint
import cli


class RunLog:
    """A log's records: settings (the first settings record, a dict, or None), steps,
    evals (eval records, and the final record when it has a val_loss), heads, in
    step order; final (the last final record, or None)."""

    def __init__(self, path, settings, steps, evals, heads, final):
        self.path, self.settings, self.final = path, settings, final
        self.steps, self.evals, self.heads = steps, evals, heads


def _is_num(v):
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


_METRICS = ("entropy", "prev", "first", "distance", "repeat")


def _check(rec):
    """What is wrong with a record of a type the scripts read, or None."""
    kind = rec.get("type")
    if kind in ("step", "eval", "final", "heads"):
        step = rec.get("step")
        if step is None:
            return "a %s record without a step number" % kind
        if not (_is_int(step) and 0 <= step <= checkpoint.STEPS_MAX):
            return "a %s record whose step %s is not a whole number from 0 to %d (train's " \
                   "most steps)" % (kind, json.dumps(step), checkpoint.STEPS_MAX)
    for key, kinds in (("loss", ("step",)), ("lr", ("step",)),
                       ("val_loss", ("eval", "final")), ("train_loss", ("eval", "final"))):
        if kind in kinds and key in rec and not _is_num(rec[key]):
            return "a %s record whose %s is not a number" % (kind, key)
    if kind == "step" and "loss" not in rec:
        return "a step record without a loss"
    if kind == "heads":
        heads = rec.get("heads")
        if not isinstance(heads, list):
            return "a heads record without a list of heads"
        for h in heads:
            if not (isinstance(h, dict) and _is_int(h.get("layer")) and _is_int(h.get("head"))):
                return "a heads record with an entry that has no layer and head numbers"
            for key in _METRICS:
                if key in h and not _is_num(h[key]):
                    return "a heads record whose %s of L%dH%d is not a number" % (
                        key, h["layer"], h["head"])
        rel = rec.get("relations")
        if rel is not None and not (isinstance(rel, dict)
                                    and all(isinstance(v, dict) for v in rel.values())):
            return "a heads record whose relations are not an object of objects"
    return None


def read(path: str) -> RunLog:
    """The RunLog at path; a cli.Error names what is wrong."""
    data = cli.read_input(path, "log file")
    lines = data.split(b"\n")
    cut = lines[-1] != b""           # the last line has no newline: maybe cut
    settings, final, steps, evals, heads = None, None, [], [], []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        last = cut and n == len(lines)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if last:
                break
            raise cli.Error("%s:%d: not UTF-8 text (byte 0x%02x at column %d)"
                           % (path, n, raw[e.start], e.start + 1)) from None
        try:
            rec = json.loads(text, parse_constant=lambda c: float(c))
        except json.JSONDecodeError as e:
            if last:
                break
            raise cli.Error("%s:%d: not JSON (%s)" % (path, n, e.msg)) from None
        except RecursionError:
            raise cli.Error("%s:%d: not JSON (nested too deeply)" % (path, n)) from None
        if not isinstance(rec, dict):
            what = ("an array" if isinstance(rec, list) else "a string" if isinstance(rec, str)
                    else "null" if rec is None else "a boolean" if isinstance(rec, bool)
                    else "a number")
            raise cli.Error("%s:%d: %s, not a JSON object" % (path, n, what))
        why = _check(rec)
        if why:
            raise cli.Error("%s:%d: %s" % (path, n, why))
        kind = rec.get("type")
        if kind == "settings" and settings is None:
            settings = rec
        elif kind == "step":
            if steps and rec["step"] <= steps[-1]["step"]:   # a resumed part starts
                steps, evals, heads = ([r for r in kept if r["step"] < rec["step"]]
                                       for kept in (steps, evals, heads))
            steps.append(rec)
        elif kind == "eval" and "val_loss" in rec:
            evals.append(rec)
        elif kind == "final":
            final = rec
            if "val_loss" in rec:
                evals.append(rec)
        elif kind == "heads":
            heads.append(rec)
    return RunLog(path, settings, steps, evals, heads, final)
