/* settings: every setting of ./train, declared once in TRAIN_SETTINGS below.
 *
 * A row names the setting's id, its field and the C type of its value as
 * tokens (they make struct fields), and everything else as designated
 * initializers of a Setting: flag, type, default, range, resume rule, its slot
 * in a checkpoint's training state, help. From that one row come the field in
 * TrainSettings (the values of a run), in TrainState (what a checkpoint stores,
 * trainer/ckpt.h) and in TrainHyper (what a step uses, trainer/trainer.h), the
 * checkpoint's read, write and range check of the slot, and in app/ the flag's
 * parsing, --help, --print-settings, the resume rules and the log's settings
 * record. The row macro says which of those structs hold the field:
 *   RUN     a setting of the run only (files, threads, the architecture, which
 *           the checkpoint header stores as the model's dimensions);
 *   STORED  also a field of TrainState, in the slot the row names;
 *   STEP    also a field of TrainHyper (as float where the value is a double).
 * The rows of the program's own files and threads live here too, so that --help,
 * --print-settings and the log list every setting in one order; nothing below
 * app/ reads them. app/train/train_options.c makes the flag engine's rows
 * (app/common/flags.h) from these: parsing, --help and the resume rules are the
 * engine's, --print-settings and the log's record train_options' own. */
#ifndef HEADCOUNT_SETTINGS_H
#define HEADCOUNT_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/bf16.h"
#include "model/config.h"
#include "model/params.h"
#include "trainer/limits.h"

/* How a setting's value is parsed, printed and stored. PATH and NAME are strings
 * (NAME from a fixed list), SWITCH takes no value, F32 is a double the optimizer
 * uses as a float32 (stored widened, compared as float), CHOICE is an int, the index
 * of the name the flag gives in the row's `names` (stored as that index). */
typedef enum {
    SET_LONG, SET_REAL, SET_F32, SET_SEED, SET_PATH, SET_NAME, SET_SWITCH, SET_CHOICE
} SetType;

/* What --resume does with a setting: RUN settings belong to this invocation;
 * ARCH ones come from the checkpoint's dimensions and KEEP ones from its training
 * state, and a flag that disagrees is a usage error; CHANGE ones come from the
 * training state unless the flag is given; FRESH ones only a fresh run takes,
 * and given with --resume they are a usage error (resume_why says why); an
 * EITHER switch is on when the flag or the checkpoint turns it on. A KEEP or
 * CHANGE row without a slot of its own is `derived`: app/train works out the
 * checkpoint's value from the training state (its data file, its micro-batches
 * per step) or the --resume path. The flag engine (app/common/flags.h) applies
 * the rules. */
typedef enum { RES_RUN, RES_ARCH, RES_KEEP, RES_CHANGE, RES_FRESH, RES_EITHER } SetResume;

/* Which of the training state's two arrays holds a stored setting
 * (docs/checkpoint.md): int64 or double. */
typedef enum { SLOT_NONE, SLOT_INT, SLOT_REAL } SlotKind;

/* The groups of --help. */
typedef enum { SEC_FILES, SEC_MODEL, SEC_TRAINING, SEC_PROGRAM, SEC_COUNT } SetSection;

/* Shorthands for a row's named fields. */
#define INT_SLOT(n) .slot_kind = SLOT_INT, .slot = (n)
#define REAL_SLOT(n) .slot_kind = SLOT_REAL, .slot = (n)
#define ARCH(f) .resume = RES_ARCH, .cfg_at = offsetof(Config, f)
#define ADAM(f) .to_adam = 1, .adam_at = offsetof(AdamW, f)
#define NAMES(...) .names = (const char *const[]){__VA_ARGS__, NULL}

