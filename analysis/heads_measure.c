/* heads_measure: the stages of heads_measure.h in their one order, and the
 * windows and probes they read. Every sum runs in the order the per-row
 * functions give it (heads.c, heads_relations.c, pairs.c, compromise.c), over
 * the windows in order, so the numbers do not depend on who calls or on the
 * thread count. The windows and probes are heads_windows.c's. */
#include "analysis/heads_measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/gates.h"
#include "util/errbuf.h"

static int oom(char *err, size_t errlen, const char *what)
{
    return err_set(err, errlen, "out of memory for %s", what);
}

static void *zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

static void say(const HeadsMeasureIn *in, int event, int k, int n)
{
    if (in->progress)
        in->progress(in->ctx, event, k, n);
}

int heads_measure_init(HeadsMeasured *r, int L, int H, int keep_text_T, int keep_probe_T,
                       char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    int n = L * H;
    r->L = L;
    r->H = H;
    r->n = n;
    r->st = zalloc((size_t)n, sizeof *r->st);
    r->jsd = zalloc((size_t)n * n, sizeof(double));
    r->ablated = zalloc((size_t)n, sizeof *r->ablated);
    r->layer_eff = zalloc((size_t)L, sizeof(double));
    if (keep_text_T)
        r->att_text = zalloc((size_t)n * keep_text_T * keep_text_T, sizeof(float));
    if (keep_probe_T)
        r->att_probe = zalloc((size_t)n * keep_probe_T * keep_probe_T, sizeof(float));
    r->keep_T = keep_text_T;
    if (!r->st || !r->jsd || !r->ablated || !r->layer_eff || (keep_text_T && !r->att_text) ||
        (keep_probe_T && !r->att_probe) || heads_routing_init(&r->route, L, H) ||
        route_sums_init(&r->route_sums, n)) {
        heads_measure_free(r);
        return oom(err, errlen, "the head measures");
    }
    return 0;
}

void heads_measure_free(HeadsMeasured *r)
{
    free(r->st);
    free(r->jsd);
    free(r->ablated);
    free(r->layer_eff);
    free(r->att_text);
    free(r->att_probe);
    free(r->head_mean);
    free(r->prune_order);
    free(r->prune_loss);
    compromise_sums_free(&r->csums);
    compromise_free(&r->compromise);
    heads_routing_free(&r->route);
    route_sums_free(&r->route_sums);
    free(r->route_text);
    memset(r, 0, sizeof *r);
}

/* 1 when the routing stage sums over these passes: it was asked for and the
 * model routes (its forward fills the route arrays). */
static int routing(const HeadsMeasureIn *in, const Activations *a)
{
    return (in->what & HEADS_ROUTING) && a->route_on;
}

/* K of the routed model: the model's, or (activations a training step filled,
 * no model given) the heads chosen at layer 0's first position. */
static int route_k(const HeadsMeasureIn *in, const Activations *a)
{
    if (in->m)
        return in->m->cfg.route_k;
    int K = 0;
    for (size_t h = 0; h < a->H; h++)
        K += a->route_on[h] != 0.0f;
    return K;
}

