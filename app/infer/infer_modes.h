/* infer_modes: the options of ./infer and its modes, shared by infer.c (flags,
 * checkpoint loading) and the mode drivers of this folder: infer_sample.c (text
 * generation), infer_eval.c (--eval), infer_heads.c (attention-head analysis)
 * and infer_explore.c (the attention explorer page), with infer_input.c reading
 * their texts. Drivers print and return an exit status; the maths
 * lives in model/. */
#ifndef HEADCOUNT_INFER_MODES_H
#define HEADCOUNT_INFER_MODES_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "app/common/flags.h"
#include "analysis/deps.h"
#include "analysis/heads_route.h"
#include "data/conllu.h"
#include "data/corpus.h"
#include "kernels/bf16.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "trainer/ckpt.h"

/* The most checkpoints one --explore page compares: as many as a repeated
 * flag takes. */
#define INFER_CKPT_MAX FLAG_PATHS_MAX

/* The modes of ./infer: sampling (no mode flag), and the three mode flags. */
enum { MODE_SAMPLE = 1, MODE_EVAL = 2, MODE_HEADS = 4, MODE_EXPLORE = 8 };

/* The groups of --help: the modes, then the flags under each heading. */
typedef enum {
    FSEC_MODES, FSEC_CKPT, FSEC_SAMPLING, FSEC_HEADS, FSEC_EXPLORER, FSEC_SHARED, FSEC_COUNT
} FlagSection;

/* Every flag of ./infer, declared once: X(ID, field, C type, named fields...),
 * the named fields being a Flag's (app/common/flags.h). InferOptions and the
 * flag table come from it (infer.c), and from the table the flag engine's
 * parser with its range checks, mode checks and --help. A line break in .help
 * continues the text on the next line of --help; a help that ends in one puts
 * the default on a line of its own. A flag whose `modes` leaves out sampling
 * is refused there; one with none works in every mode (a sampling option is
 * read by sampling and by --explore on a sample; --seed also places --heads'
 * windows). */
