/* deps: heads against gold dependency trees (analysis/deps.h says what is
 * measured and how). */
#include "analysis/deps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads.h"
#include "analysis/pairs.h"
#include "util/errbuf.h"

const char *const deps_dir_names[DEPS_DIRS] = {"dependent->head", "head->dependent"};

/* Activation memory for one batch is kept under this many attention floats. */
#define DEPS_ATT_FLOATS ((size_t)32 << 20)
#define DEPS_BATCH_MAX 16

void deps_free(DepsData *d)
{
    free(d->ids);
    free(d->win0);
    free(d->wlen);
    free(d->tok0);
    free(d->tok1);
    free(d->pair);
    free(d->pair0);
    memset(d, 0, sizeof *d);
}

/* Sentence s's window [first token at or after its start, first token at or
 * after its end) and each word's tokens in it; off[t] is token t's first byte. */
static void align_sentence(DepsData *d, size_t s, const size_t *off, size_t *t)
{
    const Conllu *c = d->c;
    const ConlluSentence *se = &c->sent[s];
    while (*t < d->nids && off[*t] < se->start)
        (*t)++;
    size_t a = *t, b = a;
    while (b < d->nids && off[b] < se->end)
        b++;
    /* The window starts at the newline before the sentence, when that is a token. */
    size_t w0 = a > 0 && off[a - 1] + 1 == se->start && c->text[off[a - 1]] == '\n' ? a - 1 : a;
    d->win0[s] = w0;
    d->wlen[s] = b - w0 <= (size_t)d->T ? (uint32_t)(b - w0) : 0;
    size_t lo = se->start, k = a;
    for (uint32_t i = 0; i < se->nwords; i++) {
        size_t wi = se->word0 + i, hi = c->word[wi].end;
        d->tok0[wi] = d->tok1[wi] = -1;
        if (hi < lo) /* an empty word inside a multiword token: at lo already */
            hi = lo;
        for (; k < b && off[k] < hi; k++) {
            if (d->tok0[wi] < 0)
                d->tok0[wi] = (int32_t)(k - w0);
            d->tok1[wi] = (int32_t)(k - w0);
        }
        lo = hi;
    }
    *t = b;
}

static void add_pairs(DepsData *d, size_t s)
{
    const Conllu *c = d->c;
    const ConlluSentence *se = &c->sent[s];
    d->pair0[s] = d->npair;
    for (uint32_t i = 0; i < se->nwords; i++) {
        const ConlluWord *w = &c->word[se->word0 + i];
        if (w->head == 0) {
            d->roots++;
            continue;
        }
        uint32_t h = w->head - 1, q = h > i ? h : i, k = h > i ? i : h;
        if (!d->wlen[s]) {
            d->pairs_over_context++;
            continue;
        }
        if (d->tok0[se->word0 + q] < 0 || d->tok0[se->word0 + k] < 0) {
            d->pairs_no_token++;
            continue;
        }
        d->pair[d->npair++] = (DepsPair){(uint32_t)s, q, k, w->rel,
                                         (uint8_t)(h < i ? DEPS_TO_HEAD : DEPS_TO_DEP)};
    }
}

int deps_prepare(DepsData *d, const Conllu *c, const Tokenizer *tok, int T, const char *name,
                 char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->c = c;
    d->T = T;
    d->ids = malloc((c->ntext ? c->ntext : 1) * sizeof *d->ids);
    size_t *off = malloc((c->ntext + 1) * sizeof *off);
    d->win0 = calloc(c->nsent ? c->nsent : 1, sizeof *d->win0);
    d->wlen = calloc(c->nsent ? c->nsent : 1, sizeof *d->wlen);
    d->tok0 = calloc(c->nword ? c->nword : 1, sizeof *d->tok0);
    d->tok1 = calloc(c->nword ? c->nword : 1, sizeof *d->tok1);
    d->pair = calloc(c->nword ? c->nword : 1, sizeof *d->pair);
    d->pair0 = calloc(c->nsent + 1, sizeof *d->pair0);
    if (!d->ids || !off || !d->win0 || !d->wlen || !d->tok0 || !d->tok1 || !d->pair ||
        !d->pair0) {
        free(off);
        deps_free(d);
        return err_set(err, errlen, "%s: out of memory aligning %zu words", name, c->nword);
    }
    long n = tok_encode(tok, (const unsigned char *)c->text, c->ntext, d->ids, name, err, errlen);
    if (n < 0) {
        free(off);
        deps_free(d);
        return -1;
    }
    d->nids = (size_t)n;
    off[0] = 0;
    for (size_t t = 0; t < d->nids; t++) {
        size_t len;
        tok_piece(tok, d->ids[t], &len);
        off[t + 1] = off[t] + len;
    }
    size_t t = 0;
    for (size_t s = 0; s < c->nsent; s++) {
        align_sentence(d, s, off, &t);
        if (!d->wlen[s])
            d->over_context++;
        add_pairs(d, s);
    }
    d->pair0[c->nsent] = d->npair;
    free(off);
    return 0;
}

