/* train: trains a headcount model on a text file (or the built-in corpus).
 *
 * Flags, orchestration and printing only: the model is in model/, the data in
 * data/. Settings are printed once at the start, progress goes to stderr at a
 * steady interval, evaluations and a final summary follow, and --log writes one
 * JSON object per line (settings, every step, every evaluation, the summary).
 * Checkpoints carry the training state, so --resume continues bit-exactly. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dist.h"
#include "fileguard.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/synth.h"
#include "model/adamw.h"
#include "model/ckpt.h"
#include "model/evaluate.h"
#include "model/gpt.h"
#include "model/heads.h"
#include "model/limits.h"
#include "model/rng.h"
#include "model/schedule.h"

/* Every flag, with the defaults of nanoGPT's CPU Shakespeare configuration. */
typedef struct {
    const char *data, *out, *log, *resume, *dump_val;
    long layers, heads, embd, head_size, block, batch, steps, warmup;
    long eval_every, eval_iters, save_every, threads, heads_every, accum;
    double lr, min_lr, wd, clip, dropout, val_frac, beta1, beta2, eps;
    uint64_t seed;
    int allow_binary, keep_best;
} Options;



static const Options DEFAULTS = {
    .data = NULL, .out = "headcount.ckpt", .log = NULL, .resume = NULL,
    .layers = 4, .heads = 4, .embd = 128, .head_size = 0, .block = 64, .batch = 12,
    .steps = 2000, .warmup = 100, .eval_every = 250, .eval_iters = 20, .save_every = 500,
    .threads = 0, .lr = 1e-3, .min_lr = 1e-4, .wd = 0.1, .clip = 1.0, .dropout = 0.0,
    .val_frac = 0.1, .seed = 1337, .allow_binary = 0, .keep_best = 0, .accum = 1,
    .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8,
};

enum {
    OPT_DATA = 256, OPT_OUT, OPT_LOG, OPT_RESUME, OPT_LAYERS, OPT_HEADS, OPT_EMBD, OPT_HEAD_SIZE,
    OPT_BLOCK, OPT_BATCH, OPT_STEPS, OPT_LR, OPT_MIN_LR, OPT_WARMUP, OPT_WD, OPT_CLIP,
    OPT_DROPOUT, OPT_SEED, OPT_VAL_FRAC, OPT_EVAL_EVERY, OPT_EVAL_ITERS, OPT_SAVE_EVERY,
    OPT_THREADS, OPT_ALLOW_BINARY, OPT_KEEP_BEST, OPT_DUMP_VAL, OPT_HEADS_EVERY, OPT_HELP,
    OPT_VERSION, OPT_ACCUM, OPT_PRINT_SETTINGS, OPT_BETA1, OPT_BETA2, OPT_EPS, OPT_COUNT
};

static void usage(void)
{
    const Options *d = &DEFAULTS;
    printf("usage: ./train [--data FILE] [options]\n"
           "Trains a small GPT (byte vocabulary, multi-head attention) and writes a checkpoint.\n"
           "Without --data it trains on the built-in generated corpus (docs/corpus.md).\n\n"
           "data and output:\n"
           "  -d, --data FILE        text file to train on (default: built-in corpus)\n"
           "  -o, --out CKPT         checkpoint path (default: %s, or the --resume file)\n"
           "      --log FILE         JSON lines: settings, each step, each eval, summary (default: none)\n"
           "                         (on --resume: appended to)\n"
           "      --resume CKPT      continue a run exactly from its checkpoint (default: start fresh)\n"
           "                         and into it, unless --out names another file\n"
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
           "  -B, --batch N          sequences per micro-batch (default: %ld)\n"
           "      --accum K          micro-batches summed per optimizer step, each rank's share\n"
           "                         under mpirun (default: 1; the step sees K x ranks x batch)\n"
           "  -n, --steps N          optimizer steps (default: %ld)\n"
           "      --lr X             peak learning rate (default: %g)\n"
           "      --min-lr X         final learning rate of the cosine decay (default: %g)\n"
           "      --warmup N         linear warm-up steps (default: %ld)\n"
           "      --wd X             AdamW weight decay on matrices and embeddings (default: %g)\n"
           "      --beta1 X          Adam first-moment decay (default: %g)\n"
           "      --beta2 X          Adam second-moment decay (default: %g)\n"
           "      --eps X            Adam epsilon (default: %g)\n"
           "      --clip X           gradient clipping by global norm, 0 = off (default: %g)\n"
           "      --dropout X        dropout on attention weights and residual branches (default: %g)\n"
           "  -s, --seed N           seed for init, batches and dropout (default: %llu)\n"
           "      --val-frac X       last fraction of the file held out for validation (default: %g)\n"
           "      --eval-every N     estimate train/val loss every N steps, 0 = only at the end (default: %ld)\n"
           "      --eval-iters N     batches per estimate (default: %ld)\n"
           "      --heads-every N    log per-head attention metrics every N steps to --log\n"
           "                         (entropy, prev, first, distance, repeat), 0 = off (default: 0)\n"
           "  -j, --threads N        OpenMP threads (default: all cores; results are identical)\n"
           "  -h, --help             this help\n"
           "      --version          the version\n"
           "      --print-settings   print the settings these flags give, as JSON, and exit\n"
           "Outputs are never the same file as an input; other files are never written or\n"
           "deleted (docs/checkpoint.md, \"Files\").\n",
           d->out, d->save_every, d->layers, d->heads, d->embd, d->block, d->batch, d->steps,
           d->lr, d->min_lr, d->warmup, d->wd, d->beta1, d->beta2, d->eps, d->clip, d->dropout,
           (unsigned long long)d->seed, d->val_frac, d->eval_every, d->eval_iters);
}

