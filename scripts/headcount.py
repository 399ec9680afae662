#!/usr/bin/python3
"""headcount: load a headcount checkpoint into PyTorch and look at its heads.

For people with a Python stack: the model as a ``torch.nn.Module`` built from
nothing but the documented checkpoint layout (docs/checkpoint.md, versions 1 and
2), with every head's attention available through forward hooks, and a loss that
equals ``./infer --eval`` (to about 1e-5; float32 sums run in another order).
A version 2 checkpoint's byte-pair merges are applied here as data/bpe.h
specifies (the same pre-tokenisation and merge order), so ``encode`` gives the
token ids ./infer uses and ``decode`` gives the bytes back.

    import sys; sys.path.insert(0, "scripts")
    import headcount

    model = headcount.load("run.ckpt")            # HeadcountGPT, eval mode
    ids = model.encode(b"The old mouse went twice.")
    att = model.attention(ids)                    # [L, H, t, t], rows sum to 1
    loss, n = headcount.evaluate(model, open("val.txt", "rb").read())

    # or a hook of your own: every block's `attn.weights` module sees the
    # softmaxed weights [B, H, t, t] on each forward
    model.blocks[0].attn.weights.register_forward_hook(
        lambda mod, inp, out: print(out.shape))

load() reads through scripts/checkpoint.py, which validates the file as ./infer does
(the same checks in the same order, nothing allocated before the header and the file
size agree) and raises CheckpointError with ./infer's message for a file it refuses.

From the shell (Debian: apt-get install python3-torch; /usr/bin/python3); bad input
is one line on stderr and exit 2 (usage) or 1, as with the C programs:

    python3 scripts/headcount.py eval CKPT FILE        # the line ./infer --eval prints
    python3 scripts/headcount.py attention CKPT TEXT   # each head's strongest key per token

The model: x = wte[token] + wpe[t]; L pre-LayerNorm blocks
x += proj(attn(ln1(x))); x += fcproj(gelu_tanh(fc(ln2(x)))); logits = lnf(x) wte^T.
A model trained with --head-gates multiplies each head's output by its evaluation
gate clamp(sigmoid(log_alpha) (zeta - gamma) + gamma, 0, 1) before proj
(model/gates.h, docs/heads.md). A model trained with --head-routing K gives each
token K of a layer's heads: a router per layer scores the heads on ln1's output,
the K best (a tie to the lower head) keep their outputs times the softmax over
the chosen scores, the others give 0 (model/route.h); the TransformerLens bridge
refuses such a model.

to_transformer_lens(path) gives the same model as a TransformerLens model, and
evaluate_tl scores with its hooks (docs/transformer_lens.md).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint  # noqa: E402
import cli  # noqa: E402
from checkpoint import CheckpointError  # noqa: E402

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    if __name__ != "__main__":
        raise
    sys.exit("headcount: error: PyTorch is not installed (Debian: apt-get install python3-torch)")

class Config:
    """The dimensions in a checkpoint's header; gates: the model has head gates
    (header flag bit 1); route_k: heads each token is routed to (flag bit 2 and
    header int 11; 0 without routing)."""

    def __init__(self, V, T, L, H, C, D, gates=False, route_k=0):
        self.V, self.T, self.L, self.H, self.C, self.D = V, T, L, H, C, D
        self.gates, self.route_k = gates, route_k

    def __repr__(self):
        return "Config(V=%d, T=%d, L=%d, H=%d, C=%d, D=%d)" % (
            self.V, self.T, self.L, self.H, self.C, self.D)


class AttentionWeights(nn.Identity):
    """Passes the softmaxed attention [B, H, t, t] through unchanged: a place for
    forward hooks (HeadcountGPT.attention uses one)."""


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        A = cfg.H * cfg.D
        self.H, self.D = cfg.H, cfg.D
        self.qkv = nn.Linear(cfg.C, 3 * A)
        self.proj = nn.Linear(A, cfg.C)
        self.weights = AttentionWeights()

    def forward(self, x, head_on=None, route=None):
        B, t, _ = x.shape
        A = self.H * self.D
        qkv = self.qkv(x)
        q, k, v = (qkv[..., i * A:(i + 1) * A].reshape(B, t, self.H, self.D).transpose(1, 2)
                   for i in range(3))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.D)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = self.weights(att.masked_fill(~mask, float("-inf")).softmax(-1))
        y = att @ v                                   # [B, H, t, D]
        if head_on is not None:                       # a silenced head's output is zero
            y = y * head_on.to(y.dtype).view(1, self.H, 1, 1)
        if route is not None:                         # [B, t, H] route weights, 0 unchosen
            y = y * route.transpose(1, 2).unsqueeze(-1)
        return self.proj(y.transpose(1, 2).reshape(B, t, A))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.C, eps=1e-5)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.C, eps=1e-5)
        self.fc = nn.Linear(cfg.C, 4 * cfg.C)
        self.fcproj = nn.Linear(4 * cfg.C, cfg.C)

    def forward(self, x, head_on=None, router=None):
        h = self.ln1(x)
        route = None if router is None else route_weights(h, *router)
        x = x + self.attn(h, head_on, route)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class HeadcountGPT(nn.Module):
    """The headcount transformer. forward(ids [B, t]) gives logits [B, t, V];
    with targets, also the mean cross-entropy. head_on [L, H] of 0/1 silences
    heads as ./infer --mask does."""

    def __init__(self, cfg, vocab, merges=()):
        super().__init__()
        self.cfg, self.vocab = cfg, bytes(vocab)
        self.tokenizer = Tokenizer(self.vocab, merges)
        self.wte = nn.Parameter(torch.zeros(cfg.V, cfg.C))
        self.wpe = nn.Parameter(torch.zeros(cfg.T, cfg.C))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.L))
        self.lnf = nn.LayerNorm(cfg.C, eps=1e-5)
        if cfg.gates:
            self.log_alpha = nn.Parameter(torch.zeros(cfg.L, cfg.H))
        if cfg.route_k:
            self.router_w = nn.Parameter(torch.zeros(cfg.L * cfg.H, cfg.C))
            self.router_b = nn.Parameter(torch.zeros(cfg.L, cfg.H))

    def gates(self):
        """Each head's evaluation gate [L, H] (1 everywhere without gates), computed
        in double and rounded once, as model/gates.c does; 0 is a closed head."""
        if not self.cfg.gates:
            return torch.ones(self.cfg.L, self.cfg.H)
        s = torch.sigmoid(self.log_alpha.detach().double())
        return (s * (1.1 - -0.1) + -0.1).clamp(0.0, 1.0).float()

    def forward(self, ids, targets=None, head_on=None):
        t = ids.shape[1]
        if t > self.cfg.T:
            raise ValueError("%d positions; the model's block size is %d" % (t, self.cfg.T))
        x = self.wte[ids] + self.wpe[:t]
        scale = self.gates() if self.cfg.gates else None      # gate x mask, per head
        if head_on is not None:
            scale = head_on.float() if scale is None else scale * head_on.float()
        H, K = self.cfg.H, self.cfg.route_k
        for l, block in enumerate(self.blocks):
            router = (self.router_w[l * H:(l + 1) * H], self.router_b[l], K) if K else None
            x = block(x, None if scale is None else scale[l], router)
        logits = self.lnf(x) @ self.wte.t()
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.reshape(-1, self.cfg.V), targets.reshape(-1))

    def encode(self, text):
        """Bytes -> token ids [t]; a byte outside the vocabulary is a ValueError."""
        return torch.tensor(self.tokenizer.encode(text), dtype=torch.long)

    def decode(self, ids):
        return b"".join(self.tokenizer.pieces[int(i)] for i in ids)

    @torch.no_grad()
    def attention(self, ids, head_on=None):
        """Every head's attention on one sequence ids [t] (t <= T), as [L, H, t, t],
        collected by forward hooks on each block's attn.weights."""
        got = []
        hooks = [b.attn.weights.register_forward_hook(lambda m, i, out: got.append(out[0]))
                 for b in self.blocks]
        try:
            self(ids[None], head_on=head_on)
        finally:
            for h in hooks:
                h.remove()
        return torch.stack(got)

