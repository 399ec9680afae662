/* infer_explore: the --explore driver. Runs the model (or, with several
 * --ckpt, each model: the compare page) over one text (the user's, or a sample
 * just generated), keeps every head's attention, scores
 * the heads on that text and on the repeated random probes with analysis/heads
 * (the same numbers --heads reports, over one window instead of many), finds
 * every relation's ground-truth keys in the window as --heads does (planted
 * ones through app/planted), and hands everything to explore.c, which writes
 * the page. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"
#include "app/report/explore.h"
#include "app/common/fileguard.h"
#include "app/infer/infer_modes.h"
#include "analysis/planted.h"
#include "app/infer/rare_counts.h"
#include "analysis/heads.h"

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        cli_fail("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

/* Every relation's keys for the relation view, as --heads finds them. */
typedef struct {
    int *key[HEADS_REL_COUNT], *first[HEADS_REL_COUNT]; /* [T] each, -1: none */
    unsigned char *rare;       /* [T][T] the rare relation's key sets */
    uint64_t *counts;          /* [V] the token counts the rare relation ranks by */
    Planted planted;
} RelationKeys;

/* The keys of the shown window in[T], which is the text all[nt] from token
 * base on: the text relations from the window alone (the rare counts are the
 * training text's when the checkpoint names it, as for --heads), the planted
 * ones when the text is a piece of the built-in corpus. */
static void find_relation_keys(RelationKeys *rk, Explore *e, const InferOptions *o,
                               const TokenId *all, size_t nt, size_t base)
{
    char err[200], why[2000];
    int T = e->T;
    const int *in = e->ids;
    const Tokenizer *tok = e->tok;
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        rk->key[q] = xcalloc((size_t)T, sizeof(int));
        rk->first[q] = xcalloc((size_t)T, sizeof(int));
    }
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        heads_keys_find(rk->key[q], rk->first[q], q, in, tok, 1, T);
    uint64_t *counts = rk->counts = xcalloc((size_t)tok->V, sizeof *counts);
    uint64_t *minc = xcalloc((size_t)T, sizeof *minc);
    rare_counts_load(counts, o->train_state, tok, all, nt, why, sizeof why);
    heads_rare_min(minc, in, counts, 1, T);
    rk->rare = xcalloc((size_t)T * T, 1);
    for (int i = 0; i < T; i++)
        heads_rare_keys(rk->rare + (size_t)i * T, in, i, T, counts, minc[i]);
    free(minc);
    if (planted_find(&rk->planted, all, nt, tok, infer_trained_corpus_bytes(o->train_state),
                     err, sizeof err))
        cli_fail("%s", err);
    size_t next = 0;
    planted_keys(rk->key, rk->first, &rk->planted, base, 1, T, &next);
    e->builtin = planted_known(&rk->planted);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        e->rel_key[q] = !heads_rel_table[q].planted || e->builtin ? rk->key[q] : NULL;
    e->rare_keys = rk->rare;
}

static void relation_keys_free(RelationKeys *rk)
{
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        free(rk->key[q]);
        free(rk->first[q]);
    }
    free(rk->rare);
    free(rk->counts);
    planted_free(&rk->planted);
}

/* Row statistics, relation scores (on rk's keys; their head-independent sums
 * into rs[HEADS_REL_COUNT]) and JSD over the one text window, with its
 * attention kept in att[n][T][T]; the probe scores over HEADS_PROBES probes,
 * one at a time. */
