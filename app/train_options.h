/* train_options: ./train's settings, declared once in TRAIN_SETTINGS below (name,
 * flag, type, default, range, help, and how --resume treats it); the Options
 * struct, the option ids, --help, --print-settings, parsing with range checks,
 * the resume rules and the training-state fields a checkpoint stores all derive
 * from that table. Setting up and running the training is left to train.c and
 * app/train_loop.c. */
#ifndef HEADCOUNT_TRAIN_OPTIONS_H
#define HEADCOUNT_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "trainer/ckpt.h"
#include "trainer/limits.h"

/* How a setting's type is parsed and printed. PATH and NAME are strings (NAME
 * from a fixed list), SWITCH takes no value, F32 is a double the optimizer uses
 * as a float32 (stored widened, compared as float). */
typedef enum { SET_LONG, SET_REAL, SET_F32, SET_SEED, SET_PATH, SET_NAME, SET_SWITCH } SetType;

/* What --resume does with a setting: RUN settings belong to this invocation;
 * ARCH ones come from the checkpoint's dimensions and KEEP ones from its training
 * state, and a flag that disagrees is a usage error; CHANGE ones come from the
 * training state unless the flag is given; OWN ones have rules in train.c. */
typedef enum { RES_RUN, RES_ARCH, RES_KEEP, RES_CHANGE, RES_OWN } SetResume;

/* X(ID, field, "flag", 'short', type, default number, "default string", lo, hi,
 *   resume rule, offset in Config (ARCH) or TrainState (KEEP, CHANGE), "META",
 *   section, "help", "help's second line" or NULL, "default as help shows it"
 *   or NULL to print the default value). Sections: 0 data and output, 1 model,
 *   2 training, 3 program. */