def route_weights(x, W, b, K):
    """A layer's route weights [B, t, H] for its ln1 output x [B, t, C], router
    W [H, C] and b [H], as model/route.c computes them: scores s = W x + b (the
    product in float32, the bias added in double), each token's K largest heads
    chosen (a tie goes to the lower index), g = the softmax over the chosen
    scores, computed in double and rounded once; an unchosen head's weight is 0."""
    s = (x @ W.t()).double() + b.double()
    H = s.shape[-1]
    sh, sj = s.unsqueeze(-1), s.unsqueeze(-2)             # [.., h, 1], [.., 1, j]
    lower = torch.ones(H, H, dtype=torch.bool, device=s.device).tril(-1)  # [h, j]: j < h
    above = ((sj > sh) | (lower & (sj == sh))).sum(-1)   # heads that rank above h
    on = above < K
    e = torch.exp(s - s.max(-1, keepdim=True).values)
    zk = (e * on).sum(-1, keepdim=True)
    return torch.where(on, e / zk, torch.zeros_like(e)).float()


# Byte classes of the pre-tokenisation (data/bpe.h).
LETTER, DIGIT, SPACE, WHITE, PUNCT = range(5)
_CLASS = [LETTER if (65 <= b <= 90 or 97 <= b <= 122 or b >= 128) else DIGIT if 48 <= b <= 57
          else SPACE if b == 32 else WHITE if b in b"\n\r\t\v\f" else PUNCT for b in range(256)]