/* Copies window 0's choices (batch row 0) into dst[L][T][H]. */
static void keep_route(unsigned char *dst, const Activations *a, int L, int H, int T)
{
    for (int l = 0; l < L; l++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                dst[((size_t)l * T + t) * H + h] =
                    a->route_on[(size_t)l * a->N * H + (size_t)t * H + h] != 0.0f;
}

/* ---- the stages ---- */

/* Copies every head's attention for batch row 0 into dst[n][T][T]. */
static void keep_heatmaps(float *dst, const Activations *a, int n, int H, int T)
{
    for (int k = 0; k < n; k++)
        memcpy(dst + (size_t)k * T * T, heads_att(a, k / H, 0, k % H, T),
               (size_t)T * T * sizeof(float));
}

/* The relations on B scored windows tokens[B][T] just run through a (keys given
 * for one window, else found by each relation's rule and, with in->starts, the
 * planted ones at those starts), with their minimal pairs into ps and, when
 * route is not NULL, the routers' choices at their rows; no loss. */
static int window_relations(HeadSums *sums, RelationSums *rs, PairSums *ps, RouteSums *route,
                            const HeadsMeasureIn *in, const Activations *a, const int *tokens,
                            int w0, int B, int T, char *err, size_t errlen)
{
    size_t NT = (size_t)B * T;
    int *key[HEADS_REL_COUNT] = {0}, *first[HEADS_REL_COUNT] = {0};
    uint64_t *own = in->counts ? NULL : zalloc((size_t)in->tok->V, sizeof *own);
    const uint64_t *counts = in->counts ? in->counts : own;
    int with_planted = in->planted && in->starts && in->window_relations > HEADS_REL_TEXT;
    int rc = 0;
    if (!in->key)
        for (int q = 0; q < HEADS_REL_COUNT; q++) {
            key[q] = malloc(NT * sizeof(int));
            first[q] = malloc(NT * sizeof(int));
            if (!key[q] || !first[q])
                rc = -1;
        }
    if (rc || !counts) {
        rc = oom(err, errlen, "relation metrics");
        goto done;
    }
    if (with_planted)
        planted_keys_at(key, first, in->planted, in->starts + w0, B, T);
    for (int q = 0; q < in->window_relations; q++) {
        if (heads_rel_table[q].key == HEADS_KEY_RARE) {
            if (own)
                for (size_t t = 0; t < NT; t++)
                    if (tokens[t] >= 0 && tokens[t] < in->tok->V)
                        own[tokens[t]]++;
            if (heads_add_rare(sums, &rs[q], a, tokens, NULL, counts, NULL, B, T)) {
                rc = oom(err, errlen, "relation metrics");
                goto done;
            }
            if (route)
                heads_add_route_relation(route, q, a, NULL, B, T);
        } else if (in->key) {
            heads_add_relation(sums, &rs[q], q, a, in->key[q], in->first[q], NULL, B, T);
            if (route)
                heads_add_route_relation(route, q, a, in->key[q], B, T);
        } else if (q >= HEADS_REL_TEXT || heads_keys_find(key[q], first[q], q, tokens, in->tok, B,
                                                          T)) {
            heads_add_relation(sums, &rs[q], q, a, key[q], NULL, NULL, B, T);
            if (route)
                heads_add_route_relation(route, q, a, key[q], B, T);
        }
    }
    if (with_planted)
        pairs_add_at(ps, a, in->planted->pair, in->planted->npair, in->starts + w0, B, T);
done:
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        free(key[q]);
        free(first[q]);
    }
    free(own);
    return rc;
}

/* Row statistics, JSD and (HEADS_WINDOW_RELATIONS) relations over the scored
 * windows, then the probes; fills the row, probe and relation fields of r->st
 * and the mean JSD. */
static int measure_attention(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a,
                             char *err, size_t errlen)
{
    const HeadsWindows *w = in->w;
    int T = w->T, Bcap = (int)a->B, rc = 0;
    HeadSums *sums = zalloc((size_t)r->n, sizeof *sums);
    PairSums ps[PAIRS_SETS] = {{0}};
    if (!sums)
        return oom(err, errlen, "head metrics");
    PassOptions po = {.head_on = in->head_on};
    /* The routing is summed here only when no relation pass follows. */
    RouteSums *route = routing(in, a) && !(in->what & HEADS_RELATIONS) ? &r->route_sums : NULL;
    if (in->what & HEADS_ROWS) {
        say(in, HEADS_EV_ATTENTION, 0, w->nwin);
        for (int w0 = 0; w0 < w->nwin; w0 += Bcap) {
            int B = w->nwin - w0 < Bcap ? w->nwin - w0 : Bcap;
            size_t off = (size_t)w0 * T;
            if (!in->filled)
                gpt_forward(in->m, a, w->in + off, NULL, B, T, &po);
            heads_add_rows(sums, a, w->delim ? w->delim + off : NULL, w->match + off, B, T);
            if (route)
                heads_add_route(route, a, B, T);
            if ((in->what & HEADS_WINDOW_RELATIONS) &&
                window_relations(sums, r->rsums, ps, route, in, a, w->in + off, w0, B, T, err,
                                 errlen)) {
                rc = -1;
                goto done;
            }
            if (heads_add_jsd(r->jsd, a, B, T, err, errlen)) {
                rc = -1;
                goto done;
            }
            if (w0 == 0 && r->att_text)
                keep_heatmaps(r->att_text, a, r->n, r->H, T);
            if (w0 == 0 && r->route_text && T == r->keep_T)
                keep_route(r->route_text, a, r->L, r->H, T);
        }
        double rows = sums[0].rows;
        for (size_t i = 0; i < (size_t)r->n * r->n; i++)
            r->jsd[i] = rows > 0 ? r->jsd[i] / rows : 0.0;
        if (in->what & HEADS_WINDOW_RELATIONS)
            for (int q = 0; q < PAIRS_SETS; q++)
                pairs_finish(&r->pairs[q], &ps[q]);
    }
    if (in->what & HEADS_PROBE) {
        int Tp = 2 * w->P, per = in->probe_batch > 0 ? in->probe_batch : Bcap;
        for (int p0 = 0; p0 < w->nprobe; p0 += per) {
            int B = w->nprobe - p0 < per ? w->nprobe - p0 : per;
            gpt_forward(in->m, a, w->probe + (size_t)p0 * Tp, NULL, B, Tp, &po);
            heads_add_probe(sums, a, B, w->P);
            if (p0 == 0 && r->att_probe)
                keep_heatmaps(r->att_probe, a, r->n, r->H, Tp);
        }
    }
    heads_finish(r->st, sums, r->n);
done:
    free(sums);
    return rc;
}

