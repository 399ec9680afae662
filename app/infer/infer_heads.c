/* infer_heads: the --heads driver. Picks the text windows and probes, runs the
 * passes analysis/heads needs (statistics, JSD, one ablation per head, the gate
 * gradient, the optional prune curve), prints the head table and a summary to
 * stdout and hands the numbers to report.c for --report. docs/heads.md defines
 * every number; the maths is in analysis/heads.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/common/cli.h"
#include "data/corpus.h"
#include "app/infer/infer_modes.h"
#include "analysis/compromise.h"
#include "analysis/heads.h"
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

/* What the analysis reads: the model, the windows and probes it runs, and what
 * each relation's keys are found from. Filled by prepare, choose_windows and
 * find_sources; read-only for the passes. */
typedef struct {
    const Model *m;
    const Tokenizer *tok;
    int L, H, n, T, nwin, Bcap, P;
    size_t *start;              /* [nwin] first token of each window */
    int *in, *tg, *match;       /* [nwin][T] */
    unsigned char *delim;       /* [nwin][T] */
    double delim_share;         /* share of delimiter keys in the scored rows */
    int *probe;                 /* [HEADS_PROBES][2P] */
    const char *probe_rule;     /* which rule of heads_probe_alphabet chose the tokens */
    int say_passes;             /* --windows past what the file holds: a line as each long
                                 * pass begins (the passes over nwin windows) */
    int rel_windows;            /* consecutive windows of the relation pass */
    int causal_windows;         /* the first of them, read by every causal pass */
    float *head_mean;           /* --mean-ablate: [n][D] each head's mean output; else NULL */
    Planted planted;            /* the built-in corpus' relations, when the file is a piece */
    uint64_t *counts;           /* [V] the rare relation's token counts */
    int rare_training;          /* 1: counted on the training text; 0: on the file */
    char rare_source[2000];     /* which text was counted, and why */
} HeadsInputs;

/* What the passes measure. */
typedef struct {
    HeadStats *st;              /* [n]: the row, probe, relation and importance fields */
    double *jsd;                /* [n][n] mean JSD per scored row */
    RelationSums rsums[HEADS_REL_COUNT];
    CompromiseSums csums;       /* the relation pass's rows that carry two relations' keys */
    double base_loss;
    float *att_text, *att_probe; /* heatmaps: [n][T][T], [n][2P][2P] */
    CausalScore base;           /* minimal pairs and relation losses, heads as given */
    CausalScore *ablated;       /* [n]: the same with head k silenced too */
} HeadsMeasures;

/* What the printer and report.c show besides the measurements: st's derived
 * fields (redundancy, type) are filled in place by derive_outputs. */
typedef struct {
    double *layer_eff;          /* [L] */
    double effective;
    HeadsRelation rel[HEADS_REL_COUNT];
    HeadsSummary sum;
    int needed_head[HEADS_REL_COUNT]; /* the head whose silencing costs most; -1: none */
    NeededSet needed[HEADS_REL_COUNT];
    Compromise compromise;      /* how the heads divide their weight among shared rows' keys */
    int *prune_order;           /* --prune-curve; NULL without */
    double *prune_loss;
    int nprune;
} HeadsOutputs;

/* One column of a --heads table and its one-line legend: what the output prints
 * under the table and --help lists (infer_heads_legend); docs/heads.md has the
 * formulas. */
typedef struct {
    const char *name, *legend;
} HeadsColumn;

