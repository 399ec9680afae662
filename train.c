/* train: trains a headcount model on a text file (or the built-in corpus).
 *
 * Flags, orchestration and printing only: the model is in model/, the data in
 * data/. Settings are printed once at the start, progress goes to stderr at a
 * steady interval, evaluations and a final summary follow, and --log writes one
 * JSON object per line (settings, every step, every evaluation, the summary).
 * Checkpoints carry the training state, so --resume continues bit-exactly. */
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/synth.h"
#include "model/adamw.h"
#include "model/ckpt.h"
#include "model/evaluate.h"
#include "model/gpt.h"
#include "model/heads.h"
#include "model/rng.h"
#include "model/schedule.h"

/* Every flag, with the defaults of nanoGPT's CPU Shakespeare configuration. */
typedef struct {
    const char *data, *out, *log, *resume, *dump_val;
    long layers, heads, embd, head_size, block, batch, steps, warmup;
    long eval_every, eval_iters, save_every, threads, heads_every;
    double lr, min_lr, wd, clip, dropout, val_frac;
    uint64_t seed;
    int allow_binary, keep_best;
} Options;

static const Options DEFAULTS = {
    .data = NULL, .out = "headcount.ckpt", .log = NULL, .resume = NULL,
    .layers = 4, .heads = 4, .embd = 128, .head_size = 0, .block = 64, .batch = 12,
    .steps = 2000, .warmup = 100, .eval_every = 250, .eval_iters = 20, .save_every = 500,
    .threads = 0, .lr = 1e-3, .min_lr = 1e-4, .wd = 0.1, .clip = 1.0, .dropout = 0.0,
    .val_frac = 0.1, .seed = 1337, .allow_binary = 0, .keep_best = 0,
};

enum {
    OPT_DATA = 256, OPT_OUT, OPT_LOG, OPT_RESUME, OPT_LAYERS, OPT_HEADS, OPT_EMBD, OPT_HEAD_SIZE,
    OPT_BLOCK, OPT_BATCH, OPT_STEPS, OPT_LR, OPT_MIN_LR, OPT_WARMUP, OPT_WD, OPT_CLIP,
    OPT_DROPOUT, OPT_SEED, OPT_VAL_FRAC, OPT_EVAL_EVERY, OPT_EVAL_ITERS, OPT_SAVE_EVERY,
    OPT_THREADS, OPT_ALLOW_BINARY, OPT_KEEP_BEST, OPT_DUMP_VAL, OPT_HEADS_EVERY, OPT_HELP, OPT_COUNT
};

static void usage(void)
{
    const Options *d = &DEFAULTS;
    printf("usage: ./train [--data FILE] [options]\n"
           "Trains a small GPT (byte vocabulary, multi-head attention) and writes a checkpoint.\n"
           "Without --data it trains on the built-in generated corpus (docs/corpus.md).\n\n"
           "data and output:\n"
           "  -d, --data FILE        text file to train on (default: built-in corpus)\n"
           "  -o, --out CKPT         checkpoint path (default: %s)\n"
           "      --log FILE         JSON lines: settings, each step, each eval, summary (default: none)\n"
           "      --resume CKPT      continue a run exactly from its checkpoint (default: start fresh)\n"
           "      --save-every N     also save every N steps, 0 = only at the end (default: %ld)\n"
           "      --keep-best        also keep the checkpoint with the best val loss (*.best.ckpt)\n"
           "      --allow-binary     train on a file with NUL bytes (refused by default)\n"
           "      --dump-val FILE    write the validation split (the bytes --eval should score)\n"
           "                         to FILE and exit without training (default: none)\n"
           "model:\n"
           "  -L, --layers N         transformer blocks (default: %ld)\n"
           "  -H, --heads N          attention heads per block (default: %ld)\n"
           "  -C, --embd N           residual width C (default: %ld)\n"
           "      --head-size D      head size (default: embd / heads)\n"
           "  -T, --block N          context length in bytes (default: %ld)\n"
           "training:\n"
           "  -B, --batch N          sequences per step (default: %ld)\n"
           "  -n, --steps N          optimizer steps (default: %ld)\n"
           "      --lr X             peak learning rate (default: %g)\n"
           "      --min-lr X         final learning rate of the cosine decay (default: %g)\n"
           "      --warmup N         linear warm-up steps (default: %ld)\n"
           "      --wd X             AdamW weight decay on matrices and embeddings (default: %g)\n"
           "      --clip X           gradient clipping by global norm, 0 = off (default: %g)\n"
           "      --dropout X        dropout on attention weights and residual branches (default: %g)\n"
           "  -s, --seed N           seed for init, batches and dropout (default: %llu)\n"
           "      --val-frac X       last fraction of the file held out for validation (default: %g)\n"
           "      --eval-every N     estimate train/val loss every N steps, 0 = only at the end (default: %ld)\n"
           "      --eval-iters N     batches per estimate (default: %ld)\n"
           "      --heads-every N    log per-head attention metrics every N steps to --log\n"
           "                         (entropy, prev, first, distance, repeat), 0 = off (default: 0)\n"
           "  -j, --threads N        OpenMP threads (default: all cores; results are identical)\n"
           "  -h, --help             this help\n",
           d->out, d->save_every, d->layers, d->heads, d->embd, d->block, d->batch, d->steps,
           d->lr, d->min_lr, d->warmup, d->wd, d->clip, d->dropout,
           (unsigned long long)d->seed, d->val_frac, d->eval_every, d->eval_iters);
}