/* One pass over nwin consecutive windows of the text with the heads in head_on
 * active: every relation's keys, the heads' attention on them into sums (may be
 * NULL: a scratch is used), the rows and loss into rsums, the minimal pairs'
 * scores into ps, when cs is not NULL the rows that carry two relations' keys
 * into cs and, when route is not NULL, the routers' choices at every position
 * and at every relation's rows into route. */
static int relation_pass(HeadSums *sums, RelationSums *rsums, PairSums *ps, CompromiseSums *cs,
                         RouteSums *route, const HeadsMeasured *r, const HeadsMeasureIn *in,
                         Activations *a, int nwin, const unsigned char *head_on, char *err,
                         size_t errlen)
{
    int T = in->text_T, Bcap = (int)a->B, rc = 0;
    size_t NB = (size_t)Bcap * T;
    const TokenId *ids = in->ids;
    HeadSums *scratch = sums ? NULL : zalloc((size_t)r->n, sizeof *scratch);
    int *x = zalloc(NB, sizeof(int)), *tg = zalloc(NB, sizeof(int));
    int *key[HEADS_REL_COUNT] = {0}, *first[HEADS_REL_COUNT] = {0}; /* [Bcap][T], -1: none */
    int ok = x && tg && (sums || scratch);
    if (!in->key)
        for (int q = 0; q < HEADS_REL_COUNT; q++) {
            key[q] = zalloc(NB, sizeof(int));
            first[q] = zalloc(NB, sizeof(int));
            ok = ok && key[q] && first[q];
            if (first[q])
                memset(first[q], 0xff, NB * sizeof(int)); /* -1: no first occurrence */
        }
    if (!ok) {
        rc = oom(err, errlen, "the relation pass");
        goto done;
    }
    if (!sums)
        sums = scratch;
    int *const *k_use = in->key ? in->key : key, *const *f_use = in->key ? in->first : first;
    PassOptions po = {.head_on = head_on, .head_mean = r->head_mean};
    size_t next = 0, next_pair = 0;
    for (int w0 = 0; w0 < nwin; w0 += Bcap) {
        int B = nwin - w0 < Bcap ? nwin - w0 : Bcap;
        for (size_t i = 0; i < (size_t)B * T; i++) {
            size_t pos = (size_t)w0 * T + i;
            x[i] = ids[pos];
            tg[i] = ids[pos + 1];
        }
        gpt_forward(in->m, a, x, tg, B, T, &po);
        if (!in->key) {
            for (int q = 0; q < HEADS_REL_COUNT; q++)
                heads_keys_find(key[q], first[q], q, x, in->tok, B, T);
            if (in->planted)
                planted_keys(key, first, in->planted, in->at + (size_t)w0 * T, B, T, &next);
        }
        if (cs)
            compromise_add(cs, a, k_use, B, T);
        if (route)
            heads_add_route(route, a, B, T);
        for (int q = 0; q < HEADS_REL_COUNT; q++) {
            int rare = heads_rel_table[q].key == HEADS_KEY_RARE;
            if (!rare)
                heads_add_relation(sums, &rsums[q], q, a, k_use[q], f_use[q], a->losses, B, T);
            if (route)
                heads_add_route_relation(route, q, a, rare ? NULL : k_use[q], B, T);
        }
        if (heads_add_rare(sums, &rsums[HEADS_REL_RARE], a, x, tg, in->counts, a->losses, B, T)) {
            rc = oom(err, errlen, "the rare relation");
            goto done;
        }
        if (in->planted)
            pairs_add(ps, a, in->planted->pair, in->planted->npair, in->at + (size_t)w0 * T, B, T,
                      &next_pair);
    }
done:
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        free(key[q]);
        free(first[q]);
    }
    free(scratch);
    free(x);
    free(tg);
    return rc;
}

