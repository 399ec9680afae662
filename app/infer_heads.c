/* infer_heads: the --heads driver. Picks the text windows and probes, runs the
 * passes analysis/heads needs (statistics, JSD, one ablation per head, the gate
 * gradient, the optional prune curve), prints the head table and a summary to
 * stdout and hands the numbers to report.c for --report. docs/heads.md defines
 * every number; the maths is in analysis/heads.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "data/corpus.h"
#include "data/synth.h"
#include "app/infer.h"
#include "analysis/heads.h"
#include "app/fileguard.h"
#include "app/rare_counts.h"
#include "app/report.h"

/* Windows per run when --windows is not given (fewer if the file is short). */
#define DEFAULT_WINDOWS 64
/* The relation pass reads at most this many consecutive windows (262,144 tokens
 * at T = 64): relations are rare, so it reads the whole of a typical file. */
#define HEADS_REL_WINDOWS 4096
/* Activation memory for one batch is kept under this many attention floats. */
#define MAX_ATT_FLOATS ((size_t)64 << 20)

typedef struct {
    const Model *m;
    const Tokenizer *tok;
    int L, H, n, T, nwin, Bcap, P;
    size_t *start;              /* [nwin] first token of each window */
    int *in, *tg, *match;       /* [nwin][T] */
    unsigned char *delim;       /* [nwin][T] */
    int *key[HEADS_REL_COUNT];  /* [Bcap][T] each relation's key, -1: none */
    int *first[HEADS_REL_COUNT];/* [Bcap][T] copy, names: first occurrence row, -1: none */
    int builtin;                /* the file is a piece of the built-in corpus */
    size_t builtin_at;          /* where it starts there */
    SynthRelation *planted;     /* its agreement and name relations, in token positions */
    size_t nplanted;
    size_t planted_dropped;     /* relations whose key is not before their query row */
    int rel_windows;            /* consecutive windows of the relation pass */
    RelationSums rsums[HEADS_REL_COUNT];
    HeadsRelation rel[HEADS_REL_COUNT];
    uint64_t *counts;           /* [V] the rare relation's token counts */
    int rare_training;          /* 1: counted on the training text; 0: on the file */
    char rare_source[2000];     /* which text was counted, and why */
    const char *probe_rule;     /* which rule of heads_probe_alphabet chose the tokens */
    int *probe;                 /* [HEADS_PROBES][2P] */
    HeadStats *st;              /* [n] */
    double *jsd;                /* [n][n] */
    double *layer_eff;          /* [L] */
    double base_loss, delim_share, effective;
    float *att_text, *att_probe;
    int *prune_order;
    double *prune_loss;
    int nprune;
} Analysis;

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

/* Whether the file is a piece of the built-in corpus (its bytes occur in the
 * SYNTH_DEFAULT_BYTES that ./train generates, as --dump-val's output does); if
 * so, keeps the planted agreement and name relations that lie inside it, in
 * order of query, moved to token positions (heads_planted_to_tokens). */
static void find_builtin(Analysis *an, const TokenId *ids, size_t n, const Tokenizer *tok)
{
    size_t N = SYNTH_DEFAULT_BYTES, nb = tok_count_bytes(tok, ids, n);
    if (nb > N)
        return;
    unsigned char *file = xcalloc(nb, 1);
    tok_decode(tok, ids, n, file);
    char *corpus = xcalloc(N, 1);
    size_t total = synth_generate_relations(corpus, N, CORPUS_BUILTIN_SEED, NULL, 0);
    size_t at = 0;
    int found = 0;
    for (; !found && at + nb <= N; at += !found)
        found = (unsigned char)corpus[at] == file[0] && memcmp(corpus + at, file, nb) == 0;
    if (found) {
        SynthRelation *rel = xcalloc(total, sizeof *rel);
        synth_generate_relations(corpus, N, CORPUS_BUILTIN_SEED, rel, total);
        size_t *start = xcalloc(n + 1, sizeof(size_t));
        for (size_t t = 0; t < n; t++) {
            size_t len;
            tok_piece(tok, ids[t], &len);
            start[t + 1] = start[t] + len;
        }
        an->builtin = 1;
        an->builtin_at = at;
        an->planted = xcalloc(total, sizeof *rel);
        an->nplanted = heads_planted_to_tokens(an->planted, &an->planted_dropped, rel, total, at,
                                               start, n);
        free(start);
        free(rel);
    }
    free(corpus);
    free(file);
}