_WORD = (LETTER, DIGIT, PUNCT)


def chunks(text):
    """The pre-tokenisation of data/bpe.h: a maximal run of letters, of digits or of
    punctuation, optionally after one ' '; otherwise a maximal run of whitespace,
    less a final ' ' that directly precedes a letter, digit or punctuation byte."""
    out, i, n = [], 0, len(text)
    while i < n:
        j, k = i, _CLASS[text[i]]
        if k == SPACE and i + 1 < n and _CLASS[text[i + 1]] in _WORD:
            j, k = i + 1, _CLASS[text[i + 1]]
        if k in _WORD:
            while j < n and _CLASS[text[j]] == k:
                j += 1
        else:
            while j < n and _CLASS[text[j]] in (SPACE, WHITE):
                j += 1
            if j < n and j - i >= 2 and text[j - 1] == 32 and _CLASS[text[j]] in _WORD:
                j -= 1
        out.append(text[i:j])
        i = j
    return out


class Tokenizer:
    """The byte alphabet (token i < nbytes is the byte alphabet[i]) and the merges
    (token nbytes + k joins merges[k] = (left, right)); pieces[i] is token i's bytes."""

    def __init__(self, alphabet, merges=()):
        self.alphabet, self.merges = bytes(alphabet), [tuple(m) for m in merges]
        self.id = {b: i for i, b in enumerate(self.alphabet)}
        self.rank = {m: k for k, m in enumerate(self.merges)}
        self.pieces = [bytes([b]) for b in self.alphabet]
        for left, right in self.merges:
            self.pieces.append(self.pieces[left] + self.pieces[right])
        self._cache = {}

    def encode(self, text):
        """Bytes -> token ids (a list): each chunk's bytes, then, in each chunk, the
        pair of lowest merge index present joined at every place, left to right
        without overlap, until no merge applies (the order they were learned)."""
        bad = sorted({b for b in set(text) if b not in self.id})
        if bad:
            raise ValueError("byte(s) %s not in the model's vocabulary of %d bytes; a model "
                             "trained with --vocab N knows all 256 byte values and accepts "
                             "any text" % (", ".join("0x%02x" % b for b in bad),
                                           len(self.alphabet)))
        if not self.merges:
            return [self.id[b] for b in text]
        out = []
        for chunk in chunks(bytes(text)):
            if chunk not in self._cache:
                self._cache[chunk] = self._merge([self.id[b] for b in chunk])
            out += self._cache[chunk]
        return out

    def _merge(self, ids):
        nbytes = len(self.alphabet)
        while len(ids) > 1:
            ranks = [self.rank.get(p) for p in zip(ids, ids[1:])]
            k = min((r for r in ranks if r is not None), default=None)
            if k is None:
                return ids
            pair, merged, i = self.merges[k], [], 0
            while i < len(ids):
                if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
                    merged.append(nbytes + k)
                    i += 2
                else:
                    merged.append(ids[i])
                    i += 1
            ids = merged
        return ids