/* s as a JSON string literal into buf (cut to fit). */
static void json_string(char *buf, size_t len, const char *s)
{
    size_t k = 0;
    if (len < 3)
        return;
    buf[k++] = '"';
    for (; *s && k + 8 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            k += (size_t)snprintf(buf + k, len - k, "\\%c", c);
        else if (c < 0x20)
            k += (size_t)snprintf(buf + k, len - k, "\\u%04x", c);
        else
            buf[k++] = (char)c;
    }
    buf[k++] = '"';
    buf[k] = '\0';
}

/* --print-settings: what a run with these flags would use, for scripts (one JSON
 * object; a path not given is null, 0 for head_size and threads means automatic). */
static void print_settings_json(const Options *o)
{
    char data[1100], out[1100];
    json_string(data, sizeof data, o->data ? o->data : "");
    json_string(out, sizeof out, o->out);
    printf("{\"data\":%s,\"out\":%s,\"layers\":%ld,\"heads\":%ld,\"embd\":%ld,\"head_size\":%ld,"
           "\"block\":%ld,\"batch\":%ld,\"accum\":%ld,\"steps\":%ld,\"lr\":%.17g,"
           "\"min_lr\":%.17g,\"warmup\":%ld,\"wd\":%.17g,\"beta1\":%.17g,\"beta2\":%.17g,"
           "\"eps\":%.17g,\"clip\":%.17g,\"dropout\":%.17g,"
           "\"seed\":%llu,\"val_frac\":%.17g,\"eval_every\":%ld,\"eval_iters\":%ld,"
           "\"save_every\":%ld,\"heads_every\":%ld,\"threads\":%ld,\"keep_best\":%s,"
           "\"allow_binary\":%s,\"version\":\"%s\"}\n", o->data ? data : "null", out, o->layers, o->heads, o->embd,
           o->head_size, o->block, o->batch, o->accum, o->steps, o->lr, o->min_lr, o->warmup,
           o->wd, o->beta1, o->beta2, o->eps, o->clip, o->dropout, (unsigned long long)o->seed, o->val_frac, o->eval_every,
           o->eval_iters, o->save_every, o->heads_every, o->threads,
           o->keep_best ? "true" : "false", o->allow_binary ? "true" : "false",
           HEADCOUNT_VERSION);
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
        {"version", no_argument, 0, OPT_VERSION}, {"accum", required_argument, 0, OPT_ACCUM},
        {"print-settings", no_argument, 0, OPT_PRINT_SETTINGS},
        {"beta1", required_argument, 0, OPT_BETA1}, {"beta2", required_argument, 0, OPT_BETA2},
        {"eps", required_argument, 0, OPT_EPS},
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
        case OPT_BATCH: o->batch = cli_long("batch", optarg, 1, LIMIT_BATCH_MAX); break;
        case OPT_STEPS: o->steps = cli_long("steps", optarg, 1, LIMIT_STEPS_MAX); break;
        case OPT_LR: o->lr = cli_double("lr", optarg, LIMIT_LR_MIN, LIMIT_LR_MAX); break;
        case OPT_MIN_LR: o->min_lr = cli_double("min-lr", optarg, 0, LIMIT_LR_MAX); break;
        case OPT_WARMUP: o->warmup = cli_long("warmup", optarg, 0, LIMIT_STEPS_MAX); break;
        case OPT_WD: o->wd = cli_double("wd", optarg, 0, LIMIT_LR_MAX); break;
        case OPT_CLIP: o->clip = cli_double("clip", optarg, 0, LIMIT_CLIP_MAX); break;
        case OPT_DROPOUT: o->dropout = cli_double("dropout", optarg, 0, LIMIT_DROPOUT_MAX); break;
        case OPT_SEED: o->seed = cli_u64("seed", optarg); break;
        case OPT_VAL_FRAC:
            o->val_frac = cli_double("val-frac", optarg, 0, LIMIT_VAL_FRAC_MAX);
            break;
        case OPT_EVAL_EVERY:
            o->eval_every = cli_long("eval-every", optarg, 0, LIMIT_STEPS_MAX);
            break;
        case OPT_EVAL_ITERS:
            o->eval_iters = cli_long("eval-iters", optarg, 1, LIMIT_EVAL_ITERS_MAX);
            break;
        case OPT_SAVE_EVERY:
            o->save_every = cli_long("save-every", optarg, 0, LIMIT_STEPS_MAX);
            break;
        case OPT_THREADS: o->threads = cli_long("threads", optarg, 1, 1024); break;
        case OPT_ALLOW_BINARY: o->allow_binary = 1; break;
        case OPT_KEEP_BEST: o->keep_best = 1; break;
        case OPT_DUMP_VAL: o->dump_val = optarg; break;
        case OPT_HEADS_EVERY:
            o->heads_every = cli_long("heads-every", optarg, 0, 100000000);
            break;
        case OPT_HELP: usage(); exit(0);
        case OPT_PRINT_SETTINGS: break;
        case OPT_BETA1: o->beta1 = cli_double("beta1", optarg, 0, LIMIT_BETA_MAX); break;
        case OPT_BETA2: o->beta2 = cli_double("beta2", optarg, 0, LIMIT_BETA_MAX); break;
        case OPT_EPS: o->eps = cli_double("eps", optarg, LIMIT_EPS_MIN, 1); break;
        case OPT_ACCUM: o->accum = cli_long("accum", optarg, 1, LIMIT_ACCUM_MAX); break;
        case OPT_VERSION: printf("train (headcount) %s\n", HEADCOUNT_VERSION); exit(0);
        default: cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cli_usage_error("unexpected argument '%s' (flags take the form --name value)",
                        argv[optind]);
    if (o->min_lr > o->lr)
        cli_usage_error("--min-lr %g is above --lr %g", o->min_lr, o->lr);
    if (o->heads_every && !o->log && !o->resume)
        cli_usage_error("--heads-every %ld needs --log FILE to write the metrics to",
                        o->heads_every);
    if (given[OPT_PRINT_SETTINGS]) {
        print_settings_json(o);
        exit(0);
    }
    if (o->data && strlen(o->data) >= CKPT_PATH_MAX)
        cli_usage_error("--data: the path is %zu bytes; a checkpoint records at most %d, so "
                        "the run could not be resumed (use a shorter path)", strlen(o->data),
                        CKPT_PATH_MAX - 1);
}

