/* train_options: ./train's command line. Every flag is declared once, as a row
 * of TRAIN_FLAGS below (the named fields of a Flag, app/common/flags.h: flag,
 * type, default, range, resume rule, --help); the flag engine reads the rows for
 * parsing with range checks, --help and the --resume rules, and this file's
 * functions for --print-settings, the built-in corpora's recipes and the
 * settings as the log and the start-up line show them. What a checkpoint
 * stores is trainer/ckpt.h's (TrainState, with the ranges its reader accepts);
 * the model's dimensions are checked by config_validate (model/config.c); the
 * copies between Options and those structs are plain code in app/train/.
 * Setting up and running the training is left to train.c and the rest of
 * app/train/. */
#ifndef HEADCOUNT_TRAIN_OPTIONS_H
#define HEADCOUNT_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "app/common/flags.h"
#include "kernels/bf16.h"
#include "model/config.h"
#include "model/params.h"
#include "trainer/ckpt.h"
#include "trainer/limits.h"

/* The groups of --help. */
typedef enum { SEC_FILES, SEC_MODEL, SEC_TRAINING, SEC_PROGRAM, SEC_COUNT } TrainSection;

/* Shorthands for a row's named fields. ARCH: a model dimension, which a resumed
 * run takes from the checkpoint's header; KEEP: a setting it takes from the
 * checkpoint's training state. A flag that contradicts either is a usage error. */
#define ARCH                                                                                   \
    .resume = FLAG_RESUME_AGREE, .resume_why = "the architecture comes from the checkpoint"
#define KEEP                                                                                   \
    .resume = FLAG_RESUME_AGREE,                                                                  \
    .resume_why = "an exact resume continues the run as it was set up"
#define NAMES(...) .names = (const char *const[]){__VA_ARGS__, NULL}

/* X(ID, field, C type, named fields...): a row per flag, in the order of
 * --help, --print-settings and the log. The C type is the field's in Options;
 * .in_log makes it a key of the log's settings record, .say a name in the
 * start-up line. Where the checkpoint stores a setting, its resume rule is KEEP
 * (or CHANGE, when a resumed run may give another) and trainer/ckpt.c's
 * CKPT_STATE_SETTINGS holds the same range (tests/test_train_flags.c checks). */