/* The relation pass over in->rel_windows windows: fills r->rsums, r->csums and
 * every head's rel[]. */
static int measure_relations(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a,
                             char *err, size_t errlen)
{
    HeadSums *sums = zalloc((size_t)r->n, sizeof *sums);
    HeadStats *st = zalloc((size_t)r->n, sizeof *st);
    PairSums ps[PAIRS_SETS] = {{0}};
    compromise_sums_free(&r->csums);
    int rc = !sums || !st || compromise_sums_init(&r->csums, r->n)
                 ? oom(err, errlen, "the relation pass")
                 : relation_pass(sums, r->rsums, ps, &r->csums,
                                 routing(in, a) ? &r->route_sums : NULL, r, in, a, in->rel_windows,
                                 in->head_on, err, errlen);
    if (rc == 0) {
        heads_finish(st, sums, r->n);
        for (int k = 0; k < r->n; k++)
            memcpy(r->st[k].rel, st[k].rel, sizeof st[k].rel);
    }
    free(sums);
    free(st);
    return rc;
}

/* The mean loss of the importance windows with the heads in `on` active: w's,
 * or (loss_text) the text's causal windows, text[] holding their tokens and
 * the one after. */
static double importance_loss(const HeadsMeasureIn *in, Activations *a, const int *text,
                              const unsigned char *on)
{
    if (text)
        return heads_loss(in->m, a, text, text + 1, in->causal_windows, in->text_T, on);
    return heads_loss(in->m, a, in->w->in, in->w->tg, in->w->nwin, in->w->T, on);
}

/* The base loss and the loss rise of each head silenced alone; with
 * HEADS_GATE_GRAD the gate gradient too. Sets masked (and closed, for a model
 * with gates, when the gate gradient is asked for: the --heads table's view). */
static int measure_importance(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a,
                              char *err, size_t errlen)
{
    int n = r->n;
    unsigned char *on = zalloc((size_t)n, 1);
    size_t nt = in->loss_text ? (size_t)in->causal_windows * in->text_T + 1 : 0;
    int *text = nt ? zalloc(nt, sizeof(int)) : NULL;
    if (!on || (nt && !text)) {
        free(on);
        free(text);
        return oom(err, errlen, "head importance");
    }
    for (size_t t = 0; t < nt; t++)
        text[t] = in->ids[t];
    const float *log_alpha = in->m->w.log_alpha;
    for (int k = 0; k < n; k++) {
        r->st[k].masked = in->head_on && !in->head_on[k];
        if (in->what & HEADS_GATE_GRAD)
            r->st[k].closed = log_alpha && gate_eval(log_alpha[k], NULL) == 0.0f;
    }
    r->base_loss = importance_loss(in, a, text, in->head_on);
    for (int k = 0; k < n; k++) {
        if (in->unmeasured_nan)
            r->st[k].delta_loss = NAN;
        if (r->st[k].masked)
            continue;
        say(in, HEADS_EV_ABLATE_BEGIN, k, n);
        for (int q = 0; q < n; q++)
            on[q] = !r->st[q].masked && q != k;
        r->st[k].delta_loss = importance_loss(in, a, text, on) - r->base_loss;
        say(in, HEADS_EV_ABLATE_DONE, k, n);
    }
    say(in, HEADS_EV_ABLATE_END, n, n);
    free(on);
    free(text);
    if (!(in->what & HEADS_GATE_GRAD))
        return 0;
    double *g = zalloc((size_t)n, sizeof(double)), *gw = zalloc((size_t)n, sizeof(double));
    int rc = !g || !gw ? oom(err, errlen, "the gate gradient")
                       : heads_gate_grad(g, gw, in->m, a, in->w->in, in->w->tg, in->w->nwin,
                                         in->w->T, in->head_on, err, errlen);
    for (int k = 0; rc == 0 && k < n; k++) {
        r->st[k].grad = g[k];
        r->st[k].grad_window = gw[k];
    }
    free(g);
    free(gw);
    return rc;
}