static const HeadsColumn HEAD_COLUMNS[] = {
    {"head", "layer and head, 0-based: L1H3 is layer 1, head 3"},
    {"role", "the relation it serves with the most attention on the key, else its type"},
    {"(type)", "what it does by its scores (docs/heads.md, Types), when the role differs"},
    {"entropy", "mean normalised entropy of a row: 0 = one key, 1 = uniform"},
    {"conf", "mean largest weight of a row"},
    {"dist", "mean distance to the attended tokens, in positions"},
    {"prev", "mean weight on the previous token"},
    {"self", "mean weight on the token itself"},
    {"first", "mean weight on the first token of the window"},
    {"delim", "mean weight on whitespace and punctuation keys"},
    {"ind", "induction score on the probes: weight on the token after the earlier copy"},
    {"dup", "duplicate score on the probes: weight on the earlier copy itself"},
    {"dloss", "loss rise when this head alone is silenced (the table's order)"},
    {"dloss%", "dloss as a percentage of the base loss"},
    {"grad", "gate gradient |dL/dgate| (Michel et al. 2019), averaged over windows"},
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
    fprintf(f, "%sthe head table's columns:\n", indent);
    print_legend(f, deeper, HEAD_COLUMNS, NCOLS(HEAD_COLUMNS));
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

/* One pass over nwin consecutive windows of T tokens from the start of the file
 * with the heads in head_on active: every relation's keys, the heads'
 * attention on them into sums (may be NULL: a scratch is used), the rows and
 * loss into rsums, the minimal pairs' scores into ps and, when cs is not NULL,
 * the rows that carry two relations' keys into cs. */
static void relation_pass(HeadSums *sums, RelationSums *rsums, PairSums *ps, CompromiseSums *cs,
                          const HeadsInputs *in, Activations *a, const TokenId *ids, int nwin,
                          const unsigned char *head_on)
{
    int T = in->T;
    size_t NB = (size_t)in->Bcap * T;
    HeadSums *scratch = sums ? NULL : xcalloc((size_t)in->n, sizeof *scratch);
    if (!sums)
        sums = scratch;
    int *x = xcalloc(NB, sizeof(int)), *tg = xcalloc(NB, sizeof(int));
    int *key[HEADS_REL_COUNT], *first[HEADS_REL_COUNT];   /* [Bcap][T] each, -1: none */
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        key[q] = xcalloc(NB, sizeof(int));
        first[q] = xcalloc(NB, sizeof(int));
        memset(first[q], 0xff, NB * sizeof(int)); /* -1: no first occurrence */
    }
    PassOptions po = {.head_on = head_on, .head_mean = in->head_mean};
    size_t next = 0, next_pair = 0;
    for (int w0 = 0; w0 < nwin; w0 += in->Bcap) {
        int B = nwin - w0 < in->Bcap ? nwin - w0 : in->Bcap;
        for (size_t i = 0; i < (size_t)B * T; i++) {
            size_t pos = (size_t)w0 * T + i;
            x[i] = ids[pos];
            tg[i] = ids[pos + 1];
        }
        gpt_forward(in->m, a, x, tg, B, T, &po);
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            heads_keys_find(key[q], first[q], q, x, in->tok, B, T);
        planted_keys(key, first, &in->planted, (size_t)w0 * T, B, T, &next);
        if (cs)
            compromise_add(cs, a, key, B, T);
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (heads_rel_table[q].key != HEADS_KEY_RARE)
                heads_add_relation(sums, &rsums[q], q, a, key[q], first[q], a->losses, B, T);
        if (heads_add_rare(sums, &rsums[HEADS_REL_RARE], a, x, tg, in->counts, a->losses, B, T))
            cli_fail("out of memory for the rare relation");
        pairs_add(ps, a, in->planted.pair, in->planted.npair, (size_t)w0 * T, B, T, &next_pair);
    }
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        free(key[q]);
        free(first[q]);
    }
    free(scratch);
    free(x);
    free(tg);
}

/* The relation pass: every relation's keys over in->rel_windows windows, and the
 * attention and loss sums; fills ms->rsums and every head's rel[]. */
static void measure_relations(HeadsMeasures *ms, const HeadsInputs *in, Activations *a,
                              const TokenId *ids, const unsigned char *head_on)
{
    HeadSums *sums = xcalloc((size_t)in->n, sizeof *sums);
    HeadStats *st = xcalloc((size_t)in->n, sizeof *st);
    PairSums ps[PAIRS_SETS] = {{0}};
    relation_pass(sums, ms->rsums, ps, &ms->csums, in, a, ids, in->rel_windows, head_on);
    heads_finish(st, sums, in->n);
    for (int k = 0; k < in->n; k++)
        memcpy(ms->st[k].rel, st[k].rel, sizeof st[k].rel);
    free(sums);
    free(st);
}

/* The causal pass's scores with the heads in head_on active: every pair set's
 * and every relation's loss on its tokens, over in->causal_windows windows. */
static void causal_score(CausalScore *cs, const HeadsInputs *in, Activations *a,
                         const TokenId *ids, const unsigned char *head_on)
{
    RelationSums rs[HEADS_REL_COUNT] = {{0}};
    PairSums ps[PAIRS_SETS] = {{0}};
    relation_pass(NULL, rs, ps, NULL, in, a, ids, in->causal_windows, head_on);
    for (int s = 0; s < PAIRS_SETS; s++)
        pairs_finish(&cs->pair[s], &ps[s]);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        cs->rel_loss[q] = rs[q].loss_rows > 0 ? rs[q].loss / rs[q].loss_rows : 0.0;
}

/* The cost for relation q of the ablated scores x against the base. */
static double causal_cost(const CausalScore *base, const CausalScore *x, int q)
{
    return pairs_cost(&base->pair[q], &x->pair[q], base->rel_loss[q], x->rel_loss[q]);
}