def _tensors(cfg):
    """The parameter table (model/params.c): names and shapes, in file order."""
    V, T, L, C, A = cfg.V, cfg.T, cfg.L, cfg.C, cfg.H * cfg.D
    out = [("wte", (V, C)), ("wpe", (T, C))]
    for l in range(L):
        p = "blocks.%d." % l
        out += [(p + "ln1.weight", (C,)), (p + "ln1.bias", (C,)),
                (p + "attn.qkv.weight", (3 * A, C)), (p + "attn.qkv.bias", (3 * A,)),
                (p + "attn.proj.weight", (C, A)), (p + "attn.proj.bias", (C,)),
                (p + "ln2.weight", (C,)), (p + "ln2.bias", (C,)),
                (p + "fc.weight", (4 * C, C)), (p + "fc.bias", (4 * C,)),
                (p + "fcproj.weight", (C, 4 * C)), (p + "fcproj.bias", (C,))]
    out += [("lnf.weight", (C,)), ("lnf.bias", (C,))]
    if cfg.gates:
        out += [("log_alpha", (L, cfg.H))]
    if cfg.route_k:
        out += [("router_w", (L * cfg.H, C)), ("router_b", (L, cfg.H))]
    return out


def load(path: str) -> "HeadcountGPT":
    """Reads a checkpoint (version 1, or 2 with merges) into a HeadcountGPT in eval
    mode. The file is validated first, as ./infer validates it (scripts/checkpoint.py):
    a damaged or hostile file raises CheckpointError with ./infer's message before
    anything the header claims is allocated. The training state, if any, is checked
    (its checksum included) but not kept."""
    ck = checkpoint.read(path)
    d = ck.dims
    cfg = Config(V=d["V"], T=d["T"], L=d["L"], H=d["H"], C=d["C"], D=d["D"],
                 gates=d["gates"], route_k=d["route_k"])
    model = HeadcountGPT(cfg, ck.alphabet, ck.merges)
    params = torch.frombuffer(bytearray(ck.params), dtype=torch.float32)  # little-endian host
    state, off = {}, 0
    for name, shape in _tensors(cfg):
        n = math.prod(shape)
        state[name] = params[off:off + n].reshape(shape)
        off += n
    model.load_state_dict(state)
    return model.eval()


@torch.no_grad()
def evaluate(model, text, head_on=None):
    """The mean loss over text as ./infer --eval computes it: consecutive windows
    of T inputs (the last one shorter), every predicted token counted once.
    Returns (loss, tokens)."""
    ids = model.encode(text)
    T, total, count = model.cfg.T, 0.0, 0
    for s in range(0, len(ids) - 1, T):
        inp = ids[s:s + T][:len(ids) - 1 - s]
        tgt = ids[s + 1:s + 1 + len(inp)]
        logits = model(inp[None], head_on=head_on)
        total += F.cross_entropy(logits[0].double(), tgt, reduction="sum").item()
        count += len(tgt)
    return total / count, count


def tl_config(cfg):
    """The TransformerLens config fields of a headcount model: learned positions,
    LayerNorm with headcount's epsilon (1e-5, model/layers.c), the tanh GELU
    (kernels/vmath.h computes x * sigmoid(2u) = 0.5 x (1 + tanh u),
    TransformerLens's "gelu_new"), an MLP of 4C, attention scaled by 1/sqrt(D)."""
    return dict(d_model=cfg.C, d_head=cfg.D, n_heads=cfg.H, n_layers=cfg.L, n_ctx=cfg.T,
                d_vocab=cfg.V, d_mlp=4 * cfg.C, act_fn="gelu_new", eps=1e-5,
                normalization_type="LN", positional_embedding_type="standard",
                attn_only=False, init_weights=False)