#define INFER_FLAGS(X)                                                                         \
    X(EVAL, eval, const char *, .flag = "eval", .type = FLAG_PATH, .meta = "FILE",             \
      .mode = MODE_EVAL, .section = FSEC_MODES,                                                \
      .help = "score FILE; prints one line: eval loss (nats per token),\n"                     \
              "ppl, bpb (bits per byte), tokens, bytes")                                       \
    X(HEADS, heads, const char *, .flag = "heads", .type = FLAG_PATH, .meta = "FILE",          \
      .mode = MODE_HEADS, .section = FSEC_MODES,                                               \
      .help = "measure what every attention head does on FILE; on\n"                          \
              "FILE.conllu also against its gold dependency trees")                           \
    X(EXPLORE, explore, const char *, .flag = "explore", .type = FLAG_PATH,                    \
      .meta = "OUT.html", .mode = MODE_EXPLORE, .section = FSEC_MODES,                         \
      .help = "write an interactive page of every head's attention on\n"                       \
              "--text or --text-file (their first block-size bytes),\n"                        \
              "or else on the first sample (its last block-size bytes:\n"                      \
              "the context the model ended with)")                                             \
    X(CKPT, ckpt, FlagPaths, .flag = "ckpt", .short_flag = 'c', .type = FLAG_PATHS,             \
      .meta = "CKPT", .many = MODE_EXPLORE, .section = FSEC_CKPT,                              \
      .help = "checkpoint to load (required); with --explore, repeat it\n"                     \
              "to compare up to 16 models on one text, or give a sweep\n"                       \
              "directory of scripts/ablate.sh (docs/explorer.md)")                             \
    X(JSON, json, int, .flag = "json", .type = FLAG_SWITCH, .modes = MODE_EVAL | MODE_HEADS,   \
      .why = " (it prints their result as JSON)", .section = FSEC_CKPT,                        \
      .help = "with --eval: the result as one JSON object (loss, ppl, bpb,\n"                  \
              "tokens, bytes); with --heads: summary.json's object (relations,\n"              \
              "head types, the prune curve) instead of the table")                             \
    X(PROMPT, prompt, const char *, .flag = "prompt", .short_flag = 'p', .type = FLAG_TEXT,    \
      .meta = "TEXT", .section = FSEC_SAMPLING, .help = "text to continue",                    \
      .def_text = "a newline")                                                                 \
    X(PROMPT_FILE, prompt_file, const char *, .flag = "prompt-file", .type = FLAG_PATH,        \
      .meta = "FILE", .section = FSEC_SAMPLING,                                                \
      .help = "read the prompt from FILE ('-': standard input)")                               \
    X(TOKENS, tokens, long, .flag = "tokens", .short_flag = 'n', .type = FLAG_LONG,            \
      .def = 500, .lo = 0, .hi = 10000000, .show_def = 1, .meta = "N",                         \
      .section = FSEC_SAMPLING, .help = "tokens to generate per sample")                       \
    X(TEMPERATURE, temperature, double, .flag = "temperature", .short_flag = 't',              \
      .type = FLAG_REAL, .def = 0.8, .lo = 0, .hi = 100, .show_def = 1, .meta = "X",           \
      .section = FSEC_SAMPLING, .help = "0 = greedy (argmax)")                                 \
    X(TOP_K, top_k, long, .flag = "top-k", .short_flag = 'k', .type = FLAG_LONG, .lo = 0,      \
      .hi = TOK_VOCAB_MAX, .show_def = 1, .meta = "K", .section = FSEC_SAMPLING,               \
      .help = "keep the K most likely tokens, 0 = all")                                        \
    X(TOP_P, top_p, double, .flag = "top-p", .type = FLAG_REAL, .def = 1.0, .lo = 1e-6,        \
      .hi = 1, .show_def = 1, .meta = "P", .section = FSEC_SAMPLING,                           \
      .help = "nucleus: smallest set with probability >= P")                                   \
    X(SEED, seed, uint64_t, .flag = "seed", .short_flag = 's', .type = FLAG_SEED,              \
      .def = 1337, .show_def = 1, .meta = "N", .section = FSEC_SAMPLING,                       \
      .help = "sampling seed")                                                                 \
    X(SAMPLES, samples, long, .flag = "samples", .type = FLAG_LONG, .def = 1, .lo = 1,         \
      .hi = 100000, .show_def = 1, .meta = "N", .section = FSEC_SAMPLING,                      \
      .help = "independent samples, each under a header when N > 1\n")                        \
    X(NO_CACHE, no_cache, int, .flag = "no-cache", .type = FLAG_SWITCH,                        \
      .section = FSEC_SAMPLING, .help = "recompute the whole context per byte (benchmarks)")   \
    X(REPORT, report, const char *, .flag = "report", .type = FLAG_PATH, .meta = "DIR",        \
      .modes = MODE_HEADS, .why = " (it writes the heads report)", .section = FSEC_HEADS,      \
      .help = "write heads.csv, heads.json, SVG heatmaps and index.html\n"                     \
              "into DIR: a new or empty directory, or its own earlier\n"                       \
              "report, which it replaces as a whole")                                          \
    X(WINDOWS, windows, long, .flag = "windows", .type = FLAG_LONG, .lo = 1, .hi = 1000000,    \
      .zero_off = 1, .modes = MODE_HEADS, .meta = "N", .section = FSEC_HEADS,                  \
      .help = "windows of FILE to average over", .def_text = "automatic")                      \
    X(PRUNE_CURVE, prune_curve, int, .flag = "prune-curve", .type = FLAG_SWITCH,               \
      .modes = MODE_HEADS, .section = FSEC_HEADS,                                              \
      .help = "remove heads least important first; print loss vs heads kept")                  \
    X(MEAN_ABLATE, mean_ablate, int, .flag = "mean-ablate", .type = FLAG_SWITCH,               \
      .modes = MODE_HEADS, .section = FSEC_HEADS,                                              \
      .help = "in the ablation per relation, a silenced head outputs its\n"                    \
              "mean over the windows instead of zero (docs/heads.md)")                          \
    X(TEXT, text, const char *, .flag = "text", .type = FLAG_TEXT, .meta = "TEXT",             \
      .modes = MODE_EXPLORE, .section = FSEC_EXPLORER,                                         \
      .help = "the text to explore (its first block-size tokens)")                             \
    X(TEXT_FILE, text_file, const char *, .flag = "text-file", .type = FLAG_PATH,              \
      .meta = "FILE", .modes = MODE_EXPLORE, .section = FSEC_EXPLORER,                         \
      .help = "read it from FILE ('-': standard input)")                                       \
    X(SENTENCE, sentence, const char *, .flag = "sentence", .type = FLAG_TEXT,                 \
      .meta = "N|TEXT", .modes = MODE_EXPLORE, .section = FSEC_EXPLORER, .def_text = "1",      \
      .help = "with a CoNLL-U --text-file (.conllu): the sentence to explore,\n"               \
              "its number (1 the first) or its text (a run of white space is\n"               \
              "one space; case counts unless no sentence matches with it;\n"                  \
              "the first of several); its gold dependencies are marked\n"                     \
              "(docs/explorer.md)")                                                            \
    X(EXPLORE_JSON, explore_json, const char *, .flag = "explore-json", .type = FLAG_PATH,     \
      .meta = "F", .modes = MODE_EXPLORE, .section = FSEC_EXPLORER,                            \
      .help = "also write the attention weights at full precision")                            \
    X(MASK, mask, const char *, .flag = "mask", .type = FLAG_TEXT, .meta = "L.H,...",          \
      .section = FSEC_SHARED,                                                                  \
      .help = "silence these heads (layer.head, 0-based) in every mode")                       \
    X(PRECISION, precision, const char *, .flag = "precision", .type = FLAG_NAME,               \
      .names = precision_names, .meta = "P", .section = FSEC_SHARED,                           \
      .help = "the linear layers' products: fp32 or bf16", .more = BF16_HELP,                  \
      .def_text = "the checkpoint's")                                                          \
    X(THREADS, threads, long, .flag = "threads", .short_flag = 'j', .type = FLAG_LONG,         \
      .lo = 1, .hi = 1024, .zero_off = 1, .meta = "N", .section = FSEC_SHARED,                 \
      .help = "OpenMP threads",                                                                \
      .def_text = "all cores; results are identical")