static void score_heads(HeadStats *st, RelationSums *rs, double *jsd, float *att,
                        double *delim_share, const Model *m, Activations *a, const int *in,
                        const Tokenizer *tok, const RelationKeys *rk, int T, uint64_t seed,
                        const unsigned char *head_on)
{
    char err[512];
    int L = m->cfg.L, H = m->cfg.H, n = L * H;
    HeadSums *sums = xcalloc((size_t)n, sizeof *sums);
    unsigned char *delim = xcalloc((size_t)T, 1);
    int *match = xcalloc((size_t)T, sizeof(int));
    for (int t = 0; t < T; t++)
        delim[t] = (unsigned char)heads_token_is_delim(tok, in[t]);
    heads_repeat_targets(match, in, 1, T);
    PassOptions po = {.head_on = head_on};
    gpt_forward(m, a, in, NULL, 1, T, &po);
    for (int k = 0; k < n; k++)
        memcpy(att + (size_t)k * T * T, heads_att(a, k / H, 0, k % H, T),
               (size_t)T * T * sizeof(float));
    heads_add_rows(sums, a, delim, match, 1, T);
    memset(rs, 0, HEADS_REL_COUNT * sizeof *rs);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (q != HEADS_REL_RARE)
            heads_add_relation(sums, &rs[q], q, a, rk->key[q], rk->first[q], NULL, 1, T);
    if (heads_add_rare(sums, &rs[HEADS_REL_RARE], a, in, NULL, rk->counts, NULL, 1, T))
        cli_fail("out of memory for the rare relation");
    if (heads_add_jsd(jsd, a, 1, T, err, sizeof err))
        cli_fail("%s", err);
    double rows;
    *delim_share = heads_delim_share(delim, T, &rows);
    *delim_share = rows > 0 ? *delim_share / rows : NAN;
    for (size_t i = 0; i < (size_t)n * n; i++)
        jsd[i] = sums[0].rows > 0 ? jsd[i] / sums[0].rows : 0.0;

    /* The probes draw from the same alphabet as --heads (heads_probe_alphabet):
     * word tokens this text shows being copied first, never the newline. */
    int *copy_key = xcalloc((size_t)T, sizeof(int)), *copy_first = xcalloc((size_t)T, sizeof(int));
    heads_keys_copy(copy_key, copy_first, in, 1, T);
    int *alpha = xcalloc((size_t)tok->V, sizeof(int)), *pool = xcalloc((size_t)tok->V, sizeof(int));
    int rule, na = heads_probe_alphabet(alpha, &rule, in, copy_key, 1, T, tok);
    free(copy_key);
    free(copy_first);
    int P = m->cfg.T / 2 < na ? m->cfg.T / 2 : na;
    int *probe = xcalloc((size_t)2 * (P > 0 ? P : 1), sizeof(int));
    Rng rng;
    rng_init(&rng, rng_hash(seed, RNG_STREAM_HEADS, 1), RNG_STREAM_HEADS);
    for (int p = 0; p < HEADS_PROBES && P >= 1; p++) {
        heads_probe_build(probe, m->cfg.T, alpha, na, pool, &rng);
        gpt_forward(m, a, probe, NULL, 1, 2 * P, &po);
        heads_add_probe(sums, a, 1, P);
    }
    heads_finish(st, sums, n);
    free(alpha);
    free(pool);
    free(probe);
    free(match);
    free(delim);
    free(sums);
}

/* The causal scores of the window in[0..Tl) (text token base on) just run
 * through a: its minimal pairs and every relation's loss on its tokens. */
static void window_causal(CausalScore *cs, const Activations *a, const RelationKeys *rk,
                          const int *in, size_t base, int Tl, int n)
{
    HeadSums *sums = xcalloc((size_t)n, sizeof *sums);
    RelationSums rs[HEADS_REL_COUNT] = {{0}};
    PairSums ps[PAIRS_SETS] = {{0}};
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (q != HEADS_REL_RARE)
            heads_add_relation(sums, &rs[q], q, a, rk->key[q], rk->first[q], a->losses, 1, Tl);
    if (heads_add_rare(sums, &rs[HEADS_REL_RARE], a, in, in + 1, rk->counts, a->losses, 1, Tl))
        cli_fail("out of memory for the rare relation");
    size_t next = 0;
    pairs_add(ps, a, rk->planted.pair, rk->planted.npair, base, 1, Tl, &next);
    for (int q = 0; q < PAIRS_SETS; q++)
        pairs_finish(&cs->pair[q], &ps[q]);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        cs->rel_loss[q] = rs[q].loss_rows > 0 ? rs[q].loss / rs[q].loss_rows : 0.0;
    free(sums);
}

/* The loss on the text, how much it rises when each head alone is off, and
 * each head's cost to every relation on this text (analysis/pairs.h); the
 * scores with every head on into *cbase. */
static double score_importance(HeadStats *st, CausalScore *cbase, const Model *m,
                               Activations *a, const int *in, size_t nids,
                               const unsigned char *head_on, const RelationKeys *rk,
                               size_t base_tok)
{
    int n = m->cfg.L * m->cfg.H;
    int Tl = nids - 1 < (size_t)m->cfg.T ? (int)(nids - 1) : m->cfg.T;
    unsigned char *on = xcalloc((size_t)n, 1);
    for (int k = 0; k < n; k++)
        st[k].masked = head_on && !head_on[k];
    double base = heads_loss(m, a, in, in + 1, 1, Tl, head_on);
    CausalScore cx;
    window_causal(cbase, a, rk, in, base_tok, Tl, n);
    for (int k = 0; k < n; k++) {
        st[k].delta_loss = NAN;
        if (st[k].masked)
            continue;
        for (int q = 0; q < n; q++)
            on[q] = !st[q].masked && q != k;
        st[k].delta_loss = heads_loss(m, a, in, in + 1, 1, Tl, on) - base;
        window_causal(&cx, a, rk, in, base_tok, Tl, n);
        st[k].costed = 1;
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            st[k].cost[q] = pairs_cost(&cbase->pair[q], &cx.pair[q], cbase->rel_loss[q],
                                       cx.rel_loss[q]);
    }
    free(on);
    return base;
}