/* The needed set of relation q (docs/heads.md, "Needed heads"): the active
 * heads in order of their own cost (largest first, ties by index), silenced
 * together one more at a time until the set takes away HEADS_NEEDED_SET_SHARE of
 * the logit difference, at most NEEDED_SET_MAX heads. */
static void needed_set(HeadsOutputs *out, const HeadsMeasures *ms, const HeadsInputs *in,
                       Activations *a, const TokenId *ids, const unsigned char *head_on, int q)
{
    int *order = xcalloc((size_t)in->n, sizeof(int)), k = 0;
    for (int h = 0; h < in->n; h++)
        if (!ms->st[h].masked && !ms->st[h].closed && ms->st[h].cost[q] > 0)
            order[k++] = h;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && ms->st[order[j]].cost[q] > ms->st[order[j - 1]].cost[q]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    unsigned char *on = xcalloc((size_t)in->n, 1);
    for (int h = 0; h < in->n; h++)
        on[h] = !head_on || head_on[h];
    NeededSet *ns = &out->needed[q];
    for (int i = 0; i < k && i < NEEDED_SET_MAX; i++) {
        on[order[i]] = 0;
        ns->head[ns->n++] = order[i];
        CausalScore x;
        causal_score(&x, in, a, ids, on);
        ns->share = causal_cost(&ms->base, &x, q);
        if (ns->share >= HEADS_NEEDED_SET_SHARE) {
            ns->reached = 1;
            break;
        }
    }
    free(on);
    free(order);
}

/* --mean-ablate: every head's output averaged over the causal windows' positions,
 * all heads on, into in->head_mean[n][D] (sums in window order). */
static void measure_head_means(HeadsInputs *in, Activations *a, const TokenId *ids)
{
    int T = in->T, H = in->H, D = in->m->cfg.D, A = H * D;
    double *sum = xcalloc((size_t)in->n * D, sizeof(double));
    int *x = xcalloc((size_t)in->Bcap * T, sizeof(int));
    size_t rows = 0;
    for (int w0 = 0; w0 < in->causal_windows; w0 += in->Bcap) {
        int B = in->causal_windows - w0 < in->Bcap ? in->causal_windows - w0 : in->Bcap;
        for (size_t i = 0; i < (size_t)B * T; i++)
            x[i] = ids[(size_t)w0 * T + i];
        gpt_forward(in->m, a, x, NULL, B, T, NULL);
        for (int l = 0; l < in->L; l++)
            for (size_t r = 0; r < (size_t)B * T; r++) {
                const float *y = a->atty + (size_t)l * a->N * a->A + r * A;
                for (int j = 0; j < A; j++)
                    sum[(size_t)l * A + j] += y[j];
            }
        rows += (size_t)B * T;
    }
    in->head_mean = xcalloc((size_t)in->n * D, sizeof(float));
    for (size_t i = 0; i < (size_t)in->n * D; i++)
        in->head_mean[i] = (float)(sum[i] / (double)rows);
    free(sum);
    free(x);
}

/* Minimal pairs and head ablation per relation: the intact model's scores, each
 * head silenced alone (every head's cost[]), each relation's needed head, and
 * for the relations with pairs the needed set. */
static void measure_causal(HeadsMeasures *ms, HeadsOutputs *out, const HeadsInputs *in,
                           Activations *a, const TokenId *ids, const unsigned char *head_on)
{
    int tty = isatty(fileno(stderr));
    causal_score(&ms->base, in, a, ids, head_on);
    unsigned char *on = xcalloc((size_t)in->n, 1);
    for (int k = 0; k < in->n; k++) {
        HeadStats *s = &ms->st[k];
        if (s->masked)
            continue;
        for (int h = 0; h < in->n; h++)
            on[h] = (!head_on || head_on[h]) && h != k;
        causal_score(&ms->ablated[k], in, a, ids, on);
        s->costed = 1;
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            s->cost[q] = causal_cost(&ms->base, &ms->ablated[k], q);
        if (tty)
            fprintf(stderr, "\rinfer: silencing head %d/%d for the relations", k + 1, in->n);
    }
    if (tty)
        fprintf(stderr, "\n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        out->needed_head[q] = -1;
        for (int k = 0; k < in->n; k++)
            if (!ms->st[k].masked && !ms->st[k].closed && ms->st[k].cost[q] > 0 &&
                (out->needed_head[q] < 0 || ms->st[k].cost[q] > ms->st[out->needed_head[q]].cost[q]))
                out->needed_head[q] = k;
        if (ms->base.pair[q].pairs > 0 && ms->base.pair[q].logit_diff > 0)
            needed_set(out, ms, in, a, ids, head_on, q);
    }
    free(on);
}