const char *deps_rel_name(const DepsResult *res, size_t r)
{
    return r + 1 < res->nrel ? res->rel_name[r] : "all";
}

void deps_result_free(DepsResult *res)
{
    if (res->score)
        for (size_t i = 0; i < res->nrel * DEPS_DIRS; i++) {
            free(res->score[i].acc);
            free(res->score[i].attn);
            free(res->score[i].cost);
        }
    free(res->score);
    deps_align_free(&res->align);
    memset(res, 0, sizeof *res);
}

/* What the passes share. */
typedef struct {
    const DepsData *d;
    const Model *m;
    Activations a;
    int n, Bcap;
    int *x, *tg;          /* [Bcap][T] */
    float *attn;          /* [npair][n] attention on the key word */
    unsigned char *right; /* [npair][n] */
    double *loss;         /* [n + 1][causal pairs]: loss sums on the query word, base then each head */
    DepsAlignSums *align; /* [nsent][n] each sentence's dependency-alignment sums */
} Pass;

double deps_pair_attention(const DepsData *d, const DepsPair *pr, const float *A, int Tb,
                           int *right)
{
    size_t w0 = d->c->sent[pr->sent].word0;
    const float *row = A + (size_t)d->tok1[w0 + pr->query] * Tb;
    double best = -1.0, on_key = 0.0;
    uint32_t arg = 0;
    for (uint32_t j = 0; j < pr->query; j++) {
        if (d->tok0[w0 + j] < 0)
            continue;
        double s = 0.0;
        for (int32_t t = d->tok0[w0 + j]; t <= d->tok1[w0 + j]; t++)
            s += row[t];
        if (s > best) {
            best = s;
            arg = j;
        }
        if (j == pr->key)
            on_key = s;
    }
    if (right)
        *right = arg == pr->key;
    return on_key;
}

/* Pair p's attention in one head's matrix A (rows of Tb), and whether it is right. */
static void score_pair(Pass *ps, size_t p, int k, const float *A, int Tb)
{
    int right;
    ps->attn[p * (size_t)ps->n + k] = (float)deps_pair_attention(ps->d, &ps->d->pair[p], A, Tb,
                                                                 &right);
    ps->right[p * (size_t)ps->n + k] = (unsigned char)right;
}

/* One batch: the sentences order[0..B), padded at their end to the longest
 * (a causal row never sees what follows it). With `which` < 0 the attention of
 * every pair is scored; the loss sums go to ps->loss row which + 1 for the
 * causal pairs (below ncausal). */
static void run_batch(Pass *ps, const size_t *order, int B, const unsigned char *on, int which,
                      size_t ncausal)
{
    const DepsData *d = ps->d;
    int Tb = 0;
    for (int b = 0; b < B; b++)
        if ((int)d->wlen[order[b]] > Tb)
            Tb = (int)d->wlen[order[b]];
    for (int b = 0; b < B; b++) {
        size_t s = order[b];
        for (int t = 0; t < Tb; t++) {
            int in = t < (int)d->wlen[s];
            ps->x[b * Tb + t] = in ? d->ids[d->win0[s] + t] : 0;
            ps->tg[b * Tb + t] = in ? d->ids[d->win0[s] + t + 1] : 0;
        }
    }
    PassOptions po = {.head_on = on};
    gpt_forward(ps->m, &ps->a, ps->x, ps->tg, B, Tb, &po);
    int H = ps->m->cfg.H;
    for (int b = 0; b < B; b++) {
        size_t s = order[b], w0 = d->c->sent[s].word0;
        for (int k = 0; which < 0 && k < ps->n; k++)
            deps_align_window(d, s, heads_att(&ps->a, k / H, b, k % H, Tb), Tb,
                              &ps->align[s * (size_t)ps->n + k]);
        for (size_t p = d->pair0[s]; p < d->pair0[s + 1]; p++) {
            if (which < 0)
                for (int k = 0; k < ps->n; k++)
                    score_pair(ps, p, k, heads_att(&ps->a, k / H, b, k % H, Tb), Tb);
            if (p >= ncausal)
                continue;
            const DepsPair *pr = &d->pair[p];
            double sum = 0.0;
            for (int32_t t = d->tok0[w0 + pr->query]; t <= d->tok1[w0 + pr->query]; t++)
                sum += ps->a.losses[(size_t)b * Tb + t - 1];
            ps->loss[(size_t)(which + 1) * ncausal + p] = sum;
        }
    }
}