/* The page and the weights, each written whole to its temporary; both are
 * renamed into place only when both are complete, so a failure leaves the
 * previous files as they were. Signals wait until the files are in place. */
static void write_outputs(const InferOptions *o, const Explore *e)
{
    char err[9000];
    GuardFile page = {.f = NULL}, json = {.f = NULL};
    const char *flag = "--explore";
    GuardSignals saved;
    guard_hold_signals(&saved);
    if (guard_file_open(&page, o->explore, err, sizeof err) ||
        explore_write_html(page.f, e, err, sizeof err))
        goto fail;
    if (o->explore_json) {
        flag = "--explore-json";
        if (guard_file_open(&json, o->explore_json, err, sizeof err))
            goto fail;
        explore_write_json(json.f, e);
        if (guard_file_finish(&json, err, sizeof err))
            goto fail;
    }
    flag = "--explore";
    if (guard_file_commit(&page, err, sizeof err))
        goto fail;
    if (o->explore_json && guard_file_commit(&json, err, sizeof err))
        cli_fail("--explore-json: %s (the page %s was written)", err, o->explore);
    guard_release_signals(&saved);
    return;
fail:
    guard_file_abort(&page);
    guard_file_abort(&json);
    cli_fail("%s: %s; nothing was written", flag, err);
}

/* One model's page data on one text: the Explore that explore.c writes and the
 * buffers it points into, which this struct owns. */
typedef struct {
    Explore e;
    RelationKeys rk;
    HeadStats *st;    /* [L*H] */
    HeadsRelation rel[HEADS_REL_COUNT];
    CausalScore causal;
    float *att;       /* [L*H][T][T] */
    int *in;          /* [nids] the shown tokens and, when there is one, the next */
    TokenId *all;     /* [nt] the whole text's tokens */
} ExploreModel;

/* Runs model m over the first (or, from_end, the last) block of the text and
 * scores its heads into x. who prefixes every message about this model ("" for
 * the single-model page, "--ckpt PATH: " on the compare page). */