static void parse(int argc, char **argv, Options *o, unsigned char given[OPT_COUNT])
{
    static const struct option longs[] = {
        {"data", required_argument, 0, OPT_DATA}, {"out", required_argument, 0, OPT_OUT},
        {"log", required_argument, 0, OPT_LOG}, {"resume", required_argument, 0, OPT_RESUME},
        {"layers", required_argument, 0, OPT_LAYERS}, {"heads", required_argument, 0, OPT_HEADS},
        {"embd", required_argument, 0, OPT_EMBD},
        {"head-size", required_argument, 0, OPT_HEAD_SIZE},
        {"block", required_argument, 0, OPT_BLOCK}, {"batch", required_argument, 0, OPT_BATCH},
        {"steps", required_argument, 0, OPT_STEPS}, {"lr", required_argument, 0, OPT_LR},
        {"min-lr", required_argument, 0, OPT_MIN_LR},
        {"warmup", required_argument, 0, OPT_WARMUP}, {"wd", required_argument, 0, OPT_WD},
        {"clip", required_argument, 0, OPT_CLIP}, {"dropout", required_argument, 0, OPT_DROPOUT},
        {"seed", required_argument, 0, OPT_SEED},
        {"val-frac", required_argument, 0, OPT_VAL_FRAC},
        {"eval-every", required_argument, 0, OPT_EVAL_EVERY},
        {"eval-iters", required_argument, 0, OPT_EVAL_ITERS},
        {"save-every", required_argument, 0, OPT_SAVE_EVERY},
        {"threads", required_argument, 0, OPT_THREADS},
        {"allow-binary", no_argument, 0, OPT_ALLOW_BINARY},
        {"keep-best", no_argument, 0, OPT_KEEP_BEST},
        {"dump-val", required_argument, 0, OPT_DUMP_VAL},
        {"heads-every", required_argument, 0, OPT_HEADS_EVERY}, {"help", no_argument, 0, OPT_HELP},
        {0, 0, 0, 0}};
    static const CliShort shorts[] = {
        {'d', OPT_DATA}, {'o', OPT_OUT}, {'L', OPT_LAYERS}, {'H', OPT_HEADS}, {'C', OPT_EMBD},
        {'T', OPT_BLOCK}, {'B', OPT_BATCH}, {'n', OPT_STEPS}, {'s', OPT_SEED},
        {'j', OPT_THREADS}, {'h', OPT_HELP}};
    *o = DEFAULTS;
    int c;
    while ((c = cli_next_option(argc, argv, ":d:o:L:H:C:T:B:n:s:j:h", longs, shorts,
                                sizeof shorts / sizeof shorts[0])) != -1) {
        given[c] = 1;
        switch (c) {
        case OPT_DATA: o->data = optarg; break;
        case OPT_OUT: o->out = optarg; break;
        case OPT_LOG: o->log = optarg; break;
        case OPT_RESUME: o->resume = optarg; break;
        case OPT_LAYERS: o->layers = cli_long("layers", optarg, 1, CONFIG_MAX_LAYERS); break;
        case OPT_HEADS: o->heads = cli_long("heads", optarg, 1, CONFIG_MAX_HEADS); break;
        case OPT_EMBD: o->embd = cli_long("embd", optarg, 1, CONFIG_MAX_EMBD); break;
        case OPT_HEAD_SIZE:
            o->head_size = cli_long("head-size", optarg, 1, CONFIG_MAX_HEAD_SIZE);
            break;
        case OPT_BLOCK: o->block = cli_long("block", optarg, 1, CONFIG_MAX_BLOCK); break;
        case OPT_BATCH: o->batch = cli_long("batch", optarg, 1, 65536); break;
        case OPT_STEPS: o->steps = cli_long("steps", optarg, 1, 100000000); break;
        case OPT_LR: o->lr = cli_double("lr", optarg, 1e-9, 10); break;
        case OPT_MIN_LR: o->min_lr = cli_double("min-lr", optarg, 0, 10); break;
        case OPT_WARMUP: o->warmup = cli_long("warmup", optarg, 0, 100000000); break;
        case OPT_WD: o->wd = cli_double("wd", optarg, 0, 10); break;
        case OPT_CLIP: o->clip = cli_double("clip", optarg, 0, 1e6); break;
        case OPT_DROPOUT: o->dropout = cli_double("dropout", optarg, 0, 0.95); break;
        case OPT_SEED: o->seed = cli_u64("seed", optarg); break;
        case OPT_VAL_FRAC: o->val_frac = cli_double("val-frac", optarg, 0, 0.9); break;
        case OPT_EVAL_EVERY: o->eval_every = cli_long("eval-every", optarg, 0, 100000000); break;
        case OPT_EVAL_ITERS: o->eval_iters = cli_long("eval-iters", optarg, 1, 100000); break;
        case OPT_SAVE_EVERY: o->save_every = cli_long("save-every", optarg, 0, 100000000); break;
        case OPT_THREADS: o->threads = cli_long("threads", optarg, 1, 1024); break;
        case OPT_ALLOW_BINARY: o->allow_binary = 1; break;
        case OPT_KEEP_BEST: o->keep_best = 1; break;
        case OPT_DUMP_VAL: o->dump_val = optarg; break;
        case OPT_HEADS_EVERY:
            o->heads_every = cli_long("heads-every", optarg, 0, 100000000);
            break;
        case OPT_HELP: usage(); exit(0);
        default: cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cli_usage_error("unexpected argument '%s' (flags take the form --name value)",
                        argv[optind]);
    if (o->min_lr > o->lr)
        cli_usage_error("--min-lr %g is above --lr %g", o->min_lr, o->lr);
    if (o->heads_every && !o->log)
        cli_usage_error("--heads-every %ld needs --log FILE to write the metrics to",
                        o->heads_every);
}

/* ---- signals: the first SIGINT/SIGTERM asks for a save, the second exits ---- */

static volatile sig_atomic_t stop_signal = 0;

static void on_signal(int sig)
{
    if (stop_signal) {
        static const char msg[] = "\ntrain: second signal, exiting at once; "
                                  "the last saved checkpoint is intact\n";
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)ignored;
        _exit(128 + sig);
    }
    stop_signal = sig;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ---- the run ---- */

typedef struct {
    Options o;
    TextFile file;
    Corpus corpus;
    Model model;
    Activations acts;
    TrainState ts;          /* settings, position and Adam moments: what a checkpoint stores */
    BatchSampler sampler;
    AdamW adam;
    int *inputs, *targets;
    float *head_metrics;    /* [L*H*HEADS_QUICK_COUNT] for --heads-every */
    FILE *log;
    double best_val;
    long best_step;
} Run;

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void load_data(Run *r, const char *path, size_t builtin_bytes)
{
    char err[1500];
    int rc = path ? textfile_read(&r->file, path, r->o.allow_binary, err, sizeof err)
                  : textfile_builtin(&r->file, builtin_bytes, err, sizeof err);
    if (rc)
        cli_fail("%s", err);
}

static void setup_fresh(Run *r)
{
    Options *o = &r->o;
    char err[1500];
    load_data(r, o->data, SYNTH_DEFAULT_BYTES);
    if (corpus_prepare(&r->corpus, &r->file, NULL, o->val_frac, (int)o->block, err, sizeof err))
        cli_fail("%s", err);
    if (!o->head_size && o->embd % o->heads != 0)
        cli_usage_error("--heads %ld does not divide --embd %ld; pick a divisor or give "
                        "--head-size", o->heads, o->embd);
    Config cfg = {.V = r->corpus.tok.V, .T = (int)o->block, .L = (int)o->layers,
                  .H = (int)o->heads, .C = (int)o->embd,
                  .D = (int)(o->head_size ? o->head_size : o->embd / o->heads)};
    if (config_validate(&cfg, err, sizeof err))
        cli_usage_error("%s", err);
    if (model_init(&r->model, &cfg, err, sizeof err))
        cli_fail("%s", err);
    params_init(&r->model.table, r->model.params, o->seed);
    TrainState *ts = &r->ts;
    ts->adam_m = calloc(r->model.table.total, sizeof(float));
    ts->adam_v = calloc(r->model.table.total, sizeof(float));
    if (!ts->adam_m || !ts->adam_v)
        cli_fail("out of memory for the optimizer state");
    ts->best_step = -1;
    batch_init(&r->sampler, o->seed, RNG_STREAM_BATCH);
}

/* A flag given on the command line that disagrees with the checkpoint. */
static void conflict(const unsigned char *given, int id, const char *flag, double want,
                     double have, const char *what)
{
    if (given[id] && want != have)
        cli_usage_error("--%s %g contradicts the checkpoint (%g): %s", flag, want, have, what);
}

static void setup_resume(Run *r, const unsigned char *given)
{
    Options *o = &r->o;
    TrainState *ts = &r->ts;
    char err[1500];
    long steps_done;
    int has_state;
    Tokenizer tok;
    if (ckpt_load(o->resume, &r->model, &tok, &steps_done, ts, &has_state, err, sizeof err))
        cli_fail("%s", err);
    if (!has_state)
        cli_fail("%s: has no training state (flags 0): it can be evaluated and sampled, not "
                 "resumed", o->resume);
    const Config *c = &r->model.cfg;
    const char *arch = "the architecture comes from the checkpoint";
    conflict(given, OPT_LAYERS, "layers", (double)o->layers, c->L, arch);
    conflict(given, OPT_HEADS, "heads", (double)o->heads, c->H, arch);
    conflict(given, OPT_EMBD, "embd", (double)o->embd, c->C, arch);
    conflict(given, OPT_HEAD_SIZE, "head-size", (double)o->head_size, c->D, arch);
    conflict(given, OPT_BLOCK, "block", (double)o->block, c->T, arch);
    const char *same = "an exact resume continues the run as it was set up";
    conflict(given, OPT_BATCH, "batch", (double)o->batch, (double)ts->batch, same);
    conflict(given, OPT_LR, "lr", o->lr, ts->lr, same);
    conflict(given, OPT_MIN_LR, "min-lr", o->min_lr, ts->min_lr, same);
    conflict(given, OPT_WARMUP, "warmup", (double)o->warmup, (double)ts->warmup, same);
    conflict(given, OPT_WD, "wd", o->wd, ts->wd, same);
    conflict(given, OPT_CLIP, "clip", o->clip, ts->clip, same);
    conflict(given, OPT_DROPOUT, "dropout", o->dropout, ts->dropout, same);
    conflict(given, OPT_SEED, "seed", (double)o->seed, (double)ts->seed, same);
    conflict(given, OPT_VAL_FRAC, "val-frac", o->val_frac, ts->val_frac, same);
    o->layers = c->L; o->heads = c->H; o->embd = c->C; o->head_size = c->D; o->block = c->T;
    o->batch = ts->batch; o->lr = ts->lr; o->min_lr = ts->min_lr; o->warmup = ts->warmup;
    o->wd = ts->wd; o->clip = ts->clip; o->dropout = ts->dropout; o->seed = ts->seed;
    o->val_frac = ts->val_frac;
    o->allow_binary = o->allow_binary || ts->allow_binary;
    if (!given[OPT_STEPS]) o->steps = ts->steps;
    if (!given[OPT_EVAL_EVERY]) o->eval_every = ts->eval_every;
    if (!given[OPT_EVAL_ITERS]) o->eval_iters = ts->eval_iters;
    if (!given[OPT_SAVE_EVERY]) o->save_every = ts->save_every;
    if (steps_done >= o->steps)
        cli_usage_error("%s has already trained %ld of %ld steps; give --steps above %ld to "
                        "train further", o->resume, steps_done, o->steps, steps_done);

    int builtin = strcmp(ts->data_path, CORPUS_BUILTIN_NAME) == 0;
    if (given[OPT_DATA]) {
        load_data(r, o->data, 0);
        if (r->file.hash != ts->data_hash || r->file.n != ts->data_size)
            fprintf(stderr, "train: note: %s differs from the data this run started on (%s); "
                    "continuing on it as asked\n", o->data, ts->data_path);
    } else {
        o->data = builtin ? NULL : ts->data_path;
        load_data(r, o->data, (size_t)ts->data_size);
        if (r->file.hash != ts->data_hash || r->file.n != ts->data_size)
            cli_fail("%s changed since the checkpoint was written (%llu bytes, hash %016llx; "
                     "now %zu bytes, hash %016llx); pass --data %s to continue on it anyway",
                     ts->data_path, (unsigned long long)ts->data_size,
                     (unsigned long long)ts->data_hash, r->file.n,
                     (unsigned long long)r->file.hash, ts->data_path);
    }
    if (corpus_prepare(&r->corpus, &r->file, &tok, o->val_frac, c->T, err, sizeof err))
        cli_fail("%s", err);
    r->sampler.rng.state = ts->batch_rng;
    fprintf(stderr, "train: resuming %s at step %ld of %ld\n", o->resume, steps_done, o->steps);
    if (given[OPT_STEPS] && o->steps != ts->steps)
        fprintf(stderr, "train: note: total steps changed from %ld to %ld (the cosine schedule "
                "stretches to the new end)\n", ts->steps, o->steps);
}

/* Copies the settings of the run into the training state a checkpoint stores. */
static void sync_state(Run *r, long step)
{
    TrainState *ts = &r->ts;
    const Options *o = &r->o;
    ts->step = step;
    ts->steps = o->steps; ts->batch = o->batch; ts->warmup = o->warmup;
    ts->eval_every = o->eval_every; ts->eval_iters = o->eval_iters;
    ts->save_every = o->save_every; ts->seed = o->seed;
    ts->batch_rng = r->sampler.rng.state;
    ts->data_size = r->file.n; ts->data_hash = r->file.hash;
    ts->allow_binary = o->allow_binary;
    ts->lr = o->lr; ts->min_lr = o->min_lr; ts->wd = o->wd; ts->clip = o->clip;
    ts->dropout = o->dropout; ts->val_frac = o->val_frac;
    ts->beta1 = r->adam.beta1; ts->beta2 = r->adam.beta2; ts->eps = r->adam.eps;
    snprintf(ts->data_path, sizeof ts->data_path, "%s", r->file.name);
}

static int save(Run *r, const char *path, long step, char *err, size_t errlen)
{
    sync_state(r, step);
    return ckpt_save(path, &r->model, &r->corpus.tok, step, &r->ts, err, errlen);
}

/* The --keep-best path: x.ckpt -> x.best.ckpt, anything else -> anything.best. */
static void best_path(const char *out, char *buf, size_t len)
{
    size_t n = strlen(out);
    if (n > 5 && strcmp(out + n - 5, ".ckpt") == 0)
        snprintf(buf, len, "%.*s.best.ckpt", (int)(n - 5), out);
    else
        snprintf(buf, len, "%s.best", out);
}

/* Mean loss over eval_iters fixed batches of a split (the same batches at every
 * evaluation: their sampler is re-seeded each time). */
static double estimate(Run *r, const uint8_t *ids, size_t len)
{
    BatchSampler s;
    batch_init(&s, r->o.seed, RNG_STREAM_EVAL);
    int B = (int)r->o.batch, T = (int)r->o.block;
    double total = 0.0;
    for (long i = 0; i < r->o.eval_iters; i++) {
        batch_next(&s, ids, len, B, T, r->inputs, r->targets);
        total += gpt_forward(&r->model, &r->acts, r->inputs, r->targets, B, T, NULL);
    }
    return total / (double)r->o.eval_iters;
}

static void print_settings(Run *r)
{
    const Options *o = &r->o;
    const Config *c = &r->model.cfg;
    char voc[1100];
    tok_describe(&r->corpus.tok, voc, sizeof voc);
    fprintf(stderr, "train: data %s: %zu bytes, vocabulary %d, train %zu / val %zu tokens\n",
            r->file.name, r->file.n, c->V, r->corpus.ntrain, r->corpus.nval);
    fprintf(stderr, "train: model L=%d H=%d C=%d D=%d T=%d V=%d, %.3fM parameters\n", c->L, c->H,
            c->C, c->D, c->T, c->V, (double)r->model.table.total / 1e6);
    fprintf(stderr, "train: %ld steps x batch %ld x %d tokens, lr %g -> %g (warm-up %ld, "
            "cosine), wd %g, clip %g, dropout %g, seed %llu, %d threads\n", o->steps, o->batch,
            c->T, o->lr, o->min_lr, o->warmup, o->wd, o->clip, o->dropout,
            (unsigned long long)o->seed, omp_get_max_threads());
    fprintf(stderr, "train: checkpoint %s (every %ld steps and at the end)%s%s\n", o->out,
            o->save_every, o->log ? ", log " : "", o->log ? o->log : "");
    if (r->log) {
        fprintf(r->log, "{\"type\":\"settings\",\"data\":");
        json_string(r->log, r->file.name);
        fprintf(r->log, ",\"data_bytes\":%zu,\"vocab\":%d,\"layers\":%d,\"heads\":%d,"
                "\"embd\":%d,\"head_size\":%d,\"block\":%d,\"params\":%zu,\"batch\":%ld,"
                "\"steps\":%ld,\"lr\":%g,\"min_lr\":%g,\"warmup\":%ld,\"wd\":%g,\"clip\":%g,"
                "\"dropout\":%g,\"seed\":%llu,\"val_frac\":%g,\"threads\":%d,\"resume\":%s}\n",
                r->file.n, c->V, c->L, c->H, c->C, c->D, c->T, r->model.table.total, o->batch,
                o->steps, o->lr, o->min_lr, o->warmup, o->wd, o->clip, o->dropout,
                (unsigned long long)o->seed, o->val_frac, omp_get_max_threads(),
                o->resume ? "true" : "false");
        fflush(r->log);
    }
}

/* The estimate at an evaluation point; keeps the best checkpoint if asked. */
static void evaluate_now(Run *r, long done)
{
    double tr = estimate(r, r->corpus.ids, r->corpus.ntrain);
    double va = r->corpus.nval ? estimate(r, r->corpus.ids + r->corpus.ntrain, r->corpus.nval)
                               : NAN;
    fprintf(stderr, "eval step %ld: train loss %.4f | val loss %.4f (%ld batches each)\n", done,
            tr, va, r->o.eval_iters);
    if (r->log) {
        fprintf(r->log, "{\"type\":\"eval\",\"step\":%ld,\"train_loss\":%.6f", done, tr);
        if (isfinite(va))
            fprintf(r->log, ",\"val_loss\":%.6f", va);
        fprintf(r->log, "}\n");
        fflush(r->log);
    }
    if (isfinite(va) && (r->ts.best_step < 0 || va < r->ts.best_val)) {
        r->ts.best_val = va;
        r->ts.best_step = done;
        if (r->o.keep_best) {
            char path[4200], err[1500];
            best_path(r->o.out, path, sizeof path);
            if (save(r, path, done, err, sizeof err))
                fprintf(stderr, "train: warning: could not save the best checkpoint: %s\n", err);
        }
    }
}

static void progress(Run *r, long done, double loss, float lr, double step_s, double avg_s)
{
    char eta[32];
    cli_duration(avg_s * (double)(r->o.steps - done), eta, sizeof eta);
    double tok = (double)r->o.batch * (double)r->o.block;
    fprintf(stderr, "step %ld/%ld | loss %.4f | lr %.2e | %.0f ms | %.1fk tok/s | eta %s\n", done,
            r->o.steps, loss, lr, step_s * 1e3, tok / avg_s / 1e3, eta);
}

/* --heads-every: the per-head metrics of this step's batch (the forward just run
 * left its attention weights in the activations), as one JSON line. */
static void log_heads(Run *r, long done)
{
    const Config *c = &r->model.cfg;
    char err[300], name[32];
    HeadsRelation rel[HEADS_REL_TEXT];
    if (heads_quick(r->head_metrics, &r->acts, r->inputs, (int)r->o.batch, c->T, err,
                    sizeof err) ||
        heads_quick_relations(rel, &r->acts, r->inputs, r->corpus.tok.vocab, (int)r->o.batch,
                              c->T, err, sizeof err)) {
        fprintf(stderr, "train: warning: head metrics skipped at step %ld: %s\n", done, err);
        return;
    }
    fprintf(r->log, "{\"type\":\"heads\",\"step\":%ld,\"heads\":[", done);
    for (int l = 0; l < c->L; l++)
        for (int h = 0; h < c->H; h++) {
            const float *m = r->head_metrics + ((size_t)l * c->H + h) * HEADS_QUICK_COUNT;
            fprintf(r->log, "%s{\"layer\":%d,\"head\":%d", l + h ? "," : "", l, h);
            for (int k = 0; k < HEADS_QUICK_COUNT; k++)
                fprintf(r->log, ",\"%s\":%.5f", heads_quick_names[k], m[k]);
            fputc('}', r->log);
        }
    fprintf(r->log, "],\"relations\":{");
    for (int q = 0; q < HEADS_REL_TEXT; q++) {
        snprintf(name, sizeof name, "\"L%dH%d\"", rel[q].best / c->H, rel[q].best % c->H);
        fprintf(r->log, "%s\"%s\":{\"best_head\":%s,\"attention\":%.5f,\"uniform\":%.5f}",
                q ? "," : "", heads_rel_names[q], rel[q].best < 0 ? "null" : name,
                rel[q].attention, rel[q].uniform);
    }
    fprintf(r->log, "}}\n");
}

/* A non-finite loss or gradient norm ends the run before the update touches the
 * parameters; whatever checkpoint was written before stays as it is. */
static void stop_nonfinite(const Run *r, long step, double loss, double norm, long last_saved)
{
    const char *what = isfinite(loss) ? "the gradient norm" : "the loss";
    if (last_saved > 0)
        cli_fail("%s is not finite at step %ld (loss %g, gradient norm %g); stopping before the "
                 "update. The last good checkpoint is %s (step %ld); try a lower --lr", what, step,
                 loss, norm, r->o.out, last_saved);
    cli_fail("%s is not finite at step %ld (loss %g, gradient norm %g); stopping before the "
             "update. This run wrote no checkpoint; try a lower --lr", what, step, loss, norm);
}

static void train_loop(Run *r, long start)
{
    const Options *o = &r->o;
    int B = (int)o->batch, T = (int)o->block;
    size_t P = r->model.table.total;
    double last_print = 0.0, avg = 0.0;
    long last_saved = start;
    char err[1500];
    for (long step = start; step < o->steps; step++) {
        double t0 = cli_now();
        batch_next(&r->sampler, r->corpus.ids, r->corpus.ntrain, B, T, r->inputs, r->targets);
        PassOptions po = {.dropout = (float)o->dropout,
                          .dropout_key = rng_hash(o->seed, RNG_STREAM_DROPOUT, (uint64_t)step)};
        double loss = gpt_forward(&r->model, &r->acts, r->inputs, r->targets, B, T, &po);
        model_zero_grads(&r->model);
        gpt_backward(&r->model, &r->acts, r->inputs, r->targets, B, T, &po);
        double norm = grad_clip(r->model.grads, P, (float)o->clip);
        if (!isfinite(loss) || !isfinite(norm))
            stop_nonfinite(r, step + 1, loss, norm, last_saved);
        float lr = schedule_lr(step, o->steps, o->warmup, (float)o->lr, (float)o->min_lr);
        adamw_update(r->model.params, r->model.grads, r->ts.adam_m, r->ts.adam_v,
                     &r->model.table, &r->adam, lr, step + 1);
        double t1 = cli_now(), dt = t1 - t0;
        long done = step + 1;
        avg = step == start ? dt : 0.9 * avg + 0.1 * dt;
        if (r->log) {
            fprintf(r->log, "{\"type\":\"step\",\"step\":%ld,\"loss\":%.6f,\"lr\":%.6e,"
                    "\"grad_norm\":%.6f,\"ms\":%.3f,\"tok_s\":%.1f}\n", done, loss, lr, norm,
                    dt * 1e3, (double)B * T / dt);
            if (o->heads_every && (done % o->heads_every == 0 || done == start + 1))
                log_heads(r, done);
        }
        if (done == start + 1 || done == o->steps || t1 - last_print >= 1.0) {
            progress(r, done, loss, lr, dt, avg);
            last_print = t1;
        }
        if ((o->eval_every && done % o->eval_every == 0) || done == o->steps)
            evaluate_now(r, done);
        int periodic = o->save_every && done % o->save_every == 0 && done < o->steps;
        if (periodic || (stop_signal && done < o->steps)) {
            if (save(r, o->out, done, err, sizeof err)) {
                if (stop_signal)
                    cli_fail("interrupted at step %ld, and saving failed: %s", done, err);
                fprintf(stderr, "train: warning: checkpoint not saved: %s (the previous one is "
                        "intact)\n", err);
            } else {
                last_saved = done;
            }
        }
        if (stop_signal && done < o->steps) {
            fprintf(stderr, "train: %s at step %ld of %ld: saved %s; continue with "
                    "./train --resume %s\n", stop_signal == SIGINT ? "interrupted" : "terminated",
                    done, o->steps, o->out, o->out);
            if (r->log)
                fclose(r->log);
            exit(128 + stop_signal);
        }
    }
}

/* --dump-val: the held-out bytes, exactly as training splits them, for --eval
 * and --heads (the built-in corpus has no file of its own). */
static int dump_val(Run *r)
{
    char err[1500];
    load_data(r, r->o.data, SYNTH_DEFAULT_BYTES);
    if (corpus_prepare(&r->corpus, &r->file, NULL, r->o.val_frac, (int)r->o.block, err,
                       sizeof err))
        cli_fail("%s", err);
    FILE *f = fopen(r->o.dump_val, "wb");
    if (!f)
        cli_fail("--dump-val %s: cannot open for writing", r->o.dump_val);
    size_t n = r->corpus.nval;
    if (fwrite(r->file.bytes + r->corpus.ntrain, 1, n, f) != n || fclose(f) != 0)
        cli_fail("--dump-val %s: write failed", r->o.dump_val);
    fprintf(stderr, "train: wrote the validation split of %s (%zu bytes) to %s\n", r->file.name,
            n, r->o.dump_val);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    return 0;
}

int main(int argc, char **argv)
{
    cli_prog = "train";
    Run run;
    memset(&run, 0, sizeof run);
    Run *r = &run;
    unsigned char given[OPT_COUNT] = {0};
    parse(argc, argv, &r->o, given);
    if (r->o.threads)
        omp_set_num_threads((int)r->o.threads);
    if (r->o.dump_val)
        return dump_val(r);
    char err[1500];
    if (ckpt_check_writable(r->o.out, err, sizeof err))
        cli_fail("--out %s", err);
    if (r->o.resume)
        setup_resume(r, given);
    else
        setup_fresh(r);
    r->adam = (AdamW){.beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .weight_decay = (float)r->o.wd};
    if (model_alloc_grads(&r->model, err, sizeof err) ||
        acts_init(&r->acts, &r->model.cfg, (int)r->o.batch, r->model.cfg.T, r->o.dropout > 0,
                  err, sizeof err))
        cli_fail("%s", err);
    size_t bt = (size_t)r->o.batch * r->o.block;
    r->inputs = malloc(bt * sizeof(int));
    r->targets = malloc(bt * sizeof(int));
    if (!r->inputs || !r->targets)
        cli_fail("out of memory for batches");
    if (r->o.heads_every) {
        r->head_metrics = malloc((size_t)r->model.cfg.L * r->model.cfg.H * HEADS_QUICK_COUNT *
                                 sizeof(float));
        if (!r->head_metrics)
            cli_fail("out of memory for head metrics");
    }
    if (r->o.log) {
        r->log = fopen(r->o.log, r->o.resume ? "a" : "w");
        if (!r->log)
            cli_fail("--log %s: cannot open for writing", r->o.log);
    }
    long start = r->ts.step;
    print_settings(r);
    install_signals();
    double t0 = cli_now();
    train_loop(r, start);
    double train_s = cli_now() - t0;

    /* Final numbers: the train estimate and the loss over the whole val split,
     * computed exactly as ./infer --eval does. */
    double val = NAN;
    size_t nval_tok = 0;
    if (r->corpus.nval >= 2 &&
        eval_sequence(&r->model, &r->acts, r->corpus.ids + r->corpus.ntrain, r->corpus.nval, NULL,
                      &val, &nval_tok, NULL, err, sizeof err))
        cli_fail("%s", err);
    double train_est = estimate(r, r->corpus.ids, r->corpus.ntrain);
    if (save(r, r->o.out, r->o.steps, err, sizeof err))
        cli_fail("training finished but the checkpoint was not saved: %s", err);
    double wall = cli_now() - t0;
    long steps_run = r->o.steps - start;
    double tok_s = (double)steps_run * bt / train_s;
    char dur[32];
    cli_duration(wall, dur, sizeof dur);
    fprintf(stderr, "done: %ld steps in %.1f s (%.0f tok/s) | train loss %.4f (estimate) | "
            "val loss %.4f (whole val split, %zu tokens) | total %s | saved %s\n", steps_run,
            train_s, tok_s, train_est, val, nval_tok, dur, r->o.out);
    if (r->log) {
        fprintf(r->log, "{\"type\":\"final\",\"step\":%ld,\"train_loss\":%.6f,\"val_loss\":%.6f,"
                "\"val_tokens\":%zu,\"train_seconds\":%.3f,\"wall_seconds\":%.3f,\"tok_s\":%.1f}\n",
                r->o.steps, train_est, isfinite(val) ? val : -1.0, nval_tok, train_s, wall, tok_s);
        fclose(r->log);
    }
    free(r->inputs);
    free(r->targets);
    free(r->head_metrics);
    acts_free(&r->acts);
    ckpt_state_free(&r->ts);
    model_free(&r->model);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    return 0;
}