/* RUN(ID, field, C type, named fields...), STORED(...), STEP(...): see above. */
#define TRAIN_SETTINGS(RUN, STORED, STEP)                                                      \
    RUN(DATA, data, const char *, .flag = "data", .short_flag = 'd', .type = SET_PATH,         \
        .resume = RES_CHANGE, .derived = 1, .meta = "FILE", .section = SEC_FILES,              \
        .help = "text (or .conllu treebank) to train on", .def_text = "built-in corpus")       \
    RUN(CORPUS, corpus, const char *, .flag = "corpus", .type = SET_NAME, .def_str = "text",   \
        NAMES("text", "induction"), .resume = RES_KEEP, .derived = 1,                          \
        .resume_why = "a resumed run continues on the text it trained on, or on a --data FILE", \
        .meta = "NAME",                                                                        \
        .section = SEC_FILES,                                                                  \
        .help = "built-in corpus when no --data: text, or induction",                         \
        .more = "(repeated random strings, with its own recipe: docs/corpus.md)")             \
    RUN(OUT, out, const char *, .flag = "out", .short_flag = 'o', .type = SET_PATH,            \
        .def_str = "headcount.ckpt", .resume = RES_CHANGE, .derived = 1, .meta = "CKPT",       \
        .section = SEC_FILES,                                                                  \
        .help = "checkpoint path", .def_text = "headcount.ckpt, or the --resume file")        \
    RUN(LOG, log, const char *, .flag = "log", .type = SET_PATH, .resume = RES_RUN,            \
        .meta = "FILE", .section = SEC_FILES,                                                  \
        .help = "JSON lines: settings, each step, each eval, summary",                        \
        .more = "(appended to on --resume)", .def_text = "none")                              \
    RUN(RESUME, resume, const char *, .flag = "resume", .type = SET_PATH, .resume = RES_RUN,   \
        .meta = "CKPT", .section = SEC_FILES,                                                  \
        .help = "continue a run exactly from its checkpoint",                                 \
        .more = "and into it, unless --out names another file", .def_text = "start fresh")    \
    STORED(SAVE_EVERY, save_every, long, .flag = "save-every", .type = SET_LONG, .def = 500,   \
           .lo = 0, .hi = LIMIT_STEPS_MAX, .resume = RES_CHANGE, INT_SLOT(6), .meta = "N",     \
           .section = SEC_FILES, .help = "also save every N steps, 0 = only at the end")      \
    RUN(KEEP_BEST, keep_best, int, .flag = "keep-best", .type = SET_SWITCH, .lo = 0, .hi = 1,  \
        .resume = RES_RUN, .meta = "", .section = SEC_FILES,                                   \
        .help = "also keep the checkpoint with the best val loss (*.best.ckpt)",              \
        .def_text = "off")                                                                     \
    STORED(ALLOW_BINARY, allow_binary, int, .flag = "allow-binary", .type = SET_SWITCH,        \
           .lo = 0, .hi = 1, .resume = RES_EITHER, INT_SLOT(11), .meta = "",                   \
           .section = SEC_FILES, .help = "train on a file with NUL bytes",                     \
           .def_text = "refused")                                                              \
    RUN(DUMP_VAL, dump_val, const char *, .flag = "dump-val", .type = SET_PATH,                \
        .resume = RES_RUN, .meta = "FILE", .section = SEC_FILES,                               \
        .help = "write the validation split (the bytes --eval should score)",                 \
        .more = "to FILE and exit without training", .def_text = "none")                      \
    RUN(LAYERS, layers, long, .flag = "layers", .short_flag = 'L', .type = SET_LONG, .def = 4, \
        .lo = 1, .hi = CONFIG_MAX_LAYERS, ARCH(L), .meta = "N", .section = SEC_MODEL,          \
        .help = "transformer blocks")                                                          \
    RUN(HEADS, heads, long, .flag = "heads", .short_flag = 'H', .type = SET_LONG, .def = 4,    \
        .lo = 1, .hi = CONFIG_MAX_HEADS, ARCH(H), .meta = "N", .section = SEC_MODEL,           \
        .help = "attention heads per block")                                                   \
    RUN(EMBD, embd, long, .flag = "embd", .short_flag = 'C', .type = SET_LONG, .def = 128,     \
        .lo = 1, .hi = CONFIG_MAX_EMBD, ARCH(C), .meta = "N", .section = SEC_MODEL,            \
        .help = "residual width C")                                                            \
    RUN(HEAD_SIZE, head_size, long, .flag = "head-size", .type = SET_LONG, .lo = 1,            \
        .hi = CONFIG_MAX_HEAD_SIZE, .zero_off = 1, ARCH(D), .meta = "D", .section = SEC_MODEL, \
        .help = "head size", .def_text = "embd / heads")                                      \
    RUN(INIT_HEADS, init_heads, const char *, .flag = "init-heads", .type = SET_NAME,          \
        .def_str = "random", NAMES("random", "same"), .resume = RES_FRESH,                     \
        .resume_why = "chooses a fresh run's initialisation; a resumed run continues from "    \
                      "the parameters in ",                                                    \
        .in_log = 1, .meta = "HOW", .section = SEC_MODEL,                                      \
        .help = "same: each layer's heads start as copies of its head 0",                     \
        .more = "(q, k, v, projection; dropout, head dropout or gates break it; docs/heads.md)") \
    RUN(POS_STD, pos_std, double, .flag = "pos-std", .type = SET_REAL, .def = PARAMS_INIT_STD, \
        .lo = 0, .hi = LIMIT_POS_STD_MAX, .resume = RES_FRESH,                                 \
        .resume_why = "sets a fresh run's initial position embedding; a resumed run "          \
                      "continues from the parameters in ",                                     \
        .in_log = 1, .meta = "X", .section = SEC_MODEL,                                        \
        .help = "standard deviation of the position embedding's initial values",              \
        .more = "(the same draws, scaled; the token embedding starts at 0.02)")               \
    RUN(BLOCK, block, long, .flag = "block", .short_flag = 'T', .type = SET_LONG, .def = 64,   \
        .lo = 1, .hi = CONFIG_MAX_BLOCK, ARCH(T), .meta = "N", .section = SEC_MODEL,           \
        .help = "context length in tokens")                                                    \
    STORED(VOCAB, vocab, long, .flag = "vocab", .type = SET_LONG, .lo = TOK_BPE_VOCAB_MIN,     \
           .hi = LIMIT_VOCAB_MAX, .zero_off = 1, .resume = RES_KEEP, INT_SLOT(14),             \
           .meta = "N", .section = SEC_MODEL,                                                  \
           .help = "tokens: the 256 byte values plus N - 256 byte-pair merges",               \
           .more = "(merges learned from the train split: docs/tokenizer.md; 0: bytes)",     \
           .def_text = "bytes only")                                                           \
    STORED(BATCH, batch, long, .flag = "batch", .short_flag = 'B', .type = SET_LONG,           \
           .def = 12, .lo = 1, .hi = LIMIT_BATCH_MAX, .resume = RES_KEEP, INT_SLOT(2),         \
           .in_log = 1, .meta = "N", .section = SEC_TRAINING,                                  \
           .help = "sequences per micro-batch")                                                \
    RUN(ACCUM, accum, long, .flag = "accum", .type = SET_LONG, .def = 1, .lo = 1,              \
        .hi = LIMIT_ACCUM_MAX, .resume = RES_KEEP, .derived = 1,                               \
        .resume_why = "an exact resume sums as many micro-batches a step (--accum x ranks) "   \
                      "as the run did",                                                        \
        .meta = "K", .section = SEC_TRAINING,                                                  \
        .help = "micro-batches summed per optimizer step",                                    \
        .more = "(each rank's share under mpirun: a step sees K x ranks x batch)")            \
    STEP(STEPS, steps, long, .flag = "steps", .short_flag = 'n', .type = SET_LONG,             \
         .def = 2000, .lo = 1, .hi = LIMIT_STEPS_MAX, .resume = RES_CHANGE, INT_SLOT(1),       \
         .in_log = 1, .meta = "N", .section = SEC_TRAINING, .help = "optimizer steps")         \
    STEP(LR, lr, double, .flag = "lr", .type = SET_REAL, .def = 1e-3, .lo = LIMIT_LR_MIN,      \
         .hi = LIMIT_LR_MAX, .resume = RES_KEEP, REAL_SLOT(0), .in_log = 1, .meta = "X",       \
         .section = SEC_TRAINING, .help = "peak learning rate")                                \
    STEP(MIN_LR, min_lr, double, .flag = "min-lr", .type = SET_REAL, .def = 1e-4, .lo = 0,     \
         .hi = LIMIT_LR_MAX, .resume = RES_KEEP, REAL_SLOT(1), .in_log = 1, .meta = "X",       \
         .section = SEC_TRAINING, .help = "final learning rate of the cosine decay")           \
    STEP(WARMUP, warmup, long, .flag = "warmup", .type = SET_LONG, .def = 100, .lo = 0,        \
         .hi = LIMIT_STEPS_MAX, .resume = RES_KEEP, INT_SLOT(3), .in_log = 1, .meta = "N",     \
         .section = SEC_TRAINING, .help = "linear warm-up steps")                              \
    STORED(WD, wd, double, .flag = "wd", .type = SET_REAL, .def = 0.1, .lo = 0,                \
           .hi = LIMIT_LR_MAX, .resume = RES_KEEP, REAL_SLOT(2), ADAM(weight_decay),           \
           .in_log = 1, .say = "wd", .meta = "X", .section = SEC_TRAINING,                     \
           .help = "AdamW weight decay on matrices and embeddings")                            \
    STORED(POS_DECAY, pos_decay, int, .flag = "pos-decay", .type = SET_CHOICE,                 \
           NAMES("on", "off"), .lo = 0, .hi = 1, .resume = RES_KEEP, INT_SLOT(16), .in_log = 1, \
           .meta = "ON|OFF", .section = SEC_TRAINING,                                          \
           .help = "AdamW weight decay on the position embedding",                            \
           .more = "on (--wd, as every matrix and embedding) or off", .def_text = "on")       \
    STORED(BETA1, beta1, double, .flag = "beta1", .type = SET_F32, .def = 0.9, .lo = 0,        \
           .hi = LIMIT_BETA_MAX, .resume = RES_KEEP, REAL_SLOT(6), ADAM(beta1), .meta = "X",   \
           .section = SEC_TRAINING, .help = "Adam first-moment decay")                         \
    STORED(BETA2, beta2, double, .flag = "beta2", .type = SET_F32, .def = 0.99, .lo = 0,       \
           .hi = LIMIT_BETA_MAX, .resume = RES_KEEP, REAL_SLOT(7), ADAM(beta2), .meta = "X",   \
           .section = SEC_TRAINING, .help = "Adam second-moment decay")                        \
    STORED(EPS, eps, double, .flag = "eps", .type = SET_F32, .def = 1e-8, .lo = LIMIT_EPS_MIN, \
           .hi = 1, .resume = RES_KEEP, REAL_SLOT(8), ADAM(eps), .meta = "X",                  \
           .section = SEC_TRAINING, .help = "Adam epsilon")                                    \
    STEP(CLIP, clip, double, .flag = "clip", .type = SET_REAL, .def = 1.0, .lo = 0,            \
         .hi = LIMIT_CLIP_MAX, .resume = RES_KEEP, REAL_SLOT(3), .in_log = 1, .say = "clip",   \
         .meta = "X", .section = SEC_TRAINING,                                                 \
         .help = "gradient clipping by global norm, 0 = off")                                  \
    STEP(DROPOUT, dropout, double, .flag = "dropout", .type = SET_REAL, .lo = 0,               \
         .hi = LIMIT_DROPOUT_MAX, .resume = RES_KEEP, REAL_SLOT(4), .in_log = 1,               \
         .say = "dropout", .meta = "X", .section = SEC_TRAINING,                               \
         .help = "dropout on attention weights and residual branches")                         \
    STEP(HEAD_DROPOUT, head_dropout, double, .flag = "head-dropout", .type = SET_REAL,         \
         .lo = 0, .hi = LIMIT_DROPOUT_MAX, .resume = RES_KEEP, REAL_SLOT(10), .in_log = 1,     \
         .say = "head dropout", .meta = "P", .section = SEC_TRAINING,                          \
         .help = "zero each head's output with probability P",                                \
         .more = "(per sequence and layer; kept heads scaled by 1/(1-P); training only)")     \
    STEP(HEAD_GATES, head_gates, double, .flag = "head-gates", .type = SET_REAL,             \
         .lo = 0, .hi = LIMIT_HEAD_GATES_MAX, .zero_off = 1, .resume = RES_KEEP, REAL_SLOT(11),\
         .in_log = 1, .say = "head gates",                                                     \
         .meta = "LAMBDA", .section = SEC_TRAINING,                                            \
         .help = "learn a hard-concrete gate per head, with LAMBDA x expected L0",            \
         .more = "(open heads) added to the loss; 0 = no gates (docs/heads.md)")              \
    STORED(PRECISION, precision, int, .flag = "precision", .type = SET_CHOICE,                 \
           .names = precision_names, .lo = 0, .hi = PRECISION_COUNT - 1, .resume = RES_KEEP,   \
           INT_SLOT(15), .in_log = 1, .say = "precision", .meta = "P",                          \
           .section = SEC_TRAINING,                                                            \
           .help = "the linear layers' products: fp32 or bf16",                               \
           .more = BF16_HELP, .def_text = "fp32")                                              \
    STEP(SEED, seed, uint64_t, .flag = "seed", .short_flag = 's', .type = SET_SEED,            \
         .def = 1337, .resume = RES_KEEP, INT_SLOT(7), .in_log = 1, .say = "seed",             \
         .meta = "N", .section = SEC_TRAINING, .help = "seed for init, batches and dropout")  \
    STORED(VAL_FRAC, val_frac, double, .flag = "val-frac", .type = SET_REAL, .def = 0.1,       \
           .lo = 0, .hi = LIMIT_VAL_FRAC_MAX, .resume = RES_KEEP, REAL_SLOT(5), .in_log = 1,   \
           .meta = "X", .section = SEC_TRAINING,                                               \
           .help = "last fraction of the file held out for validation")                        \
    STORED(EVAL_EVERY, eval_every, long, .flag = "eval-every", .type = SET_LONG, .def = 250,   \
           .lo = 0, .hi = LIMIT_STEPS_MAX, .resume = RES_CHANGE, INT_SLOT(4), .meta = "N",     \
           .section = SEC_TRAINING, .help = "estimate train/val loss every N steps",          \
           .more = "0 = only at the end")                                                      \
    STORED(EVAL_ITERS, eval_iters, long, .flag = "eval-iters", .type = SET_LONG, .def = 20,    \
           .lo = 1, .hi = LIMIT_EVAL_ITERS_MAX, .resume = RES_CHANGE, INT_SLOT(5),             \
           .meta = "N", .section = SEC_TRAINING, .help = "batches per estimate")               \
    RUN(HEADS_EVERY, heads_every, long, .flag = "heads-every", .type = SET_LONG, .lo = 0,      \
        .hi = LIMIT_STEPS_MAX, .resume = RES_RUN, .meta = "N", .section = SEC_TRAINING,        \
        .help = "log per-head attention metrics every N steps to --log",                      \
        .more = "(entropy, prev, first, distance, repeat, relations), 0 = off")               \
    RUN(PROGRESS_EVERY, progress_every, double, .flag = "progress-every", .type = SET_REAL,    \
        .def = 1, .lo = 0, .hi = 86400, .resume = RES_RUN, .meta = "S",                        \
        .section = SEC_PROGRAM, .help = "print a progress line at most every S seconds",      \
        .more = "(and at the first and last step); 0 = none")                                 \
    RUN(THREADS, threads, long, .flag = "threads", .short_flag = 'j', .type = SET_LONG,        \
        .lo = 1, .hi = 1024, .zero_off = 1, .resume = RES_RUN, .meta = "N",                    \
        .section = SEC_PROGRAM, .help = "OpenMP threads",                                      \
        .more = "(results are identical for any count)", .def_text = "all cores")