static void explore_model_init(ExploreModel *x, const InferOptions *o, const char *ckpt,
                               const Model *m, const Tokenizer *tok, const unsigned char *bytes,
                               size_t nbytes, const char *source, int from_end, const char *who)
{
    char err[1500];
    memset(x, 0, sizeof *x);
    if (nbytes < 2)
        cli_fail("%s: %zu byte(s); the explorer needs at least 2", source, nbytes);
    TokenId *all = x->all = xcalloc(nbytes, sizeof *all);
    long ntok = tok_encode(tok, bytes, nbytes, all, source, err, sizeof err);
    if (ntok < 0)
        cli_fail("%s%s", who, err);
    if (ntok < 2)
        cli_fail("%s%s: %zu byte(s) make %ld token; the explorer needs at least 2", who, source,
                 nbytes, ntok);
    size_t nt = (size_t)ntok;
    int T = nt < (size_t)m->cfg.T ? (int)nt : m->cfg.T;
    /* One token more than shown when there is one, as the last target. */
    size_t nids = nt > (size_t)T ? (size_t)T + 1 : (size_t)T;
    const TokenId *shown = from_end ? all + (nt - (size_t)T) : all;
    if (from_end)
        nids = (size_t)T;
    int *in = x->in = xcalloc(nids, sizeof(int));
    for (size_t i = 0; i < nids; i++)
        in[i] = shown[i];
    if (nt > (size_t)T)
        fprintf(stderr, "infer: note: %s%s is %zu tokens; the explorer shows its %s %d (the "
                "block size)\n", who, source, nt, from_end ? "last" : "first", T);

    int L = m->cfg.L, H = m->cfg.H, n = L * H;
    Activations a;
    if (acts_init(&a, &m->cfg, 1, m->cfg.T, 0, err, sizeof err))
        cli_fail("%s%s", who, err);
    HeadStats *st = x->st = xcalloc((size_t)n, sizeof *st);
    double *jsd = xcalloc((size_t)n * n, sizeof(double));
    x->att = xcalloc((size_t)n * T * T, sizeof(float));
    Explore *e = &x->e;
    *e = (Explore){.ckpt = ckpt, .source = source, .cfg = m->cfg, .T = T, .ids = in,
                   .tok = tok, .text_bytes = nbytes, .text_tokens = nt, .from_end = from_end,
                   .att = x->att, .st = st, .loss = NAN,
                   .log_alpha = m->w.log_alpha};
    size_t base = from_end ? nt - (size_t)T : 0;
    find_relation_keys(&x->rk, e, o, all, nt, base);
    e->sentence = x->rk.planted.sentence;
    e->nsentence = x->rk.planted.nsentence;
    e->base = base;
    RelationSums rs[HEADS_REL_COUNT];
    score_heads(st, rs, jsd, x->att, &e->delim_share, m, &a, in, tok, &x->rk, T, o->seed,
                o->head_on);
    e->scored_rows = T - heads_skip(T);
    if (nids >= 2) {
        e->loss = score_importance(st, &x->causal, m, &a, in, nids, o->head_on, &x->rk, base);
        e->causal = &x->causal;
    }
    heads_redundancy(st, jsd, L, H);
    for (int k = 0; k < n; k++)
        st[k].type = heads_classify(&st[k], e->delim_share);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        heads_relation_finish(&x->rel[q], st, &rs[q], q, n);
        /* The loss on the relation's tokens comes from the causal pass, which
         * runs the window with its targets. */
        x->rel[q].loss = e->causal ? x->causal.rel_loss[q] : NAN;
    }
    e->rel = x->rel;
    if (e->scored_rows < 32)
        fprintf(stderr, "infer: note: %sthe head scores rest on %d query row(s) of this text; "
                "they are rough below a few dozen (the probe scores are not affected)\n", who,
                e->scored_rows);
    acts_free(&a);
    free(jsd);
}

static void explore_model_free(ExploreModel *x)
{
    relation_keys_free(&x->rk);
    free(x->att);
    free(x->st);
    free(x->in);
    free(x->all);
}

int infer_explore(const InferOptions *o, const Model *m, const Tokenizer *tok,
                  const unsigned char *bytes, size_t nbytes, const char *source, int from_end)
{
    ExploreModel x;
    explore_model_init(&x, o, o->ckpt.path[0], m, tok, bytes, nbytes, source, from_end, "");
    write_outputs(o, &x.e);
    fprintf(stderr, "infer: explorer for %d token(s) of %s written to %s\n", x.e.T, source,
            o->explore);
    explore_model_free(&x);
    return 0;
}

/* The compare page, written whole to its temporary and renamed into place. */
static void write_compare(const InferOptions *o, const Explore *const *es, int n)
{
    char err[9000];
    GuardFile page = {.f = NULL};
    GuardSignals saved;
    guard_hold_signals(&saved);
    if (guard_file_open(&page, o->explore, err, sizeof err) ||
        explore_write_compare(page.f, es, n, err, sizeof err) ||
        guard_file_commit(&page, err, sizeof err)) {
        guard_file_abort(&page);
        cli_fail("--explore: %s; nothing was written", err);
    }
    guard_release_signals(&saved);
}

int infer_compare(const InferOptions *o, const Model *m, const Tokenizer *tok,
                  const TrainState *const *state, const unsigned char *bytes, size_t nbytes,
                  const char *source)
{
    int n = o->ckpt.n;
    ExploreModel *x = xcalloc((size_t)n, sizeof *x);
    const Explore *es[INFER_CKPT_MAX];
    for (int k = 0; k < n; k++) {
        char who[4300];
        snprintf(who, sizeof who, "--ckpt %s (L %d, H %d, D %d): ", o->ckpt.path[k], m[k].cfg.L,
                 m[k].cfg.H, m[k].cfg.D);
        InferOptions ok = *o;
        ok.train_state = state[k];
        explore_model_init(&x[k], &ok, o->ckpt.path[k], &m[k], &tok[k], bytes, nbytes, source,
                           0, who);
        es[k] = &x[k].e;
    }
    write_compare(o, es, n);
    fprintf(stderr, "infer: compare page of %d models on %s written to %s\n", n, source,
            o->explore);
    for (int k = 0; k < n; k++)
        explore_model_free(&x[k]);
    free(x);
    return 0;
}