/* The HeadsRelKind of each planted SynthRelKind (brackets are found in any text). */
static const int planted_kind[SYNTH_REL_KINDS] = {
    [SYNTH_REL_AGREE] = HEADS_REL_AGREE,
    [SYNTH_REL_BRACKET] = HEADS_REL_BRACKET,
    [SYNTH_REL_NAMES] = HEADS_REL_NAMES,
    [SYNTH_REL_DET] = HEADS_REL_DET,
    [SYNTH_REL_COREF] = HEADS_REL_COREF,
};

/* The keys of the planted relations for windows w0.. of the relation pass,
 * each window starting at w * T; a name's first occurrence row is key - 1 (the
 * row that predicted the key token there) when it is in the window. When
 * several relations give one query row, the last (in byte order) is kept. */
static void planted_keys(Analysis *an, int w0, int B, size_t *next)
{
    size_t NT = (size_t)B * an->T;
    for (int q = HEADS_REL_AGREE; q < HEADS_REL_COUNT; q++)
        for (size_t i = 0; i < NT; i++)
            an->key[q][i] = an->first[q][i] = -1;
    size_t lo = (size_t)w0 * an->T, hi = lo + NT;
    while (*next < an->nplanted && an->planted[*next].query < lo)
        (*next)++;
    for (size_t r = *next; r < an->nplanted && an->planted[r].query < hi; r++) {
        const SynthRelation *p = &an->planted[r];
        size_t s = p->query / (size_t)an->T * (size_t)an->T;   /* its window's start */
        if (p->key < s)
            continue;
        int q = planted_kind[p->kind];
        size_t i = p->query - lo;
        an->key[q][i] = (int)(p->key - s);
        if (q == HEADS_REL_NAMES && p->key > s)
            an->first[q][i] = (int)(p->key - 1 - s);
    }
}

/* The relation pass: consecutive windows of T tokens from the start of the file
 * (at most HEADS_REL_WINDOWS), every relation's keys, and the attention and
 * loss sums; fills an->rel and every head's rel[]. */
static void measure_relations(Analysis *an, Activations *a, const TokenId *ids,
                              const Tokenizer *tok, const unsigned char *head_on)
{
    int T = an->T;
    HeadSums *sums = xcalloc((size_t)an->n, sizeof *sums);
    HeadStats *st = xcalloc((size_t)an->n, sizeof *st);
    int *in = xcalloc((size_t)an->Bcap * T, sizeof(int));
    int *tg = xcalloc((size_t)an->Bcap * T, sizeof(int));
    PassOptions po = {.head_on = head_on};
    size_t next = 0;
    for (int w0 = 0; w0 < an->rel_windows; w0 += an->Bcap) {
        int B = an->rel_windows - w0 < an->Bcap ? an->rel_windows - w0 : an->Bcap;
        for (size_t i = 0; i < (size_t)B * T; i++) {
            size_t pos = (size_t)w0 * T + i;
            in[i] = ids[pos];
            tg[i] = ids[pos + 1];
        }
        gpt_forward(an->m, a, in, tg, B, T, &po);
        heads_keys_prev(an->key[HEADS_REL_PREV], B, T);
        heads_keys_bracket(an->key[HEADS_REL_BRACKET], in, tok, B, T);
        heads_keys_copy(an->key[HEADS_REL_COPY], an->first[HEADS_REL_COPY], in, B, T);
        planted_keys(an, w0, B, &next);
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (q != HEADS_REL_RARE)
                heads_add_relation(sums, &an->rsums[q], q, a, an->key[q], an->first[q],
                                   a->losses, B, T);
        if (heads_add_rare(sums, &an->rsums[HEADS_REL_RARE], a, in, tg, an->counts, a->losses,
                           B, T))
            cli_fail("out of memory for the rare relation");
    }
    heads_finish(st, sums, an->n);
    for (int k = 0; k < an->n; k++)
        memcpy(an->st[k].rel, st[k].rel, sizeof st[k].rel);
    free(sums);
    free(st);
    free(in);
    free(tg);
}

