/* deps_align: Vig & Belinkov 2019's dependency alignment of a causal model's
 * heads on a treebank's windows (analysis/deps.h says what is counted; the
 * windows, the tokens of each word and the forward passes are deps.c's).
 * Every sum runs in a fixed order (a window's rows and keys in order, then the
 * windows in the file's order), so the numbers do not depend on the thread
 * count or the batching. */
#include "analysis/deps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 1 when words q and k (0-based in sentence se) are in a dependency relation. */
static int related(const ConlluWord *w, uint32_t q, uint32_t k)
{
    return q != k && (w[q].head == k + 1 || w[k].head == q + 1);
}

/* Walks the counted (row i, key j) of sentence s's window: the rows are the
 * tokens of its words, the keys the tokens of its words at or before the row,
 * token 0 (the window's first) left out. A's weights go to *sum (A NULL: a
 * uniform head's, 1/(i+1) on each of the row's i+1 keys); the pairs are
 * counted into *cnt when it is not NULL. */
static void walk(const DepsData *d, size_t s, const float *A, int Tb, DepsAlignSums *sum,
                 DepsAlign *cnt)
{
    const ConlluSentence *se = &d->c->sent[s];
    const ConlluWord *w = d->c->word + se->word0;
    const int32_t *t0 = d->tok0 + se->word0, *t1 = d->tok1 + se->word0;
    for (uint32_t q = 0; q < se->nwords; q++) {
        if (t0[q] < 0)
            continue;
        for (int32_t i = t0[q]; i <= t1[q]; i++) {
            const float *row = A ? A + (size_t)i * Tb : NULL;
            double u = 1.0 / (double)(i + 1);
            for (uint32_t k = 0; k <= q; k++) {
                if (t0[k] < 0)
                    continue;
                int rel = related(w, q, k);
                int32_t lo = t0[k] > 1 ? t0[k] : 1, hi = t1[k] < i ? t1[k] : i;
                for (int32_t j = lo; j <= hi; j++) {
                    double a = row ? (double)row[j] : u;
                    sum->weight += a;
                    sum->on_dep += rel ? a : 0.0;
                    sum->dist += a * (double)(i - j);
                    if (!cnt)
                        continue;
                    cnt->token_pairs++;
                    cnt->token_pairs_dep += (size_t)rel;
                    if (i - j >= 1 && i - j <= DEPS_ALIGN_MAX_DIST) {
                        cnt->tok_at[i - j]++;
                        cnt->tok_dep_at[i - j] += (size_t)rel;
                    }
                }
            }
        }
    }
}

void deps_align_window(const DepsData *d, size_t s, const float *A, int Tb, DepsAlignSums *sum)
{
    walk(d, s, A, Tb, sum, NULL);
}

/* The scored sentences' word pairs by distance. */
static void count_words(DepsAlign *al, const DepsData *d, size_t s)
{
    const ConlluSentence *se = &d->c->sent[s];
    const ConlluWord *w = d->c->word + se->word0;
    for (uint32_t q = 1; q < se->nwords; q++)
        for (uint32_t k = q > DEPS_ALIGN_MAX_DIST ? q - DEPS_ALIGN_MAX_DIST : 0; k < q; k++) {
            al->word_at[q - k]++;
            al->word_dep_at[q - k] += (size_t)related(w, q, k);
        }
}

static double ratio(double a, double b)
{
    return b > 0.0 ? a / b : NAN;
}

/* Pearson r of x and y over the n points where keep[k]; NAN under 2 or no spread. */
static double pearson(const double *x, const double *y, const unsigned char *keep, int n)
{
    double sx = 0.0, sy = 0.0, m = 0.0;
    for (int k = 0; k < n; k++)
        if (keep[k]) {
            sx += x[k];
            sy += y[k];
            m++;
        }
    if (m < 2)
        return NAN;
    double mx = sx / m, my = sy / m, cxy = 0.0, cxx = 0.0, cyy = 0.0;
    for (int k = 0; k < n; k++)
        if (keep[k]) {
            cxy += (x[k] - mx) * (y[k] - my);
            cxx += (x[k] - mx) * (x[k] - mx);
            cyy += (y[k] - my) * (y[k] - my);
        }
    return cxx > 0.0 && cyy > 0.0 ? cxy / sqrt(cxx * cyy) : NAN;
}

/* Each layer's mean, pooled value and best head over its heads in keep. */
static void finish_layers(DepsAlign *al, const DepsAlignSums *tot, const unsigned char *keep)
{
    for (int l = 0; l < al->L; l++) {
        double sum = 0.0, weight = 0.0, on_dep = 0.0;
        int m = 0;
        al->layer_best[l] = -1;
        for (int h = 0; h < al->H; h++) {
            int k = l * al->H + h;
            if (!keep[k])
                continue;
            sum += al->head[k];
            m++;
            weight += tot[k].weight;
            on_dep += tot[k].on_dep;
            if (al->layer_best[l] < 0 || al->head[k] > al->head[al->layer_best[l]])
                al->layer_best[l] = k;
        }
        al->layer_mean[l] = m ? sum / m : NAN;
        al->layer_pooled[l] = ratio(on_dep, weight);
    }
}

int deps_align_finish(DepsAlign *al, const DepsData *d, const DepsAlignSums *sums, int L, int H,
                      const unsigned char *eligible)
{
    memset(al, 0, sizeof *al);
    al->L = L;
    al->H = H;
    int n = L * H;
    size_t nh = (size_t)(n ? n : 1);
    al->head = malloc(nh * sizeof *al->head);
    al->distance = malloc(nh * sizeof *al->distance);
    al->layer_mean = malloc((size_t)(L ? L : 1) * sizeof *al->layer_mean);
    al->layer_pooled = malloc((size_t)(L ? L : 1) * sizeof *al->layer_pooled);
    al->layer_best = malloc((size_t)(L ? L : 1) * sizeof *al->layer_best);
    DepsAlignSums *tot = calloc(nh, sizeof *tot);
    unsigned char *keep = calloc(nh, 1);
    if (!al->head || !al->distance || !al->layer_mean || !al->layer_pooled || !al->layer_best ||
        !tot || !keep) {
        free(tot);
        free(keep);
        deps_align_free(al);
        return -1;
    }
    DepsAlignSums uni = {0};
    for (size_t s = 0; s < d->c->nsent; s++) {
        if (!d->wlen[s])
            continue;
        for (int k = 0; k < n; k++) {
            const DepsAlignSums *x = &sums[s * (size_t)n + k];
            tot[k].weight += x->weight;
            tot[k].on_dep += x->on_dep;
            tot[k].dist += x->dist;
        }
        walk(d, s, NULL, 0, &uni, al);
        count_words(al, d, s);
    }
    for (int k = 0; k < n; k++) {
        al->head[k] = ratio(tot[k].on_dep, tot[k].weight);
        al->distance[k] = ratio(tot[k].dist, tot[k].weight);
        keep[k] = (!eligible || eligible[k]) && tot[k].weight > 0.0;
    }
    finish_layers(al, tot, keep);
    al->uniform = ratio(uni.on_dep, uni.weight);
    al->pair_share = ratio((double)al->token_pairs_dep, (double)al->token_pairs);
    al->r = pearson(al->distance, al->head, keep, n);
    free(tot);
    free(keep);
    return 0;
}

void deps_align_free(DepsAlign *al)
{
    free(al->head);
    free(al->distance);
    free(al->layer_mean);
    free(al->layer_pooled);
    free(al->layer_best);
    memset(al, 0, sizeof *al);
}
