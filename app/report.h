/* report: writes the files of `./infer --heads FILE --report DIR`: heads.csv
 * and heads.json (one record per head, every metric), summary.json (the
 * model-level numbers the ablation scripts read, and the relations),
 * relations.csv, tokens.csv (the heatmaps' tokens, labelled by tok_label), one
 * SVG heatmap per head for a text window and for a probe, prune.csv (with
 * --prune-curve) and index.html, a self-contained page tying them together. Program-side: it writes files but
 * never prints or exits; errors come back as -1 with a message naming the
 * file. The numbers themselves come from model/heads. */
#ifndef HEADCOUNT_REPORT_H
#define HEADCOUNT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "data/tokenizer.h"
#include "model/config.h"
#include "analysis/heads.h"

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
    /* relations (docs/heads.md, "Relations"): rel[HEADS_REL_COUNT], the last two
     * only when builtin is set; measured on rel_windows consecutive windows */
    const HeadsRelation *rel;
    int builtin, rel_windows;
    size_t planted_dropped;     /* planted relations whose key and query share a token */
    const char *probe_rule;     /* which bytes the probes were drawn from */
} HeadsReport;

/* Creates dir and dir/heatmaps if missing (dir's parent must exist); called
 * before the analysis so a bad --report fails at once. */
int report_prepare(const char *dir, char *err, size_t errlen);

/* summary.json's object on one line (with its newline) to f: what
 * `./infer --heads FILE --json` prints and the report writes as summary.json. */
void report_summary_json(FILE *f, const HeadsReport *r);

/* Creates dir if missing (as report_prepare) and writes every file into it. */
int report_write(const char *dir, const HeadsReport *r, char *err, size_t errlen);

#endif