/* Window k starts uniformly at random inside the k-th of nwin equal strata of
 * the possible starts: evenly spread over the file, deterministic in the seed. */
static void choose_windows(Analysis *an, const TokenId *ids, size_t nids,
                           const Tokenizer *tok, uint64_t seed)
{
    Rng rng;
    rng_init(&rng, seed, RNG_STREAM_HEADS);
    uint64_t S = nids - (size_t)an->T, N = (uint64_t)an->nwin;
    for (int k = 0; k < an->nwin; k++) {
        uint64_t lo = (uint64_t)k * S / N, hi = (uint64_t)(k + 1) * S / N;
        size_t s = (size_t)(hi > lo ? lo + rng_below(&rng, hi - lo) : lo);
        an->start[k] = s;
        for (int t = 0; t < an->T; t++) {
            size_t i = (size_t)k * an->T + t;
            an->in[i] = ids[s + t];
            an->tg[i] = ids[s + t + 1];
            an->delim[i] = (unsigned char)heads_token_is_delim(tok, ids[s + t]);
        }
    }
    heads_repeat_targets(an->match, an->in, an->nwin, an->T);
    size_t NT = (size_t)an->nwin * an->T;
    int *copy_key = xcalloc(NT, sizeof(int)), *copy_first = xcalloc(NT, sizeof(int));
    heads_keys_copy(copy_key, copy_first, an->in, an->nwin, an->T);
    double share = 0.0, rows = 0.0;
    for (int k = 0; k < an->nwin; k++) {
        double r;
        share += heads_delim_share(an->delim + (size_t)k * an->T, an->T, &r);
        rows += r;
    }
    an->delim_share = share / rows;
    /* The probes get their own generator, so they do not change with --windows. */
    int *alpha = xcalloc((size_t)tok->V, sizeof(int)), *pool = xcalloc((size_t)tok->V, sizeof(int));
    int rule, na = heads_probe_alphabet(alpha, &rule, an->in, copy_key, an->nwin, an->T, tok);
    free(copy_key);
    free(copy_first);
    an->probe_rule = (tok->nmerges ? PROBE_RULES_BPE : PROBE_RULES)[rule];
    Rng prng;
    rng_init(&prng, rng_hash(seed, RNG_STREAM_HEADS, 1), RNG_STREAM_HEADS);
    an->P = an->T / 2 < na ? an->T / 2 : na;
    for (int p = 0; p < HEADS_PROBES; p++)
        heads_probe_build(an->probe + (size_t)p * 2 * an->P, an->T, alpha, na, pool, &prng);
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
static void measure_attention(Analysis *an, Activations *a, const unsigned char *head_on)
{
    char err[512];
    HeadSums *sums = xcalloc((size_t)an->n, sizeof *sums);
    PassOptions po = {.head_on = head_on};
    int T = an->T;
    for (int w0 = 0; w0 < an->nwin; w0 += an->Bcap) {
        int B = an->nwin - w0 < an->Bcap ? an->nwin - w0 : an->Bcap;
        size_t off = (size_t)w0 * T;
        gpt_forward(an->m, a, an->in + off, NULL, B, T, &po);
        heads_add_rows(sums, a, an->delim + off, an->match + off, B, T);
        if (heads_add_jsd(an->jsd, a, B, T, err, sizeof err))
            cli_fail("%s", err);
        if (w0 == 0)
            keep_heatmaps(an->att_text, a, an->n, an->H, T);
    }
    int Tp = 2 * an->P;
    for (int p0 = 0; p0 < HEADS_PROBES; p0 += an->Bcap) {
        int B = HEADS_PROBES - p0 < an->Bcap ? HEADS_PROBES - p0 : an->Bcap;
        gpt_forward(an->m, a, an->probe + (size_t)p0 * Tp, NULL, B, Tp, &po);
        heads_add_probe(sums, a, B, an->P);
        if (p0 == 0)
            keep_heatmaps(an->att_probe, a, an->n, an->H, Tp);
    }
    heads_finish(an->st, sums, an->n);
    double rows = sums[0].rows;
    for (size_t i = 0; i < (size_t)an->n * an->n; i++)
        an->jsd[i] /= rows;
    free(sums);
}

/* Ablation of each head in turn, and the gate gradient. */
static void measure_importance(Analysis *an, Activations *a, const unsigned char *head_on)
{
    char err[512];
    unsigned char *on = xcalloc((size_t)an->n, 1);
    int tty = isatty(fileno(stderr));
    for (int k = 0; k < an->n; k++)
        an->st[k].masked = head_on && !head_on[k];
    an->base_loss = heads_loss(an->m, a, an->in, an->tg, an->nwin, an->T, head_on);
    for (int k = 0; k < an->n; k++) {
        if (an->st[k].masked)
            continue;
        for (int q = 0; q < an->n; q++)
            on[q] = !an->st[q].masked && q != k;
        an->st[k].delta_loss = heads_loss(an->m, a, an->in, an->tg, an->nwin, an->T, on) -
                               an->base_loss;
        if (tty)
            fprintf(stderr, "\rinfer: ablating head %d/%d", k + 1, an->n);
    }
    if (tty)
        fprintf(stderr, "\n");
    double *g = xcalloc((size_t)an->n, sizeof(double)), *gw = xcalloc((size_t)an->n, sizeof(double));
    if (heads_gate_grad(g, gw, an->m, a, an->in, an->tg, an->nwin, an->T, head_on, err,
                        sizeof err))
        cli_fail("%s", err);
    for (int k = 0; k < an->n; k++) {
        an->st[k].grad = g[k];
        an->st[k].grad_window = gw[k];
    }
    free(g);
    free(gw);
    free(on);
}

static void measure_redundancy(Analysis *an)
{
    char err[512];
    int *idx = xcalloc((size_t)an->n, sizeof(int)), k = 0;
    heads_redundancy(an->st, an->jsd, an->L, an->H);
    for (int q = 0; q < an->n; q++)
        if (!an->st[q].masked)
            idx[k++] = q;
    if (heads_effective(&an->effective, an->jsd, an->n, idx, k, err, sizeof err))
        cli_fail("%s", err);
    for (int l = 0; l < an->L; l++) {
        int kl = 0;
        for (int h = 0; h < an->H; h++)
            if (!an->st[l * an->H + h].masked)
                idx[kl++] = l * an->H + h;
        if (heads_effective(&an->layer_eff[l], an->jsd, an->n, idx, kl, err, sizeof err))
            cli_fail("%s", err);
    }
    for (int q = 0; q < an->n; q++)
        an->st[q].type = heads_classify(&an->st[q], an->delim_share);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        heads_relation_finish(&an->rel[q], an->st, &an->rsums[q], q, an->n);
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
static void prune_curve(Analysis *an, Activations *a, int print)
{
    unsigned char *on = xcalloc((size_t)an->n, 1);
    an->prune_order = xcalloc((size_t)an->n, sizeof(int));
    an->prune_loss = xcalloc((size_t)an->n + 1, sizeof(double));
    int k = 0;
    for (int q = 0; q < an->n; q++) {
        on[q] = !an->st[q].masked;
        if (on[q])
            an->prune_order[k++] = q;
    }
    sort_heads(an->prune_order, k, an->st, 0);
    an->nprune = k;
    an->prune_loss[0] = an->base_loss;
    if (print)
        printf("\nprune curve (heads removed least important first, by delta loss):\n"
               "  removed  kept  head   loss      vs base\n"
               "  %7d  %4d  %-6s %.4f  %+7.2f%%\n", 0, k, "-", an->base_loss, 0.0);
    for (int r = 1; r <= k; r++) {
        int q = an->prune_order[r - 1];
        on[q] = 0;
        an->prune_loss[r] = heads_loss(an->m, a, an->in, an->tg, an->nwin, an->T, on);
        char name[24];
        snprintf(name, sizeof name, "L%dH%d", q / an->H, q % an->H);
        if (print)
            printf("  %7d  %4d  %-6s %.4f  %+7.2f%%\n", r, k - r, name, an->prune_loss[r],
                   100.0 * (an->prune_loss[r] / an->base_loss - 1.0));
    }
    free(on);
}

static void print_table(const Analysis *an, const HeadsSummary *s)
{
    int *idx = xcalloc((size_t)an->n, sizeof(int)), k = 0;
    for (int q = 0; q < an->n; q++)
        if (!an->st[q].masked)
            idx[k++] = q;
    sort_heads(idx, k, an->st, 1);
    for (int q = 0; q < an->n; q++)
        if (an->st[q].masked)
            idx[k++] = q;
    printf("head    type            entropy  conf  dist  prev  self first delim  ind   dup"
           "   dloss  dloss%%   grad   near\n");
    for (int r = 0; r < an->n; r++) {
        const HeadStats *h = &an->st[idx[r]];
        char near[24] = "-";
        if (h->nearest >= 0)
            snprintf(near, sizeof near, "L%dH%d", h->nearest / an->H, h->nearest % an->H);
        char id[24];
        snprintf(id, sizeof id, "L%dH%d", idx[r] / an->H, idx[r] % an->H);
        printf("%-7s %-15s %6.3f %5.2f %5.1f %5.2f %5.2f %5.2f %5.2f %5.2f %5.2f"
               " %7.4f %6.2f%% %7.4f  %s\n", id, heads_type_names[h->type], h->entropy, h->confidence, h->distance, h->prev,
               h->self, h->first, h->delim, h->induction, h->duplicate, h->delta_loss,
               100.0 * h->delta_loss / an->base_loss, h->grad, near);
    }
    printf("\nsorted by dloss (loss increase when the head alone is silenced); ind/dup on "
           "%d probes of 2x%d random tokens (%s)\n", HEADS_PROBES, an->P, an->probe_rule);
    printf("base loss %.4f over %d windows x %d tokens; %d heads, %d active\n", an->base_loss,
           an->nwin, an->T, an->n, s->active);
    printf("types:");
    const char *sep = " ";
    for (int t = 0; t < HEAD_TYPES; t++)
        if (s->type_counts[t]) {
            printf("%s%s %d", sep, heads_type_names[t], s->type_counts[t]);
            sep = ", ";
        }
    printf("\neffective distinct heads %.2f of %d (per layer:", an->effective, s->active);
    for (int l = 0; l < an->L; l++)
        printf(" %.2f", an->layer_eff[l]);
    printf("); mean JSD within a layer %.3f, between layers %.3f nats (max ln2 = 0.693)\n",
           s->jsd_within, s->jsd_between);
    printf("mean entropy %.3f, mean distance %.2f; %d heads each cost < 1%% of the loss; "
           "the most important costs %+.4f (%.2f%%)\n", s->mean_entropy, s->mean_distance,
           s->removable_1pct, s->max_importance, 100.0 * s->max_importance / an->base_loss);
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

static void print_relations(const Analysis *an)
{
    char name[32];
    printf("\nrelations (docs/heads.md): the best head's mean attention on the key, a uniform "
           "head's, and the loss on the tokens the relation predicts\n"
           "  relation        best    attention  uniform  loss    rows\n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *r = &an->rel[q];
        if (q >= HEADS_REL_TEXT && !an->builtin)
            continue;
        printf("  %-15s %-7s %9.3f  %7.3f  %6.3f  %6.0f", heads_rel_names[q],
               rel_head(name, r->best, an->H), r->attention, r->uniform, r->loss, r->rows);
        if (q == HEADS_REL_COPY || q == HEADS_REL_NAMES)
            printf("  loss ratio %.3f (%.3f vs %.3f nats at the first occurrence, %.0f pairs)",
                   r->loss_ratio, r->pairs > 0 ? r->loss_ratio * r->first_loss : 0.0,
                   r->first_loss, r->pairs);
        printf("\n");
    }
    printf("  (rare: token counts of %s)\n", an->rare_source);
    if (an->builtin)
        printf("  (the file is the built-in corpus from byte %zu: agreement, names, determiner "
               "and coreference are its planted relations)\n", an->builtin_at);
    if (an->planted_dropped)
        printf("  (%zu planted relations left out: the key and the query fall in one token)\n",
               an->planted_dropped);
    int best = -1;
    for (int k = 0; k < an->n; k++)
        if (!an->st[k].masked && (best < 0 || an->st[k].induction > an->st[best].induction))
            best = k;
    printf("induction: probe %.3f (head %s; %d probes of 2x%d %s) | behavioural copy: loss "
           "ratio %.3f\n", best >= 0 ? an->st[best].induction : 0.0, rel_head(name, best, an->H),
           HEADS_PROBES, an->P, an->probe_rule, an->rel[HEADS_REL_COPY].loss_ratio);
}

static HeadsReport fill_report(const InferOptions *o, const Analysis *an, const HeadsSummary *s)
{
    return (HeadsReport){
        .ckpt = o->ckpt, .data = o->heads, .cfg = an->m->cfg, .windows = an->nwin, .T = an->T,
        .probes = HEADS_PROBES, .probe_len = 2 * an->P, .seed = (unsigned long long)o->seed,
        .st = an->st, .jsd = an->jsd, .layer_effective = an->layer_eff, .sum = *s,
        .effective = an->effective, .base_loss = an->base_loss, .delim_share = an->delim_share,
        .att_text = an->att_text, .text = an->in, .att_probe = an->att_probe,
        .probe = an->probe, .tok = an->tok, .planted_dropped = an->planted_dropped,
        .prune_order = an->prune_order, .prune_loss = an->prune_loss,
        .nprune = an->nprune, .rel = an->rel, .builtin = an->builtin,
        .rel_windows = an->rel_windows, .probe_rule = an->probe_rule,
        .rare_training = an->rare_training, .rare_source = an->rare_source,
    };
}

static void write_report(const InferOptions *o, const Analysis *an, const HeadsSummary *s)
{
    char err[3000];
    HeadsReport r = fill_report(o, an, s);
    /* A signal now waits until the report is in place (or cleaned away). */
    GuardSignals saved;
    guard_hold_signals(&saved);
    if (report_write(o->report, &r, err, sizeof err))
        cli_fail("--report %s: %s; nothing of this report was written", o->report, err);
    guard_release_signals(&saved);
    fprintf(stderr, "infer: report written to %s/index.html\n", o->report);
}

static void analysis_free(Analysis *an)
{
    free(an->start); free(an->in); free(an->tg); free(an->match); free(an->delim);
    free(an->probe); free(an->st); free(an->jsd); free(an->layer_eff);
    free(an->att_text); free(an->att_probe);
    free(an->prune_order); free(an->prune_loss); free(an->planted); free(an->counts);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        free(an->key[q]);
        free(an->first[q]);
    }
}

/* Reads and encodes FILE, sizes the analysis and allocates its buffers. */
static TokenId *prepare(Analysis *an, const InferOptions *o, const Model *m,
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
    memset(an, 0, sizeof *an);
    an->m = m;
    an->tok = tok;
    an->L = m->cfg.L;
    an->H = m->cfg.H;
    an->n = an->L * an->H;
    an->T = m->cfg.T < (int)(*nids - 1) ? m->cfg.T : (int)(*nids - 1);
    size_t fit = (*nids - 1) / (size_t)an->T;
    an->nwin = o->windows ? (int)o->windows : fit < DEFAULT_WINDOWS ? (int)fit : DEFAULT_WINDOWS;
    size_t per_window = (size_t)an->n * an->T * an->T * 2;
    size_t bcap = MAX_ATT_FLOATS / per_window;
    an->Bcap = bcap < 1 ? 1 : bcap > 16 ? 16 : (int)bcap;
    int P = an->P = an->T / 2 < m->cfg.V ? an->T / 2 : m->cfg.V;
    size_t NT = (size_t)an->nwin * an->T;
    an->start = xcalloc((size_t)an->nwin, sizeof(size_t));
    an->in = xcalloc(NT, sizeof(int));
    an->tg = xcalloc(NT, sizeof(int));
    an->match = xcalloc(NT, sizeof(int));
    an->delim = xcalloc(NT, 1);
    size_t fitting = (*nids - 1) / (size_t)an->T;
    an->rel_windows = fitting < HEADS_REL_WINDOWS ? (int)fitting : HEADS_REL_WINDOWS;
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        an->key[q] = xcalloc((size_t)an->Bcap * an->T, sizeof(int));
        an->first[q] = xcalloc((size_t)an->Bcap * an->T, sizeof(int));
    }
    an->probe = xcalloc((size_t)HEADS_PROBES * 2 * P, sizeof(int));
    an->st = xcalloc((size_t)an->n, sizeof(HeadStats));
    an->jsd = xcalloc((size_t)an->n * an->n, sizeof(double));
    an->layer_eff = xcalloc((size_t)an->L, sizeof(double));
    an->att_text = xcalloc((size_t)an->n * an->T * an->T, sizeof(float));
    an->att_probe = xcalloc((size_t)an->n * 4 * P * P, sizeof(float));
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

int infer_heads(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    char err[1500];
    Analysis an;
    size_t nids;
    TokenId *ids = prepare(&an, o, m, tok, &nids);
    note_short_file(o->heads, nids, m->cfg.T);
    choose_windows(&an, ids, nids, tok, o->seed);
    find_builtin(&an, ids, nids, tok);
    an.counts = xcalloc((size_t)tok->V, sizeof *an.counts);
    an.rare_training = rare_counts_load(an.counts, o->train_state, tok, ids, nids,
                                        an.rare_source, sizeof an.rare_source);
    fprintf(stderr, "infer: heads of %s (L=%d H=%d) on %s: %d windows x %d tokens (seed %llu, "
            "%zu tokens in file), %d probes of 2x%d%s%s\n", o->ckpt, an.L, an.H, o->heads,
            an.nwin, an.T, (unsigned long long)o->seed, nids, HEADS_PROBES, an.P,
            o->mask ? ", mask " : "", o->mask ? o->mask : "");
    Activations a;
    if (acts_init(&a, &m->cfg, an.Bcap, an.T, 0, err, sizeof err))
        cli_fail("%s", err);
    measure_attention(&an, &a, o->head_on);
    measure_relations(&an, &a, ids, tok, o->head_on);
    measure_importance(&an, &a, o->head_on);
    measure_redundancy(&an);
    HeadsSummary s;
    heads_summarise(&s, an.st, an.jsd, an.L, an.H, an.base_loss);
    if (!o->json) {
        print_table(&an, &s);
        print_relations(&an);
    }
    if (o->prune_curve)
        prune_curve(&an, &a, !o->json);
    if (o->json) {
        HeadsReport r = fill_report(o, &an, &s);
        report_summary_json(stdout, &r);
    }
    if (o->report)
        write_report(o, &an, &s);
    acts_free(&a);
    analysis_free(&an);
    free(ids);
    return 0;
}