/* Window k starts uniformly at random inside the k-th of nwin equal strata of
 * the possible starts: evenly spread over the file, deterministic in the seed. */
static void choose_windows(HeadsInputs *in, const TokenId *ids, size_t nids,
                           const Tokenizer *tok, uint64_t seed)
{
    Rng rng;
    rng_init(&rng, seed, RNG_STREAM_HEADS);
    uint64_t S = nids - (size_t)in->T, N = (uint64_t)in->nwin;
    for (int k = 0; k < in->nwin; k++) {
        uint64_t lo = (uint64_t)k * S / N, hi = (uint64_t)(k + 1) * S / N;
        size_t s = (size_t)(hi > lo ? lo + rng_below(&rng, hi - lo) : lo);
        in->start[k] = s;
        for (int t = 0; t < in->T; t++) {
            size_t i = (size_t)k * in->T + t;
            in->in[i] = ids[s + t];
            in->tg[i] = ids[s + t + 1];
            in->delim[i] = (unsigned char)heads_token_is_delim(tok, ids[s + t]);
        }
    }
    heads_repeat_targets(in->match, in->in, in->nwin, in->T);
    size_t NT = (size_t)in->nwin * in->T;
    int *copy_key = xcalloc(NT, sizeof(int)), *copy_first = xcalloc(NT, sizeof(int));
    heads_keys_copy(copy_key, copy_first, in->in, in->nwin, in->T);
    double share = 0.0, rows = 0.0;
    for (int k = 0; k < in->nwin; k++) {
        double r;
        share += heads_delim_share(in->delim + (size_t)k * in->T, in->T, &r);
        rows += r;
    }
    in->delim_share = share / rows;
    /* The probes get their own generator, so they do not change with --windows. */
    int *alpha = xcalloc((size_t)tok->V, sizeof(int)), *pool = xcalloc((size_t)tok->V, sizeof(int));
    int rule, na = heads_probe_alphabet(alpha, &rule, in->in, copy_key, in->nwin, in->T, tok);
    free(copy_key);
    free(copy_first);
    in->probe_rule = (tok->nmerges ? PROBE_RULES_BPE : PROBE_RULES)[rule];
    Rng prng;
    rng_init(&prng, rng_hash(seed, RNG_STREAM_HEADS, 1), RNG_STREAM_HEADS);
    in->P = in->T / 2 < na ? in->T / 2 : na;
    for (int p = 0; p < HEADS_PROBES; p++)
        heads_probe_build(in->probe + (size_t)p * 2 * in->P, in->T, alpha, na, pool, &prng);
    free(alpha);
    free(pool);
}

/* Copies every head's attention for batch row 0 into dst[n][T][T]. */
static void keep_heatmaps(float *dst, const Activations *a, int n, int H, int T)
{
    for (int k = 0; k < n; k++)
        memcpy(dst + (size_t)k * T * T, heads_att(a, k / H, 0, k % H, T),
               (size_t)T * T * sizeof(float));
}

/* The statistics passes: text windows (rows, JSD), then the probes. */
static void measure_attention(HeadsMeasures *ms, const HeadsInputs *in, Activations *a,
                              const unsigned char *head_on)
{
    char err[512];
    HeadSums *sums = xcalloc((size_t)in->n, sizeof *sums);
    PassOptions po = {.head_on = head_on};
    int T = in->T;
    if (in->say_passes)
        fprintf(stderr, "infer: heads: attention over %d windows\n", in->nwin);
    for (int w0 = 0; w0 < in->nwin; w0 += in->Bcap) {
        int B = in->nwin - w0 < in->Bcap ? in->nwin - w0 : in->Bcap;
        size_t off = (size_t)w0 * T;
        gpt_forward(in->m, a, in->in + off, NULL, B, T, &po);
        heads_add_rows(sums, a, in->delim + off, in->match + off, B, T);
        if (heads_add_jsd(ms->jsd, a, B, T, err, sizeof err))
            cli_fail("%s", err);
        if (w0 == 0)
            keep_heatmaps(ms->att_text, a, in->n, in->H, T);
    }
    int Tp = 2 * in->P;
    for (int p0 = 0; p0 < HEADS_PROBES; p0 += in->Bcap) {
        int B = HEADS_PROBES - p0 < in->Bcap ? HEADS_PROBES - p0 : in->Bcap;
        gpt_forward(in->m, a, in->probe + (size_t)p0 * Tp, NULL, B, Tp, &po);
        heads_add_probe(sums, a, B, in->P);
        if (p0 == 0)
            keep_heatmaps(ms->att_probe, a, in->n, in->H, Tp);
    }
    heads_finish(ms->st, sums, in->n);
    double rows = sums[0].rows;
    for (size_t i = 0; i < (size_t)in->n * in->n; i++)
        ms->jsd[i] /= rows;
    free(sums);
}