#define TS_AT(f) offsetof(TrainState, f)
#define CFG_AT(f) offsetof(Config, f)
#define TRAIN_SETTINGS(X)                                                                        \
    X(DATA, data, "data", 'd', SET_PATH, 0, NULL, 0, 0, RES_OWN, 0, "FILE", 0,                    \
      "text file to train on", NULL, "built-in corpus")                                          \
    X(CORPUS, corpus, "corpus", 0, SET_NAME, 0, "text", 0, 0, RES_OWN, 0, "NAME", 0,              \
      "built-in corpus when no --data: text, or induction", "(repeated random strings, with "  \
      "its own recipe: docs/corpus.md)", NULL)                                                   \
    X(OUT, out, "out", 'o', SET_PATH, 0, "headcount.ckpt", 0, 0, RES_OWN, 0, "CKPT", 0,           \
      "checkpoint path", NULL, "headcount.ckpt, or the --resume file")                           \
    X(LOG, log, "log", 0, SET_PATH, 0, NULL, 0, 0, RES_RUN, 0, "FILE", 0,                         \
      "JSON lines: settings, each step, each eval, summary",                                     \
      "(appended to on --resume)", "none")                                                       \
    X(RESUME, resume, "resume", 0, SET_PATH, 0, NULL, 0, 0, RES_RUN, 0, "CKPT", 0,                \
      "continue a run exactly from its checkpoint",                                              \
      "and into it, unless --out names another file", "start fresh")                             \
    X(SAVE_EVERY, save_every, "save-every", 0, SET_LONG, 500, NULL, 0, LIMIT_STEPS_MAX,           \
      RES_CHANGE, TS_AT(save_every), "N", 0, "also save every N steps, 0 = only at the end",     \
      NULL, NULL)                                                                                \
    X(KEEP_BEST, keep_best, "keep-best", 0, SET_SWITCH, 0, NULL, 0, 1, RES_RUN, 0, "", 0,         \
      "also keep the checkpoint with the best val loss (*.best.ckpt)", NULL, "off")              \
    X(ALLOW_BINARY, allow_binary, "allow-binary", 0, SET_SWITCH, 0, NULL, 0, 1, RES_OWN, 0, "", 0, \
      "train on a file with NUL bytes", NULL, "refused")                                         \
    X(DUMP_VAL, dump_val, "dump-val", 0, SET_PATH, 0, NULL, 0, 0, RES_RUN, 0, "FILE", 0,          \
      "write the validation split (the bytes --eval should score)",                              \
      "to FILE and exit without training", "none")                                              \
    X(LAYERS, layers, "layers", 'L', SET_LONG, 4, NULL, 1, CONFIG_MAX_LAYERS, RES_ARCH,           \
      CFG_AT(L), "N", 1, "transformer blocks", NULL, NULL)                                       \
    X(HEADS, heads, "heads", 'H', SET_LONG, 4, NULL, 1, CONFIG_MAX_HEADS, RES_ARCH, CFG_AT(H),    \
      "N", 1, "attention heads per block", NULL, NULL)                                           \
    X(EMBD, embd, "embd", 'C', SET_LONG, 128, NULL, 1, CONFIG_MAX_EMBD, RES_ARCH, CFG_AT(C), "N", \
      1, "residual width C", NULL, NULL)                                                         \
    X(HEAD_SIZE, head_size, "head-size", 0, SET_LONG, 0, NULL, 1, CONFIG_MAX_HEAD_SIZE, RES_ARCH, \
      CFG_AT(D), "D", 1, "head size", NULL, "embd / heads")                                      \
    X(BLOCK, block, "block", 'T', SET_LONG, 64, NULL, 1, CONFIG_MAX_BLOCK, RES_ARCH, CFG_AT(T),   \
      "N", 1, "context length in tokens", NULL, NULL)                                             \
    X(VOCAB, vocab, "vocab", 0, SET_LONG, 0, NULL, 1, LIMIT_VOCAB_MAX, RES_KEEP, TS_AT(vocab),    \
      "N", 1, "tokens: the file's bytes plus byte-pair merges, N in all",                      \
      "(merges learned from the train split: docs/tokenizer.md)", "bytes only")                 \
    X(BATCH, batch, "batch", 'B', SET_LONG, 12, NULL, 1, LIMIT_BATCH_MAX, RES_KEEP,               \
      TS_AT(batch), "N", 2, "sequences per micro-batch", NULL, NULL)                             \
    X(ACCUM, accum, "accum", 0, SET_LONG, 1, NULL, 1, LIMIT_ACCUM_MAX, RES_OWN, 0, "K", 2,        \
      "micro-batches summed per optimizer step",                                                 \
      "(each rank's share under mpirun: a step sees K x ranks x batch)", NULL)                   \
    X(STEPS, steps, "steps", 'n', SET_LONG, 2000, NULL, 1, LIMIT_STEPS_MAX, RES_CHANGE,           \
      TS_AT(steps), "N", 2, "optimizer steps", NULL, NULL)                                       \
    X(LR, lr, "lr", 0, SET_REAL, 1e-3, NULL, LIMIT_LR_MIN, LIMIT_LR_MAX, RES_KEEP, TS_AT(lr),     \
      "X", 2, "peak learning rate", NULL, NULL)                                                  \
    X(MIN_LR, min_lr, "min-lr", 0, SET_REAL, 1e-4, NULL, 0, LIMIT_LR_MAX, RES_KEEP,               \
      TS_AT(min_lr), "X", 2, "final learning rate of the cosine decay", NULL, NULL)              \
    X(WARMUP, warmup, "warmup", 0, SET_LONG, 100, NULL, 0, LIMIT_STEPS_MAX, RES_KEEP,             \
      TS_AT(warmup), "N", 2, "linear warm-up steps", NULL, NULL)                                 \
    X(WD, wd, "wd", 0, SET_REAL, 0.1, NULL, 0, LIMIT_LR_MAX, RES_KEEP, TS_AT(wd), "X", 2,         \
      "AdamW weight decay on matrices and embeddings", NULL, NULL)                               \
    X(BETA1, beta1, "beta1", 0, SET_F32, 0.9, NULL, 0, LIMIT_BETA_MAX, RES_KEEP, TS_AT(beta1),    \
      "X", 2, "Adam first-moment decay", NULL, NULL)                                             \
    X(BETA2, beta2, "beta2", 0, SET_F32, 0.99, NULL, 0, LIMIT_BETA_MAX, RES_KEEP, TS_AT(beta2),   \
      "X", 2, "Adam second-moment decay", NULL, NULL)                                            \
    X(EPS, eps, "eps", 0, SET_F32, 1e-8, NULL, LIMIT_EPS_MIN, 1, RES_KEEP, TS_AT(eps), "X", 2,    \
      "Adam epsilon", NULL, NULL)                                                                \
    X(CLIP, clip, "clip", 0, SET_REAL, 1.0, NULL, 0, LIMIT_CLIP_MAX, RES_KEEP, TS_AT(clip), "X",  \
      2, "gradient clipping by global norm, 0 = off", NULL, NULL)                                \
    X(DROPOUT, dropout, "dropout", 0, SET_REAL, 0, NULL, 0, LIMIT_DROPOUT_MAX, RES_KEEP,          \
      TS_AT(dropout), "X", 2, "dropout on attention weights and residual branches", NULL, NULL)  \
    X(HEAD_DROPOUT, head_dropout, "head-dropout", 0, SET_REAL, 0, NULL, 0, LIMIT_DROPOUT_MAX,     \
      RES_KEEP, TS_AT(head_dropout), "P", 2, "zero each head's output with probability P",       \
      "(per sequence and layer; kept heads scaled by 1/(1-P); training only)", NULL)             \
    X(SEED, seed, "seed", 's', SET_SEED, 1337, NULL, 0, 0, RES_KEEP, TS_AT(seed), "N", 2,         \
      "seed for init, batches and dropout", NULL, NULL)                                          \
    X(VAL_FRAC, val_frac, "val-frac", 0, SET_REAL, 0.1, NULL, 0, LIMIT_VAL_FRAC_MAX, RES_KEEP,    \
      TS_AT(val_frac), "X", 2, "last fraction of the file held out for validation", NULL, NULL)  \
    X(EVAL_EVERY, eval_every, "eval-every", 0, SET_LONG, 250, NULL, 0, LIMIT_STEPS_MAX,           \
      RES_CHANGE, TS_AT(eval_every), "N", 2, "estimate train/val loss every N steps",            \
      "0 = only at the end", NULL)                                                               \
    X(EVAL_ITERS, eval_iters, "eval-iters", 0, SET_LONG, 20, NULL, 1, LIMIT_EVAL_ITERS_MAX,       \
      RES_CHANGE, TS_AT(eval_iters), "N", 2, "batches per estimate", NULL, NULL)                 \
    X(HEADS_EVERY, heads_every, "heads-every", 0, SET_LONG, 0, NULL, 0, LIMIT_STEPS_MAX, RES_RUN, \
      0, "N", 2, "log per-head attention metrics every N steps to --log",                        \
      "(entropy, prev, first, distance, repeat, relations), 0 = off", NULL)                      \
    X(THREADS, threads, "threads", 'j', SET_LONG, 0, NULL, 1, 1024, RES_RUN, 0, "N", 3,           \
      "OpenMP threads", "(results are identical for any count)", "all cores")