/* Expands to nothing: for a struct that holds only some kinds of rows. */
#define SETTINGS_SKIP(ID, field, ctype, ...)

/* The values of every setting. */
typedef struct {
#define SETTINGS_FIELD(ID, field, ctype, ...) ctype field;
    TRAIN_SETTINGS(SETTINGS_FIELD, SETTINGS_FIELD, SETTINGS_FIELD)
} TrainSettings;

/* Row indices: settings_table[SETTING_x] is setting x. */
enum {
#define SETTINGS_ID(ID, field, ctype, ...) SETTING_##ID,
    TRAIN_SETTINGS(SETTINGS_ID, SETTINGS_ID, SETTINGS_ID)
    SETTING_COUNT
};

/* A row. The first group comes from the row's tokens, the rest is named in it;
 * a field the row leaves out is 0 (NULL, none). */
typedef struct {
    const char *key;        /* the field's name: its JSON key */
    size_t at, size;        /* offset and size of the value in TrainSettings */
    int stored, step;       /* STORED or STEP row; STEP row */
    size_t state_at;        /* offset in TrainState (stored) */
    size_t hyper_at;        /* offset in TrainHyper (step) */

    const char *flag;       /* long flag, without "--" */
    char short_flag;        /* or 0 */
    SetType type;
    double def;             /* default of a number or switch */
    const char *def_str;    /* default of a PATH or NAME (NULL: none) */
    const char *const *names; /* the values a NAME or CHOICE accepts, NULL-terminated
                               * (a CHOICE stores the index; its default is def) */
    double lo, hi;          /* the range a flag may give (numbers) */
    int zero_off;           /* 0, the default, means off or automatic: allowed besides
                             * [lo, hi] (which no flag gives), and never reached by a
                             * number's underflow (--head-gates 1e-400 is refused) */
    SetResume resume;
    const char *resume_why; /* FRESH: the refusal after "--flag "; KEEP: why the checkpoint's
                             * value holds (NULL: the rule's own reason) */
    int derived;            /* KEEP or CHANGE without a slot (see SetResume) */
    SlotKind slot_kind;     /* a STORED or STEP row's place in the training state */
    int slot;
    size_t cfg_at;          /* RES_ARCH: offset of the int in Config */
    int to_adam;            /* the optimizer reads it: a float in TrainHyper.adam */
    size_t adam_at;         /* offset in AdamW */
    int in_log;             /* a key of the log's settings record */
    const char *say;        /* its name in the settings line on stderr, or NULL */
    const char *meta;       /* the value's name in --help */
    SetSection section;
    const char *help, *more; /* --help line, and a second line or NULL */
    const char *def_text;   /* the default as --help shows it, NULL to print the value */
} Setting;

extern const Setting settings_table[SETTING_COUNT];

typedef struct TrainState TrainState;
typedef struct TrainHyper TrainHyper;

/* Every setting at its default. */
void settings_defaults(TrainSettings *v);
/* The smallest value a setting may hold: lo, or 0 for a zero_off one. */
double settings_min(const Setting *s);
/* Writes the STORED and STEP settings into the training state a checkpoint
 * stores (F32 ones as the float32 the optimizer uses, widened). */
void settings_store(const TrainSettings *v, TrainState *ts);
/* The reverse for one stored setting: its value in ts into v. */
void settings_load_one(const TrainState *ts, const Setting *s, TrainSettings *v);
/* The architecture rows into cfg (V and a head size of 0 are the caller's). */
void settings_config(const TrainSettings *v, Config *cfg);
/* The STEP rows and the optimizer's (to_adam) into hp; micro is the caller's. */
void settings_hyper(const TrainSettings *v, TrainHyper *hp);

#endif