/* Ablation of each head in turn, and the gate gradient. */
static void measure_importance(HeadsMeasures *ms, const HeadsInputs *in, Activations *a,
                               const unsigned char *head_on)
{
    char err[512];
    unsigned char *on = xcalloc((size_t)in->n, 1);
    int tty = isatty(fileno(stderr));
    const float *log_alpha = in->m->w.log_alpha;
    for (int k = 0; k < in->n; k++) {
        ms->st[k].masked = head_on && !head_on[k];
        ms->st[k].closed = log_alpha && gate_eval(log_alpha[k], NULL) == 0.0f;
    }
    ms->base_loss = heads_loss(in->m, a, in->in, in->tg, in->nwin, in->T, head_on);
    for (int k = 0; k < in->n; k++) {
        if (ms->st[k].masked)
            continue;
        if (in->say_passes && !tty)
            fprintf(stderr, "infer: heads: ablating head %d/%d over %d windows\n", k + 1, in->n,
                    in->nwin);
        for (int q = 0; q < in->n; q++)
            on[q] = !ms->st[q].masked && q != k;
        ms->st[k].delta_loss = heads_loss(in->m, a, in->in, in->tg, in->nwin, in->T, on) -
                               ms->base_loss;
        if (tty)
            fprintf(stderr, "\rinfer: ablating head %d/%d", k + 1, in->n);
    }
    if (tty)
        fprintf(stderr, "\n");
    double *g = xcalloc((size_t)in->n, sizeof(double)), *gw = xcalloc((size_t)in->n, sizeof(double));
    if (heads_gate_grad(g, gw, in->m, a, in->in, in->tg, in->nwin, in->T, head_on, err,
                        sizeof err))
        cli_fail("%s", err);
    for (int k = 0; k < in->n; k++) {
        ms->st[k].grad = g[k];
        ms->st[k].grad_window = gw[k];
    }
    free(g);
    free(gw);
    free(on);
}

/* The outputs derived from the measurements: redundancy and type of every
 * head (in ms->st), the effective numbers of heads, each relation's best head
 * and the model-level summary. */
static void derive_outputs(HeadsOutputs *out, HeadsMeasures *ms, const HeadsInputs *in)
{
    char err[512];
    int n = in->n, *idx = xcalloc((size_t)n, sizeof(int)), k = 0;
    heads_redundancy(ms->st, ms->jsd, in->L, in->H);
    for (int q = 0; q < n; q++)
        if (!ms->st[q].masked)
            idx[k++] = q;
    if (heads_effective(&out->effective, ms->jsd, n, idx, k, err, sizeof err))
        cli_fail("%s", err);
    for (int l = 0; l < in->L; l++) {
        int kl = 0;
        for (int h = 0; h < in->H; h++)
            if (!ms->st[l * in->H + h].masked)
                idx[kl++] = l * in->H + h;
        if (heads_effective(&out->layer_eff[l], ms->jsd, n, idx, kl, err, sizeof err))
            cli_fail("%s", err);
    }
    for (int q = 0; q < n; q++)
        ms->st[q].type = heads_classify(&ms->st[q], in->delim_share);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        heads_relation_finish(&out->rel[q], ms->st, &ms->rsums[q], q, n);
    heads_summarise(&out->sum, ms->st, ms->jsd, in->L, in->H, ms->base_loss);
    if (compromise_finish(&out->compromise, &ms->csums, ms->st))
        cli_fail("out of memory for the compromise measure");
    free(idx);
}

/* < 0 when head x goes before head y: by delta loss (ascending, or descending),
 * ties by head index, so the order never depends on the sort. */
static int head_order(const HeadStats *st, int x, int y, int descending)
{
    double dx = st[x].delta_loss, dy = st[y].delta_loss;
    if (dx != dy)
        return (dx < dy) != descending ? -1 : 1;
    return x - y;
}

static void sort_heads(int *idx, int k, const HeadStats *st, int descending)
{
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && head_order(st, idx[j - 1], idx[j], descending) > 0; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
}

