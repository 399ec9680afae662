/* Tests for app/planted's window keys at arbitrary starts (./train --heads-every
 * on the built-in corpus) and for data/batch's batch_peek, which says where the
 * next batch's windows start. */
#include <criterion/criterion.h>
#include <string.h>

#include "analysis/planted.h"
#include "data/batch.h"

/* A planted relation without a minimal pair: which kind, query, key. */
#define REL(which, q, k) {.kind = SYNTH_REL_##which, .query = (q), .key = (k)}

enum { T = 16, B = 2 };

Test(planted, keys_at_any_window_start_match_the_relations_inside_it)
{
    /* Token positions in the text: agreement 10 -> 5, a bracket (found in any
     * text, so not a planted key) and a name 20 -> 12. */
    SynthRelation rel[] = {
        REL(AGREE, 10, 5), REL(BRACKET, 14, 9), REL(NAMES, 20, 12)};
    Planted p = {.builtin = 1, .rel = rel, .n = 3};
    int keys[HEADS_REL_COUNT][B * T], firsts[HEADS_REL_COUNT][B * T];
    int *key[HEADS_REL_COUNT] = {NULL}, *first[HEADS_REL_COUNT] = {NULL};
    for (int q = HEADS_REL_AGREE; q < HEADS_REL_COUNT; q++) {
        key[q] = keys[q];
        first[q] = firsts[q];
    }
    const size_t starts[B] = {3, 8};
    planted_keys_at(key, first, &p, starts, B, T);
    for (int q = HEADS_REL_AGREE; q < HEADS_REL_COUNT; q++)
        for (int i = 0; i < B * T; i++) {
            /* Window 0 covers tokens 3..18: the agreement's row 7 keys 2; the name's
             * query 20 is past it. Window 1 covers 8..23: the agreement's key 5 is
             * before it (no row); the name's row 12 keys 4, its first occurrence
             * row 3. */
            int want = q == HEADS_REL_AGREE && i == 7        ? 2
                       : q == HEADS_REL_NAMES && i == T + 12 ? 4
                                                             : -1;
            int want_first = q == HEADS_REL_NAMES && i == T + 12 ? 3 : -1;
            cr_assert_eq(keys[q][i], want, "relation %d, row %d: %d", q, i, keys[q][i]);
            cr_assert_eq(firsts[q][i], want_first, "relation %d, row %d", q, i);
        }
}

Test(planted, batch_peek_names_the_windows_batch_next_then_takes)
{
    enum { LEN = 400, NB = 5 };
    TokenId ids[LEN];
    for (int i = 0; i < LEN; i++)
        ids[i] = (TokenId)i;   /* a token is its position, so a window shows its start */
    BatchSampler s;
    batch_init(&s, 42, 7);
    for (int k = 0; k < 3; k++) {
        size_t starts[NB];
        int in[NB * T], tg[NB * T];
        batch_peek(&s, LEN, NB, T, starts);
        Rng before = s.rng;
        batch_peek(&s, LEN, NB, T, starts);
        cr_assert_eq(memcmp(&before, &s.rng, sizeof before), 0, "batch_peek moved the sampler");
        batch_next(&s, ids, LEN, NB, T, in, tg);
        for (int b = 0; b < NB; b++)
            cr_assert_eq((size_t)in[b * T], starts[b], "batch %d window %d", k, b);
    }
}
