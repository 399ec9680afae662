/* infer_heads: the --heads driver. Reads and encodes the file, sizes the
 * analysis, finds the file's planted relations and the rare relation's counts,
 * asks analysis/heads_measure for every number (windows, probes, statistics,
 * relations, importance, causal passes, prune curve), prints the head table and
 * a summary to stdout and hands the numbers to report.c for --report.
 * docs/heads.md defines every number. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/common/cli.h"
#include "data/corpus.h"
#include "app/infer/infer_modes.h"
#include "analysis/heads_measure.h"
#include "app/common/fileguard.h"
#include "analysis/planted.h"
#include "app/infer/rare_counts.h"
#include "app/report/report.h"
#include "model/gates.h"

/* Windows per run when --windows is not given (fewer if the file is short). */
#define DEFAULT_WINDOWS 64
/* The relation pass reads at most this many consecutive windows (262,144 tokens
 * at T = 64): relations are rare, so it reads the whole of a typical file. */
#define HEADS_REL_WINDOWS 4096
/* The causal passes (minimal pairs, one per silenced head) read the first this
 * many windows of the relation pass (16,384 tokens at T = 64). */
#define HEADS_CAUSAL_WINDOWS 256
/* Activation memory for one batch is kept under this many attention floats. */
#define MAX_ATT_FLOATS ((size_t)64 << 20)

/* What --heads reads besides the model: the file's tokens, the sizes, the
 * windows and probes, what each relation's keys are found from. Filled by
 * prepare and find_sources. */
typedef struct {
    const Model *m;
    const Tokenizer *tok;
    int L, H, n, T, nwin, Bcap;
    HeadsWindows w;             /* the scored windows and the probes */
    const char *probe_rule;     /* which rule of heads_probe_alphabet chose the tokens */
    int say_passes;             /* --windows past what the file holds: a line as each long
                                 * pass begins (the passes over nwin windows) */
    int tty;                    /* stderr is a terminal: progress counts in place */
    int rel_windows;            /* consecutive windows of the relation pass */
    int causal_windows;         /* the first of them, read by every causal pass */
    Planted planted;            /* the built-in corpus' relations, when the file is a piece */
    uint64_t *counts;           /* [V] the rare relation's token counts */
    int rare_training;          /* 1: counted on the training text; 0: on the file */
    char rare_source[2000];     /* which text was counted, and why */
} HeadsInputs;

/* One column of a --heads table and its one-line legend: what the output prints
 * under the table and --help lists (infer_heads_legend); docs/heads.md has the
 * formulas. */
typedef struct {
    const char *name, *legend;
} HeadsColumn;

/* The head table's columns: these, then the metrics with a column
 * (HEADS_METRICS, analysis/heads_metrics.h), then HEAD_COLUMNS_AFTER. */
static const HeadsColumn HEAD_COLUMNS_BEFORE[] = {
    {"head", "layer and head, 0-based: L1H3 is layer 1, head 3"},
    {"role", "the relation it serves with the most attention on the key, else its type"},
    {"(type)", "what it does by its scores (docs/heads.md, Types), when the role differs"},
};
static const HeadsColumn HEAD_COLUMNS_AFTER[] = {
    {"near", "the head with the most similar attention (smallest JSD)"},
    {"gate", "models trained with --head-gates: the learned gate; closed = 0, head off"},
    {"serves", "relations it attends to above the bar and is needed for; - none"},
    {"(attends, not needed: R)", "relations it attends to above the bar, not needed for"},
};
static const HeadsColumn RELATION_COLUMNS[] = {
    {"relation", "the relation (docs/heads.md, Relations)"},
    {"best", "the open head with the most attention on the key; none: no head above uniform"},
    {"attention", "the best head's mean weight on the key"},
    {"uniform", "what a head spreading its weight evenly scores on the key"},
    {"loss", "mean loss on the tokens the relation predicts"},
    {"rows", "query rows that have the relation's key in the window"},
    {"needed", "the head whose silencing alone costs the relation most, and that share"},
    {"loss ratio", "copy, names: loss on the repeat over the loss at the first occurrence"},
};
static const HeadsColumn PAIR_COLUMNS[] = {
    {"accuracy", "share of pairs where the right token's logit beats the wrong one's"},
    {"logit diff", "mean margin of the right token's logit over the wrong one's"},
    {"pairs", "minimal pairs scored"},
    {"needed set", "heads silenced together, largest cost first, until half the margin goes"},
};
static const HeadsColumn COMPROMISE_COLUMNS[] = {
    {"rows", "query rows where both relations have a key, and the keys differ"},
    {"overlap", "sum over heads of min(a, b) / sum of max(a, b), a and b a head's mean "
                "attention on either key: 1 one head (or the same heads) holds both keys, "
                "0 each key has heads of its own"},
    {"best heads", "the head with the most attention on the first key, on the second; "
                   "(one head): the same head"},
};
static const HeadsColumn PRUNE_COLUMNS[] = {
    {"removed", "heads silenced so far, the smallest dloss first"},
    {"kept", "heads still active"},
    {"head", "the head silenced at this step"},
    {"loss", "the loss with those heads silenced"},
    {"vs base", "its change against the base loss"},
};