/* Michel et al. 2019, fig. 3: remove heads least important first. */
static void prune_curve(HeadsOutputs *out, const HeadsMeasures *ms, const HeadsInputs *in,
                        Activations *a, int print)
{
    unsigned char *on = xcalloc((size_t)in->n, 1);
    out->prune_order = xcalloc((size_t)in->n, sizeof(int));
    out->prune_loss = xcalloc((size_t)in->n + 1, sizeof(double));
    int k = 0;
    for (int q = 0; q < in->n; q++) {
        on[q] = !ms->st[q].masked;
        if (on[q])
            out->prune_order[k++] = q;
    }
    sort_heads(out->prune_order, k, ms->st, 0);
    out->nprune = k;
    out->prune_loss[0] = ms->base_loss;
    if (print) {
        printf("\nprune curve (heads removed least important first, by delta loss); columns:\n");
        print_legend(stdout, "  ", PRUNE_COLUMNS, NCOLS(PRUNE_COLUMNS));
        printf("  removed  kept  head   loss      vs base\n"
               "  %7d  %4d  %-6s %.4f  %+7.2f%%\n", 0, k, "-", ms->base_loss, 0.0);
    }
    for (int r = 1; r <= k; r++) {
        int q = out->prune_order[r - 1];
        on[q] = 0;
        out->prune_loss[r] = heads_loss(in->m, a, in->in, in->tg, in->nwin, in->T, on);
        char name[24];
        snprintf(name, sizeof name, "L%dH%d", q / in->H, q % in->H);
        if (print)
            printf("  %7d  %4d  %-6s %.4f  %+7.2f%%\n", r, k - r, name, out->prune_loss[r],
                   100.0 * (out->prune_loss[r] / ms->base_loss - 1.0));
    }
    free(on);
}

/* Head s attends to relation q, but silencing it costs the relation too little. */
static int attends_only(const HeadStats *s, int q)
{
    return heads_attends(s, q) && !heads_needed(s, q);
}

static void print_table(const HeadsInputs *in, const HeadsMeasures *ms, const HeadsOutputs *out)
{
    const HeadsSummary *s = &out->sum;
    int *idx = xcalloc((size_t)in->n, sizeof(int)), k = 0;
    for (int q = 0; q < in->n; q++)
        if (!ms->st[q].masked)
            idx[k++] = q;
    sort_heads(idx, k, ms->st, 1);
    for (int q = 0; q < in->n; q++)
        if (ms->st[q].masked)
            idx[k++] = q;
    const float *log_alpha = in->m->w.log_alpha;
    printf("head    role (type)              entropy  conf  dist  prev  self first delim  ind   dup"
           "   dloss  dloss%%   grad   near  %s serves\n", log_alpha ? "  gate " : "");
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
        printf("%-7s %-24s %6.3f %5.2f %5.1f %5.2f %5.2f %5.2f %5.2f %5.2f %5.2f"
               " %7.4f %6.2f%% %7.4f  %-6s%s %s\n", id, role, h->entropy, h->confidence, h->distance, h->prev,
               h->self, h->first, h->delim, h->induction, h->duplicate, h->delta_loss,
               100.0 * h->delta_loss / ms->base_loss, h->grad, near, gate,
               *report_serves(serves, sizeof serves, h, "+") ? serves : "-");
        if (*report_rels(attends, sizeof attends, h, "+", attends_only))
            printf("%*s(attends, not needed: %s)\n", 8, "", attends);
    }
    printf("\nsorted by dloss (loss increase when the head alone is silenced); ind/dup on "
           "%d probes of 2x%d random tokens (%s)\n", HEADS_PROBES, in->P, in->probe_rule);
    printf("columns (docs/heads.md):\n");
    for (size_t i = 0; i < NCOLS(HEAD_COLUMNS); i++)
        if (log_alpha || strcmp(HEAD_COLUMNS[i].name, "gate"))
            print_legend(stdout, "  ", &HEAD_COLUMNS[i], 1);
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
    printf("\neffective distinct heads %.2f of %d (per layer:", out->effective, s->active);
    for (int l = 0; l < in->L; l++)
        printf(" %.2f", out->layer_eff[l]);
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