#define TRAIN_FLAGS(X)                                                                         \
    X(DATA, data, const char *, .flag = "data", .short_flag = 'd', .type = FLAG_PATH,             \
      .resume = FLAG_RESUME_CHANGE, .meta = "FILE", .section = SEC_FILES,                         \
      .help = "text (or .conllu treebank) to train on", .def_text = "built-in corpus")            \
    X(CORPUS, corpus, const char *, .flag = "corpus", .type = FLAG_NAME, .def_str = "text",       \
      NAMES("text", "induction"), .resume = FLAG_RESUME_AGREE,                                    \
      .resume_why = "a resumed run continues on the text it trained on, or on a --data FILE",     \
      .meta = "NAME", .section = SEC_FILES,                                                       \
      .help = "built-in corpus when no --data: text, or induction",                               \
      .more = "(repeated random strings, with its own recipe: docs/corpus.md)")                   \
    X(OUT, out, const char *, .flag = "out", .short_flag = 'o', .type = FLAG_PATH,                \
      .def_str = "headcount.ckpt", .resume = FLAG_RESUME_CHANGE, .meta = "CKPT",                  \
      .section = SEC_FILES, .help = "checkpoint path",                                            \
      .def_text = "headcount.ckpt, or the --resume file")                                         \
    X(LOG, log, const char *, .flag = "log", .type = FLAG_PATH, .meta = "FILE",                   \
      .section = SEC_FILES, .help = "JSON lines: settings, each step, each eval, summary",        \
      .more = "(appended to on --resume)", .def_text = "none")                                    \
    X(LOG_EVERY, log_every, long, .flag = "log-every", .type = FLAG_LONG, .def = 1, .lo = 1,      \
      .hi = LIMIT_STEPS_MAX, .meta = "N", .section = SEC_FILES,                                   \
      .help = "write a step record to --log every N steps",                                      \
      .more = "(and at the last step; evaluations and head metrics as before)")                 \
    X(RESUME, resume, const char *, .flag = "resume", .type = FLAG_PATH, .meta = "CKPT",          \
      .section = SEC_FILES, .help = "continue a run exactly from its checkpoint",                 \
      .more = "and into it, unless --out names another file", .def_text = "start fresh")          \
    X(SAVE_EVERY, save_every, long, .flag = "save-every", .type = FLAG_LONG, .def = 500,          \
      .lo = 0, .hi = LIMIT_STEPS_MAX, .resume = FLAG_RESUME_CHANGE, .meta = "N",                  \
      .section = SEC_FILES, .help = "also save every N steps, 0 = only at the end")               \
    X(KEEP_BEST, keep_best, int, .flag = "keep-best", .type = FLAG_SWITCH, .meta = "",            \
      .section = SEC_FILES,                                                                       \
      .help = "also keep the checkpoint with the best val loss (*.best.ckpt)",                    \
      .def_text = "off")                                                                          \
    X(ALLOW_BINARY, allow_binary, int, .flag = "allow-binary", .type = FLAG_SWITCH,               \
      .resume = FLAG_RESUME_EITHER, .meta = "", .section = SEC_FILES,                             \
      .help = "train on a file with NUL bytes", .def_text = "refused")                            \
    X(DUMP_VAL, dump_val, const char *, .flag = "dump-val", .type = FLAG_PATH, .meta = "FILE",    \
      .section = SEC_FILES,                                                                       \
      .help = "write the validation split (the bytes --eval should score)",                       \
      .more = "to FILE and exit without training", .def_text = "none")                            \
    X(LAYERS, layers, long, .flag = "layers", .short_flag = 'L', .type = FLAG_LONG, .def = 4,     \
      .lo = 1, .hi = CONFIG_MAX_LAYERS, ARCH, .meta = "N", .section = SEC_MODEL,                  \
      .help = "transformer blocks")                                                               \
    X(HEADS, heads, long, .flag = "n-heads", .alias = "heads", .short_flag = 'H',                 \
      .type = FLAG_LONG, .def = 4,                                                                \
      .lo = 1, .hi = CONFIG_MAX_HEADS, ARCH, .meta = "N", .section = SEC_MODEL,                   \
      .help = "attention heads per block")                                                        \
    X(EMBD, embd, long, .flag = "embd", .short_flag = 'C', .type = FLAG_LONG, .def = 128,         \
      .lo = 1, .hi = CONFIG_MAX_EMBD, ARCH, .meta = "N", .section = SEC_MODEL,                    \
      .help = "residual width C")                                                                 \
    X(HEAD_SIZE, head_size, long, .flag = "head-size", .type = FLAG_LONG, .lo = 1,                \
      .hi = CONFIG_MAX_HEAD_SIZE, .zero_off = 1, ARCH, .meta = "D", .section = SEC_MODEL,         \
      .help = "head size", .def_text = "embd / heads")                                            \
    X(INIT_HEADS, init_heads, const char *, .flag = "init-heads", .type = FLAG_NAME,              \
      .def_str = "random", NAMES("random", "same"), .resume = FLAG_RESUME_FRESH,                  \
      .resume_why = "chooses a fresh run's initialisation; a resumed run "                        \
      "continues from the parameters in ",                                                        \
      .in_log = 1, .meta = "HOW", .section = SEC_MODEL,                                           \
      .help = "same: each layer's heads start as copies of its head 0",                           \
      .more = "(q, k, v, projection; dropout, head dropout or gates break it; docs/heads.md)")    \
    X(POS_STD, pos_std, double, .flag = "pos-std", .type = FLAG_REAL, .def = PARAMS_INIT_STD,     \
      .lo = 0, .hi = LIMIT_POS_STD_MAX, .resume = FLAG_RESUME_FRESH,                              \
      .resume_why = "sets a fresh run's initial position embedding; a "                           \
      "resumed run continues from the parameters in ",                                            \
      .in_log = 1, .meta = "X", .section = SEC_MODEL,                                             \
      .help = "standard deviation of the position embedding's initial values",                    \
      .more = "(the same draws, scaled; the token embedding starts at 0.02)")                     \
    X(BLOCK, block, long, .flag = "block", .short_flag = 'T', .type = FLAG_LONG, .def = 64,       \
      .lo = 1, .hi = CONFIG_MAX_BLOCK, ARCH, .meta = "N", .section = SEC_MODEL,                   \
      .help = "context length in tokens")                                                         \
    X(VOCAB, vocab, long, .flag = "vocab", .type = FLAG_LONG, .lo = TOK_BPE_VOCAB_MIN,            \
      .hi = LIMIT_VOCAB_MAX, .zero_off = 1, KEEP, .meta = "N", .section = SEC_MODEL,              \
      .help = "tokens: the 256 byte values plus N - 256 byte-pair merges",                        \
      .more = "(merges learned from the train split: docs/tokenizer.md; 0: bytes)",               \
      .def_text = "bytes only")                                                                   \
    X(BATCH, batch, long, .flag = "batch", .short_flag = 'B', .type = FLAG_LONG, .def = 12,       \
      .lo = 1, .hi = LIMIT_BATCH_MAX, KEEP, .in_log = 1, .meta = "N", .section = SEC_TRAINING,    \
      .help = "sequences per micro-batch")                                                        \
    X(ACCUM, accum, long, .flag = "accum", .type = FLAG_LONG, .def = 1, .lo = 1,                  \
      .hi = LIMIT_ACCUM_MAX, .resume = FLAG_RESUME_AGREE,                                         \
      .resume_why = "an exact resume sums as many micro-batches a step "                          \
      "(--accum x ranks) as the run did",                                                         \
      .meta = "K", .section = SEC_TRAINING, .help = "micro-batches summed per optimizer step",    \
      .more = "(each rank's share under mpirun: a step sees K x ranks x batch)")                  \
    X(STEPS, steps, long, .flag = "steps", .short_flag = 'n', .type = FLAG_LONG, .def = 2000,     \
      .lo = 1, .hi = LIMIT_STEPS_MAX, .resume = FLAG_RESUME_CHANGE, .in_log = 1, .meta = "N",     \
      .section = SEC_TRAINING, .help = "optimizer steps")                                         \
    X(LR, lr, double, .flag = "lr", .type = FLAG_REAL, .def = 1e-3, .lo = LIMIT_LR_MIN,           \
      .hi = LIMIT_LR_MAX, KEEP, .in_log = 1, .meta = "X", .section = SEC_TRAINING,                \
      .help = "peak learning rate")                                                               \
    X(MIN_LR, min_lr, double, .flag = "min-lr", .type = FLAG_REAL, .def = 1e-4, .lo = 0,          \
      .hi = LIMIT_LR_MAX, KEEP, .in_log = 1, .meta = "X", .section = SEC_TRAINING,                \
      .help = "final learning rate of the cosine decay")                                          \
    X(WARMUP, warmup, long, .flag = "warmup", .type = FLAG_LONG, .def = 100, .lo = 0,             \
      .hi = LIMIT_STEPS_MAX, KEEP, .in_log = 1, .meta = "N", .section = SEC_TRAINING,             \
      .help = "linear warm-up steps")                                                             \
    X(WD, wd, double, .flag = "wd", .type = FLAG_REAL, .def = 0.1, .lo = 0,                       \
      .hi = LIMIT_LR_MAX, KEEP, .in_log = 1, .say = "wd", .meta = "X",                            \
      .section = SEC_TRAINING, .help = "AdamW weight decay on matrices and embeddings")           \
    X(POS_DECAY, pos_decay, int, .flag = "pos-decay", .type = FLAG_CHOICE, NAMES("on", "off"),    \
      KEEP, .in_log = 1, .meta = "ON|OFF", .section = SEC_TRAINING,                               \
      .help = "AdamW weight decay on the position embedding",                                     \
      .more = "on (--wd, as every matrix and embedding) or off", .def_text = "on")                \
    X(BETA1, beta1, double, .flag = "beta1", .type = FLAG_F32, .def = 0.9, .lo = 0,               \
      .hi = LIMIT_BETA_MAX, KEEP, .meta = "X", .section = SEC_TRAINING,                           \
      .help = "Adam first-moment decay")                                                          \
    X(BETA2, beta2, double, .flag = "beta2", .type = FLAG_F32, .def = 0.99, .lo = 0,              \
      .hi = LIMIT_BETA_MAX, KEEP, .meta = "X", .section = SEC_TRAINING,                           \
      .help = "Adam second-moment decay")                                                         \
    X(EPS, eps, double, .flag = "eps", .type = FLAG_F32, .def = 1e-8, .lo = LIMIT_EPS_MIN,        \
      .hi = 1, KEEP, .meta = "X", .section = SEC_TRAINING, .help = "Adam epsilon")                \
    X(CLIP, clip, double, .flag = "clip", .type = FLAG_REAL, .def = 1.0, .lo = 0,                 \
      .hi = LIMIT_CLIP_MAX, KEEP, .in_log = 1, .say = "clip", .meta = "X",                        \
      .section = SEC_TRAINING, .help = "gradient clipping by global norm, 0 = off")               \
    X(DROPOUT, dropout, double, .flag = "dropout", .type = FLAG_REAL, .lo = 0,                    \
      .hi = LIMIT_DROPOUT_MAX, KEEP, .in_log = 1, .say = "dropout", .meta = "X",                  \
      .section = SEC_TRAINING, .help = "dropout on attention weights and residual branches")      \
    X(HEAD_DROPOUT, head_dropout, double, .flag = "head-dropout", .type = FLAG_REAL, .lo = 0,     \
      .hi = LIMIT_DROPOUT_MAX, KEEP, .in_log = 1, .say = "head dropout", .meta = "P",             \
      .section = SEC_TRAINING, .help = "zero each head's output with probability P",              \
      .more = "(per sequence and layer; kept heads scaled by 1/(1-P); training only)")            \
    X(HEAD_GATES, head_gates, double, .flag = "head-gates", .type = FLAG_REAL, .lo = 0,           \
      .hi = LIMIT_HEAD_GATES_MAX, .zero_off = 1, KEEP, .in_log = 1, .say = "head gates",          \
      .meta = "LAMBDA", .section = SEC_TRAINING,                                                  \
      .help = "learn a hard-concrete gate per head, with LAMBDA x expected L0",                   \
      .more = "(open heads) added to the loss; 0 = no gates (docs/heads.md)")                     \
    X(HEAD_ROUTING, head_routing, long, .flag = "head-routing", .type = FLAG_LONG, .lo = 1,      \
      .hi = CONFIG_MAX_HEADS, .zero_off = 1, ARCH, .in_log = 1, .meta = "K",                    \
      .section = SEC_TRAINING, .help = "route each token to K of a layer's heads (1 <= K <= H)",  \
      .more = "by a learned router; 0 = every head (docs/heads.md)", .def_text = "0")             \
    X(ROUTING_BALANCE, routing_balance, double, .flag = "routing-balance", .type = FLAG_REAL,     \
      .def = 0.01, .lo = 0, .hi = LIMIT_ROUTE_BALANCE_MAX, KEEP, .in_log = 1, .meta = "X",        \
      .section = SEC_TRAINING, .help = "with --head-routing, X x the routers' balance loss",      \
      .more = "added to the loss (Switch Transformer's; docs/heads.md)")                          \
    X(PRECISION, precision, int, .flag = "precision", .type = FLAG_CHOICE,                        \
      .names = precision_names, KEEP, .in_log = 1, .say = "precision", .meta = "P",               \
      .section = SEC_TRAINING, .help = "the linear layers' products: fp32 or bf16",               \
      .more = BF16_HELP, .def_text = "fp32")                                                      \
    X(SEED, seed, uint64_t, .flag = "seed", .short_flag = 's', .type = FLAG_SEED, .def = 1337,    \
      KEEP, .in_log = 1, .say = "seed", .meta = "N", .section = SEC_TRAINING,                     \
      .help = "seed for init, batches and dropout")                                               \
    X(VAL_FRAC, val_frac, double, .flag = "val-frac", .type = FLAG_REAL, .def = 0.1, .lo = 0,     \
      .hi = LIMIT_VAL_FRAC_MAX, KEEP, .in_log = 1, .meta = "X", .section = SEC_TRAINING,          \
      .help = "last fraction of the file held out for validation")                                \
    X(EVAL_EVERY, eval_every, long, .flag = "eval-every", .type = FLAG_LONG, .def = 250,          \
      .lo = 0, .hi = LIMIT_STEPS_MAX, .resume = FLAG_RESUME_CHANGE, .meta = "N",                  \
      .section = SEC_TRAINING, .help = "estimate train/val loss every N steps",                   \
      .more = "0 = only at the end")                                                              \
    X(EVAL_ITERS, eval_iters, long, .flag = "eval-iters", .type = FLAG_LONG, .def = 20,           \
      .lo = 1, .hi = LIMIT_EVAL_ITERS_MAX, .resume = FLAG_RESUME_CHANGE, .meta = "N",             \
      .section = SEC_TRAINING, .help = "batches per estimate")                                    \
    X(HEADS_EVERY, heads_every, long, .flag = "heads-every", .type = FLAG_LONG, .lo = 0,          \
      .hi = LIMIT_STEPS_MAX, .meta = "N", .section = SEC_TRAINING,                                \
      .help = "log per-head attention metrics every N steps to --log",                            \
      .more = "(entropy, prev, first, distance, repeat, relations), 0 = off")                     \
    X(PROGRESS_EVERY, progress_every, double, .flag = "progress-every", .type = FLAG_REAL,        \
      .def = 1, .lo = 0, .hi = 86400, .meta = "S", .section = SEC_PROGRAM,                        \
      .help = "print a progress line at most every S seconds",                                    \
      .more = "(and at the first and last step); 0 = none")                                       \
    X(THREADS, threads, long, .flag = "threads", .short_flag = 'j', .type = FLAG_LONG,            \
      .lo = 1, .hi = 1024, .zero_off = 1, .meta = "N", .section = SEC_PROGRAM,                    \
      .help = "OpenMP threads", .more = "(results are identical for any count)",                  \
      .def_text = "all cores")                                                                    \