/* ---- signals: the first SIGINT/SIGTERM asks for a save, the second exits ---- */

static volatile sig_atomic_t stop_signal = 0;
/* The held checkpoint lock's path, so that the second signal can remove it. */
static const char *volatile lock_path_held = NULL;

static void on_signal(int sig)
{
    if (stop_signal) {
        static const char msg[] = "\ntrain: second signal, exiting at once; "
                                  "the last saved checkpoint is intact\n";
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)ignored;
        if (lock_path_held)
            unlink(lock_path_held);
        _exit(128 + sig);
    }
    stop_signal = sig;
}

/* SIGINT/SIGTERM ask for a save; SIGXFSZ (a file over `ulimit -f`) becomes an
 * EFBIG write error, reported like any other. */
static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGXFSZ, SIG_IGN);
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
    int log_errno;          /* the first failed write to the log; 0 while all went well */
    GuardLock lock, best_lock;
    char best[4200];        /* the --keep-best checkpoint, "" without --keep-best */
    long last_saved;        /* step of this run's newest checkpoint at --out, -1 when none */
    long resumed_step;      /* the step resumed from, -1 for a fresh run */
    Dist dist;              /* this process's rank among dist.size (1 without MPI) */
    long micro;             /* micro-batches per step, all ranks together: accum x size */
    float *acc;             /* [P] the step's summed gradient when micro > 1 */
    int *mb_in, *mb_tg;     /* [B*T] batches of other ranks' micro-batches, drawn and dropped */
} Run;

static void train_exit(int code) __attribute__((noreturn));

/* Only rank 0 writes files and prints progress. */
static int lead(const Run *r)
{
    return r->dist.rank == 0;
}

/* Ends this process after an orderly stop that every rank reached together. */
static void run_exit(Run *r, int code) __attribute__((noreturn));
static void run_exit(Run *r, int code)
{
    dist_finish(&r->dist);
    exit(code);
}

/* The run whose locks are released at exit, whichever way main ends. */
static Run *exiting_run = NULL;

static void release_locks(void)
{
    if (!exiting_run)
        return;
    lock_path_held = NULL;
    guard_unlock(&exiting_run->lock);
    guard_unlock(&exiting_run->best_lock);
}

/* One checked write to the log (line-buffered, so each JSON line reaches the
 * file when its newline is written); the first failure is kept in log_errno and
 * the training loop stops on it. */
