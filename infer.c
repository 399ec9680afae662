/* infer: uses a checkpoint: --eval scores a file, --heads analyses what every
 * attention head does, --explore writes an interactive page of every head's
 * attention on a text, and otherwise it samples text. This file parses flags,
 * loads and checks the checkpoint and runs --eval; the sampling, heads and
 * explorer drivers are in infer_sample.c, infer_heads.c and infer_explore.c. */
#include "app/infer.h"

#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/cli.h"
#include "app/fileguard.h"
#include "app/report.h"
#include "data/induction.h"
#include "data/corpus.h"
#include "trainer/ckpt.h"
#include "model/evaluate.h"

enum {
    OPT_CKPT = 256, OPT_EVAL, OPT_PROMPT, OPT_PROMPT_FILE, OPT_TOKENS, OPT_TEMPERATURE, OPT_TOP_K,
    OPT_TOP_P, OPT_SEED, OPT_SAMPLES, OPT_NO_CACHE, OPT_HEADS, OPT_REPORT, OPT_WINDOWS,
    OPT_PRUNE_CURVE, OPT_MASK, OPT_THREADS, OPT_HELP, OPT_EXPLORE, OPT_EXPLORE_JSON, OPT_TEXT,
    OPT_TEXT_FILE, OPT_VERSION, OPT_JSON
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
           "  --eval FILE            score FILE; prints one line: eval loss (nats per token),\n"
           "                         ppl, bpb (bits per byte), tokens, bytes\n"
           "  --heads FILE           measure what every attention head does on FILE\n"
           "  --explore OUT.html     write an interactive page of every head's attention on\n"
           "                         --text or --text-file (their first block-size bytes),\n"
           "                         or else on the first sample (its last block-size bytes:\n"
           "                         the context the model ended with)\n\n"
           "  -c, --ckpt CKPT        checkpoint to load (required)\n"
           "      --json             with --eval: the result as one JSON object (loss, ppl, bpb,\n"
           "                         tokens, bytes); with --heads: summary.json's object (relations,\n"
           "                         head types, the prune curve) instead of the table\n"
           "sampling:\n"
           "  -p, --prompt TEXT      text to continue (default: a newline)\n"
           "      --prompt-file FILE read the prompt from FILE ('-': standard input)\n"
           "  -n, --tokens N         tokens to generate per sample (default: %ld)\n"
           "  -t, --temperature X    0 = greedy (argmax) (default: %g)\n"
           "  -k, --top-k K          keep the K most likely tokens, 0 = all (default: %ld)\n"
           "      --top-p P          nucleus: smallest set with probability >= P (default: %g)\n"
           "  -s, --seed N           sampling seed (default: %llu)\n"
           "      --samples N        independent samples, each under a header when N > 1\n"
           "                         (default: %ld)\n"
           "      --no-cache         recompute the whole context per byte (benchmarks)\n"
           "heads analysis:\n"
           "      --report DIR       write heads.csv, heads.json, SVG heatmaps and index.html\n"
           "                         into DIR: a new or empty directory, or its own earlier\n"
           "                         report, which it replaces as a whole\n"
           "      --windows N        windows of FILE to average over (default: automatic)\n"
           "      --prune-curve      remove heads least important first; print loss vs heads kept\n"
           "explorer:\n"
           "      --text TEXT        the text to explore (its first block-size tokens)\n"
           "      --text-file FILE   read it from FILE ('-': standard input)\n"
           "      --explore-json F   also write the attention weights at full precision\n"
           "shared:\n"
           "      --mask L.H,...     silence these heads (layer.head, 0-based) in every mode\n"
           "  -j, --threads N        OpenMP threads (default: all cores; results are identical)\n"
           "  -h, --help             this help\n"
           "      --version          print the version and exit\n",
           DEFAULTS.tokens, DEFAULTS.temperature, DEFAULTS.top_k, DEFAULTS.top_p,
           (unsigned long long)DEFAULTS.seed, DEFAULTS.samples);
}