/* All batches of order[0..count): up to Bcap sentences each. */
static void run_pass(Pass *ps, const size_t *order, size_t count, const unsigned char *on,
                     int which, size_t ncausal)
{
    for (size_t i = 0; i < count; i += (size_t)ps->Bcap) {
        int B = count - i < (size_t)ps->Bcap ? (int)(count - i) : ps->Bcap;
        run_batch(ps, order + i, B, on, which, ncausal);
    }
}

/* Sorting keys: a window's length, then its sentence (both below 2^32). */
static int by_key(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* order[0..n) sorted by window length, ties in file order. */
static int sort_by_length(const DepsData *d, size_t *order, size_t n)
{
    uint64_t *key = malloc((n ? n : 1) * sizeof *key);
    if (!key)
        return -1;
    for (size_t i = 0; i < n; i++)
        key[i] = (uint64_t)d->wlen[order[i]] << 32 | (uint64_t)order[i];
    qsort(key, n, sizeof *key, by_key);
    for (size_t i = 0; i < n; i++)
        order[i] = (size_t)(key[i] & 0xffffffffu);
    free(key);
    return 0;
}

/* The scored sentences, the causal ones (the first holding up to causal_tokens
 * tokens, at least one) first, each group by length so batches pad little. */
static size_t *batch_order(const DepsData *d, size_t causal_tokens, size_t *count, size_t *ncausal,
                           size_t *causal_pairs, size_t *causal_tok)
{
    size_t nsent = d->c->nsent, k = 0, tokens = 0;
    size_t *order = malloc((nsent ? nsent : 1) * sizeof *order);
    if (!order)
        return NULL;
    *causal_pairs = 0;
    for (size_t s = 0; s < nsent; s++) {
        if (!d->wlen[s])
            continue;
        if (k > 0 && tokens + d->wlen[s] > causal_tokens)
            break;
        tokens += d->wlen[s];
        order[k++] = s;
        *causal_pairs = d->pair0[s + 1];
    }
    *ncausal = k;
    *causal_tok = tokens;
    for (size_t s = k ? order[k - 1] + 1 : 0; s < nsent; s++)
        if (d->wlen[s])
            order[k++] = s;
    *count = k;
    if (sort_by_length(d, order, *ncausal) ||
        sort_by_length(d, order + *ncausal, k - *ncausal)) {
        free(order);
        return NULL;
    }
    return order;
}

/* Pair sums into score[rel][dir] and score[all][dir]. */
static int alloc_scores(DepsResult *res)
{
    res->score = calloc(res->nrel * DEPS_DIRS, sizeof *res->score);
    if (!res->score)
        return -1;
    for (size_t i = 0; i < res->nrel * DEPS_DIRS; i++) {
        DepsScore *sc = &res->score[i];
        sc->acc = calloc((size_t)res->n, sizeof(double));
        sc->attn = calloc((size_t)res->n, sizeof(double));
        sc->cost = calloc((size_t)res->n, sizeof(double));
        sc->best = -1;
        if (!sc->acc || !sc->attn || !sc->cost)
            return -1;
    }
    return 0;
}

/* 1 when the earlier word of most tokens (ties: the first) is pair p's key. */
static int uniform_right(const DepsData *d, const DepsPair *pr)
{
    size_t w0 = d->c->sent[pr->sent].word0;
    int32_t most = 0;
    uint32_t arg = 0;
    for (uint32_t j = 0; j < pr->query; j++) {
        int32_t n = d->tok0[w0 + j] < 0 ? 0 : d->tok1[w0 + j] - d->tok0[w0 + j] + 1;
        if (n > most) {
            most = n;
            arg = j;
        }
    }
    return arg == pr->key;
}

/* Accuracy, attention, the baselines and the best head. */
static void finish_scores(DepsResult *res, const DepsData *d, const Pass *ps,
                          const unsigned char *eligible)
{
    size_t (*hist)[DEPS_MAX_OFFSET + 1] = calloc(res->nrel * DEPS_DIRS, sizeof *hist);
    for (size_t p = 0; p < d->npair; p++) {
        const DepsPair *pr = &d->pair[p];
        uint32_t dist = pr->query - pr->key;
        int uni = uniform_right(d, pr);
        size_t idx[2] = {(size_t)pr->rel * DEPS_DIRS + pr->dir,
                         (res->nrel - 1) * DEPS_DIRS + pr->dir};
        for (int i = 0; i < 2; i++) {
            DepsScore *sc = &res->score[idx[i]];
            sc->pairs++;
            sc->uniform_acc += uni;
            for (int k = 0; k < res->n; k++) {
                sc->acc[k] += ps->right[p * (size_t)res->n + k];
                sc->attn[k] += ps->attn[p * (size_t)res->n + k];
            }
            if (hist && dist <= DEPS_MAX_OFFSET)
                hist[idx[i]][dist]++;
        }
    }
    for (size_t i = 0; i < res->nrel * DEPS_DIRS; i++) {
        DepsScore *sc = &res->score[i];
        if (!sc->pairs)
            continue;
        sc->uniform_acc /= (double)sc->pairs;
        for (int k = 0; k < res->n; k++) {
            sc->acc[k] /= (double)sc->pairs;
            sc->attn[k] /= (double)sc->pairs;
            if (eligible[k] && (sc->best < 0 || sc->acc[k] > sc->acc[sc->best]))
                sc->best = k;
        }
        size_t most = 0;
        for (int o = 1; hist && o <= DEPS_MAX_OFFSET; o++)
            if (o == 1 || hist[i][o] > most) {
                most = hist[i][o];
                sc->offset = o;
            }
        sc->offset_acc = (double)most / (double)sc->pairs;
    }
    free(hist);
}

/* The standard error of the paired differences right_best - right_offset, and
 * whether the best head's margin exceeds it. */
static void finish_margins(DepsResult *res, const DepsData *d, const Pass *ps)
{
    double *s1 = calloc(res->nrel * DEPS_DIRS, sizeof(double));
    double *s2 = calloc(res->nrel * DEPS_DIRS, sizeof(double));
    for (size_t p = 0; s1 && s2 && p < d->npair; p++) {
        const DepsPair *pr = &d->pair[p];
        size_t idx[2] = {(size_t)pr->rel * DEPS_DIRS + pr->dir,
                         (res->nrel - 1) * DEPS_DIRS + pr->dir};
        for (int i = 0; i < 2; i++) {
            const DepsScore *sc = &res->score[idx[i]];
            if (sc->best < 0)
                continue;
            double x = (double)ps->right[p * (size_t)res->n + sc->best] -
                       (double)(pr->query - pr->key == (uint32_t)sc->offset);
            s1[idx[i]] += x;
            s2[idx[i]] += x * x;
        }
    }
    for (size_t i = 0; s1 && s2 && i < res->nrel * DEPS_DIRS; i++) {
        DepsScore *sc = &res->score[i];
        double n = (double)sc->pairs;
        if (sc->best < 0 || sc->pairs < 2)
            continue;
        double mean = s1[i] / n, var = (s2[i] - n * mean * mean) / (n - 1.0);
        sc->se = var > 0 ? sqrt(var / n) : 0.0;
        sc->beats = sc->acc[sc->best] - sc->offset_acc > sc->se;
    }
    free(s1);
    free(s2);
}

/* Each relation's loss on its causal pairs' query words, and each head's cost. */
static void finish_costs(DepsResult *res, const DepsData *d, const Pass *ps, size_t ncausal,
                         const unsigned char *eligible)
{
    for (size_t p = 0; p < ncausal; p++) {
        const DepsPair *pr = &d->pair[p];
        size_t w = d->c->sent[pr->sent].word0 + pr->query;
        size_t ntok = (size_t)(d->tok1[w] - d->tok0[w] + 1);
        size_t idx[2] = {(size_t)pr->rel * DEPS_DIRS + pr->dir,
                         (res->nrel - 1) * DEPS_DIRS + pr->dir};
        for (int i = 0; i < 2; i++) {
            DepsScore *sc = &res->score[idx[i]];
            sc->loss_pairs++;
            sc->loss_tokens += ntok;
            sc->loss += ps->loss[p];
            for (int k = 0; k < res->n; k++)
                sc->cost[k] += ps->loss[(size_t)(k + 1) * ncausal + p];
        }
    }
    for (size_t i = 0; i < res->nrel * DEPS_DIRS; i++) {
        DepsScore *sc = &res->score[i];
        if (!sc->loss_tokens)
            continue;
        double base = sc->loss;
        sc->loss = base / (double)sc->loss_tokens;
        for (int k = 0; k < res->n; k++)
            sc->cost[k] = eligible[k] && base > 0 ? (sc->cost[k] - base) / base : 0.0;
    }
}

int deps_measure(DepsResult *res, const DepsData *d, const Model *m, const unsigned char *head_on,
                 const unsigned char *eligible, size_t causal_tokens, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    int L = m->cfg.L, H = m->cfg.H, T = d->T;
    res->n = L * H;
    res->nrel = d->c->nrel + 1;
    res->rel_name = (const char *const *)d->c->rel_name;
    res->sentences = d->c->nsent;
    res->scored = d->c->nsent - d->over_context;
    res->pairs = d->npair;
    res->roots = d->roots;
    res->over_context = d->over_context;
    res->pairs_over_context = d->pairs_over_context;
    res->pairs_no_token = d->pairs_no_token;
    res->T = T;
    Pass ps = {.d = d, .m = m, .n = res->n};
    size_t per = (size_t)res->n * T * T * 2, count = 0, ncausal_sent = 0, ncausal = 0;
    ps.Bcap = DEPS_ATT_FLOATS / per < 1 ? 1
              : DEPS_ATT_FLOATS / per > DEPS_BATCH_MAX ? DEPS_BATCH_MAX
                                                       : (int)(DEPS_ATT_FLOATS / per);
    size_t *order = batch_order(d, causal_tokens, &count, &ncausal_sent, &ncausal,
                                &res->causal_tokens);
    res->causal_sentences = ncausal_sent;
    ps.x = calloc((size_t)ps.Bcap * T, sizeof(int));
    ps.tg = calloc((size_t)ps.Bcap * T, sizeof(int));
    ps.attn = calloc(d->npair * (size_t)res->n + 1, sizeof(float));
    ps.right = calloc(d->npair * (size_t)res->n + 1, 1);
    ps.loss = calloc((size_t)(res->n + 1) * ncausal + 1, sizeof(double));
    ps.align = calloc(d->c->nsent * (size_t)res->n + 1, sizeof *ps.align);
    unsigned char *on = calloc((size_t)res->n, 1);
    int rc = -1;
    if (!order || !ps.x || !ps.tg || !ps.attn || !ps.right || !ps.loss || !ps.align || !on ||
        alloc_scores(res)) {
        err_set(err, errlen, "out of memory scoring %zu dependencies", d->npair);
        goto done;
    }
    if (acts_init(&ps.a, &m->cfg, ps.Bcap, T, 0, err, errlen))
        goto done;
    run_pass(&ps, order, count, head_on, -1, ncausal);
    for (int k = 0; k < res->n; k++) {
        if (!eligible[k])
            continue;
        for (int h = 0; h < res->n; h++)
            on[h] = (!head_on || head_on[h]) && h != k;
        run_pass(&ps, order, ncausal_sent, on, k, ncausal);
    }
    acts_free(&ps.a);
    finish_scores(res, d, &ps, eligible);
    finish_margins(res, d, &ps);
    finish_costs(res, d, &ps, ncausal, eligible);
    if (deps_align_finish(&res->align, d, ps.align, L, H, eligible)) {
        err_set(err, errlen, "out of memory finishing the dependency alignment of %d heads",
                res->n);
        goto done;
    }
    rc = 0;
done:
    if (rc)
        deps_result_free(res);
    free(order);
    free(ps.x);
    free(ps.tg);
    free(ps.attn);
    free(ps.right);
    free(ps.loss);
    free(ps.align);
    free(on);
    return rc;
}

int deps_serves(const DepsScore *sc, int k)
{
    return k >= 0 && sc->attn[k] > HEADS_REL_BAR && sc->loss_tokens > 0 &&
           sc->cost[k] >= HEADS_NEEDED_SHARE;
}
