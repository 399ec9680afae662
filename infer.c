/* infer: uses a checkpoint: --eval scores a file, --heads analyses what every
 * attention head does, and otherwise it samples text. This file parses flags,
 * loads and checks the checkpoint and runs --eval; the sampling and heads
 * drivers are in infer_sample.c and infer_heads.c. */
#include "infer.h"

#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "data/corpus.h"
#include "model/ckpt.h"
#include "model/evaluate.h"

enum {
    OPT_CKPT = 256, OPT_EVAL, OPT_PROMPT, OPT_PROMPT_FILE, OPT_TOKENS, OPT_TEMPERATURE, OPT_TOP_K,
    OPT_TOP_P, OPT_SEED, OPT_SAMPLES, OPT_NO_CACHE, OPT_HEADS, OPT_REPORT, OPT_WINDOWS,
    OPT_PRUNE_CURVE, OPT_MASK, OPT_THREADS, OPT_HELP
};

static const InferOptions DEFAULTS = {
    .tokens = 500, .samples = 1, .top_k = 0, .temperature = 0.8, .top_p = 1.0, .seed = 1337,
    .windows = 0,
};

static void usage(void)
{
    printf("usage: ./infer --ckpt CKPT [mode] [options]\n"
           "Uses a checkpoint written by ./train. Modes:\n"
           "  (default)              sample text to stdout\n"
           "  --eval FILE            score FILE; prints one line: eval loss, ppl, bpc, tokens\n"
           "  --heads FILE           measure what every attention head does on FILE\n\n"
           "  -c, --ckpt CKPT        checkpoint to load (required)\n"
           "sampling:\n"
           "  -p, --prompt TEXT      text to continue (default: a newline)\n"
           "      --prompt-file FILE read the prompt from FILE\n"
           "  -n, --tokens N         bytes to generate per sample (default: %ld)\n"
           "  -t, --temperature X    0 = greedy (argmax) (default: %g)\n"
           "  -k, --top-k K          keep the K most likely bytes, 0 = all (default: %ld)\n"
           "      --top-p P          nucleus: smallest set with probability >= P (default: %g)\n"
           "  -s, --seed N           sampling seed (default: %llu)\n"
           "      --samples N        independent samples, separated by a rule (default: %ld)\n"
           "      --no-cache         recompute the whole context per byte (benchmarks)\n"
           "heads analysis:\n"
           "      --report DIR       write heads.csv, heads.json, SVG heatmaps and index.html\n"
           "      --windows N        windows of FILE to average over (default: automatic)\n"
           "      --prune-curve      remove heads least important first; print loss vs heads kept\n"
           "shared:\n"
           "      --mask L.H,...     silence these heads (layer.head, 0-based) in every mode\n"
           "  -j, --threads N        OpenMP threads (default: all cores; results are identical)\n"
           "  -h, --help             this help\n",
           DEFAULTS.tokens, DEFAULTS.temperature, DEFAULTS.top_k, DEFAULTS.top_p,
           (unsigned long long)DEFAULTS.seed, DEFAULTS.samples);
}