/* --mean-ablate: every head's output averaged over the causal windows'
 * positions, all heads on, into r->head_mean[n][D] (sums in window order). */
static int measure_head_means(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a,
                              char *err, size_t errlen)
{
    int T = in->text_T, Bcap = (int)a->B, D = in->m->cfg.D, A = r->H * D;
    double *sum = zalloc((size_t)r->n * D, sizeof(double));
    int *x = zalloc((size_t)Bcap * T, sizeof(int));
    free(r->head_mean);
    r->head_mean = zalloc((size_t)r->n * D, sizeof(float));
    if (!sum || !x || !r->head_mean) {
        free(sum);
        free(x);
        return oom(err, errlen, "the heads' mean outputs");
    }
    size_t rows = 0;
    for (int w0 = 0; w0 < in->causal_windows; w0 += Bcap) {
        int B = in->causal_windows - w0 < Bcap ? in->causal_windows - w0 : Bcap;
        for (size_t i = 0; i < (size_t)B * T; i++)
            x[i] = in->ids[(size_t)w0 * T + i];
        gpt_forward(in->m, a, x, NULL, B, T, NULL);
        for (int l = 0; l < r->L; l++)
            for (size_t t = 0; t < (size_t)B * T; t++) {
                const float *y = a->atty + (size_t)l * a->N * a->A + t * A;
                for (int j = 0; j < A; j++)
                    sum[(size_t)l * A + j] += y[j];
            }
        rows += (size_t)B * T;
    }
    for (size_t i = 0; i < (size_t)r->n * D; i++)
        r->head_mean[i] = (float)(sum[i] / (double)rows);
    free(sum);
    free(x);
    return 0;
}

/* The causal pass's scores with the heads in head_on active: every pair set's
 * and every relation's loss on its tokens, over in->causal_windows windows. */
static int causal_score(CausalScore *cs, const HeadsMeasured *r, const HeadsMeasureIn *in,
                        Activations *a, const unsigned char *head_on, char *err, size_t errlen)
{
    RelationSums rs[HEADS_REL_COUNT] = {{0}};
    PairSums ps[PAIRS_SETS] = {{0}};
    if (relation_pass(NULL, rs, ps, NULL, NULL, r, in, a, in->causal_windows, head_on, err,
                      errlen))
        return -1;
    for (int s = 0; s < PAIRS_SETS; s++)
        pairs_finish(&cs->pair[s], &ps[s]);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        cs->rel_loss[q] = rs[q].loss_rows > 0 ? rs[q].loss / rs[q].loss_rows : 0.0;
    return 0;
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
static int needed_set(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a, int q,
                      char *err, size_t errlen)
{
    int n = r->n, *order = zalloc((size_t)n, sizeof(int)), k = 0, rc = 0;
    unsigned char *on = zalloc((size_t)n, 1);
    if (!order || !on) {
        free(order);
        free(on);
        return oom(err, errlen, "the needed sets");
    }
    const HeadStats *st = r->st;
    for (int h = 0; h < n; h++)
        if (!st[h].masked && !st[h].closed && st[h].cost[q] > 0)
            order[k++] = h;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && st[order[j]].cost[q] > st[order[j - 1]].cost[q]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int h = 0; h < n; h++)
        on[h] = !in->head_on || in->head_on[h];
    NeededSet *ns = &r->needed[q];
    for (int i = 0; i < k && i < NEEDED_SET_MAX; i++) {
        on[order[i]] = 0;
        ns->head[ns->n++] = order[i];
        CausalScore x;
        if (causal_score(&x, r, in, a, on, err, errlen)) {
            rc = -1;
            break;
        }
        ns->share = causal_cost(&r->base, &x, q);
        if (ns->share >= HEADS_NEEDED_SET_SHARE) {
            ns->reached = 1;
            break;
        }
    }
    free(on);
    free(order);
    return rc;
}

