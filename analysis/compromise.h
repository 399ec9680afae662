/* compromise: how heads divide their weight among the keys of relations that
 * share a query row (docs/heads.md, "Compromise").
 *
 * A query row can carry the keys of several relations at once: the row before
 * "slept" in "The tired cat slept" is subject-verb's (key "cat"), adjective-verb's
 * (key "tired") and previous-token's. One head that serves several of them must
 * spread its weight over their keys; several heads can each take one. For every
 * pair of relations (q, r) with distinct keys on the same rows, and every open
 * head h, a_q(h) and a_r(h) are the head's mean attention on q's key and on r's
 * key over those rows. Then
 *   overlap(q, r) = sum_h min(a_q(h), a_r(h)) / sum_h max(a_q(h), a_r(h))
 * (the weighted Jaccard index of the two keys' head profiles): 1 when the same
 * heads hold the same weight on both keys, one head compromising between them; 0
 * when every head that looks at one key ignores the other. Per head,
 *   split(h) = sum_pairs rows min(a_q, a_r) / sum_pairs rows max(a_q, a_r),
 *   keys(h)  = sum_pairs rows (a_q + a_r) / sum_pairs rows:
 * split near 1 for a head that divides its weight evenly between the keys of the
 * pairs it looks at, near 0 for one that takes one key of each pair; keys says
 * how much weight that is. The rare relation (a set of keys) is not paired.
 * Nothing here prints; every sum runs in a fixed order. */
#ifndef HEADCOUNT_COMPROMISE_H
#define HEADCOUNT_COMPROMISE_H

#include "analysis/heads.h"

/* A pair is reported when it shares at least this many scored rows. */
#define COMPROMISE_MIN_ROWS 20

/* Sums over windows: for every pair q < r of relations, the rows where both have
 * a key and the keys differ, and each head's attention on each of the two keys. */
typedef struct {
    int n;          /* heads, L*H */
    double *rows;   /* [HEADS_REL_COUNT][HEADS_REL_COUNT], q < r used */
    double *att;    /* [HEADS_REL_COUNT][HEADS_REL_COUNT][n][2] */
} CompromiseSums;

/* 0, or -1 when out of memory (then compromise_sums_free is still safe). */
int compromise_sums_init(CompromiseSums *cs, int n);
void compromise_sums_free(CompromiseSums *cs);

/* Adds B windows of T positions after a forward: key[q][B*T] is relation q's key
 * at each row (-1: none), as heads_keys_find and planted_keys give them; key[q]
 * may be NULL (no keys), and the rare relation's is ignored. Rows
 * i >= heads_skip(T) are scored, as for the relations. */
void compromise_add(CompromiseSums *cs, const Activations *a, int *const *key, int B, int T);

/* One reported pair, q < r. */
typedef struct {
    int q, r;
    double rows;
    double *att;       /* [n][2]: each head's mean attention on q's key, on r's key;
                        * NAN for a masked or closed head */
    double overlap;    /* as above, over the open heads; NAN when no open head
                        * puts any weight on either key */
    int best_q, best_r;   /* the open head with the most weight on each key (ties
                           * to the lower index); -1 when every head is shut */
} CompromisePair;

/* The finished measure. */
typedef struct {
    int n, npair;
    CompromisePair *pair;  /* the pairs with >= COMPROMISE_MIN_ROWS rows, by (q, r) */
    double *split, *keys;  /* [n] per head; NAN where the head is shut or (split)
                            * puts no weight on any pair's keys */
    double overlap;        /* the mean of the pairs' overlaps (NAN: no pair) */
    double *store;         /* the pairs' att */
} Compromise;

/* Finishes the sums; st[n] says which heads are masked or closed. -1 when out of
 * memory (compromise_free is still safe). */
int compromise_finish(Compromise *c, const CompromiseSums *cs, const HeadStats *st);
void compromise_free(Compromise *c);

#endif