static void parse(int argc, char **argv, InferOptions *o)
{
    static const struct option longs[] = {
        {"ckpt", required_argument, 0, OPT_CKPT}, {"eval", required_argument, 0, OPT_EVAL},
        {"prompt", required_argument, 0, OPT_PROMPT},
        {"prompt-file", required_argument, 0, OPT_PROMPT_FILE},
        {"tokens", required_argument, 0, OPT_TOKENS},
        {"temperature", required_argument, 0, OPT_TEMPERATURE},
        {"top-k", required_argument, 0, OPT_TOP_K}, {"top-p", required_argument, 0, OPT_TOP_P},
        {"seed", required_argument, 0, OPT_SEED}, {"samples", required_argument, 0, OPT_SAMPLES},
        {"no-cache", no_argument, 0, OPT_NO_CACHE}, {"heads", required_argument, 0, OPT_HEADS},
        {"report", required_argument, 0, OPT_REPORT},
        {"windows", required_argument, 0, OPT_WINDOWS},
        {"prune-curve", no_argument, 0, OPT_PRUNE_CURVE}, {"mask", required_argument, 0, OPT_MASK},
        {"threads", required_argument, 0, OPT_THREADS}, {"help", no_argument, 0, OPT_HELP},
        {0, 0, 0, 0}};
    static const CliShort shorts[] = {
        {'c', OPT_CKPT}, {'p', OPT_PROMPT}, {'n', OPT_TOKENS}, {'t', OPT_TEMPERATURE},
        {'k', OPT_TOP_K}, {'s', OPT_SEED}, {'j', OPT_THREADS}, {'h', OPT_HELP}};
    *o = DEFAULTS;
    int c;
    while ((c = cli_next_option(argc, argv, ":c:p:n:t:k:s:j:h", longs, shorts,
                                sizeof shorts / sizeof shorts[0])) != -1) {
        switch (c) {
        case OPT_CKPT: o->ckpt = optarg; break;
        case OPT_EVAL: o->eval = optarg; break;
        case OPT_PROMPT: o->prompt = optarg; break;
        case OPT_PROMPT_FILE: o->prompt_file = optarg; break;
        case OPT_TOKENS: o->tokens = cli_long("tokens", optarg, 0, 10000000); break;
        case OPT_TEMPERATURE: o->temperature = cli_double("temperature", optarg, 0, 100); break;
        case OPT_TOP_K: o->top_k = cli_long("top-k", optarg, 0, 256); break;
        case OPT_TOP_P: o->top_p = cli_double("top-p", optarg, 1e-6, 1); break;
        case OPT_SEED: o->seed = cli_u64("seed", optarg); break;
        case OPT_SAMPLES: o->samples = cli_long("samples", optarg, 1, 100000); break;
        case OPT_NO_CACHE: o->no_cache = 1; break;
        case OPT_HEADS: o->heads = optarg; break;
        case OPT_REPORT: o->report = optarg; break;
        case OPT_WINDOWS: o->windows = cli_long("windows", optarg, 1, 1000000); break;
        case OPT_PRUNE_CURVE: o->prune_curve = 1; break;
        case OPT_MASK: o->mask = optarg; break;
        case OPT_THREADS: o->threads = cli_long("threads", optarg, 1, 1024); break;
        case OPT_HELP: usage(); exit(0);
        default: cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cli_usage_error("unexpected argument '%s' (flags take the form --name value)",
                        argv[optind]);
    if (!o->ckpt)
        cli_usage_error("--ckpt CKPT is required");
    if (o->eval && o->heads)
        cli_usage_error("--eval and --heads are separate modes; give one");
    if (o->prompt && o->prompt_file)
        cli_usage_error("--prompt and --prompt-file both given; give one");
}

/* "L.H,L.H" -> head_on[L*H] with the listed heads 0. */
static unsigned char *parse_mask(const char *spec, const Config *c)
{
    unsigned char *on = malloc((size_t)c->L * c->H);
    if (!on)
        cli_fail("out of memory");
    memset(on, 1, (size_t)c->L * c->H);
    const char *p = spec;
    while (*p) {
        char *end;
        long l = strtol(p, &end, 10);
        if (end == p || *end != '.')
            cli_usage_error("--mask: expected layer.head pairs like 0.1,2.3, got '%s'", spec);
        p = end + 1;
        long h = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0'))
            cli_usage_error("--mask: expected layer.head pairs like 0.1,2.3, got '%s'", spec);
        if (l < 0 || l >= c->L || h < 0 || h >= c->H)
            cli_usage_error("--mask: head %ld.%ld does not exist (the model has layers 0..%d "
                            "and heads 0..%d)", l, h, c->L - 1, c->H - 1);
        on[l * c->H + h] = 0;
        p = *end == ',' ? end + 1 : end;
    }
    return on;
}

static int run_eval(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    char err[1500];
    TextFile f;
    if (textfile_read(&f, o->eval, 1, err, sizeof err))
        cli_fail("%s", err);
    if (f.n < 2)
        cli_fail("%s: %zu byte(s); scoring needs at least 2 (one input, one target)", o->eval,
                 f.n);
    uint8_t *ids = malloc(f.n);
    if (!ids)
        cli_fail("out of memory");
    if (tok_encode(tok, f.bytes, f.n, ids, o->eval, err, sizeof err))
        cli_fail("%s", err);
    Activations a;
    if (acts_init(&a, &m->cfg, 16, m->cfg.T, 0, err, sizeof err))
        cli_fail("%s", err);
    PassOptions po = {.head_on = o->head_on};
    double loss;
    size_t n;
    if (eval_sequence(m, &a, ids, f.n, &po, &loss, &n, NULL, err, sizeof err))
        cli_fail("%s", err);
    printf("eval loss %.6f ppl %.4f bpc %.4f tokens %zu\n", loss, exp(loss), loss / log(2.0), n);
    acts_free(&a);
    free(ids);
    textfile_free(&f);
    return 0;
}

int main(int argc, char **argv)
{
    cli_prog = "infer";
    InferOptions o;
    parse(argc, argv, &o);
    if (o.threads)
        omp_set_num_threads((int)o.threads);
    Model m;
    Tokenizer tok;
    char err[1500];
    long steps;
    if (ckpt_load(o.ckpt, &m, &tok, &steps, NULL, NULL, err, sizeof err))
        cli_fail("%s", err);
    if (o.mask)
        o.head_on = parse_mask(o.mask, &m.cfg);
    int rc;
    if (o.eval)
        rc = run_eval(&o, &m, &tok);
    else if (o.heads)
        rc = infer_heads(&o, &m, &tok);
    else
        rc = infer_sample(&o, &m, &tok);
    free(o.head_on);
    model_free(&m);
    return rc;
}