/* Minimal pairs and head ablation per relation: the intact model's scores, each
 * head silenced alone (every head's cost[]) and, with HEADS_NEEDED, each
 * relation's needed head and, for the relations with pairs, its needed set. */
static int measure_causal(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a,
                          char *err, size_t errlen)
{
    int n = r->n;
    if (causal_score(&r->base, r, in, a, in->head_on, err, errlen))
        return -1;
    unsigned char *on = zalloc((size_t)n, 1);
    if (!on)
        return oom(err, errlen, "the causal passes");
    for (int k = 0; k < n; k++) {
        HeadStats *s = &r->st[k];
        if (s->masked)
            continue;
        for (int h = 0; h < n; h++)
            on[h] = (!in->head_on || in->head_on[h]) && h != k;
        if (causal_score(&r->ablated[k], r, in, a, on, err, errlen)) {
            free(on);
            return -1;
        }
        s->costed = 1;
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            s->cost[q] = causal_cost(&r->base, &r->ablated[k], q);
        say(in, HEADS_EV_SILENCE_DONE, k, n);
    }
    say(in, HEADS_EV_SILENCE_END, n, n);
    free(on);
    if (!(in->what & HEADS_NEEDED))
        return 0;
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        int *best = &r->needed_head[q];
        *best = -1;
        for (int k = 0; k < n; k++)
            if (!r->st[k].masked && !r->st[k].closed && r->st[k].cost[q] > 0 &&
                (*best < 0 || r->st[k].cost[q] > r->st[*best].cost[q]))
                *best = k;
        if (r->base.pair[q].pairs > 0 && r->base.pair[q].logit_diff > 0 &&
            needed_set(r, in, a, q, err, errlen))
            return -1;
    }
    return 0;
}

/* Redundancy and type of every head, the effective numbers of heads, the
 * model-level summary and (after the relation pass) the compromise measure. */
static int derive(HeadsMeasured *r, const HeadsMeasureIn *in, char *err, size_t errlen)
{
    int n = r->n, *idx = zalloc((size_t)n, sizeof(int)), k = 0, rc = 0;
    if (!idx)
        return oom(err, errlen, "the effective heads");
    heads_redundancy(r->st, r->jsd, r->L, r->H);
    for (int q = 0; q < n; q++)
        if (!r->st[q].masked)
            idx[k++] = q;
    rc = heads_effective(&r->effective, r->jsd, n, idx, k, err, errlen);
    for (int l = 0; rc == 0 && l < r->L; l++) {
        int kl = 0;
        for (int h = 0; h < r->H; h++)
            if (!r->st[l * r->H + h].masked)
                idx[kl++] = l * r->H + h;
        rc = heads_effective(&r->layer_eff[l], r->jsd, n, idx, kl, err, errlen);
    }
    free(idx);
    if (rc)
        return rc;
    for (int q = 0; q < n; q++)
        r->st[q].type = heads_classify(&r->st[q], in->w->delim_share);
    return 0;
}

/* < 0 when head x goes before head y: by delta loss, ascending, ties by index. */
static int prune_before(const HeadStats *st, int x, int y)
{
    double dx = st[x].delta_loss, dy = st[y].delta_loss;
    if (dx != dy)
        return dx < dy ? -1 : 1;
    return x - y;
}

/* Michel et al. 2019, fig. 3: remove heads least important first (by delta
 * loss), the loss after each removal. */
