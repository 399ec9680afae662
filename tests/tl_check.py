"""`make test-tl`: scripts/headcount.py's TransformerLens bridge against ./infer.

On its shapes (H = 1, 4 and 16, a head size D != C/H, byte-pair tokens, head
gates), it trains a small model
on the built-in corpus with ./train and checks that the model to_transformer_lens
returns
  (a) gives the logits of headcount.py's own model to 1e-4, and on 6000 bytes of the
      validation split the mean loss ./infer --eval prints, to 1e-4;
  (b) has blocks.{l}.attn.hook_pattern equal to the attention weights
      ./infer --explore-json writes (to 1e-5: the JSON keeps 6 significant digits);
  (c) with one head's hook_z zeroed, gives the loss of ./infer --eval --mask l.h
      (docs/transformer_lens.md's example), to 1e-4.
Skips, saying so, when transformer_lens cannot be imported.

usage: PYTHON tests/tl_check.py BIN_DIR WORK_DIR   (PYTHON: a python with torch and
transformer_lens, e.g. the venv of `make tl-deps`)"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

# (name, ./train flags, the head that (c) silences as (layer, head)). Bytes
# (--vocab 0) but for the BPE shape: the built-in corpus's recipe trains words.
SHAPES = [
    ("H1", "--vocab 0 --layers 2 --heads 1 --embd 16 --block 32", (0, 0)),
    ("H4", "--vocab 0 --layers 2 --heads 4 --embd 32 --block 32", (1, 2)),
    ("H16", "--vocab 0 --layers 1 --heads 16 --embd 32 --block 32", (0, 5)),
    ("D5", "--vocab 0 --layers 2 --heads 3 --embd 24 --head-size 5 --block 24", (0, 1)),
    ("BPE", "--layers 2 --heads 4 --embd 32 --block 32 --vocab 300", (1, 1)),
    ("gates", "--vocab 0 --layers 2 --heads 4 --embd 32 --block 32 --head-gates 0.01", (1, 2)),
]
# The position embedding of --data runs: with the built-in recipe's (--pos-std 0.1,
# undecayed) models this narrow learn too little in 200 steps for a silenced head
# to move the loss.
TRAIN = "--steps 200 --pos-std 0.02 --pos-decay on --eval-every 0 --save-every 0 --threads 1"
EVAL_BYTES = 6000
TOL_LOGITS = TOL_LOSS = 1e-4
TOL_PATTERN = 1e-5


def run(cmd):
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    got = subprocess.run(cmd, shell=True, env=env, capture_output=True, text=True)
    if got.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (cmd, got.returncode, got.stdout, got.stderr))
    return got.stdout


def infer_loss(out):
    """The loss in ./infer --eval's line 'eval loss X ppl ...'."""
    words = out.split()
    return float(words[words.index("loss") + 1])


def check_shape(name, flags, masked, bin_dir, work):
    import torch
    import headcount

    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    ckpt, val, text = (os.path.join(d, f) for f in ("m.ckpt", "val.txt", "text.txt"))
    run("%s/train %s --dump-val %s" % (bin_dir, flags, val))
    run("%s/train %s %s --out %s" % (bin_dir, flags, TRAIN, ckpt))
    with open(val, "rb") as f:
        data = f.read()[:EVAL_BYTES]
    with open(text, "wb") as f:
        f.write(data)

    model = headcount.load(ckpt)
    tl = headcount.to_transformer_lens(ckpt)
    cfg, problems = model.cfg, []
    ids = model.encode(data)

    # (a) logits on a batch of windows, then the windowed loss against ./infer.
    batch = ids[:4 * cfg.T].reshape(4, cfg.T)
    with torch.no_grad():
        dl = (model(batch) - tl(batch)).abs().max().item()
    if not dl <= TOL_LOGITS:
        problems.append("logits differ by %.3g" % dl)
    want = infer_loss(run("%s/infer --ckpt %s --eval %s -j 1" % (bin_dir, ckpt, text)))
    got, n = headcount.evaluate_tl(tl, ids)
    if not abs(got - want) <= TOL_LOSS or n != len(ids) - 1:
        problems.append("loss %.6f over %d tokens, ./infer --eval %.6f" % (got, n, want))

    # (b) hook_pattern against --explore-json on the first T tokens (their ids).
    js = os.path.join(d, "w.json")
    run("%s/infer --ckpt %s --explore %s --explore-json %s --text-file %s -j 1"
        % (bin_dir, ckpt, os.path.join(d, "p.html"), js, text))
    with open(js) as f:
        J = json.load(f)
    _, cache = tl.run_with_cache(torch.tensor(J["ids"], dtype=torch.long)[None])
    t, dp = J["T"], 0.0
    for l in range(cfg.L):
        pat = cache["blocks.%d.attn.hook_pattern" % l][0]
        if tuple(pat.shape) != (cfg.H, t, t):
            problems.append("hook_pattern of layer %d has shape %s" % (l, tuple(pat.shape)))
            continue
        dp = max(dp, pat.triu(1).abs().max().item())    # nothing above the diagonal
        for h in range(cfg.H):
            for i in range(t):
                row = torch.tensor(J["attention"][l][h][i], dtype=torch.float32)
                dp = max(dp, (pat[h, i, :i + 1] - row).abs().max().item())
    if not dp <= TOL_PATTERN:
        problems.append("hook_pattern differs from --explore-json by %.3g" % dp)

    # (c) a silenced head: hook_z zeroed against ./infer --mask.
    l, h = masked

    def silence(z, hook):
        z[:, :, h] = 0.0
        return z

    want_m = infer_loss(run("%s/infer --ckpt %s --eval %s -j 1 --mask %d.%d"
                            % (bin_dir, ckpt, text, l, h)))
    got_m, _ = headcount.evaluate_tl(tl, ids, [("blocks.%d.attn.hook_z" % l, silence)])
    if not abs(want_m - want) > 3 * TOL_LOSS:
        problems.append("silencing L%dH%d moves ./infer's loss by only %.2g: too little "
                        "to tell a working hook from none" % (l, h, abs(want_m - want)))
    if not abs(got_m - want_m) <= TOL_LOSS:
        problems.append("with L%dH%d silenced: loss %.6f, ./infer --mask %.6f"
                        % (l, h, got_m, want_m))
    print("tl_check: %-3s %s: %s: logits %.2g, loss %.6f (infer %.6f), pattern %.2g, "
          "mask %d.%d loss %.6f (infer %.6f)%s"
          % (name, cfg, type(tl).__name__, dl, got, want, dp, l, h, got_m, want_m,
             "" if not problems else " FAILED: " + "; ".join(problems)))
    return not problems


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    try:
        import transformer_lens  # noqa: F401
    except ImportError as e:
        print("tl_check: skipped: %s cannot import transformer_lens (%s); make tl-deps "
              "makes a venv that can" % (sys.executable, e))
        print("tl_check: 0 passed, 0 failed, %d skipped" % len(SHAPES))
        return 0
    bin_dir, work = argv
    ok = sum(check_shape(n, f, m, bin_dir, work) for n, f, m in SHAPES)
    print("tl_check: %d passed, %d failed" % (ok, len(SHAPES) - ok))
    return 0 if ok == len(SHAPES) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
