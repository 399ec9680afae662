/* compromise: how heads divide their weight among the keys of relations that
 * share a query row; the formulas are in compromise.h and docs/heads.md. */
#include "analysis/compromise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define R HEADS_REL_COUNT

int compromise_sums_init(CompromiseSums *cs, int n)
{
    cs->n = n;
    cs->rows = calloc((size_t)R * R, sizeof *cs->rows);
    cs->att = calloc((size_t)R * R * n * 2, sizeof *cs->att);
    return cs->rows && cs->att ? 0 : -1;
}

void compromise_sums_free(CompromiseSums *cs)
{
    free(cs->rows);
    free(cs->att);
    cs->rows = cs->att = NULL;
}

/* The relations with a key at row r of the windows, as indices into rel (room for
 * R); the rare relation and NULL key arrays are skipped. Returns the count. */
static int keyed(int *rel, int *const *key, size_t r)
{
    int m = 0;
    for (int q = 0; q < R; q++)
        if (heads_rel_table[q].key != HEADS_KEY_RARE && key[q] && key[q][r] >= 0)
            rel[m++] = q;
    return m;
}

void compromise_add(CompromiseSums *cs, const Activations *a, int *const *key, int B, int T)
{
    int H = (int)a->H, n = cs->n, skip = heads_skip(T);
    for (int b = 0; b < B; b++)
        for (int i = skip; i < T; i++) {
            size_t r = (size_t)b * T + i;
            int rel[R], m = keyed(rel, key, r);
            for (int x = 0; x < m; x++)
                for (int y = x + 1; y < m; y++)
                    if (key[rel[x]][r] != key[rel[y]][r])
                        cs->rows[rel[x] * R + rel[y]] += 1.0;
        }
    /* Each head's sums are its own, added row by row in order: the same bits for
     * any thread count. */
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++)
        for (int b = 0; b < B; b++) {
            const float *att = heads_att(a, k / H, b, k % H, T);
            for (int i = skip; i < T; i++) {
                size_t r = (size_t)b * T + i;
                int rel[R], m = keyed(rel, key, r);
                for (int x = 0; x < m; x++)
                    for (int y = x + 1; y < m; y++) {
                        int kq = key[rel[x]][r], kr = key[rel[y]][r];
                        if (kq == kr)
                            continue;
                        double *s = cs->att + (((size_t)rel[x] * R + rel[y]) * n + k) * 2;
                        s[0] += att[(size_t)i * T + kq];
                        s[1] += att[(size_t)i * T + kr];
                    }
            }
        }
}

static int shut(const HeadStats *s)
{
    return s->masked || s->closed;
}

/* The overlap and best heads of pair p from its means. */
static void pair_finish(CompromisePair *p, const HeadStats *st, int n)
{
    double lo = 0.0, hi = 0.0;
    p->best_q = p->best_r = -1;
    for (int k = 0; k < n; k++) {
        if (shut(&st[k]))
            continue;
        double aq = p->att[2 * k], ar = p->att[2 * k + 1];
        lo += fmin(aq, ar);
        hi += fmax(aq, ar);
        if (p->best_q < 0 || aq > p->att[2 * p->best_q])
            p->best_q = k;
        if (p->best_r < 0 || ar > p->att[2 * p->best_r + 1])
            p->best_r = k;
    }
    p->overlap = hi > 0.0 ? lo / hi : NAN;
}

int compromise_finish(Compromise *c, const CompromiseSums *cs, const HeadStats *st)
{
    int n = cs->n, np = 0;
    memset(c, 0, sizeof *c);
    c->n = n;
    for (int q = 0; q < R; q++)
        for (int r = q + 1; r < R; r++)
            np += cs->rows[q * R + r] >= COMPROMISE_MIN_ROWS;
    c->pair = calloc((size_t)np + 1, sizeof *c->pair);
    c->store = calloc((size_t)np * n * 2 + 1, sizeof *c->store);
    c->split = calloc((size_t)n, sizeof *c->split);
    c->keys = calloc((size_t)n, sizeof *c->keys);
    double *lo = calloc((size_t)n, sizeof *lo), *hi = calloc((size_t)n, sizeof *hi);
    double *sum = calloc((size_t)n, sizeof *sum), rows = 0.0, overlap = 0.0;
    if (!c->pair || !c->store || !c->split || !c->keys || !lo || !hi || !sum) {
        free(lo), free(hi), free(sum);
        return -1;
    }
    for (int q = 0; q < R; q++)
        for (int r = q + 1; r < R; r++) {
            double nr = cs->rows[q * R + r];
            if (nr < COMPROMISE_MIN_ROWS)
                continue;
            CompromisePair *p = &c->pair[c->npair];
            *p = (CompromisePair){.q = q, .r = r, .rows = nr,
                                  .att = c->store + (size_t)c->npair * n * 2};
            const double *s = cs->att + ((size_t)q * R + r) * n * 2;
            for (int k = 0; k < n; k++) {
                double aq = s[2 * k] / nr, ar = s[2 * k + 1] / nr;
                p->att[2 * k] = shut(&st[k]) ? NAN : aq;
                p->att[2 * k + 1] = shut(&st[k]) ? NAN : ar;
                lo[k] += nr * fmin(aq, ar);
                hi[k] += nr * fmax(aq, ar);
                sum[k] += nr * (aq + ar);
            }
            rows += nr;
            pair_finish(p, st, n);
            c->npair++;
        }
    /* A pair whose keys no open head looks at has no overlap; it leaves the mean. */
    int defined = 0;
    for (int i = 0; i < c->npair; i++)
        if (!isnan(c->pair[i].overlap)) {
            overlap += c->pair[i].overlap;
            defined++;
        }
    c->overlap = defined ? overlap / defined : NAN;
    for (int k = 0; k < n; k++) {
        c->split[k] = shut(&st[k]) || hi[k] <= 0.0 ? NAN : lo[k] / hi[k];
        c->keys[k] = shut(&st[k]) || rows <= 0.0 ? NAN : sum[k] / rows;
    }
    free(lo), free(hi), free(sum);
    return 0;
}

void compromise_free(Compromise *c)
{
    free(c->pair);
    free(c->store);
    free(c->split);
    free(c->keys);
    memset(c, 0, sizeof *c);
}
