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
#include "app/infer/infer_gold.h"
#include "analysis/planted.h"
#include "app/infer/rare_counts.h"
#include "analysis/heads_measure.h"

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
    HeadsWindows w;   /* the window and the probes */
    HeadsMeasured hm; /* its heads: st, att_text [L*H][T][T], rel, base (the causal scores) */
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

    int L = m->cfg.L, H = m->cfg.H;
    Activations a;
    if (acts_init(&a, &m->cfg, 1, m->cfg.T, 0, err, sizeof err) ||
        heads_measure_init(&x->hm, L, H, T, 0, err, sizeof err))
        cli_fail("%s%s", who, err);
    Explore *e = &x->e;
    *e = (Explore){.ckpt = ckpt, .source = source, .cfg = m->cfg, .T = T, .ids = in,
                   .tok = tok, .text_bytes = nbytes, .text_tokens = nt, .from_end = from_end,
                   .att = x->hm.att_text, .st = x->hm.st, .loss = NAN,
                   .log_alpha = m->w.log_alpha};
    size_t base = from_end ? nt - (size_t)T : 0;
    find_relation_keys(&x->rk, e, o, all, nt, base);
    e->planted = &x->rk.planted;
    e->base = base;
    /* The window's statistics, relations (on rk's keys) and JSD; the probes, one
     * at a time; then, on the window with its targets (one token shorter when
     * the text has no token after it), the loss with each head silenced and each
     * head's cost to every relation (analysis/pairs.h). */
    if (heads_windows_one(&x->w, in, T, m->cfg.T, tok, o->seed, err, sizeof err))
        cli_fail("%s%s", who, err);
    int Tl = nids - 1 < (size_t)T ? (int)(nids - 1) : T;
    HeadsMeasureIn hm = {
        .what = HEADS_ROWS | HEADS_PROBE | HEADS_WINDOW_RELATIONS |
                (nids >= 2 ? HEADS_IMPORTANCE | HEADS_CAUSAL : 0) | HEADS_DERIVE | HEADS_ROUTING,
        .m = m, .tok = tok, .head_on = o->head_on, .w = &x->w, .probe_batch = 1,
        .ids = shown, .nids = nids, .at = base, .text_T = Tl, .causal_windows = 1,
        .loss_text = 1, .unmeasured_nan = 1, .planted = &x->rk.planted,
        .counts = x->rk.counts, .key = x->rk.key, .first = x->rk.first,
        .window_relations = HEADS_REL_COUNT,
    };
    if (heads_measure(&x->hm, &hm, &a, err, sizeof err))
        cli_fail("%s%s", who, err);
    e->delim_share = x->w.delim_share;
    e->scored_rows = T - heads_skip(T);
    if (nids >= 2) {
        e->loss = x->hm.base_loss;
        e->causal = &x->hm.base;
    }
    /* The loss on a relation's tokens comes from the causal pass, which runs the
     * window with its targets. */
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        x->hm.rel[q].loss = e->causal ? x->hm.base.rel_loss[q] : NAN;
    e->rel = x->hm.rel;
    e->routed = x->hm.route.K > 0 ? x->hm.route_text : NULL;
    if (e->scored_rows < 32)
        fprintf(stderr, "infer: note: %sthe head scores rest on %d query row(s) of this text; "
                "they are rough below a few dozen (the probe scores are not affected)\n", who,
                e->scored_rows);
    acts_free(&a);
}

static void explore_model_free(ExploreModel *x)
{
    relation_keys_free(&x->rk);
    heads_windows_free(&x->w);
    heads_measure_free(&x->hm);
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

int infer_explore_tree(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    GoldTree g;
    gold_tree_read(&g, o->text_file, o->sentence_n, o->sentence_n ? NULL : o->sentence, tok,
                   m->cfg.T);
    /* The source the page shows: the same whether the sentence was named by
     * its number or its text, but for the note when several sentences match. */
    char source[4400], shown[GOLD_SHOWN_MAX];
    int at = snprintf(source, sizeof source, "%s, sentence %zu", o->text_file, g.s + 1);
    if (g.matches > 1) {
        gold_show_text(shown, o->sentence, strlen(o->sentence), 1);
        snprintf(source + at, sizeof source - (size_t)at,
                 " (the first of %zu sentences matching --sentence %s)", g.matches, shown);
    }
    ExploreModel x;
    explore_model_init(&x, o, o->ckpt.path[0], m, tok, g.bytes, g.nbytes, source, 0, "");
    gold_tree_attach(&g, &x.e);
    write_outputs(o, &x.e);
    fprintf(stderr, "infer: explorer for %s (%d token(s), %zu gold dependencies) written to %s\n",
            source, x.e.T, g.g.npair, o->explore);
    explore_model_free(&x);
    gold_tree_free(&g);
    return 0;
}