/* The values of a run's settings, as the command line gives them. */
typedef struct {
#define TRAIN_OPTIONS_FIELD(ID, field, ctype, ...) ctype field;
    TRAIN_FLAGS(TRAIN_OPTIONS_FIELD)
} Options;

/* Row indices: given[OPT_x] says whether flag x was given. */
enum {
#define TRAIN_OPTIONS_ID(ID, field, ctype, ...) OPT_##ID,
    TRAIN_FLAGS(TRAIN_OPTIONS_ID)
    OPT_COUNT
};

/* A row of the flag engine's table; every default is shown in --help. */
#define TRAIN_FLAG_ROW(ID, field, ctype, ...)                                                  \
    [OPT_##ID] = {.key = #field, .at = offsetof(Options, field), .show_def = 1, __VA_ARGS__},

/* The flag engine's table of ./train (rows in TRAIN_FLAGS' order). */
const FlagTable *train_flags(void);

/* A row of a built-in corpus' recipe: the value a run on that corpus gives the
 * setting when its flag is not given (a number: the flag is a LONG, REAL or
 * CHOICE). "text" is the built-in text corpus (no --data, no --corpus),
 * "induction" --corpus induction; --data runs take the plain defaults. */
typedef struct {
    const char *corpus;
    int flag;               /* OPT_x */
    double value;
} Recipe;

extern const Recipe train_recipes[];
extern const int train_recipe_count;

/* given[OPT_x] says whether the command line set flag x;
 * given[GIVEN_PRINT_SETTINGS] whether it asked for --print-settings. */
enum { GIVEN_PRINT_SETTINGS = OPT_COUNT, GIVEN_COUNT };

/* Parses argv into o (defaults first, then the built-in corpus' recipe for each
 * setting not given) and marks the flags given; --help, --version and
 * --print-settings (without --resume) print and exit 0, a bad value exits 2. */
void train_options_parse(int argc, char **argv, Options *o, unsigned char given[GIVEN_COUNT]);

/* --resume from checkpoint ckpt (cfg, ts) on `ranks` processes: applies every
 * flag's resume rule through the flag engine, taking the architecture, the
 * training state, the data, the micro-batches a step and the output from the
 * checkpoint. A flag that contradicts the checkpoint is a usage error naming
 * both values, and so is --heads-every (given, or kept from the checkpoint)
 * without --log. */
void train_options_resume(Options *o, const unsigned char *given, const Config *cfg,
                          const TrainState *ts, long ranks, const char *ckpt);

/* --print-settings: the settings o holds as one JSON object on stdout, then
 * exit 0 (a failed write to stdout is exit 1). */
void train_options_print(const Options *o) __attribute__((noreturn));

/* The settings marked in_log as JSON members ("batch":12,"steps":2000,...), for
 * the log's settings record. */
void train_options_record(const Options *o, char *buf, size_t len);

/* The settings that have a name to say, as ", wd 0.1, clip 1, ...", for the
 * settings line on stderr. */
void train_options_say(const Options *o, char *buf, size_t len);

/* What a checkpoint stores of o (training state): every setting trainer/ckpt.h's
 * TrainState holds, beta1, beta2 and eps as the float32 the optimizer uses. */
void train_options_store(const Options *o, TrainState *ts);

/* The model's dimensions o asks for (V is the tokenizer's): the head size is
 * --head-size, or else embd / heads (config_head_size). */
Config train_options_config(const Options *o, int V);

/* The step's settings o gives (micro is the caller's). */
TrainHyper train_options_hyper(const Options *o);

/* Whether the built-in corpus is the induction task (--corpus induction). */
int train_is_induction(const Options *o);

#endif