#define NCOLS(a) (sizeof(a) / sizeof((a)[0]))

/* The head table's columns in order, with the words made for a metric's
 * percentage column. */
typedef struct {
    HeadsColumn c[NCOLS(HEAD_COLUMNS_BEFORE) + 2 * HEADS_METRIC_COUNT + NCOLS(HEAD_COLUMNS_AFTER)];
    size_t n;
    char pct[HEADS_METRIC_COUNT][2][128];
} HeadColumns;

/* A metric's name in the table: its header without the spaces before it. */
static const char *metric_col_name(const HeadsMetricRow *row)
{
    return row->col + strspn(row->col, " ");
}

static void head_columns(HeadColumns *hc)
{
    hc->n = 0;
    for (size_t i = 0; i < NCOLS(HEAD_COLUMNS_BEFORE); i++)
        hc->c[hc->n++] = HEAD_COLUMNS_BEFORE[i];
    for (int m = 0; m < HEADS_METRIC_COUNT; m++) {
        const HeadsMetricRow *row = &heads_metric_table[m];
        if (!row->col)
            continue;
        hc->c[hc->n++] = (HeadsColumn){metric_col_name(row), row->col_legend};
        if (row->pct) {
            snprintf(hc->pct[m][0], sizeof hc->pct[m][0], "%s%%", metric_col_name(row));
            snprintf(hc->pct[m][1], sizeof hc->pct[m][1], "%s as a percentage of the base loss",
                     metric_col_name(row));
            hc->c[hc->n++] = (HeadsColumn){hc->pct[m][0], hc->pct[m][1]};
        }
    }
    for (size_t i = 0; i < NCOLS(HEAD_COLUMNS_AFTER); i++)
        hc->c[hc->n++] = HEAD_COLUMNS_AFTER[i];
}

/* One line per column: indent, the name padded, its legend. */
static void print_legend(FILE *f, const char *indent, const HeadsColumn *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%-11s %s\n", indent, c[i].name, c[i].legend);
}