/* Every setting's value, in a field of the C type its SetType stands for. */
#define TRAIN_VALUE_SET_LONG long
#define TRAIN_VALUE_SET_REAL double
#define TRAIN_VALUE_SET_F32 double
#define TRAIN_VALUE_SET_SEED uint64_t
#define TRAIN_VALUE_SET_PATH const char *
#define TRAIN_VALUE_SET_NAME const char *
#define TRAIN_VALUE_SET_SWITCH int
typedef struct {
#define X(ID, field, flag, sh, type, dn, ds, lo, hi, res, at, meta, sec, help, more, dtext) \
    TRAIN_VALUE_##type field;
    TRAIN_SETTINGS(X)
#undef X
} Options;

/* Option ids: given[id] says whether the command line set it. The settings come
 * first, then the program's own flags. */
enum {
    OPT_FIRST = 256,
#define X(ID, field, flag, sh, type, dn, ds, lo, hi, res, at, meta, sec, help, more, dtext) \
    OPT_##ID,
    TRAIN_SETTINGS(X)
#undef X
    OPT_HELP, OPT_VERSION, OPT_PRINT_SETTINGS, OPT_COUNT
};

/* Parses argv into o (defaults first) and marks the flags given; --help,
 * --version and --print-settings print and exit 0, a bad value exits 2. */
void train_options_parse(int argc, char **argv, Options *o, unsigned char given[OPT_COUNT]);

/* --resume: takes from the checkpoint every setting it fixes (ARCH, KEEP, and
 * CHANGE ones not given); a given flag that disagrees with an ARCH or KEEP value
 * is a usage error naming both values. */
void train_options_resume(Options *o, const unsigned char *given, const Config *c,
                          const TrainState *ts);

/* Writes the KEEP and CHANGE settings into the training state a checkpoint
 * stores (F32 ones as the float32 the optimizer uses, widened). */
void train_options_store(const Options *o, TrainState *ts);

/* Whether the built-in corpus is the induction task (--corpus induction). */
int train_is_induction(const Options *o);

/* s as a JSON string literal into buf (cut to fit). */
void train_json_string(char *buf, size_t len, const char *s);

#endif