static int prune_curve(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a, char *err,
                       size_t errlen)
{
    int n = r->n, k = 0;
    unsigned char *on = zalloc((size_t)n, 1);
    free(r->prune_order);
    free(r->prune_loss);
    r->prune_order = zalloc((size_t)n, sizeof(int));
    r->prune_loss = zalloc((size_t)n + 1, sizeof(double));
    if (!on || !r->prune_order || !r->prune_loss) {
        free(on);
        return oom(err, errlen, "the prune curve");
    }
    for (int q = 0; q < n; q++) {
        on[q] = !r->st[q].masked;
        if (on[q])
            r->prune_order[k++] = q;
    }
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && prune_before(r->st, r->prune_order[j - 1], r->prune_order[j]) > 0;
             j--) {
            int t = r->prune_order[j];
            r->prune_order[j] = r->prune_order[j - 1];
            r->prune_order[j - 1] = t;
        }
    r->nprune = k;
    r->prune_loss[0] = r->base_loss;
    for (int s = 1; s <= k; s++) {
        on[r->prune_order[s - 1]] = 0;
        r->prune_loss[s] = heads_loss(in->m, a, in->w->in, in->w->tg, in->w->nwin, in->w->T, on);
    }
    free(on);
    return 0;
}

/* Clears what a run fills, keeping r's buffers. */
static void measured_clear(HeadsMeasured *r)
{
    memset(r->st, 0, (size_t)r->n * sizeof *r->st);
    memset(r->jsd, 0, (size_t)r->n * r->n * sizeof *r->jsd);
    memset(r->ablated, 0, (size_t)r->n * sizeof *r->ablated);
    memset(r->rsums, 0, sizeof r->rsums);
    memset(r->rel, 0, sizeof r->rel);
    memset(r->pairs, 0, sizeof r->pairs);
    memset(&r->base, 0, sizeof r->base);
    memset(r->needed, 0, sizeof r->needed);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        r->needed_head[q] = -1;
    r->base_loss = 0.0;
    r->nprune = 0;
    RouteSums *rs = &r->route_sums;
    rs->tokens = 0.0;
    memset(rs->chosen, 0, (size_t)r->n * sizeof *rs->chosen);
    memset(rs->weight, 0, (size_t)r->n * sizeof *rs->weight);
    memset(rs->rows, 0, sizeof rs->rows);
    memset(rs->rel_chosen, 0, (size_t)HEADS_REL_COUNT * r->n * sizeof *rs->rel_chosen);
    r->route.K = 0;
}

int heads_measure(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a, char *err,
                  size_t errlen)
{
    unsigned what = in->what;
    measured_clear(r);
    if (routing(in, a) && r->keep_T && !r->route_text) {
        r->route_text = zalloc((size_t)r->L * r->keep_T * r->H, 1);
        if (!r->route_text)
            return oom(err, errlen, "the routing");
    }
    if ((what & (HEADS_ROWS | HEADS_PROBE)) && measure_attention(r, in, a, err, errlen))
        return -1;
    if ((what & HEADS_RELATIONS) && measure_relations(r, in, a, err, errlen))
        return -1;
    if ((what & HEADS_IMPORTANCE) && measure_importance(r, in, a, err, errlen))
        return -1;
    if ((what & HEADS_MEAN_ABLATE) && measure_head_means(r, in, a, err, errlen))
        return -1;
    if ((what & HEADS_CAUSAL) && measure_causal(r, in, a, err, errlen))
        return -1;
    if ((what & HEADS_DERIVE) && derive(r, in, err, errlen))
        return -1;
    int nrel = (what & HEADS_RELATIONS) ? HEADS_REL_COUNT
               : (what & HEADS_WINDOW_RELATIONS) ? in->window_relations : 0;
    for (int q = 0; q < nrel; q++)
        heads_relation_finish(&r->rel[q], r->st, &r->rsums[q], q, r->n);
    if (what & HEADS_DERIVE) {
        heads_summarise(&r->sum, r->st, r->jsd, r->L, r->H, r->base_loss);
        if ((what & HEADS_RELATIONS) && compromise_finish(&r->compromise, &r->csums, r->st))
            return oom(err, errlen, "the compromise measure");
    }
    if (routing(in, a))
        heads_route_finish(&r->route, &r->route_sums, r->st, route_k(in, a),
                           (what & HEADS_CAUSAL) != 0);
    if ((what & HEADS_PRUNE) && prune_curve(r, in, a, err, errlen))
        return -1;
    return 0;
}