static void print_relations(const HeadsInputs *in, const HeadsMeasures *ms,
                            const HeadsOutputs *out)
{
    char name[32], need[32], set[NEEDED_SET_MAX * 8 + 32];
    printf("\nrelations (docs/heads.md); columns:\n");
    print_legend(stdout, "  ", RELATION_COLUMNS, NCOLS(RELATION_COLUMNS));
    printf("  relation        best    attention  uniform  loss    rows    needed     \n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *r = &out->rel[q];
        if (heads_rel_table[q].planted && !planted_known(&in->planted))
            continue;
        int k = out->needed_head[q];
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
                   q < HEADS_REL_COUNT ? needed_set_text(set, sizeof set, &out->needed[q], in->H)
                                       : "-");
        }
        printf("  (");
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (heads_rel_table[q].against)
                printf("%s: against %s; ", heads_rel_table[q].name, heads_rel_table[q].against);
        printf("%s:\n   against a noun of the antecedent's class not in the sentence; %d windows "
               "of %d tokens; heads silenced to %s; %zu contrasts left out: %s)\n",
               pairs_set_name(PAIRS_COREF_CLASS), in->causal_windows, in->T,
               in->head_mean ? "their mean output" : "zero", in->planted.pairs_skipped,
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
           HEADS_PROBES, in->P, in->probe_rule, out->rel[HEADS_REL_COPY].loss_ratio);
}

/* The compromise measure (analysis/compromise.h): one line per pair of relations
 * sharing rows, then each head's split and weight on those keys. */
