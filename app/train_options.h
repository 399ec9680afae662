/* train_options: ./train's flags: the Options they fill, their defaults, --help,
 * --print-settings, and parsing with range checks (one usage line and exit 2 on a
 * bad value). Setting up and running the training is left to train.c and
 * app/train_loop.c. */
#ifndef HEADCOUNT_TRAIN_OPTIONS_H
#define HEADCOUNT_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* Every flag's value (defaults: nanoGPT's CPU Shakespeare configuration). */
typedef struct {
    const char *data, *out, *log, *resume, *dump_val, *corpus;
    long layers, heads, embd, head_size, block, batch, steps, warmup;
    long eval_every, eval_iters, save_every, threads, heads_every, accum;
    double lr, min_lr, wd, clip, dropout, val_frac, beta1, beta2, eps;
    uint64_t seed;
    int allow_binary, keep_best;
} Options;

/* Option ids: given[id] says whether the command line set it. */
enum {
    OPT_DATA = 256, OPT_OUT, OPT_LOG, OPT_RESUME, OPT_LAYERS, OPT_HEADS, OPT_EMBD, OPT_HEAD_SIZE,
    OPT_BLOCK, OPT_BATCH, OPT_STEPS, OPT_LR, OPT_MIN_LR, OPT_WARMUP, OPT_WD, OPT_CLIP,
    OPT_DROPOUT, OPT_SEED, OPT_VAL_FRAC, OPT_EVAL_EVERY, OPT_EVAL_ITERS, OPT_SAVE_EVERY,
    OPT_THREADS, OPT_ALLOW_BINARY, OPT_KEEP_BEST, OPT_DUMP_VAL, OPT_HEADS_EVERY, OPT_HELP,
    OPT_VERSION, OPT_ACCUM, OPT_PRINT_SETTINGS, OPT_BETA1, OPT_BETA2, OPT_EPS, OPT_CORPUS,
    OPT_COUNT
};

/* Parses argv into o (defaults first) and marks the flags given; --help,
 * --version and --print-settings print and exit 0, a bad value exits 2. */
void train_options_parse(int argc, char **argv, Options *o, unsigned char given[OPT_COUNT]);

/* Whether the built-in corpus is the induction task (--corpus induction). */
int train_is_induction(const Options *o);

/* s as a JSON string literal into buf (cut to fit). */
void train_json_string(char *buf, size_t len, const char *s);

#endif