/* A flag that would do nothing in the chosen mode is an error, not ignored. */
static void check_mode_flags(const InferOptions *o)
{
    if (!o->heads) {
        if (o->report)
            cli_usage_error("--report needs --heads FILE (it writes the heads report)");
        if (o->prune_curve)
            cli_usage_error("--prune-curve needs --heads FILE");
        if (o->windows)
            cli_usage_error("--windows needs --heads FILE");
    }
    if (o->json && !o->eval && !o->heads)
        cli_usage_error("--json needs --eval FILE or --heads FILE (it prints their result "
                        "as JSON)");
    if (o->explore && (o->eval || o->heads))
        cli_usage_error("--explore is its own mode; give it without --%s",
                        o->eval ? "eval" : "heads");
    if (!o->explore) {
        if (o->text || o->text_file)
            cli_usage_error("--%s needs --explore OUT.html", o->text ? "text" : "text-file");
        if (o->explore_json)
            cli_usage_error("--explore-json needs --explore OUT.html");
    }
    if (o->text && o->text_file)
        cli_usage_error("--text and --text-file both given; give one");
    if ((o->text || o->text_file) && (o->prompt || o->prompt_file))
        cli_usage_error("--%s explores a given text, so a prompt would not be used; give "
                        "--explore with a prompt alone to explore a sample",
                        o->text ? "text" : "text-file");
    if (o->prompt_file && o->text_file && !strcmp(o->prompt_file, "-") &&
        !strcmp(o->text_file, "-"))
        cli_usage_error("only one of --prompt-file and --text-file can read standard input");
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
        {"explore", required_argument, 0, OPT_EXPLORE},
        {"explore-json", required_argument, 0, OPT_EXPLORE_JSON},
        {"json", no_argument, 0, OPT_JSON},
        {"text", required_argument, 0, OPT_TEXT},
        {"text-file", required_argument, 0, OPT_TEXT_FILE},
        {"version", no_argument, 0, OPT_VERSION}, {0, 0, 0, 0}};
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
        case OPT_TOP_K: o->top_k = cli_long("top-k", optarg, 0, TOK_VOCAB_MAX); break;
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
        case OPT_VERSION: printf("infer (headcount) %s\n", HEADCOUNT_VERSION); exit(0);
        case OPT_EXPLORE: o->explore = optarg; break;
        case OPT_EXPLORE_JSON: o->explore_json = optarg; break;
        case OPT_JSON: o->json = 1; break;
        case OPT_TEXT: o->text = optarg; break;
        case OPT_TEXT_FILE: o->text_file = optarg; break;
        default: cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cli_usage_error("unexpected argument '%s' (flags take the form --name value)",
                        argv[optind]);
    if (!o->ckpt)
        cli_usage_error("--ckpt CKPT is required");
    const struct { const char *flag, *path; } paths[] = {
        {"ckpt", o->ckpt}, {"eval", o->eval}, {"prompt-file", o->prompt_file},
        {"heads", o->heads}, {"report", o->report}, {"explore", o->explore},
        {"explore-json", o->explore_json}, {"text-file", o->text_file}};
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++)
        if (paths[k].path && !paths[k].path[0])
            cli_usage_error("--%s '': the path is empty; give a file name", paths[k].flag);
    if (o->eval && o->heads)
        cli_usage_error("--eval and --heads are separate modes; give one");
    if (o->prompt && o->prompt_file)
        cli_usage_error("--prompt and --prompt-file both given; give one");
    check_mode_flags(o);
}

/* "L.H,L.H" -> head_on[L*H] with the listed heads 0: at least one head, no
 * empty item (",," or a trailing comma) and no head listed twice. */
