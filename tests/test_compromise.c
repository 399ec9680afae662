/* The compromise measure (analysis/compromise.h) on attention written by hand:
 * one head that splits its weight evenly over two relations' keys, two heads
 * that each take one, an uneven split, shut heads, and the rows that do not count. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compromise.h"

#define WT 32
#define WB 2

/* L = 1 layer of H heads over two windows; head h puts w[h][0] on the token before
 * the query, w[h][1] on the token three back, and the rest on the query itself. */
typedef struct {
    Activations a;
    float buf[4 * WB * WT * WT];
    int prev[WB * WT], subj[WB * WT];
    int *key[HEADS_REL_COUNT];
} Fixture;

static void fixture_init(Fixture *f, int H, const double w[][2])
{
    memset(f, 0, sizeof *f);
    f->a.L = 1;
    f->a.H = (size_t)H;
    f->a.B = WB;
    f->a.T = WT;
    f->a.att = f->buf;
    for (int b = 0; b < WB; b++)
        for (int h = 0; h < H; h++) {
            float *att = (float *)heads_att(&f->a, 0, b, h, WT);
            for (int i = 3; i < WT; i++) {
                float *row = att + (size_t)i * WT;
                row[i - 1] = (float)w[h][0];
                row[i - 3] = (float)w[h][1];
                row[i] = (float)(1.0 - w[h][0] - w[h][1]);
            }
        }
    for (int r = 0; r < WB * WT; r++) {
        int i = r % WT;
        f->prev[r] = i >= 1 ? i - 1 : -1;
        f->subj[r] = i >= 3 ? i - 3 : -1;
    }
    f->key[HEADS_REL_PREV] = f->prev;
    f->key[HEADS_REL_SUBJECT] = f->subj;
}

/* Measures f with heads shut[h] masked, into c (which the caller frees). */
static void measure(Compromise *c, Fixture *f, int H, const int *shut)
{
    CompromiseSums cs;
    HeadStats st[4] = {{0}};
    for (int h = 0; h < H && shut; h++)
        st[h].masked = shut[h];
    cr_assert_eq(compromise_sums_init(&cs, H), 0);
    compromise_add(&cs, &f->a, f->key, WB, WT);
    cr_assert_eq(compromise_finish(c, &cs, st), 0);
    compromise_sums_free(&cs);
}

static const double EPS = 1e-6;

Test(compromise, one_head_split_evenly_overlaps_fully)
{
    static Fixture f;
    const double w[1][2] = {{0.5, 0.5}};
    fixture_init(&f, 1, w);
    Compromise c;
    measure(&c, &f, 1, NULL);
    cr_assert_eq(c.npair, 1);
    const CompromisePair *p = &c.pair[0];
    cr_assert_eq(p->q, HEADS_REL_PREV);
    cr_assert_eq(p->r, HEADS_REL_SUBJECT);
    /* Rows i = heads_skip(32) = 8 .. 31 of both windows. */
    cr_assert_eq(p->rows, 2 * (WT - 8));
    cr_assert_float_eq(p->att[0], 0.5, EPS);
    cr_assert_float_eq(p->att[1], 0.5, EPS);
    cr_assert_float_eq(p->overlap, 1.0, EPS);
    cr_assert_eq(p->best_q, 0);
    cr_assert_eq(p->best_r, 0);
    cr_assert_float_eq(c.split[0], 1.0, EPS);
    cr_assert_float_eq(c.keys[0], 1.0, EPS);
    cr_assert_float_eq(c.overlap, 1.0, EPS);
    compromise_free(&c);
}

Test(compromise, two_heads_each_taking_one_key_do_not_overlap)
{
    static Fixture f;
    const double w[2][2] = {{1.0, 0.0}, {0.0, 1.0}};
    fixture_init(&f, 2, w);
    Compromise c;
    measure(&c, &f, 2, NULL);
    cr_assert_eq(c.npair, 1);
    const CompromisePair *p = &c.pair[0];
    cr_assert_float_eq(p->overlap, 0.0, EPS);
    cr_assert_eq(p->best_q, 0);
    cr_assert_eq(p->best_r, 1);
    cr_assert_float_eq(c.split[0], 0.0, EPS);
    cr_assert_float_eq(c.split[1], 0.0, EPS);
    cr_assert_float_eq(c.keys[0], 1.0, EPS);
    cr_assert_float_eq(c.keys[1], 1.0, EPS);
    compromise_free(&c);
}

Test(compromise, uneven_heads_give_the_weighted_jaccard_index)
{
    /* Head 0: 0.6 / 0.2, head 1: 0.1 / 0.3. overlap = (0.2 + 0.1) / (0.6 + 0.3) = 1/3;
     * split of head 0 = 0.2 / 0.6, of head 1 = 0.1 / 0.3; keys 0.8 and 0.4. */
    static Fixture f;
    const double w[2][2] = {{0.6, 0.2}, {0.1, 0.3}};
    fixture_init(&f, 2, w);
    Compromise c;
    measure(&c, &f, 2, NULL);
    const CompromisePair *p = &c.pair[0];
    cr_assert_float_eq(p->overlap, 1.0 / 3.0, EPS);
    cr_assert_float_eq(c.split[0], 1.0 / 3.0, EPS);
    cr_assert_float_eq(c.split[1], 1.0 / 3.0, EPS);
    cr_assert_float_eq(c.keys[0], 0.8, EPS);
    cr_assert_float_eq(c.keys[1], 0.4, EPS);
    cr_assert_eq(p->best_q, 0);
    cr_assert_eq(p->best_r, 1);
    compromise_free(&c);
}

Test(compromise, a_shut_head_leaves_the_measure)
{
    /* With head 1 masked only head 0 counts: it takes one key, so overlap 0. */
    static Fixture f;
    const double w[2][2] = {{0.9, 0.0}, {0.5, 0.5}};
    fixture_init(&f, 2, w);
    Compromise c;
    const int shut[2] = {0, 1};
    measure(&c, &f, 2, shut);
    const CompromisePair *p = &c.pair[0];
    cr_assert_float_eq(p->overlap, 0.0, EPS);
    cr_assert(isnan(p->att[2]) && isnan(p->att[3]));
    cr_assert(isnan(c.split[1]) && isnan(c.keys[1]));
    cr_assert_eq(p->best_r, 0);
    compromise_free(&c);
}

Test(compromise, equal_keys_and_thin_pairs_are_not_counted)
{
    /* Subject-verb's key equal to the previous token's on every row: no pair. */
    static Fixture f;
    const double w[1][2] = {{0.5, 0.5}};
    fixture_init(&f, 1, w);
    memcpy(f.subj, f.prev, sizeof f.subj);
    Compromise c;
    measure(&c, &f, 1, NULL);
    cr_assert_eq(c.npair, 0);
    cr_assert(isnan(c.overlap));
    compromise_free(&c);
    /* Fewer than COMPROMISE_MIN_ROWS shared rows: not reported. */
    fixture_init(&f, 1, w);
    for (int r = 0; r < WB * WT; r++)
        if (r >= COMPROMISE_MIN_ROWS - 1)
            f.subj[r] = -1;
    measure(&c, &f, 1, NULL);
    cr_assert_eq(c.npair, 0);
    compromise_free(&c);
}
