/* report: writes the files of `./infer --heads FILE --report DIR`: heads.csv
 * and heads.json (one record per head, every metric), summary.json (the
 * model-level numbers the ablation scripts read, and the relations),
 * relations.csv, ablation.csv (each head's effect on each relation when
 * silenced), tokens.csv (the heatmaps' tokens, labelled by tok_label), one SVG heatmap per head for a text window and for a probe, prune.csv (with
 * --prune-curve) and index.html, a self-contained page tying them together, and
 * the marker that makes the directory the report's own. Program-side: it writes files but
 * never prints or exits; errors come back as -1 with a message naming the
 * file. The numbers themselves come from analysis/heads. Defined in report.c
 * (the data files, summary.json), report_page.c (the heatmaps, index.html),
 * report_dir.c (report_check_dir, report_write) and report_files.c (the
 * labels and relation lists below, which --heads prints too). */
#ifndef HEADCOUNT_REPORT_H
#define HEADCOUNT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "data/tokenizer.h"
#include "model/config.h"
#include "analysis/compromise.h"
#include "analysis/deps.h"
#include "analysis/heads.h"
#include "analysis/heads_route.h"
#include "analysis/pairs.h"
#include "analysis/planted.h"

typedef struct {
    const char *ckpt, *data;    /* names shown on the page */
    Config cfg;
    int windows, T;             /* text windows analysed, tokens per window */
    int probes, probe_len;      /* repeated random probes, tokens per probe */
    unsigned long long seed;
    const HeadStats *st;        /* [L*H] */
    const double *jsd;          /* [L*H][L*H] mean JSD per row, nats */
    const double *layer_effective; /* [L] */
    HeadsSummary sum;
    double effective, base_loss, delim_share;
    /* heatmaps: the first text window and the first probe */
    const float *att_text;      /* [L*H][T][T] */
    const int *text;            /* [T] token ids */
    const float *att_probe;     /* [L*H][probe_len][probe_len] */
    const int *probe;           /* [probe_len] token ids */
    const Tokenizer *tok;       /* labels the tokens (tok_label) */
    /* --prune-curve: loss after removing order[0..k) for k = 0..nprune */
    const int *prune_order;     /* NULL when not computed */
    const double *prune_loss;   /* [nprune + 1] */
    int nprune;
    /* relations (docs/heads.md, "Relations"): rel[HEADS_REL_COUNT], the planted
     * ones only when builtin is set (the text is a piece of the built-in corpus
     * or holds sentences its grammar parses: planted_known); measured on
     * rel_windows consecutive windows */
    const HeadsRelation *rel;
    int builtin, rel_windows;
    size_t planted_dropped;     /* planted relations whose key and query share a token */
    int corpus_piece;           /* the text is a piece of the built-in corpus */
    size_t parsed_sentences;    /* else: its sentences the corpus's grammar parsed */
    const Planted *planted;     /* else: the text's sentences, and why one is not
                                 * understood (summary.json's "not_understood");
                                 * NULL: none */
    int rare_training;          /* the rare counts are the training text's (else the file's) */
    const char *rare_source;    /* which text was counted, and why, as one line */
    const char *probe_rule;     /* which bytes the probes were drawn from */
    /* minimal pairs and head ablation per relation (analysis/pairs.h), measured on
     * the first causal_windows of the relation windows */
    const CausalScore *causal;          /* heads as given */
    const CausalScore *ablated;         /* [L*H]: head k silenced too (masked: zero) */
    const int *needed_head;             /* [HEADS_REL_COUNT], -1: none */
    const NeededSet *needed;            /* [HEADS_REL_COUNT] */
    int causal_windows;
    int mean_ablate;                    /* silenced heads output their mean, not zero */
    size_t pairs_skipped;
    const Compromise *compromise; /* how heads divide their weight among the keys of
                                     rows that carry two relations; NULL: not measured */
    const float *log_alpha;     /* [L*H]: the head gates' log_alpha (model/gates.h), whose
                                   evaluation gate each head's record carries; NULL in a
                                   model without gates */
    const DepsResult *deps;     /* a CoNLL-U file's gold dependencies (analysis/deps.h);
                                   NULL for any other file */
    const HeadsRouting *routing; /* a routed model's routing (analysis/heads_route.h,
                                    K > 0); NULL or K = 0: not routed, nothing written */
} HeadsReport;

/* The file that marks a directory as a report of ours, and its text. A report
 * is written only where there is nothing, into an empty directory, or over an
 * earlier report: a directory holding this marker and no file a report does
 * not write. */
#define REPORT_MARKER ".headcount-report"
#define REPORT_MARKER_TEXT "headcount heads report: ./infer --report replaces this " \
                           "directory as a whole\n"

/* 0 when a report may be written at dir (see REPORT_MARKER), else -1 naming the
 * files in the way; called before the analysis so a bad --report fails at once. */
int report_check_dir(const char *dir, char *err, size_t errlen);

/* A test of head s against relation q: heads_attends, heads_needed, heads_serves. */
typedef int (*HeadRelTest)(const HeadStats *s, int q);

/* The relations q with test(s, q), their names joined by sep, into buf; "" when
 * none. */
const char *report_rels(char *buf, size_t len, const HeadStats *s, const char *sep,
                        HeadRelTest test);
/* The same as a JSON array: ["bracket",...]. */
void report_rels_json(FILE *f, const HeadStats *s, HeadRelTest test);
/* The relations head s serves (attends and is needed): report_rels with heads_serves. */
const char *report_serves(char *buf, size_t len, const HeadStats *s, const char *sep);
void report_serves_json(FILE *f, const HeadStats *s);

/* ,"accuracy":..,"logit_diff":..,"pairs":n of one minimal-pair score, each key
 * with the prefix pre ("class_" for coreference's second contrast), the
 * numbers with ten significant digits: summary.json's and the explorer's. */
void report_pair_score_json(FILE *f, const char *pre, const PairScore *p);
/* Why rows are left out, in the words the table and the page both print after
 * the count: planted relations (HeadsReport.planted_dropped) and minimal-pair
 * contrasts (pairs_skipped). */
extern const char report_dropped_why[];
extern const char report_skipped_why[];
/* A relation's best head as the reports print it (heads_relation_named): "L1H3",
 * "none" when no head attends to the key above the uniform head, "-" when the
 * relation has no rows. */
const char *report_best_label(char buf[32], const HeadsRelation *x, int H);
/* "attends":[..],"needed":[..],"serves":[..] (with a leading comma) and, when
 * the cost was measured, "cost":{relation: share,...}: one head's relations. */
void report_head_relations_json(FILE *f, const HeadStats *s);

/* summary.json's object on one line (with its newline) to f: what
 * `./infer --heads FILE --json` prints and the report writes as summary.json. */
void report_summary_json(FILE *f, const HeadsReport *r);

/* The data files into dir (report.c): heads.csv, heads.json, summary.json,
 * tokens.csv, and where measured prune.csv, relations.csv and ablation.csv;
 * -1 with the file in the message. report_write calls it. */
int report_write_data(const char *dir, const HeadsReport *r, char *err, size_t errlen);

/* Writes every file into a fresh directory beside dir (DIR.tmp.XXXXXX), then
 * puts it in place of dir (which report_check_dir allows): nothing of the new
 * report is left behind on failure, and an earlier report is replaced whole. */
int report_write(const char *dir, const HeadsReport *r, char *err, size_t errlen);

#endif