static void log_printf(Run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_printf(Run *r, const char *fmt, ...)
{
    if (!r->log || r->log_errno)
        return;
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    int rc = vfprintf(r->log, fmt, ap);
    va_end(ap);
    if (rc < 0 || ferror(r->log))
        r->log_errno = errno ? errno : EIO;
}

static void load_data(Run *r, const char *path, size_t builtin_bytes)
{
    char err[1500];
    int rc = path ? textfile_read(&r->file, path, r->o.allow_binary, err, sizeof err)
                  : textfile_builtin(&r->file, builtin_bytes, err, sizeof err);
    if (rc)
        cli_fail("%s", err);
}

/* Refuses, with the figure, a model and batch that would not fit in the memory
 * this machine has free; `held` floats are already allocated (a resumed model). */
static void check_memory(const Run *r, const Config *cfg, size_t held)
{
    size_t P = (size_t)config_param_count(cfg);
    double floats = 4.0 * (double)P - (double)held +
                    (double)acts_floats(cfg, (int)r->o.batch, cfg->T, r->o.dropout > 0) +
                    (r->micro > 1 ? 2.0 * (double)P : 0.0);
    double bytes = 4.0 * floats + 8.0 * (double)r->o.batch * (double)cfg->T;
    unsigned long long avail = guard_mem_available();
    if (avail && bytes > (double)avail)
        cli_fail("out of memory: %.3fM parameters with batch %ld x %d need %.2f GiB (weights, "
                 "gradients, Adam moments, activations), and this machine has %.2f GiB "
                 "available (MemAvailable); lower --batch, --block, --embd or --layers",
                 (double)P / 1e6, r->o.batch, cfg->T, bytes / 1073741824.0,
                 (double)avail / 1073741824.0);
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
    check_memory(r, &cfg, 0);
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

/* Reads the checkpoint to resume and takes its settings; the data is loaded
 * later (load_resumed_data), once the outputs are known to be safe to write. */
static void open_resume(Run *r, const unsigned char *given, Tokenizer *tok)
{
    Options *o = &r->o;
    TrainState *ts = &r->ts;
    char err[1500];
    long steps_done;
    int has_state;
    if (ckpt_load(o->resume, &r->model, tok, &steps_done, ts, &has_state, err, sizeof err))
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
    /* Adam's constants are float32 in the optimizer, stored widened to double. */
    conflict(given, OPT_BETA1, "beta1", (float)o->beta1, (float)ts->beta1, same);
    conflict(given, OPT_BETA2, "beta2", (float)o->beta2, (float)ts->beta2, same);
    conflict(given, OPT_EPS, "eps", (float)o->eps, (float)ts->eps, same);
    conflict(given, OPT_CLIP, "clip", o->clip, ts->clip, same);
    conflict(given, OPT_DROPOUT, "dropout", o->dropout, ts->dropout, same);
    /* Seeds are 64-bit integers: as doubles, neighbours above 2^53 compare equal. */
    if (given[OPT_SEED] && o->seed != ts->seed)
        cli_usage_error("--seed %llu contradicts the checkpoint (%llu): %s",
                        (unsigned long long)o->seed, (unsigned long long)ts->seed, same);
    conflict(given, OPT_VAL_FRAC, "val-frac", o->val_frac, ts->val_frac, same);
    o->layers = c->L; o->heads = c->H; o->embd = c->C; o->head_size = c->D; o->block = c->T;
    o->batch = ts->batch; o->lr = ts->lr; o->min_lr = ts->min_lr; o->warmup = ts->warmup;
    o->wd = ts->wd; o->clip = ts->clip; o->dropout = ts->dropout; o->seed = ts->seed;
    o->beta1 = ts->beta1; o->beta2 = ts->beta2; o->eps = ts->eps;
    o->val_frac = ts->val_frac;
    o->allow_binary = o->allow_binary || ts->allow_binary;
    if (!given[OPT_STEPS]) o->steps = ts->steps;
    if (!given[OPT_EVAL_EVERY]) o->eval_every = ts->eval_every;
    if (!given[OPT_EVAL_ITERS]) o->eval_iters = ts->eval_iters;
    if (!given[OPT_SAVE_EVERY]) o->save_every = ts->save_every;
    if (steps_done >= o->steps)
        cli_usage_error("%s has already trained %ld of %ld steps; give --steps above %ld to "
                        "train further", o->resume, steps_done, o->steps, steps_done);
    /* The step's micro-batch count is the run's; the ranks may change with it. */
    long n = r->dist.size;
    if (given[OPT_ACCUM] && o->accum * n != ts->accum)
        cli_usage_error("--accum %ld on %ld rank%s sums %ld micro-batches a step, and the run "
                        "sums %ld: %s", o->accum, n, n > 1 ? "s" : "", o->accum * n, ts->accum,
                        same);
    if (ts->accum % n != 0)
        cli_usage_error("the run sums %ld micro-batches a step, which %ld ranks cannot share "
                        "evenly; resume it on a number of ranks that divides %ld", ts->accum, n,
                        ts->accum);
    o->accum = ts->accum / n;
    /* Continue into the same files unless told otherwise. */
    if (!given[OPT_OUT])
        o->out = o->resume;
    if (!o->log)
        fprintf(stderr, "train: note: this resumed run writes no log; pass --log FILE to append "
                "to the run's log (checkpoints do not record it, so that their bytes depend "
                "on the run's settings alone)\n");
    if (!given[OPT_DATA] && strcmp(ts->data_path, CORPUS_BUILTIN_NAME) != 0)
        o->data = ts->data_path;
    if (o->heads_every && !o->log)
        cli_usage_error("--heads-every %ld needs --log FILE to write the metrics to",
                        o->heads_every);
    r->resumed_step = steps_done;
    r->last_saved = guard_same_file(o->out, o->resume) ? steps_done : -1;
}

static void load_resumed_data(Run *r, const unsigned char *given, const Tokenizer *tok)
{
    Options *o = &r->o;
    TrainState *ts = &r->ts;
    char err[1500];
    check_memory(r, &r->model.cfg, 3 * r->model.table.total);
    if (given[OPT_DATA]) {
        load_data(r, o->data, 0);
        if (r->file.hash != ts->data_hash || r->file.n != ts->data_size)
            fprintf(stderr, "train: note: %s differs from the data this run started on (%s); "
                    "continuing on it as asked\n", o->data, ts->data_path);
    } else {
        load_data(r, o->data, (size_t)ts->data_size);
        if (r->file.hash != ts->data_hash || r->file.n != ts->data_size)
            cli_fail("%s changed since the checkpoint was written (%llu bytes, hash %016llx; "
                     "now %zu bytes, hash %016llx); pass --data %s to continue on it anyway",
                     ts->data_path, (unsigned long long)ts->data_size,
                     (unsigned long long)ts->data_hash, r->file.n,
                     (unsigned long long)r->file.hash, ts->data_path);
    }
    if (corpus_prepare(&r->corpus, &r->file, tok, o->val_frac, r->model.cfg.T, err, sizeof err))
        cli_fail("%s", err);
    r->sampler.rng.state = ts->batch_rng;
    fprintf(stderr, "train: resuming %s at step %ld of %ld\n", o->resume, r->resumed_step,
            o->steps);
    if (given[OPT_STEPS] && o->steps != ts->steps)
        fprintf(stderr, "train: note: total steps changed from %ld to %ld (the cosine schedule "
                "stretches to the new end)\n", ts->steps, o->steps);
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

/* Before anything is written: no output is an input or another output, the
 * checkpoints can be written and are locked against a second trainer, and the
 * leftovers of interrupted saves are reported (never removed). */
static void claim_outputs(Run *r)
{
    Options *o = &r->o;
    char err[5000];
    if (o->keep_best)
        best_path(o->out, r->best, sizeof r->best);
    if (!lead(r))
        return;
    GuardPath paths[] = {
        {"--data", o->data, 0, NULL},
        {"--resume", o->resume, 0, NULL},
        {"--out", o->out, 1, "--resume"},
        {"--keep-best", r->best[0] ? r->best : NULL, 1, NULL},
        {"--log", o->log, 1, NULL},
    };
    if (guard_check_paths(paths, (int)(sizeof paths / sizeof paths[0]), err, sizeof err))
        cli_usage_error("%s", err);
    if (ckpt_check_writable(o->out, err, sizeof err))
        cli_fail("--out %s", err);
    if (r->best[0] && ckpt_check_writable(r->best, err, sizeof err))
        cli_fail("--keep-best %s", err);
    if (guard_lock(&r->lock, o->out, err, sizeof err))
        cli_fail("%s", err);
    lock_path_held = guard_lock_path(&r->lock);
    if (r->best[0] && guard_lock(&r->best_lock, r->best, err, sizeof err))
        cli_fail("%s", err);
    for (int k = 0; k < 2; k++) {
        const char *path = k ? r->best : o->out;
        if (!path[0])
            continue;
        char list[2000];
        int n = guard_leftovers(path, list, sizeof list);
        if (n)
            fprintf(stderr, "train: note: %d leftover temporary file%s of an interrupted save "
                    "beside %s (not removed; delete %s when no run writes there):\n%s\n", n,
                    n > 1 ? "s" : "", path, n > 1 ? "them" : "it", list);
    }
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
    ts->accum = r->micro;
    snprintf(ts->data_path, sizeof ts->data_path, "%s", r->file.name);
}

static int save(Run *r, const char *path, long step, char *err, size_t errlen)
{
    sync_state(r, step);
    return ckpt_save(path, &r->model, &r->corpus.tok, step, &r->ts, err, errlen);
}

/* Saves --out at step done, remembering it as the last good checkpoint. */
static int save_out(Run *r, long done, char *err, size_t errlen)
{
    if (lead(r) && save(r, r->o.out, done, err, errlen))
        return -1;
    r->last_saved = done;
    return 0;
}

/* Where the last good checkpoint is, for messages after a failure. */
static void last_good(const Run *r, char *buf, size_t len)
{
    if (r->last_saved >= 0)
        snprintf(buf, len, "The last good checkpoint is %s (step %ld)", r->o.out, r->last_saved);
    else if (r->resumed_step >= 0)
        snprintf(buf, len, "This run saved no checkpoint; the one it resumed from, %s (step "
                 "%ld), is intact", r->o.resume, r->resumed_step);
    else
        snprintf(buf, len, "This run wrote no checkpoint");
}

/* The command that continues this run into the same files, quoted for a shell. */
static void resume_command(const Run *r, char *buf, size_t len)
{
    char q[4400];
    guard_shell_quote(r->o.out, q, sizeof q);
    int n = snprintf(buf, len, "./train --resume %s", q);
    if (r->o.log && n > 0 && (size_t)n < len) {
        guard_shell_quote(r->o.log, q, sizeof q);
        n += snprintf(buf + n, len - (size_t)n, " --log %s", q);
    }
    if (r->o.keep_best && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " --keep-best");
    if (r->o.heads_every && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " --heads-every %ld", r->o.heads_every);
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
    if (r->micro > 1)
        fprintf(stderr, "train: each step sums %ld micro-batches (--accum %ld x %d rank%s): "
                "%ld sequences a step\n", r->micro, o->accum, r->dist.size,
                r->dist.size > 1 ? "s" : "", r->micro * o->batch);
    fprintf(stderr, "train: checkpoint %s (every %ld steps and at the end)%s%s\n", o->out,
            o->save_every, o->log ? ", log " : "", o->log ? o->log : "");
    char name[1100];
    json_string(name, sizeof name, r->file.name);
    log_printf(r, "{\"type\":\"settings\",\"data\":%s,\"data_bytes\":%zu,\"vocab\":%d,"
               "\"layers\":%d,\"heads\":%d,\"embd\":%d,\"head_size\":%d,\"block\":%d,"
               "\"params\":%zu,\"batch\":%ld,\"steps\":%ld,\"lr\":%g,\"min_lr\":%g,"
               "\"warmup\":%ld,\"wd\":%g,\"clip\":%g,\"dropout\":%g,\"seed\":%llu,"
               "\"val_frac\":%g,\"threads\":%d,\"resume\":%s,\"accum\":%ld,\"ranks\":%d}\n",
               name, r->file.n, c->V, c->L, c->H, c->C, c->D, c->T, r->model.table.total,
               o->batch, o->steps, o->lr, o->min_lr, o->warmup, o->wd, o->clip, o->dropout,
               (unsigned long long)o->seed, o->val_frac, omp_get_max_threads(),
               o->resume ? "true" : "false", o->accum, r->dist.size);
}

/* The estimate at an evaluation point; keeps the best checkpoint if asked. */
static void evaluate_now(Run *r, long done)
{
    double tr = estimate(r, r->corpus.ids, r->corpus.ntrain);
    double va = r->corpus.nval ? estimate(r, r->corpus.ids + r->corpus.ntrain, r->corpus.nval)
                               : NAN;
    fprintf(stderr, "eval step %ld: train loss %.4f | val loss %.4f (%ld batches each)\n", done,
            tr, va, r->o.eval_iters);
    if (isfinite(va))
        log_printf(r, "{\"type\":\"eval\",\"step\":%ld,\"train_loss\":%.6f,\"val_loss\":%.6f}\n",
                   done, tr, va);
    else
        log_printf(r, "{\"type\":\"eval\",\"step\":%ld,\"train_loss\":%.6f}\n", done, tr);
    if (isfinite(va) && (r->ts.best_step < 0 || va < r->ts.best_val)) {
        r->ts.best_val = va;
        r->ts.best_step = done;
        if (r->o.keep_best) {
            char err[1500];
            if (save(r, r->best, done, err, sizeof err))
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
    char err[300];
    if (heads_quick(r->head_metrics, &r->acts, r->inputs, (int)r->o.batch, c->T, err,
                    sizeof err)) {
        fprintf(stderr, "train: warning: head metrics skipped at step %ld: %s\n", done, err);
        return;
    }
    log_printf(r, "{\"type\":\"heads\",\"step\":%ld,\"heads\":[", done);
    for (int l = 0; l < c->L; l++)
        for (int h = 0; h < c->H; h++) {
            const float *m = r->head_metrics + ((size_t)l * c->H + h) * HEADS_QUICK_COUNT;
            log_printf(r, "%s{\"layer\":%d,\"head\":%d", l + h ? "," : "", l, h);
            for (int k = 0; k < HEADS_QUICK_COUNT; k++)
                log_printf(r, ",\"%s\":%.5f", heads_quick_names[k], m[k]);
            log_printf(r, "}");
        }
    log_printf(r, "]}\n");
}

/* A non-finite loss or gradient norm ends the run before the update touches the
 * parameters; whatever checkpoint was written before stays as it is. */
static void stop_nonfinite(const Run *r, long step, double loss, double norm)
{
    const char *what = isfinite(loss) ? "the gradient norm" : "the loss";
    char good[5000];
    last_good(r, good, sizeof good);
    cli_fail("%s is not finite at step %ld (loss %g, gradient norm %g); stopping before the "
             "update. %s; try a lower --lr", what, step, loss, norm, good);
}

/* A write to the log failed: save what was trained (if anything since the last
 * save) and stop, saying why and where the model is. */
static void stop_log_failed(Run *r, long done)
{
    char err[1500], good[5000], cmd[4600];
    const char *why = strerror(r->log_errno);
    if (done > r->last_saved && save_out(r, done, err, sizeof err))
        fprintf(stderr, "train: saving after the log failed did not work either: %s\n", err);
    last_good(r, good, sizeof good);
    resume_command(r, cmd, sizeof cmd);
    cli_fail("--log %s: write failed at step %ld: %s. %s%s%s", r->o.log, done, why, good,
             r->last_saved >= 0 ? "; continue with: " : "", r->last_saved >= 0 ? cmd : "");
}

/* Ctrl-C / SIGTERM after a step: save (unless this step was just saved) and exit. */
static void stop_on_signal(Run *r, long done)
{
    char err[1500], cmd[4600];
    if (done > r->last_saved && save_out(r, done, err, sizeof err))
        cli_fail("interrupted at step %ld, and saving failed: %s", done, err);
    resume_command(r, cmd, sizeof cmd);
    fprintf(stderr, "train: %s at step %ld of %ld: saved %s; continue with: %s\n",
            stop_signal == SIGINT ? "interrupted" : "terminated", done, r->o.steps, r->o.out,
            cmd);
    if (r->log)
        fclose(r->log);
    run_exit(r, 128 + stop_signal);
}

/* The loss and gradient of micro-batch i of the step (into model.grads, zeroed
 * first), on the batch in r->inputs / r->targets. Dropout masks depend on the
 * micro-batch's number in the whole run, so any split over ranks draws the same;
 * with one micro-batch a step that number is the step, as it always was. */
static double micro_pass(Run *r, long step, long i)
{
    int B = (int)r->o.batch, T = (int)r->o.block;
    uint64_t n = (uint64_t)step * (uint64_t)r->micro + (uint64_t)i;
    PassOptions po = {.dropout = (float)r->o.dropout,
                      .dropout_key = rng_hash(r->o.seed, RNG_STREAM_DROPOUT, n)};
    double loss = gpt_forward(&r->model, &r->acts, r->inputs, r->targets, B, T, &po);
    model_zero_grads(&r->model);
    gpt_backward(&r->model, &r->acts, r->inputs, r->targets, B, T, &po);
    return loss;
}

/* One step's gradient and mean loss. With one micro-batch in all, the gradient
 * is model.grads itself; with more (--accum, or several ranks), the micro-batches
 * are drawn in order from the one sampler, each rank computes its own (round j,
 * micro-batch j * ranks + rank), and dist folds them in micro-batch order (dist.h),
 * so the bits do not depend on the number of ranks. Returns the gradient. */
static float *step_gradient(Run *r, long step, double *loss)
{
    int B = (int)r->o.batch, T = (int)r->o.block;
    const uint8_t *ids = r->corpus.ids;
    size_t ntrain = r->corpus.ntrain;
    if (r->micro == 1) {
        batch_next(&r->sampler, ids, ntrain, B, T, r->inputs, r->targets);
        *loss = micro_pass(r, step, 0);
        return r->model.grads;
    }
    int n = r->dist.size, me = r->dist.rank;
    long k = r->o.accum;
    double mine[LIMIT_ACCUM_MAX], all[LIMIT_ACCUM_MAX];
    for (long j = 0; j < k; j++) {
        for (int q = 0; q < n; q++) {
            int keep = q == me;
            batch_next(&r->sampler, ids, ntrain, B, T, keep ? r->inputs : r->mb_in,
                       keep ? r->targets : r->mb_tg);
        }
        mine[j] = micro_pass(r, step, j * n + me);
        dist_fold(&r->dist, r->acc, r->model.grads, (int)j);
    }
    dist_gather(&r->dist, r->acc, 1.0f / (float)r->micro);
    dist_losses(&r->dist, mine, (int)k, all);
    double total = 0.0;
    for (long i = 0; i < r->micro; i++)
        total += all[i];
    *loss = total / (double)r->micro;
    return r->acc;
}

static void train_loop(Run *r, long start)
{
    const Options *o = &r->o;
    int B = (int)o->batch, T = (int)o->block;
    size_t P = r->model.table.total;
    double last_print = 0.0, avg = 0.0;
    char err[1500];
    for (long step = start; step < o->steps; step++) {
        double t0 = cli_now(), loss;
        float *grads = step_gradient(r, step, &loss);
        double norm = grad_clip(grads, P, (float)o->clip);
        if (!isfinite(loss) || !isfinite(norm))
            stop_nonfinite(r, step + 1, loss, norm);
        float lr = schedule_lr(step, o->steps, o->warmup, (float)o->lr, (float)o->min_lr);
        adamw_update(r->model.params, grads, r->ts.adam_m, r->ts.adam_v, &r->model.table,
                     &r->adam, lr, step + 1);
        double t1 = cli_now(), dt = t1 - t0;
        long done = step + 1;
        avg = step == start ? dt : 0.9 * avg + 0.1 * dt;
        double tokens = (double)B * T * (double)r->micro;
        log_printf(r, "{\"type\":\"step\",\"step\":%ld,\"loss\":%.6f,\"lr\":%.6e,"
                   "\"grad_norm\":%.6f,\"ms\":%.3f,\"tok_s\":%.1f}\n", done, loss, lr, norm,
                   dt * 1e3, tokens / dt);
        if (r->log && o->heads_every && (done % o->heads_every == 0 || done == start + 1))
            log_heads(r, done);
        if (done == start + 1 || done == o->steps || t1 - last_print >= 1.0) {
            progress(r, done, loss, lr, dt, avg);
            last_print = t1;
        }
        if (lead(r) && ((o->eval_every && done % o->eval_every == 0) || done == o->steps))
            evaluate_now(r, done);
        /* Every rank stops at the same step: a signal to any of them, or the log
         * (rank 0's) failing, ends all (256 marks the log). */
        int stop = stop_signal | (r->log_errno ? 256 : 0);
        if (r->dist.size > 1)
            stop = dist_any(&r->dist, stop);
        if (stop & 256)
            stop_log_failed(r, done);
        if (o->save_every && done % o->save_every == 0 && done < o->steps &&
            save_out(r, done, err, sizeof err))
            fprintf(stderr, "train: warning: checkpoint not saved: %s (the previous one is "
                    "intact)\n", err);
        if (stop && done < o->steps) {
            if (!stop_signal)
                stop_signal = stop & 255;
            stop_on_signal(r, done);
        }
    }
}

/* Writes n bytes to fd, checking for a signal between pieces; 0, -1 (errno set)
 * or 1 when a signal asked to stop. */
static int write_stoppable(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        if (stop_signal)
            return 1;
        size_t piece = n < ((size_t)1 << 20) ? n : (size_t)1 << 20;
        ssize_t w = write(fd, p, piece);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* --dump-val: the held-out bytes, exactly as training splits them, for --eval
 * and --heads (the built-in corpus has no file of its own). A regular file is
 * replaced atomically (a temporary beside it, renamed when complete), so no
 * partial file is ever left; a device or FIFO is written directly. */
static int dump_val(Run *r)
{
    char err[5000];
    const char *path = r->o.dump_val;
    GuardPath paths[] = {{"--data", r->o.data, 0, NULL}, {"--dump-val", path, 1, NULL}};
    if (guard_check_paths(paths, 2, err, sizeof err))
        cli_usage_error("%s", err);
    struct stat st;
    int exists = stat(path, &st) == 0, direct = exists && !S_ISREG(st.st_mode);
    if (exists && S_ISDIR(st.st_mode))
        cli_fail("--dump-val %s: is a directory, expected a file path", path);
    load_data(r, r->o.data, SYNTH_DEFAULT_BYTES);
    if (corpus_prepare(&r->corpus, &r->file, NULL, r->o.val_frac, (int)r->o.block, err,
                       sizeof err))
        cli_fail("%s", err);
    char tmp[4200] = "";
    int fd = direct ? open(path, O_WRONLY | O_CLOEXEC) : ckpt_tmp_create(path, tmp, sizeof tmp);
    if (fd < 0)
        cli_fail("--dump-val %s: cannot write there: %s", path,
                 errno == ENOENT ? "directory does not exist" : strerror(errno));
    size_t n = r->corpus.nval;
    int rc = write_stoppable(fd, r->file.bytes + r->corpus.ntrain, n);
    int saved = errno;
    if (rc == 0 && !direct && fsync(fd) != 0) {
        rc = -1;
        saved = errno;
    }
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && !direct && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0 && tmp[0])
        unlink(tmp); /* ours: created above */
    if (rc == 1) {
        fprintf(stderr, "train: interrupted; %s was not written\n", path);
        exit(128 + stop_signal);
    }
    if (rc != 0)
        cli_fail("--dump-val %s: write failed: %s%s", path, strerror(saved),
                 direct ? "" : "; nothing was written there");
    fprintf(stderr, "train: wrote the validation split of %s (%zu bytes) to %s\n", r->file.name,
            n, path);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    return 0;
}

static void alloc_buffers(Run *r)
{
    char err[1500];
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
    if (r->micro > 1) {
        r->acc = malloc(r->model.table.total * sizeof(float));
        r->mb_in = malloc(bt * sizeof(int));
        r->mb_tg = malloc(bt * sizeof(int));
        if (!r->acc || !r->mb_in || !r->mb_tg || dist_setup(&r->dist, r->model.table.total))
            cli_fail("out of memory for gradient accumulation");
    }
}

/* Every rank must train on the same bytes: a copy that differs on one node would
 * make the ranks' gradients disagree silently. */
static void check_same_data(const Run *r)
{
    int bad;
    uint64_t size, hash;
    if (dist_same_data(&r->dist, r->file.n, r->file.hash, &bad, &size, &hash))
        return;
    if (!lead(r))
        train_exit(1); /* rank 0 says why */
    cli_fail("the ranks read different data: rank 0 read %s as %zu bytes with hash %016llx, "
             "rank %d as %llu bytes with hash %016llx; every rank needs the same data file",
             r->file.name, r->file.n, (unsigned long long)r->file.hash, bad,
             (unsigned long long)size, (unsigned long long)hash);
}

static void open_log(Run *r)
{
    if (!r->o.log || !lead(r))
        return;
    r->log = fopen(r->o.log, r->o.resume ? "a" : "w");
    if (!r->log)
        cli_fail("--log %s: cannot open for writing: %s", r->o.log, strerror(errno));
    setvbuf(r->log, NULL, _IOLBF, 0);
}

/* After the last step: save first, so that the final evaluation (the whole val
 * split, which can take a while) can be interrupted without losing anything. */
static void finish(Run *r, long start, double t0, double train_s)
{
    char err[1500], good[5000];
    if (r->last_saved < r->o.steps && save_out(r, r->o.steps, err, sizeof err)) {
        last_good(r, good, sizeof good);
        cli_fail("training finished but the checkpoint was not saved: %s. %s", err, good);
    }
    if (!lead(r))
        return; /* the evaluation and the summary are rank 0's */
    double val = NAN;
    size_t nval_tok = 0;
    if (r->corpus.nval >= 2) {
        fprintf(stderr, "train: scoring the whole val split (%zu tokens)\n", r->corpus.nval - 1);
        int rc = eval_sequence_until(&r->model, &r->acts, r->corpus.ids + r->corpus.ntrain,
                                     r->corpus.nval, NULL, &val, &nval_tok, NULL,
                                     &stop_signal, err, sizeof err);
        if (rc < 0)
            cli_fail("%s", err);
    }
    double train_est = stop_signal ? NAN : estimate(r, r->corpus.ids, r->corpus.ntrain);
    if (stop_signal) {
        fprintf(stderr, "train: %s during the final evaluation; %s is saved and complete "
                "(step %ld of %ld)\n", stop_signal == SIGINT ? "interrupted" : "terminated",
                r->o.out, r->o.steps, r->o.steps);
        if (r->log)
            fclose(r->log);
        run_exit(r, 128 + stop_signal);
    }
    double wall = cli_now() - t0;
    long steps_run = r->o.steps - start;
    double tok_s = (double)steps_run * (double)r->o.batch * (double)r->o.block *
                   (double)r->micro / train_s;
    char dur[32];
    cli_duration(wall, dur, sizeof dur);
    fprintf(stderr, "done: %ld steps in %.1f s (%.0f tok/s) | train loss %.4f (estimate) | "
            "val loss %.4f (whole val split, %zu tokens) | total %s | saved %s\n", steps_run,
            train_s, tok_s, train_est, val, nval_tok, dur, r->o.out);
    log_printf(r, "{\"type\":\"final\",\"step\":%ld,\"train_loss\":%.6f,\"val_loss\":%.6f,"
               "\"val_tokens\":%zu,\"train_seconds\":%.3f,\"wall_seconds\":%.3f,\"tok_s\":%.1f}\n",
               r->o.steps, train_est, isfinite(val) ? val : -1.0, nval_tok, train_s, wall, tok_s);
    if (r->log && (fclose(r->log) != 0 || r->log_errno)) {
        r->log = NULL;
        cli_fail("--log %s: write failed at the end of the run: %s; %s is saved", r->o.log,
                 strerror(r->log_errno ? r->log_errno : errno), r->o.out);
    }
    r->log = NULL;
}

/* Error exits: release the locks, then end every rank (dist_abort). */
static void train_exit(int code)
{
    release_locks();
    dist_abort(code);
}

int main(int argc, char **argv)
{
    cli_prog = "train";
    cli_passive_openmp(argv);
    Run run;
    memset(&run, 0, sizeof run);
    Run *r = &run;
    r->lock.fd = r->best_lock.fd = -1;
    r->last_saved = r->resumed_step = -1;
    if (dist_init(&r->dist, &argc, &argv))
        cli_fail("cannot start MPI");
    if (r->dist.size > 1) {
        /* Rank 0 speaks for the job; the others report only their errors. */
        static char prog[32];
        cli_set_exit(train_exit);
        if (!lead(r)) {
            snprintf(prog, sizeof prog, "train[rank %d]", r->dist.rank);
            cli_prog = prog;
            int fd = dup(STDERR_FILENO);
            FILE *err = fd >= 0 ? fdopen(fd, "w") : NULL;
            if (err && freopen("/dev/null", "w", stderr))
                cli_set_error_stream(err);
        }
    }
    unsigned char given[OPT_COUNT] = {0};
    parse(argc, argv, &r->o, given);
    if (r->o.threads)
        omp_set_num_threads((int)r->o.threads);
    install_signals();
    if (r->o.dump_val) {
        int rc = lead(r) ? dump_val(r) : 0;
        dist_finish(&r->dist);
        return rc;
    }
    exiting_run = r;
    atexit(release_locks);
    Tokenizer tok;
    if (r->o.resume)
        open_resume(r, given, &tok);
    r->micro = r->o.accum * r->dist.size;
    claim_outputs(r);
    if (r->o.resume)
        load_resumed_data(r, given, &tok);
    else
        setup_fresh(r);
    r->adam = (AdamW){.beta1 = (float)r->o.beta1, .beta2 = (float)r->o.beta2,
                      .eps = (float)r->o.eps, .weight_decay = (float)r->o.wd};
    check_same_data(r);
    alloc_buffers(r);
    open_log(r);
    long start = r->ts.step;
    print_settings(r);
    if (dist_any(&r->dist, stop_signal)) {
        fprintf(stderr, "train: interrupted before the first step; nothing was written\n");
        run_exit(r, 128 + (stop_signal ? stop_signal : SIGINT));
    }
    double t0 = cli_now();
    train_loop(r, start);
    finish(r, start, t0, cli_now() - t0);
    dist_finish(&r->dist);
    free(r->inputs);
    free(r->targets);
    free(r->mb_in);
    free(r->mb_tg);
    free(r->acc);
    free(r->head_metrics);
    acts_free(&r->acts);
    ckpt_state_free(&r->ts);
    model_free(&r->model);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    return 0;
}