static unsigned char *parse_mask(const char *spec, const Config *c)
{
    if (!spec[0])
        cli_usage_error("--mask '': no head given; list heads as layer.head pairs like 0.1,2.3");
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
        if (!on[l * c->H + h])
            cli_usage_error("--mask '%s': head %ld.%ld is listed twice", spec, l, h);
        on[l * c->H + h] = 0;
        if (*end == ',' && end[1] == '\0')
            cli_usage_error("--mask '%s': ends with a comma; list heads as layer.head pairs "
                            "like 0.1,2.3", spec);
        p = *end == ',' ? end + 1 : end;
    }
    return on;
}

void infer_read_input(TextFile *f, const char *path, const char *flag)
{
    char err[1500];
    if (strcmp(path, "-") != 0) {
        if (textfile_read(f, path, 1, err, sizeof err))
            cli_fail("--%s %s", flag, err);
        return;
    }
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "<stdin>");
    size_t cap = 4096;
    f->bytes = malloc(cap);
    for (;;) {
        if (!f->bytes)
            cli_fail("out of memory reading standard input");
        size_t got = fread(f->bytes + f->n, 1, cap - f->n, stdin);
        f->n += got;
        if (got == 0)
            break;
        if (f->n == cap) {
            if (cap > CORPUS_MAX_BYTES)
                cli_fail("--%s -: standard input is larger than %zu bytes", flag,
                         CORPUS_MAX_BYTES);
            cap *= 2;
            f->bytes = realloc(f->bytes, cap);
        }
    }
    if (ferror(stdin))
        cli_fail("--%s -: reading standard input failed", flag);
}

/* --explore with --text or --text-file: the page of that text. */
static int run_explore_text(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    if (o->text)
        return infer_explore(o, m, tok, (const unsigned char *)o->text, strlen(o->text),
                             "the --text argument", 0);
    TextFile f;
    infer_read_input(&f, o->text_file, "text-file");
    int rc = infer_explore(o, m, tok, f.bytes, f.n, f.name, 0);
    textfile_free(&f);
    return rc;
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
    TokenId *ids = malloc(f.n * sizeof *ids);
    if (!ids)
        cli_fail("out of memory");
    long nids = tok_encode(tok, f.bytes, f.n, ids, o->eval, err, sizeof err);
    if (nids < 0)
        cli_fail("%s", err);
    if (nids < 2)
        cli_fail("%s: %zu bytes make %ld token; scoring needs at least 2 (one input, one "
                 "target)", o->eval, f.n, nids);
    Activations a;
    if (acts_init(&a, &m->cfg, 16, m->cfg.T, 0, err, sizeof err))
        cli_fail("%s", err);
    PassOptions po = {.head_on = o->head_on};
    double loss;
    size_t n;
    if (eval_sequence(m, &a, ids, (size_t)nids, &po, &loss, &n, NULL, err, sizeof err))
        cli_fail("%s", err);
    /* The bytes the predicted tokens (all but the first) stand for. */
    size_t bytes = tok_count_bytes(tok, ids + 1, n);
    double bpb = eval_bpb(loss, n, bytes);
    if (o->json)
        printf("{\"loss\":%.9g,\"ppl\":%.9g,\"bpb\":%.9g,\"tokens\":%zu,\"bytes\":%zu}\n",
               loss, exp(loss), bpb, n, bytes);
    else
        printf("eval loss %.6f ppl %.4f bpb %.4f tokens %zu bytes %zu\n", loss, exp(loss), bpb,
               n, bytes);
    acts_free(&a);
    free(ids);
    textfile_free(&f);
    return 0;
}

/* "-" is standard input, not a file. */
static const char *file_arg(const char *path)
{
    return path && strcmp(path, "-") != 0 ? path : NULL;
}