def tl_state_dict(model):
    """model's parameters in TransformerLens's names and shapes (HookedTransformer's
    convention), copied as they are: no LayerNorm folding, no centring.
    W_Q/W_K/W_V [H, C, D] and b_Q/b_K/b_V [H, D] from the q, k and v row blocks of
    qkv (head h owns rows hD..hD+D-1 of each); W_O [H, D, C] from proj [C, A],
    times each head's evaluation gate in a model with head gates (so hook_z is a
    head's output before its gate);
    W_in [C, 4C], W_out [4C, C]; the tied output W_U = wte^T [C, V], b_U = 0."""
    cfg = model.cfg
    C, H, D, A = cfg.C, cfg.H, cfg.D, cfg.H * cfg.D
    sd = {"embed.W_E": model.wte, "pos_embed.W_pos": model.wpe}
    for l, b in enumerate(model.blocks):
        p = "blocks.%d." % l
        for i, n in enumerate("QKV"):
            sd[p + "attn.W_" + n] = b.attn.qkv.weight[i * A:(i + 1) * A].reshape(H, D, C) \
                .permute(0, 2, 1)
            sd[p + "attn.b_" + n] = b.attn.qkv.bias[i * A:(i + 1) * A].reshape(H, D)
        sd[p + "attn.W_O"] = b.attn.proj.weight.reshape(C, H, D).permute(1, 2, 0) \
            * model.gates()[l].view(H, 1, 1)
        sd[p + "attn.b_O"] = b.attn.proj.bias
        for ln in ("ln1", "ln2"):
            sd[p + ln + ".w"], sd[p + ln + ".b"] = getattr(b, ln).weight, getattr(b, ln).bias
        sd[p + "mlp.W_in"], sd[p + "mlp.b_in"] = b.fc.weight.t(), b.fc.bias
        sd[p + "mlp.W_out"], sd[p + "mlp.b_out"] = b.fcproj.weight.t(), b.fcproj.bias
    sd["ln_final.w"], sd["ln_final.b"] = model.lnf.weight, model.lnf.bias
    sd["unembed.W_U"] = model.wte.t()
    sd["unembed.b_U"] = torch.zeros(cfg.V)
    return {k: v.detach().clone().contiguous() for k, v in sd.items()}


def to_transformer_lens(path):
    """A checkpoint (a path, or a model load() returned) as a TransformerLens model
    in eval mode, with the same weights and so the same logits (to float32 rounding).
    TransformerLens before 4.0: a HookedTransformer built from a
    HookedTransformerConfig. From 4.0, which removed HookedTransformer: a
    TransformerBridge over TransformerLens's own native transformer
    (TransformerBridge.boot_native), with the same hook names
    (blocks.{l}.attn.hook_pattern [B, H, t, t], hook_z [B, t, H, D], ...). Feed it
    token ids (model.encode(text)); it has no tokenizer."""
    model = load(path) if isinstance(path, str) else path
    if model.cfg.route_k:
        raise ValueError("a model routed to %d of %d heads per token (--head-routing) has no "
                         "TransformerLens equivalent: TransformerLens attention runs every head "
                         "on every token" % (model.cfg.route_k, model.cfg.H))
    fields, sd = tl_config(model.cfg), tl_state_dict(model)
    try:
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError:
        HookedTransformer = None
    if HookedTransformer is not None:
        tl = HookedTransformer(HookedTransformerConfig(default_prepend_bos=False, **fields))
        # Only the attention's causal-mask buffers are not in sd; they keep their own.
        own = tl.state_dict()
        missing = set(own) - set(sd)
        params = dict(tl.named_parameters())
        if missing & set(params) or set(sd) - set(own):
            raise ValueError("TransformerLens's parameters differ from headcount's: "
                             "missing %s, unexpected %s" % (sorted(missing & set(params)),
                                                            sorted(set(sd) - set(own))))
        sd.update({k: own[k] for k in missing})
        tl.load_state_dict(sd, strict=True)
        return tl.eval()
    from transformer_lens import TransformerBridge, TransformerBridgeConfig
    from transformer_lens.model_bridge.sources import native  # adds boot_native
    from transformer_lens.utilities.tl_checkpoint_conversion import convert_tl_checkpoint
    cfg = TransformerBridgeConfig(**fields)
    tl = native.boot(cfg)
    tl.load_state_dict(convert_tl_checkpoint(sd, cfg), strict=True)
    return tl.eval()