typedef struct {
#define INFER_FIELD(ID, field, ctype, ...) ctype field;
    INFER_FLAGS(INFER_FIELD)
#undef INFER_FIELD
    long sentence_n; /* --sentence as a number (1 when not given), 0 when it is a text */
    const TrainState *train_state; /* the checkpoint's, NULL without: the rare counts' text */
    unsigned char *head_on; /* [L*H] parsed from --mask, NULL when no mask */
    char *sweep_ckpt[INFER_CKPT_MAX]; /* the checkpoints of --ckpt DIR (infer_sweep.h),
                                       * owned: ckpt's entries point to them */
    int nsweep;
} InferOptions;

/* The size of the built-in text corpus the model trained on, for planted_find;
 * 0 (the default size) when its training state ts is NULL or names another text. */
static inline size_t infer_trained_corpus_bytes(const TrainState *ts)
{
    return ts && corpus_source_of(ts->data_path) == CORPUS_SOURCE_TEXT ? (size_t)ts->data_size
                                                                        : 0;
}

/* Parses argv into o (infer_options.c): the flags, --ckpt's sweep directories
 * expanded for --explore, every rule between flags checked; --help and
 * --version print and exit 0, a usage error exits 2. */
void infer_options_parse(int argc, char **argv, InferOptions *o);
/* The Precision a --precision name (one of precision_names) stands for. */
Precision infer_precision(const char *name);
/* --mask "L.H,L.H" for a model of config c: head_on[L*H] with the listed heads
 * 0 (malloc'd); a bad list is a usage error. */
unsigned char *infer_parse_mask(const char *spec, const Config *c);
/* No output may be an input or another output, the training data named by
 * each checkpoint included (trained_on[k], NULL for none), and --report DIR is
 * checked as a whole (infer_outputs.c); a clash is a usage error. */
void infer_check_outputs(const InferOptions *o, const char *const *trained_on);

/* Reads path into f, or standard input when path is "-"; fails (exit 1) with a
 * message naming flag on error (infer_input.c). */
void infer_read_input(TextFile *f, const char *path, const char *flag);

/* Scores o->eval with the model and prints one line (or JSON with --json):
 * loss in nats per token, perplexity, bits per byte, tokens, bytes; returns the
 * process exit status. */
int infer_eval(const InferOptions *o, const Model *m, const Tokenizer *tok);
/* Writes samples to stdout (with --explore, then the page of the first
 * sample); returns the process exit status. */
int infer_sample(const InferOptions *o, const Model *m, const Tokenizer *tok);
/* The heads report; returns the process exit status. */
int infer_heads(const InferOptions *o, const Model *m, const Tokenizer *tok);

/* --heads on a CoNLL-U file (infer_deps.c): the heads against its gold
 * dependency trees. infer_deps_measure exits with the message on bad input;
 * infer_deps_print prints the table (nothing when not measured). */
typedef struct {
    Conllu c;
    DepsData d;
    DepsResult res;
    int done;
} DepsRun;
void infer_deps_measure(DepsRun *run, const InferOptions *o, const Model *m, const Tokenizer *tok);
void infer_deps_print(const DepsRun *run, const char *path, int H);
void infer_deps_free(DepsRun *run);
/* --heads' routing section for a routed model (infer_route.c); nothing when
 * g->K is 0. planted: the planted relations were measured. */
void infer_route_print(const HeadsRouting *g, int planted);
/* The --heads tables' columns, one line each (name, legend), after indent: what
 * --help lists; each table prints its own under it. */
void infer_heads_legend(FILE *f, const char *indent);
/* The explorer page (and --explore-json) for nbytes of text: the first block
 * of it, or the last when from_end (a sample). source names the text. */
int infer_explore(const InferOptions *o, const Model *m, const Tokenizer *tok,
                  const unsigned char *bytes, size_t nbytes, const char *source, int from_end);
/* The explorer page of one sentence of the CoNLL-U file o->text_file (the
 * o->sentence_n'th, or the first whose text is o->sentence) with its gold
 * dependencies marked (infer_explore.c, infer_gold.c); a text no sentence has
 * is a usage error (exit 2), a bad tree or a sentence over the context fails
 * (exit 1). */
int infer_explore_tree(const InferOptions *o, const Model *m, const Tokenizer *tok);
/* The compare page: the first block of the text through each of the o->ckpt.n
 * models m[k] (tokenised by tok[k], trained as state[k] says, NULL for none). */
int infer_compare(const InferOptions *o, const Model *m, const Tokenizer *tok,
                  const TrainState *const *state, const unsigned char *bytes, size_t nbytes,
                  const char *source);

#endif
