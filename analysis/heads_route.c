/* heads_route: the routing sums and what heads_route_finish makes of them
 * (heads_route.h). Sums run head by head over the positions in order, one
 * thread each, so the numbers do not depend on the thread count. */
#include "analysis/heads_route.h"

#include <stdlib.h>
#include <string.h>

int route_sums_init(RouteSums *s, int n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->chosen = calloc((size_t)n, sizeof(double));
    s->weight = calloc((size_t)n, sizeof(double));
    s->rel_chosen = calloc((size_t)HEADS_REL_COUNT * n, sizeof(double));
    if (!s->chosen || !s->weight || !s->rel_chosen) {
        route_sums_free(s);
        return -1;
    }
    return 0;
}

void route_sums_free(RouteSums *s)
{
    free(s->chosen);
    free(s->weight);
    free(s->rel_chosen);
    memset(s, 0, sizeof *s);
}

/* Head k's choice at position t of the batch: route_on is (L, N, H). */
static const float *route_at(const float *base, const Activations *a, int k, size_t t)
{
    int H = (int)a->H;
    return base + (size_t)(k / H) * a->N * H + t * H + k % H;
}

void heads_add_route(RouteSums *s, const Activations *a, int B, int T)
{
    size_t NT = (size_t)B * T;
    for (int k = 0; k < s->n; k++)
        for (size_t t = 0; t < NT; t++)
            if (*route_at(a->route_on, a, k, t) != 0.0f) {
                s->chosen[k] += 1.0;
                s->weight[k] += *route_at(a->route_weight, a, k, t);
            }
    s->tokens += (double)NT;
}

void heads_add_route_relation(RouteSums *s, int q, const Activations *a, const int *key, int B,
                              int T)
{
    int from = key ? heads_skip(T) : heads_rare_first_row(T);
    double *chosen = s->rel_chosen + (size_t)q * s->n;
    for (int b = 0; b < B; b++)
        for (int i = from; i < T; i++) {
            size_t t = (size_t)b * T + i;
            if (key && key[t] < 0)
                continue;
            s->rows[q] += 1.0;
            for (int k = 0; k < s->n; k++)
                if (*route_at(a->route_on, a, k, t) != 0.0f)
                    chosen[k] += 1.0;
        }
}

int heads_routing_init(HeadsRouting *r, int L, int H)
{
    memset(r, 0, sizeof *r);
    int n = L * H;
    r->L = L;
    r->H = H;
    r->n = n;
    r->share = calloc((size_t)n, sizeof(double));
    r->weight = calloc((size_t)n, sizeof(double));
    r->rel_share = calloc((size_t)HEADS_REL_COUNT * n, sizeof(double));
    if (!r->share || !r->weight || !r->rel_share) {
        heads_routing_free(r);
        return -1;
    }
    return 0;
}

void heads_routing_free(HeadsRouting *r)
{
    free(r->share);
    free(r->weight);
    free(r->rel_share);
    memset(r, 0, sizeof *r);
}

/* The head of largest x[k] among those with pick(st, k, q) (NULL: all), ties to
 * the lower index; -1 when none is picked. */
static int largest(const double *x, int n, const HeadStats *st, int q,
                   int (*pick)(const HeadStats *, int))
{
    int best = -1;
    for (int k = 0; k < n; k++)
        if ((!pick || pick(&st[k], q)) && (best < 0 || x[k] > x[best]))
            best = k;
    return best;
}

void heads_route_finish(HeadsRouting *r, const RouteSums *s, const HeadStats *st, int K,
                        int served)
{
    int n = r->n;
    r->K = K;
    r->served = served;
    r->tokens = s->tokens;
    for (int k = 0; k < n; k++) {
        r->share[k] = s->tokens > 0 ? s->chosen[k] / s->tokens : 0.0;
        r->weight[k] = s->chosen[k] > 0 ? s->weight[k] / s->chosen[k] : 0.0;
    }
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        double *share = r->rel_share + (size_t)q * n;
        const double *chosen = s->rel_chosen + (size_t)q * n;
        r->rows[q] = s->rows[q];
        for (int k = 0; k < n; k++)
            share[k] = s->rows[q] > 0 ? chosen[k] / s->rows[q] : 0.0;
        r->top[q] = s->rows[q] > 0 ? largest(share, n, st, q, NULL) : -1;
        r->nserve[q] = 0;
        for (int k = 0; served && k < n; k++)
            r->nserve[q] += heads_serves(&st[k], q);
        r->serve_top[q] = served && s->rows[q] > 0 ? largest(share, n, st, q, heads_serves) : -1;
        r->top_serves[q] = served && r->top[q] >= 0 && heads_serves(&st[r->top[q]], q);
    }
}