@torch.no_grad()
def evaluate_tl(tl, ids, fwd_hooks=()):
    """evaluate() for a TransformerLens model: the mean loss over token ids [n] in
    consecutive windows of n_ctx inputs, as ./infer --eval scores a file, with
    fwd_hooks [(hook name, function)] applied. Returns (loss, tokens)."""
    T, total, count = tl.cfg.n_ctx, 0.0, 0
    for s in range(0, len(ids) - 1, T):
        inp = ids[s:s + T][:len(ids) - 1 - s]
        tgt = ids[s + 1:s + 1 + len(inp)]
        logits = tl.run_with_hooks(inp[None], fwd_hooks=list(fwd_hooks))
        total += F.cross_entropy(logits[0].double(), tgt, reduction="sum").item()
        count += len(tgt)
    return total / count, count


def _glyph(b):
    return {32: "\u2423", 10: "\u21b5", 9: "\u21e5"}.get(b, chr(b) if 32 < b < 127 else "\u00b7")


def _model(path):
    try:
        return load(path)
    except CheckpointError as e:
        raise cli.Error(str(e)) from None


def _encode(model, text, what):
    """text's token ids; a byte outside the model's alphabet is an Error naming what."""
    try:
        return model.encode(text)
    except ValueError as e:
        raise cli.Error("%s: %s" % (what, e)) from None


def main(argv):
    """The command line: one-line errors (cli.run), exit 2 for usage, 1 otherwise."""
    ap = cli.Parser(prog="headcount.py", description="Score a file or show each head's "
                    "attention with a headcount checkpoint in PyTorch.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=cli.Parser)
    e = sub.add_parser("eval", help="the line ./infer --eval prints")
    e.add_argument("ckpt")
    e.add_argument("file")
    t = sub.add_parser("attention", help="each head's strongest key per token")
    t.add_argument("ckpt")
    t.add_argument("text")
    a = ap.parse_args(argv)
    if a.command == "eval":
        model = _model(a.ckpt)
        text = cli.read_input(a.file, "text file")
        if not text:
            raise cli.Error("%s: file is empty" % a.file)
        ids = _encode(model, text, a.file)
        if len(ids) < 2:
            raise cli.Error("%s: %d token(s); scoring needs at least 2 (one input, one target)"
                            % (a.file, len(ids)))
        loss, n = evaluate(model, text)
        # Bits per byte (docs/tokenizer.md): over the bytes of the predicted tokens,
        # every token but the first.
        nbytes = len(text) - len(model.decode(ids[:1]))
        print("eval loss %.6f ppl %.4f bpb %.4f tokens %d bytes %d"
              % (loss, math.exp(loss), loss * (n / nbytes) / math.log(2), n, nbytes))
    else:
        text = os.fsencode(a.text)
        if not text:
            raise cli.Error("attention: the text is empty", 2)
        model = _model(a.ckpt)
        ids = _encode(model, text, "the text")[:model.cfg.T]
        shown = ["".join(map(_glyph, model.decode([i]))) for i in ids.tolist()]
        att = model.attention(ids)
        for l in range(model.cfg.L):
            for h in range(model.cfg.H):
                top = att[l, h].argmax(-1).tolist()
                print("L%dH%d %s" % (l, h, " ".join(
                    "%s>%s" % (shown[i], shown[j]) for i, j in enumerate(top))))


if __name__ == "__main__":
    cli.run("headcount", main)