void infer_heads_legend(FILE *f, const char *indent)
{
    char deeper[64];
    snprintf(deeper, sizeof deeper, "%s  ", indent);
    HeadColumns hc;
    head_columns(&hc);
    fprintf(f, "%sthe head table's columns:\n", indent);
    print_legend(f, deeper, hc.c, hc.n);
    fprintf(f, "%sthe relations table's:\n", indent);
    print_legend(f, deeper, RELATION_COLUMNS, NCOLS(RELATION_COLUMNS));
    fprintf(f, "%sthe minimal pairs' (built-in corpus):\n", indent);
    print_legend(f, deeper, PAIR_COLUMNS, NCOLS(PAIR_COLUMNS));
    fprintf(f, "%sthe prune curve's (--prune-curve):\n", indent);
    print_legend(f, deeper, PRUNE_COLUMNS, NCOLS(PRUNE_COLUMNS));
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        cli_fail("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

/* heads_probe_alphabet's rules, as printed. */
static const char *const PROBE_RULES[] = {
    "", "letters predicted by copy rows", "letters of the text", "bytes of the text but newline",
    "tokens but newline",
};
/* The same rules for a byte-pair vocabulary, whose tokens are not letters. */
static const char *const PROBE_RULES_BPE[] = {
    "", "word tokens predicted by copy rows", "word tokens of the text",
    "tokens of the text without a newline", "tokens of the vocabulary without a newline",
};

/* Progress of the long passes on stderr: counts in place on a terminal, and a
 * line as each pass begins when --windows is past what the file holds. */
static void say_progress(void *ctx, int event, int k, int n)
{
    const HeadsInputs *in = ctx;
    switch (event) {
    case HEADS_EV_ATTENTION:
        if (in->say_passes)
            fprintf(stderr, "infer: heads: attention over %d windows\n", in->nwin);
        break;
    case HEADS_EV_ABLATE_BEGIN:
        if (in->say_passes && !in->tty)
            fprintf(stderr, "infer: heads: ablating head %d/%d over %d windows\n", k + 1, n,
                    in->nwin);
        break;
    case HEADS_EV_ABLATE_DONE:
        if (in->tty)
            fprintf(stderr, "\rinfer: ablating head %d/%d", k + 1, n);
        break;
    case HEADS_EV_SILENCE_DONE:
        if (in->tty)
            fprintf(stderr, "\rinfer: silencing head %d/%d for the relations", k + 1, n);
        break;
    case HEADS_EV_ABLATE_END:
    case HEADS_EV_SILENCE_END:
        if (in->tty)
            fprintf(stderr, "\n");
        break;
    }
}

/* Sorts idx[k] for the head table: the largest delta loss first, ties by head
 * index, so the order never depends on the sort. */
static void sort_heads(int *idx, int k, const HeadStats *st)
{
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0; j--) {
            double dx = st[idx[j - 1]].delta_loss, dy = st[idx[j]].delta_loss;
            if (dx != dy ? !(dx < dy) : idx[j - 1] < idx[j])
                break;
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
}

/* The prune curve (Michel et al. 2019, fig. 3): heads removed least important
 * first, the loss after each. */
static void print_prune(const HeadsInputs *in, const HeadsMeasured *ms)
{
    int k = ms->nprune;
    printf("\nprune curve (heads removed least important first, by delta loss); columns:\n");
    print_legend(stdout, "  ", PRUNE_COLUMNS, NCOLS(PRUNE_COLUMNS));
    printf("  removed  kept  head   loss      vs base\n"
           "  %7d  %4d  %-6s %.4f  %+7.2f%%\n", 0, k, "-", ms->base_loss, 0.0);
    for (int r = 1; r <= k; r++) {
        int q = ms->prune_order[r - 1];
        char name[24];
        snprintf(name, sizeof name, "L%dH%d", q / in->H, q % in->H);
        printf("  %7d  %4d  %-6s %.4f  %+7.2f%%\n", r, k - r, name, ms->prune_loss[r],
               100.0 * (ms->prune_loss[r] / ms->base_loss - 1.0));
    }
}

/* Head s attends to relation q, but silencing it costs the relation too little. */
static int attends_only(const HeadStats *s, int q)
{
    return heads_attends(s, q) && !heads_needed(s, q);
}

static void print_table(const HeadsInputs *in, const HeadsMeasured *ms)
{
    const HeadsSummary *s = &ms->sum;
    int *idx = xcalloc((size_t)in->n, sizeof(int)), k = 0;
    for (int q = 0; q < in->n; q++)
        if (!ms->st[q].masked)
            idx[k++] = q;
    sort_heads(idx, k, ms->st);
    for (int q = 0; q < in->n; q++)
        if (ms->st[q].masked)
            idx[k++] = q;
    const float *log_alpha = in->m->w.log_alpha;
    printf("head    role (type)              ");
    for (int m = 0; m < HEADS_METRIC_COUNT; m++)
        if (heads_metric_table[m].col)
            printf(heads_metric_table[m].pct ? "%s  %s%%" : "%s", heads_metric_table[m].col,
                   metric_col_name(&heads_metric_table[m]));
    printf("   near  %s serves\n", log_alpha ? "  gate " : "");
    for (int r = 0; r < in->n; r++) {
        const HeadStats *h = &ms->st[idx[r]];
        char near[24] = "-";
        if (h->nearest >= 0)
            snprintf(near, sizeof near, "L%dH%d", h->nearest / in->H, h->nearest % in->H);
        char id[24], serves[HEADS_REL_COUNT * 32], attends[HEADS_REL_COUNT * 32];
        snprintf(id, sizeof id, "L%dH%d", idx[r] / in->H, idx[r] % in->H);
        /* The role, with the pattern type beside it when they differ. */
        char role[64];
        if (strcmp(heads_role(h), heads_type_names[h->type]) == 0)
            snprintf(role, sizeof role, "%s", heads_type_names[h->type]);
        else
            snprintf(role, sizeof role, "%s (%s)", heads_role(h), heads_type_names[h->type]);
        char gate[16] = "";
        if (log_alpha) {
            float z = gate_eval(log_alpha[idx[r]], NULL);
            if (z == 0.0f)
                snprintf(gate, sizeof gate, " closed");
            else
                snprintf(gate, sizeof gate, " %6.3f", (double)z);
        }
        printf("%-7s %-24s", id, role);
        for (int m = 0; m < HEADS_METRIC_COUNT; m++) {
            const HeadsMetricRow *row = &heads_metric_table[m];
            if (!row->col)
                continue;
            printf(row->fmt, heads_metric(h, m));
            if (row->pct)
                printf(" %6.2f%%", 100.0 * heads_metric(h, m) / ms->base_loss);
        }
        printf("  %-6s%s %s\n", near, gate,
               *report_serves(serves, sizeof serves, h, "+") ? serves : "-");
        if (*report_rels(attends, sizeof attends, h, "+", attends_only))
            printf("%*s(attends, not needed: %s)\n", 8, "", attends);
    }
    printf("\nsorted by dloss (loss increase when the head alone is silenced); ind/dup on "
           "%d probes of 2x%d random tokens (%s)\n", HEADS_PROBES, in->w.P, in->probe_rule);
    printf("columns (docs/heads.md):\n");
    HeadColumns hc;
    head_columns(&hc);
    for (size_t i = 0; i < hc.n; i++)
        if (log_alpha || strcmp(hc.c[i].name, "gate"))
            print_legend(stdout, "  ", &hc.c[i], 1);
    printf("base loss %.4f over %d windows x %d tokens; %d heads, %d active\n", ms->base_loss,
           in->nwin, in->T, in->n, s->active);
    if (log_alpha)
        printf("head gates (evaluation, docs/heads.md): %d of %d open\n",
               gates_open(log_alpha, (size_t)in->n), in->n);
    printf("types:");
    const char *sep = " ";
    for (int t = 0; t < HEAD_TYPES; t++)
        if (s->type_counts[t]) {
            printf("%s%s %d", sep, heads_type_names[t], s->type_counts[t]);
            sep = ", ";
        }
    printf("\neffective distinct heads %.2f of %d (per layer:", ms->effective, s->active);
    for (int l = 0; l < in->L; l++)
        printf(" %.2f", ms->layer_eff[l]);
    printf("); mean JSD within a layer %.3f, between layers %.3f nats (max ln2 = 0.693)\n",
           s->jsd_within, s->jsd_between);
    printf("mean entropy %.3f, mean distance %.2f; %d heads each cost < 1%% of the loss; "
           "the most important costs %+.4f (%.2f%%)\n", s->mean_entropy, s->mean_distance,
           s->removable_1pct, s->max_importance, 100.0 * s->max_importance / ms->base_loss);
    free(idx);
}

/* "L1H3", or "-" when the relation had no rows. */
static const char *rel_head(char buf[32], int k, int H)
{
    if (k < 0)
        snprintf(buf, 32, "-");
    else
        snprintf(buf, 32, "L%dH%d", k / H, k % H);
    return buf;
}

/* "L1H3 0.42": a head and its cost, or "-". */
static const char *head_cost(char buf[32], int k, int H, double cost)
{
    if (k < 0)
        snprintf(buf, 32, "-");
    else
        snprintf(buf, 32, "L%dH%d %.2f", k / H, k % H, cost);
    return buf;
}

/* The sentences of a text that is not a piece of the corpus that its grammar
 * does not write, the first HEADS_WHY_PRINTED with why (planted_why). */
enum { HEADS_WHY_PRINTED = 5 };
static void print_not_understood(const Planted *p)
{
    if (p->builtin || p->parsed == p->nsentence)
        return;
    printf("  (%zu of the file's sentences are not understood; the first ones, with why:)\n",
           p->nsentence - p->parsed);
    size_t printed = 0;
    for (size_t s = 0; s < p->nsentence && printed < HEADS_WHY_PRINTED; s++) {
        char why[600];
        if (!planted_why(p, s, why, sizeof why))
            continue;
        size_t n;
        const char *text = planted_sentence_text(p, s, &n);
        printf("    \"%.*s%s\": %s\n", n > 80 ? 77 : (int)n, text, n > 80 ? "..." : "", why);
        printed++;
    }
}

/* "L0H2+L3H1 (0.61)", "-" or "L0H2+... (0.31, short)" when the set never
 * reached its share. */
static const char *needed_set_text(char *buf, size_t len, const NeededSet *ns, int H)
{
    if (ns->n == 0)
        return snprintf(buf, len, "-"), buf;
    size_t used = 0;
    for (int i = 0; i < ns->n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%sL%dH%d", i ? "+" : "",
                                 ns->head[i] / H, ns->head[i] % H);
    if (used < len)
        snprintf(buf + used, len - used, " (%.2f%s)", ns->share, ns->reached ? "" : ", short");
    return buf;
}

static void print_relations(const HeadsInputs *in, const HeadsMeasured *ms)
{
    char name[32], need[32], set[NEEDED_SET_MAX * 8 + 32];
    printf("\nrelations (docs/heads.md); columns:\n");
    print_legend(stdout, "  ", RELATION_COLUMNS, NCOLS(RELATION_COLUMNS));
    printf("  relation        best    attention  uniform  loss    rows    needed     \n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *r = &ms->rel[q];
        if (heads_rel_table[q].planted && !planted_known(&in->planted))
            continue;
        int k = ms->needed_head[q];
        printf("  %-15s %-7s %9.3f  %7.3f  %6.3f  %6.0f  %-11s", heads_rel_table[q].name,
               report_best_label(name, r, in->H),
               r->attention, r->uniform, r->loss, r->rows,
               head_cost(need, k, in->H, k >= 0 ? ms->st[k].cost[q] : 0.0));
        if (heads_rel_table[q].repeat)
            printf("  loss ratio %.3f (%.3f vs %.3f nats at the first occurrence, %.0f pairs)",
                   r->loss_ratio, r->pairs > 0 ? r->loss_ratio * r->first_loss : 0.0,
                   r->first_loss, r->pairs);
        printf("\n");
    }
    if (planted_known(&in->planted)) {
        printf("\nminimal pairs (docs/heads.md; chance accuracy 0.5); columns:\n");
        print_legend(stdout, "  ", PAIR_COLUMNS, NCOLS(PAIR_COLUMNS));
        printf("  relation          accuracy  logit diff  pairs   needed set\n");
        for (int q = 0; q < PAIRS_SETS; q++) {
            const PairScore *p = &ms->base.pair[q];
            if (p->pairs == 0)
                continue;
            printf("  %-17s %8.3f  %10.3f  %6.0f   %s\n", pairs_set_name(q), p->accuracy,
                   p->logit_diff, p->pairs,
                   q < HEADS_REL_COUNT ? needed_set_text(set, sizeof set, &ms->needed[q], in->H)
                                       : "-");
        }
        printf("  (");
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (heads_rel_table[q].against)
                printf("%s: against %s; ", heads_rel_table[q].name, heads_rel_table[q].against);
        printf("%s:\n   against a noun of the antecedent's class not in the sentence; %d windows "
               "of %d tokens; heads silenced to %s; %zu contrasts left out: %s)\n",
               pairs_set_name(PAIRS_COREF_CLASS), in->causal_windows, in->T,
               ms->head_mean ? "their mean output" : "zero", in->planted.pairs_skipped,
               report_skipped_why);
    } else {
        printf("  (no minimal pairs: the file is no piece of the built-in corpus and none of "
               "its sentences is one its grammar writes; the generator is what defines them)\n");
    }
    printf("  (rare: token counts of %s)\n", in->rare_source);
    if (in->planted.builtin)
        printf("  (the file is the built-in corpus from byte %zu: the relations from %s on "
               "are its planted ones)\n", in->planted.at, heads_rel_table[HEADS_REL_TEXT].name);
    else if (in->planted.parsed)
        printf("  (%zu of the file's %zu sentences are ones the built-in corpus's grammar "
               "writes: the relations from %s on are planted in those)\n",
               in->planted.parsed, in->planted.nsentence, heads_rel_table[HEADS_REL_TEXT].name);
    print_not_understood(&in->planted);
    printf("  (best = none: no open head attends to the key more than a head spreading its "
           "weight evenly would; - : the relation has no rows)\n");
    if (in->planted.dropped)
        printf("  (%zu planted relations left out: %s)\n", in->planted.dropped,
               report_dropped_why);
    int best = -1;
    for (int k = 0; k < in->n; k++)
        if (!ms->st[k].masked && !ms->st[k].closed &&
            (best < 0 || ms->st[k].induction > ms->st[best].induction))
            best = k;
    printf("induction: probe %.3f (head %s; %d probes of 2x%d %s) | behavioural copy: loss "
           "ratio %.3f\n", best >= 0 ? ms->st[best].induction : 0.0, rel_head(name, best, in->H),
           HEADS_PROBES, in->w.P, in->probe_rule, ms->rel[HEADS_REL_COPY].loss_ratio);
}

/* The compromise measure (analysis/compromise.h): one line per pair of relations
 * sharing rows, then each head's split and weight on those keys. */
static void print_compromise(const HeadsInputs *in, const HeadsMeasured *ms)
{
    const Compromise *c = &ms->compromise;
    if (c->npair == 0)
        return;
    char hq[32], hr[32], pair[64];
    printf("\ncompromise (docs/heads.md): rows that carry the keys of two relations, %d or more "
           "rows a pair; columns:\n", COMPROMISE_MIN_ROWS);
    print_legend(stdout, "  ", COMPROMISE_COLUMNS, NCOLS(COMPROMISE_COLUMNS));
    printf("  %-32s %6s  %7s  %-24s\n", "pair", "rows", "overlap", "best heads (attention)");
    for (int i = 0; i < c->npair; i++) {
        const CompromisePair *p = &c->pair[i];
        snprintf(pair, sizeof pair, "%s + %s", heads_rel_table[p->q].name,
                 heads_rel_table[p->r].name);
        printf("  %-32s %6.0f  %7.3f  %s %.2f, %s %.2f%s\n", pair, p->rows, p->overlap,
               rel_head(hq, p->best_q, in->H), p->best_q >= 0 ? p->att[2 * p->best_q] : 0.0,
               rel_head(hr, p->best_r, in->H), p->best_r >= 0 ? p->att[2 * p->best_r + 1] : 0.0,
               p->best_q >= 0 && p->best_q == p->best_r ? " (one head)" : "");
    }
    printf("  mean overlap %.3f over %d pairs; per head, split (1: divides its weight evenly "
           "between a pair's keys, 0: takes one) and keys (its mean weight on them):\n ",
           c->overlap, c->npair);
    for (int k = 0; k < in->n; k++)
        printf(" L%dH%d %.2f/%.2f", k / in->H, k % in->H, c->split[k], c->keys[k]);
    printf("\n");
}

static HeadsReport fill_report(const InferOptions *o, const HeadsInputs *in,
                               const HeadsMeasured *ms)
{
    return (HeadsReport){
        .ckpt = o->ckpt.path[0], .data = o->heads, .cfg = in->m->cfg, .windows = in->nwin,
        .T = in->T,
        .probes = HEADS_PROBES, .probe_len = 2 * in->w.P, .seed = (unsigned long long)o->seed,
        .st = ms->st, .jsd = ms->jsd, .layer_effective = ms->layer_eff, .sum = ms->sum,
        .effective = ms->effective, .base_loss = ms->base_loss, .delim_share = in->w.delim_share,
        .att_text = ms->att_text, .text = in->w.in, .att_probe = ms->att_probe,
        .probe = in->w.probe, .tok = in->tok, .planted_dropped = in->planted.dropped,
        .prune_order = ms->prune_order, .prune_loss = ms->prune_loss,
        .nprune = ms->nprune, .rel = ms->rel, .builtin = planted_known(&in->planted),
        .corpus_piece = in->planted.builtin, .parsed_sentences = in->planted.parsed,
        .planted = &in->planted,
        .rel_windows = in->rel_windows, .probe_rule = in->probe_rule,
        .rare_training = in->rare_training, .rare_source = in->rare_source,
        .causal = &ms->base, .ablated = ms->ablated, .needed_head = ms->needed_head,
        .needed = ms->needed, .causal_windows = in->causal_windows,
        .mean_ablate = ms->head_mean != NULL,
        .pairs_skipped = in->planted.pairs_skipped,
        .compromise = &ms->compromise,
        .log_alpha = in->m->w.log_alpha,
        .routing = &ms->route,
    };
}

static void write_report(const InferOptions *o, const HeadsReport *r)
{
    char err[3000];
    /* A signal now waits until the report is in place (or cleaned away). */
    GuardSignals saved;
    guard_hold_signals(&saved);
    if (report_write(o->report, r, err, sizeof err))
        cli_fail("--report %s: %s; nothing of this report was written", o->report, err);
    guard_release_signals(&saved);
    fprintf(stderr, "infer: report written to %s/index.html\n", o->report);
}

static void analysis_free(HeadsInputs *in, HeadsMeasured *ms)
{
    heads_windows_free(&in->w);
    free(in->counts);
    planted_free(&in->planted);
    heads_measure_free(ms);
}

/* Reads and encodes FILE and sizes the analysis. */
static TokenId *prepare(HeadsInputs *in, const InferOptions *o, const Model *m,
                        const Tokenizer *tok, size_t *nids)
{
    char err[1500];
    TextFile f;
    if (textfile_read(&f, o->heads, 1, err, sizeof err))
        cli_fail("%s", err);
    if (f.n < 3)
        cli_fail("%s: %zu byte(s); head analysis needs at least 3", o->heads, f.n);
    TokenId *ids = xcalloc(f.n, sizeof *ids);
    long n = tok_encode(tok, f.bytes, f.n, ids, o->heads, err, sizeof err);
    if (n < 0)
        cli_fail("%s", err);
    if (n < 3)
        cli_fail("%s: %zu bytes make %ld token(s); head analysis needs at least 3", o->heads,
                 f.n, n);
    *nids = (size_t)n;
    textfile_free(&f);
    memset(in, 0, sizeof *in);
    in->m = m;
    in->tok = tok;
    in->L = m->cfg.L;
    in->H = m->cfg.H;
    in->n = in->L * in->H;
    in->T = m->cfg.T < (int)(*nids - 1) ? m->cfg.T : (int)(*nids - 1);
    size_t fit = (*nids - 1) / (size_t)in->T;
    in->nwin = o->windows ? (int)o->windows : fit < DEFAULT_WINDOWS ? (int)fit : DEFAULT_WINDOWS;
    in->say_passes = (size_t)in->nwin > (fit > 0 ? fit : 1);
    in->tty = isatty(fileno(stderr));
    size_t per_window = (size_t)in->n * in->T * in->T * 2;
    size_t bcap = MAX_ATT_FLOATS / per_window;
    in->Bcap = bcap < 1 ? 1 : bcap > 16 ? 16 : (int)bcap;
    in->rel_windows = fit < HEADS_REL_WINDOWS ? (int)fit : HEADS_REL_WINDOWS;
    in->causal_windows = in->rel_windows < HEADS_CAUSAL_WINDOWS ? in->rel_windows
                                                                : HEADS_CAUSAL_WINDOWS;
    return ids;
}

/* --heads on a file with few windows still runs, but says the numbers are rough
 * (once the file is known to be usable: read, long enough, and encoded). */
static void note_short_file(const char *path, size_t n, int T)
{
    long long windows = n > 1 ? (long long)(n - 1) / T : 0;
    if (windows < 8)
        fprintf(stderr, "infer: note: %s has %zu byte(s): %s; the head scores will be rough "
                "(8 windows, %lld bytes or more, give steadier ones)\n", path, n,
                windows == 0 ? "shorter than one window of the block size, so windows are cut "
                "short" : windows == 1 ? "one window of the block size"
                : "only a few windows of the block size", 8LL * T + 1);
}

/* The windows and probes, the file's relations to the built-in corpus and the
 * rare relation's counts. */
static void find_sources(HeadsInputs *in, const InferOptions *o, const TokenId *ids, size_t nids)
{
    char err[200];
    if (planted_find(&in->planted, ids, nids, in->tok,
                     infer_trained_corpus_bytes(o->train_state), err, sizeof err))
        cli_fail("%s", err);
    if (heads_windows_spread(&in->w, ids, nids, in->T, in->nwin, in->tok, o->seed, err,
                             sizeof err))
        cli_fail("%s", err);
    in->probe_rule = (in->tok->nmerges ? PROBE_RULES_BPE : PROBE_RULES)[in->w.probe_rule];
    in->counts = xcalloc((size_t)in->tok->V, sizeof *in->counts);
    in->rare_training = rare_counts_load(in->counts, o->train_state, in->tok, ids, nids,
                                        in->rare_source, sizeof in->rare_source);
}

int infer_heads(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    char err[1500];
    HeadsInputs in;
    HeadsMeasured ms;
    size_t nids;
    TokenId *ids = prepare(&in, o, m, tok, &nids);
    note_short_file(o->heads, nids, m->cfg.T);
    find_sources(&in, o, ids, nids);
    fprintf(stderr, "infer: heads of %s (L=%d H=%d) on %s: %d windows x %d tokens (seed %llu, "
            "%zu tokens in file), %d probes of 2x%d%s%s\n", o->ckpt.path[0], in.L, in.H, o->heads,
            in.nwin, in.T, (unsigned long long)o->seed, nids, HEADS_PROBES, in.w.P,
            o->mask ? ", mask " : "", o->mask ? o->mask : "");
    if (in.say_passes)
        fprintf(stderr, "infer: note: --windows %d is more than the %zu windows of %d tokens "
                "%s holds, so they overlap (each token is read about %.0f times) and the "
                "passes over them take that much longer; each says when it begins\n", in.nwin,
                (nids - 1) / (size_t)in.T, in.T, o->heads,
                (double)in.nwin * in.T / (double)(nids - 1));
    Activations a;
    if (acts_init(&a, &m->cfg, in.Bcap, in.T, 0, err, sizeof err) ||
        heads_measure_init(&ms, in.L, in.H, in.T, 2 * in.w.P, err, sizeof err))
        cli_fail("%s", err);
    HeadsMeasureIn hm = {
        .what = HEADS_ROWS | HEADS_PROBE | HEADS_RELATIONS | HEADS_IMPORTANCE | HEADS_GATE_GRAD |
                (o->mean_ablate ? HEADS_MEAN_ABLATE : 0) | HEADS_CAUSAL | HEADS_NEEDED |
                HEADS_DERIVE | (o->prune_curve ? HEADS_PRUNE : 0) | HEADS_ROUTING,
        .m = m, .tok = tok, .head_on = o->head_on, .w = &in.w,
        .ids = ids, .nids = nids, .text_T = in.T, .rel_windows = in.rel_windows,
        .causal_windows = in.causal_windows, .planted = &in.planted, .counts = in.counts,
        .progress = say_progress, .ctx = &in,
    };
    if (heads_measure(&ms, &hm, &a, err, sizeof err))
        cli_fail("%s", err);
    DepsRun deps = {0}; /* a CoNLL-U file: heads against its gold trees too */
    if (conllu_is_path(o->heads))
        infer_deps_measure(&deps, o, m, tok);
    if (!o->json) {
        print_table(&in, &ms);
        print_relations(&in, &ms);
        print_compromise(&in, &ms);
        infer_route_print(&ms.route, planted_known(&in.planted));
        infer_deps_print(&deps, o->heads, in.H);
    }
    if (o->prune_curve && !o->json)
        print_prune(&in, &ms);
    HeadsReport r = fill_report(o, &in, &ms);
    r.deps = deps.done ? &deps.res : NULL;
    if (o->json)
        report_summary_json(stdout, &r);
    if (o->report)
        write_report(o, &r);
    acts_free(&a);
    analysis_free(&in, &ms);
    infer_deps_free(&deps);
    free(ids);
    return 0;
}
