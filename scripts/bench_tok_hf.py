#!/usr/bin/env python3
"""bench_tok_hf: Hugging Face `tokenizers` BPE on the same file and vocabulary
size as bench/bench_bpe.c, on one thread, for docs/tokenizer.md.

The vocabulary is the file's distinct bytes plus --merges merges (GPT-2's
byte-level BPE: the ByteLevel pre-tokenizer and decoder, no special tokens, the
initial alphabet being the bytes the file holds, as ours). Times, each --runs
times: training (train_from_iterator over the whole text), encoding the whole
file in one encode() call, and encoding it as its lines (each with its newline)
in one encode_batch() call, which is faster and gives the same tokens. Prints
medians, minima and maxima; with --csv FILE appends a row in bench_bpe's
columns, the encoding time being encode_batch's.

What differs from ours: ByteLevel cuts text with GPT-2's expression (contractions
such as 's and 'll are chunks of their own; letters and digits are Unicode
classes of the decoded characters rather than bytes; a whitespace run before a
word gives its last character, whatever it is, to the next chunk), and its
trainer breaks ties between equal counts its own way, so the merges differ a
little even where the chunks agree. One thread: RAYON_NUM_THREADS=1 and
TOKENIZERS_PARALLELISM=false are set before the import.
"""
import argparse
import os
import statistics
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["RAYON_RS_NUM_CPUS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402


def train(text, vocab_size, alphabet):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=alphabet, special_tokens=[])
    tok.train_from_iterator([text], trainer=trainer)
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data/tinyshakespeare.txt")
    ap.add_argument("--merges", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--csv")
    a = ap.parse_args()
    if a.runs < 1 or a.merges < 0:
        print("bench_tok_hf: --runs must be >= 1 and --merges >= 0", file=sys.stderr)
        return 2
    try:
        with open(a.data, "rb") as f:
            raw = f.read()
    except OSError as e:
        print(f"bench_tok_hf: cannot read {a.data}: {e.strerror}", file=sys.stderr)
        return 1
    # ByteLevel works on text whose characters stand for bytes; decoding latin-1
    # gives one character per byte, and the byte-to-character map does the rest.
    text = raw.decode("latin-1")
    byte_to_char = pre_tokenizers.ByteLevel.alphabet()
    # The initial alphabet: the characters ByteLevel maps this file's bytes to.
    mapping = {chr(b): c for b, c in zip(range(256), sorted(byte_to_char, key=_byte_order))}
    alphabet = sorted({mapping[c] for c in set(text)})
    vocab_size = len(alphabet) + a.merges

    lines = text.splitlines(keepends=True)
    learn, whole, enc = [], [], []
    ntok = nmerges = 0
    for _ in range(a.runs):
        t0 = time.perf_counter()
        tok = train(text, vocab_size, alphabet)
        t1 = time.perf_counter()
        ids = tok.encode(text).ids
        t2 = time.perf_counter()
        batch = tok.encode_batch(lines)
        t3 = time.perf_counter()
        learn.append(t1 - t0)
        whole.append(t2 - t1)
        enc.append(t3 - t2)
        ntok = len(ids)
        nmerges = tok.get_vocab_size() - len(alphabet)
    if text.isascii() and tok.decode(ids) != text:
        print("bench_tok_hf: decode(encode(x)) != x", file=sys.stderr)
        return 1
    if sum(len(e.ids) for e in batch) != ntok:
        print("bench_tok_hf: encode_batch over lines gives other tokens", file=sys.stderr)
    lm, wm, em = statistics.median(learn), statistics.median(whole), statistics.median(enc)
    n = len(raw)
    print(f"file: {a.data} ({n} bytes, {len(alphabet)} distinct), {nmerges} merges learned, "
          f"{ntok} tokens ({n / ntok:.2f} bytes/token), {a.runs} runs, tokenizers "
          f"{_version()}")
    print(f"learn {a.merges} merges: median {1e3 * lm:.1f} ms (min {1e3 * min(learn):.1f}, "
          f"max {1e3 * max(learn):.1f})")
    print(f"encode (one call):     median {1e3 * wm:.1f} ms = {n / 1e6 / wm:.1f} MB/s "
          f"(min {1e3 * min(whole):.1f} ms, max {1e3 * max(whole):.1f} ms)")
    print(f"encode_batch (lines):  median {1e3 * em:.1f} ms = {n / 1e6 / em:.1f} MB/s "
          f"(min {1e3 * min(enc):.1f} ms, max {1e3 * max(enc):.1f} ms)")
    if a.csv:
        new = not os.path.exists(a.csv) or os.path.getsize(a.csv) == 0
        with open(a.csv, "a") as f:
            if new:
                f.write("tokenizer,bytes,merges,runs,learn_ms_median,learn_ms_min,learn_ms_max,"
                        "encode_ms_median,encode_ms_min,encode_ms_max,encode_mb_per_s,tokens\n")
            f.write(f"hf-tokenizers,{n},{nmerges},{a.runs},{1e3 * lm:.2f},{1e3 * min(learn):.2f},"
                    f"{1e3 * max(learn):.2f},{1e3 * em:.2f},{1e3 * min(enc):.2f},"
                    f"{1e3 * max(enc):.2f},{n / 1e6 / em:.2f},{ntok}\n")
    return 0


def _byte_order(c):
    """The byte a ByteLevel character stands for (GPT-2's bytes_to_unicode)."""
    o = ord(c)
    if 33 <= o <= 126 or 161 <= o <= 172 or 174 <= o <= 255:
        return o
    # The other 68 bytes (0-32, 127-160, 173) map, in byte order, to 256, 257, ...
    return _REST[o - 256]


_REST = [b for b in range(256) if not (33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255)]


def _version():
    import tokenizers
    return tokenizers.__version__


if __name__ == "__main__":
    sys.exit(main())