static void print_compromise(const HeadsInputs *in, const HeadsOutputs *out)
{
    const Compromise *c = &out->compromise;
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
                               const HeadsMeasures *ms, const HeadsOutputs *out)
{
    return (HeadsReport){
        .ckpt = o->ckpt.path[0], .data = o->heads, .cfg = in->m->cfg, .windows = in->nwin,
        .T = in->T,
        .probes = HEADS_PROBES, .probe_len = 2 * in->P, .seed = (unsigned long long)o->seed,
        .st = ms->st, .jsd = ms->jsd, .layer_effective = out->layer_eff, .sum = out->sum,
        .effective = out->effective, .base_loss = ms->base_loss, .delim_share = in->delim_share,
        .att_text = ms->att_text, .text = in->in, .att_probe = ms->att_probe,
        .probe = in->probe, .tok = in->tok, .planted_dropped = in->planted.dropped,
        .prune_order = out->prune_order, .prune_loss = out->prune_loss,
        .nprune = out->nprune, .rel = out->rel, .builtin = planted_known(&in->planted),
        .corpus_piece = in->planted.builtin, .parsed_sentences = in->planted.parsed,
        .rel_windows = in->rel_windows, .probe_rule = in->probe_rule,
        .rare_training = in->rare_training, .rare_source = in->rare_source,
        .causal = &ms->base, .ablated = ms->ablated, .needed_head = out->needed_head,
        .needed = out->needed, .causal_windows = in->causal_windows,
        .mean_ablate = in->head_mean != NULL,
        .pairs_skipped = in->planted.pairs_skipped,
        .compromise = &out->compromise,
        .log_alpha = in->m->w.log_alpha,
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

static void analysis_free(HeadsInputs *in, HeadsMeasures *ms, HeadsOutputs *out)
{
    free(in->start); free(in->in); free(in->tg); free(in->match); free(in->delim);
    free(in->probe); free(in->counts);
    planted_free(&in->planted);
    free(in->head_mean);
    free(ms->st); free(ms->jsd); free(ms->ablated); free(ms->att_text); free(ms->att_probe);
    free(out->layer_eff); free(out->prune_order); free(out->prune_loss);
    compromise_sums_free(&ms->csums);
    compromise_free(&out->compromise);
}

/* Reads and encodes FILE, sizes the analysis and allocates its buffers. */
static TokenId *prepare(HeadsInputs *in, HeadsMeasures *ms, HeadsOutputs *out,
                        const InferOptions *o, const Model *m, const Tokenizer *tok,
                        size_t *nids)
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
    memset(ms, 0, sizeof *ms);
    memset(out, 0, sizeof *out);
    in->m = m;
    in->tok = tok;
    in->L = m->cfg.L;
    in->H = m->cfg.H;
    in->n = in->L * in->H;
    in->T = m->cfg.T < (int)(*nids - 1) ? m->cfg.T : (int)(*nids - 1);
    size_t fit = (*nids - 1) / (size_t)in->T;
    in->nwin = o->windows ? (int)o->windows : fit < DEFAULT_WINDOWS ? (int)fit : DEFAULT_WINDOWS;
    in->say_passes = (size_t)in->nwin > (fit > 0 ? fit : 1);
    size_t per_window = (size_t)in->n * in->T * in->T * 2;
    size_t bcap = MAX_ATT_FLOATS / per_window;
    in->Bcap = bcap < 1 ? 1 : bcap > 16 ? 16 : (int)bcap;
    int P = in->P = in->T / 2 < m->cfg.V ? in->T / 2 : m->cfg.V;
    size_t NT = (size_t)in->nwin * in->T;
    in->start = xcalloc((size_t)in->nwin, sizeof(size_t));
    in->in = xcalloc(NT, sizeof(int));
    in->tg = xcalloc(NT, sizeof(int));
    in->match = xcalloc(NT, sizeof(int));
    in->delim = xcalloc(NT, 1);
    size_t fitting = (*nids - 1) / (size_t)in->T;
    in->rel_windows = fitting < HEADS_REL_WINDOWS ? (int)fitting : HEADS_REL_WINDOWS;
    in->causal_windows = in->rel_windows < HEADS_CAUSAL_WINDOWS ? in->rel_windows
                                                                : HEADS_CAUSAL_WINDOWS;
    ms->ablated = xcalloc((size_t)in->n, sizeof(CausalScore));
    in->probe = xcalloc((size_t)HEADS_PROBES * 2 * P, sizeof(int));
    ms->st = xcalloc((size_t)in->n, sizeof(HeadStats));
    ms->jsd = xcalloc((size_t)in->n * in->n, sizeof(double));
    out->layer_eff = xcalloc((size_t)in->L, sizeof(double));
    ms->att_text = xcalloc((size_t)in->n * in->T * in->T, sizeof(float));
    ms->att_probe = xcalloc((size_t)in->n * 4 * P * P, sizeof(float));
    if (compromise_sums_init(&ms->csums, in->n))
        cli_fail("out of memory for the compromise measure");
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

/* The file's relations to the built-in corpus and the rare relation's counts. */
static void find_sources(HeadsInputs *in, const InferOptions *o, const TokenId *ids, size_t nids)
{
    char err[200];
    if (planted_find(&in->planted, ids, nids, in->tok,
                     infer_trained_corpus_bytes(o->train_state), err, sizeof err))
        cli_fail("%s", err);
    in->counts = xcalloc((size_t)in->tok->V, sizeof *in->counts);
    in->rare_training = rare_counts_load(in->counts, o->train_state, in->tok, ids, nids,
                                        in->rare_source, sizeof in->rare_source);
}

int infer_heads(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    char err[1500];
    HeadsInputs in;
    HeadsMeasures ms;
    HeadsOutputs out;
    size_t nids;
    TokenId *ids = prepare(&in, &ms, &out, o, m, tok, &nids);
    note_short_file(o->heads, nids, m->cfg.T);
    choose_windows(&in, ids, nids, tok, o->seed);
    find_sources(&in, o, ids, nids);
    fprintf(stderr, "infer: heads of %s (L=%d H=%d) on %s: %d windows x %d tokens (seed %llu, "
            "%zu tokens in file), %d probes of 2x%d%s%s\n", o->ckpt.path[0], in.L, in.H, o->heads,
            in.nwin, in.T, (unsigned long long)o->seed, nids, HEADS_PROBES, in.P,
            o->mask ? ", mask " : "", o->mask ? o->mask : "");
    if (in.say_passes)
        fprintf(stderr, "infer: note: --windows %d is more than the %zu windows of %d tokens "
                "%s holds, so they overlap (each token is read about %.0f times) and the "
                "passes over them take that much longer; each says when it begins\n", in.nwin,
                (nids - 1) / (size_t)in.T, in.T, o->heads,
                (double)in.nwin * in.T / (double)(nids - 1));
    Activations a;
    if (acts_init(&a, &m->cfg, in.Bcap, in.T, 0, err, sizeof err))
        cli_fail("%s", err);
    measure_attention(&ms, &in, &a, o->head_on);
    measure_relations(&ms, &in, &a, ids, o->head_on);
    measure_importance(&ms, &in, &a, o->head_on);
    if (o->mean_ablate)
        measure_head_means(&in, &a, ids);
    measure_causal(&ms, &out, &in, &a, ids, o->head_on);
    derive_outputs(&out, &ms, &in);
    DepsRun deps = {0}; /* a CoNLL-U file: heads against its gold trees too */
    if (conllu_is_path(o->heads))
        infer_deps_measure(&deps, o, m, tok);
    if (!o->json) {
        print_table(&in, &ms, &out);
        print_relations(&in, &ms, &out);
        print_compromise(&in, &out);
        infer_deps_print(&deps, o->heads, in.H);
    }
    if (o->prune_curve)
        prune_curve(&out, &ms, &in, &a, !o->json);
    HeadsReport r = fill_report(o, &in, &ms, &out);
    r.deps = deps.done ? &deps.res : NULL;
    if (o->json)
        report_summary_json(stdout, &r);
    if (o->report)
        write_report(o, &r);
    acts_free(&a);
    analysis_free(&in, &ms, &out);
    infer_deps_free(&deps);
    free(ids);
    return 0;
}
