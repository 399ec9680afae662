/* train_options: flags, defaults, help and parsing for ./train (see train_options.h). */
#include "app/train_options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model/ckpt.h"
#include "model/config.h"
#include "model/limits.h"

static const Options DEFAULTS = {
    .data = NULL, .corpus = "text", .out = "headcount.ckpt", .log = NULL, .resume = NULL,
    .layers = 4, .heads = 4, .embd = 128, .head_size = 0, .block = 64, .batch = 12,
    .steps = 2000, .warmup = 100, .eval_every = 250, .eval_iters = 20, .save_every = 500,
    .threads = 0, .lr = 1e-3, .min_lr = 1e-4, .wd = 0.1, .clip = 1.0, .dropout = 0.0,
    .val_frac = 0.1, .seed = 1337, .allow_binary = 0, .keep_best = 0, .accum = 1,
    .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8,
};

static void usage(void)
{
    const Options *d = &DEFAULTS;
    printf("usage: ./train [--data FILE] [options]\n"
           "Trains a small GPT (byte vocabulary, multi-head attention) and writes a checkpoint.\n"
           "Without --data it trains on the built-in generated corpus (docs/corpus.md).\n\n"
           "data and output:\n"
           "  -d, --data FILE        text file to train on (default: built-in corpus)\n"
           "      --corpus NAME      built-in corpus when no --data: text, or induction (repeated\n"
           "                         random strings, with its own recipe: docs/corpus.md) (default: %s)\n"
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
           d->corpus, d->out, d->save_every, d->layers, d->heads, d->embd, d->block, d->batch,
           d->steps,
           d->lr, d->min_lr, d->warmup, d->wd, d->beta1, d->beta2, d->eps, d->clip, d->dropout,
           (unsigned long long)d->seed, d->val_frac, d->eval_every, d->eval_iters);
}

void train_json_string(char *buf, size_t len, const char *s)
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
    train_json_string(data, sizeof data, o->data ? o->data : "");
    train_json_string(out, sizeof out, o->out);
    printf("{\"data\":%s,\"corpus\":\"%s\",\"out\":%s,\"layers\":%ld,\"heads\":%ld,"
           "\"embd\":%ld,\"head_size\":%ld,\"block\":%ld,\"batch\":%ld,\"accum\":%ld,"
           "\"steps\":%ld,\"lr\":%.17g,\"min_lr\":%.17g,\"warmup\":%ld,\"wd\":%.17g,"
           "\"beta1\":%.17g,\"beta2\":%.17g,\"eps\":%.17g,\"clip\":%.17g,\"dropout\":%.17g,"
           "\"seed\":%llu,\"val_frac\":%.17g,\"eval_every\":%ld,\"eval_iters\":%ld,"
           "\"save_every\":%ld,\"heads_every\":%ld,\"threads\":%ld,\"keep_best\":%s,"
           "\"allow_binary\":%s,\"version\":\"%s\"}\n",
           o->data ? data : "null", o->corpus, out, o->layers, o->heads, o->embd, o->head_size,
           o->block, o->batch, o->accum, o->steps, o->lr, o->min_lr, o->warmup, o->wd,
           o->beta1, o->beta2, o->eps, o->clip, o->dropout, (unsigned long long)o->seed,
           o->val_frac, o->eval_every, o->eval_iters, o->save_every, o->heads_every,
           o->threads, o->keep_best ? "true" : "false", o->allow_binary ? "true" : "false",
           HEADCOUNT_VERSION);
}

int train_is_induction(const Options *o)
{
    return strcmp(o->corpus, "induction") == 0;
}

/* --corpus induction: the recipe of docs/corpus.md ("The induction task"), for
 * every setting the command line does not give. */
static void induction_recipe(Options *o, const unsigned char *given)
{
    if (!given[OPT_LAYERS]) o->layers = 2;
    if (!given[OPT_HEADS]) o->heads = 4;
    if (!given[OPT_EMBD]) o->embd = 64;
    if (!given[OPT_BLOCK]) o->block = 64;
    if (!given[OPT_BATCH]) o->batch = 32;
    if (!given[OPT_STEPS]) o->steps = 3000;
    if (!given[OPT_WARMUP]) o->warmup = 200;
    if (!given[OPT_LR]) o->lr = 5e-3;
    if (!given[OPT_MIN_LR]) o->min_lr = 5e-4;
}

void train_options_parse(int argc, char **argv, Options *o, unsigned char given[OPT_COUNT])
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
        {"eps", required_argument, 0, OPT_EPS}, {"corpus", required_argument, 0, OPT_CORPUS},
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
        case OPT_CORPUS:
            if (strcmp(optarg, "text") != 0 && strcmp(optarg, "induction") != 0)
                cli_usage_error("--corpus '%s': expected text or induction", optarg);
            o->corpus = optarg;
            break;
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
    if (given[OPT_DATA] && given[OPT_CORPUS])
        cli_usage_error("--data and --corpus both choose the training text; give one");
    if (train_is_induction(o))
        induction_recipe(o, given);
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