/* Whether path lies directly in the directory dir (by identity). */
static int inside(const char *path, const char *dir)
{
    char parent[4200];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        parent[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(parent, sizeof parent, ".");
    return guard_same_file(parent, dir);
}

/* No output may be an input or another output (fileguard.h), the training data
 * named by the checkpoint included: the explorer's files, and --report DIR as a
 * whole: it must be new, empty or an earlier report (report.h), none of its
 * files may be an input, and no input may lie inside it. */
static void check_outputs(const InferOptions *o, const char *trained_on)
{
    static const char *const REPORT_FILES[] = {"heads.csv", "heads.json", "summary.json",
                                               "relations.csv", "prune.csv", "index.html",
                                               REPORT_MARKER};
    enum { NREPORT = sizeof REPORT_FILES / sizeof REPORT_FILES[0], NIN = 6 };
    char report[NREPORT][4200], flags[NREPORT][64], dir[4096], heatmaps[4200], err[9000];
    GuardPath paths[NIN + 2 + NREPORT] = {
        {"--ckpt", o->ckpt, 0, NULL}, {"--eval", o->eval, 0, NULL},
        {"--heads", o->heads, 0, NULL}, {"--prompt-file", file_arg(o->prompt_file), 0, NULL},
        {"--text-file", file_arg(o->text_file), 0, NULL},
        {"the training data of --ckpt,", trained_on, 0, NULL},
        {"--explore", o->explore, 1, NULL}, {"--explore-json", o->explore_json, 1, NULL}};
    int n = NIN + 2;
    if (o->report && guard_resolve(o->report, dir, sizeof dir))
        cli_usage_error("--report: the path is too long");
    for (int k = 0; o->report && k < NREPORT; k++) {
        snprintf(report[k], sizeof report[k], "%s/%s", dir, REPORT_FILES[k]);
        snprintf(flags[k], sizeof flags[k], "--report (its %s)", REPORT_FILES[k]);
        paths[n++] = (GuardPath){flags[k], report[k], 1, NULL};
    }
    if (guard_check_paths(paths, n, err, sizeof err))
        cli_usage_error("%s", err);
    if (!o->report)
        return;
    snprintf(heatmaps, sizeof heatmaps, "%s/heatmaps", dir);
    for (int k = 0; k < NIN; k++)
        if (paths[k].path && (inside(paths[k].path, dir) || inside(paths[k].path, heatmaps)))
            cli_usage_error("%s %s is inside --report %s, which the report replaces as a "
                            "whole; keep inputs out of it", paths[k].flag, paths[k].path,
                            o->report);
    if (report_check_dir(o->report, err, sizeof err))
        cli_usage_error("%s", err);
}

int main(int argc, char **argv)
{
    cli_prog = "infer";
    cli_bounded_spin_openmp(argv);
    InferOptions o;
    parse(argc, argv, &o);
    /* A file over `ulimit -f` is a write error (EFBIG) with a message, not a kill. */
    signal(SIGXFSZ, SIG_IGN);
    if (o.threads)
        omp_set_num_threads((int)o.threads);
    Model m;
    Tokenizer tok;
    TrainState ts;
    char err[1500];
    long steps;
    int has_state;
    if (ckpt_load(o.ckpt, &m, &tok, &steps, &ts, &has_state, err, sizeof err))
        cli_fail("%s", err);
    int builtin = !has_state || strcmp(ts.data_path, CORPUS_BUILTIN_NAME) == 0 ||
                  strcmp(ts.data_path, INDUCTION_CORPUS_NAME) == 0;
    check_outputs(&o, builtin ? NULL : ts.data_path);
    if (o.mask)
        o.head_on = parse_mask(o.mask, &m.cfg);
    o.train_state = has_state ? &ts : NULL;
    int rc;
    if (o.eval)
        rc = run_eval(&o, &m, &tok);
    else if (o.heads)
        rc = infer_heads(&o, &m, &tok);
    else if (o.explore && (o.text || o.text_file))
        rc = run_explore_text(&o, &m, &tok);
    else
        rc = infer_sample(&o, &m, &tok);
    free(o.head_on);
    model_free(&m);
    tok_free(&tok);
    return rc;
}
