/* Tokenizer tests (data/tokenizer) with merges: building and freeing are paired
 * and tok_free is safe on a zeroed, freed or failed tokenizer; a hand-worked
 * merge list (its pieces, its encoding, counting and decoding); learning stops
 * when no pair repeats and refuses sizes outside [bytes, TOK_VOCAB_MAX] leaving
 * the tokenizer as it was; random strings of the alphabet round-trip through a
 * learned vocabulary; stored merge lists are checked, including ones whose
 * pieces would be too long to keep. The byte-level cases are in test_corpus.c. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "data/synth.h"
#include "data/tokenizer.h"
#include "util/rng.h"

static void expect_empty(const Tokenizer *tok)
{
    cr_assert(tok->merges == NULL && tok->enc == NULL && tok->piece_at == NULL &&
              tok->piece == NULL && tok->last_byte == NULL && tok->nmerges == 0,
              "something is left allocated");
}

Test(tokenizer, free_is_safe_on_zeroed_freed_and_failed_tokenizers)
{
    Tokenizer tok;
    memset(&tok, 0, sizeof tok);
    tok_free(&tok);
    expect_empty(&tok);
    cr_assert_eq(tok_build(&tok, (const unsigned char *)"ab ab", 5, NULL, 0), 0);
    cr_assert(tok.piece && tok.last_byte && tok.V == 3);
    tok_free(&tok);
    expect_empty(&tok);
    tok_free(&tok);
    expect_empty(&tok);
    /* A failed build leaves nothing to free. */
    char err[300];
    const unsigned char ab[2] = {'a', 'b'};
    const BpeMerge bad[1] = {{0, 2}};
    memset(&tok, 0x5a, sizeof tok);
    cr_assert_eq(tok_from_parts(&tok, ab, 2, bad, 1, err, sizeof err), -1);
    cr_assert(strstr(err, "merge 0 joins tokens 0 and 2"), "%s", err);
    expect_empty(&tok);
    tok_free(&tok);
}

/* "ab ab ab" over the bytes ' ' (0), 'a' (1), 'b' (2): the chunks are "ab",
 * " ab", " ab", so (a, b) occurs 3 times and becomes 3; then (' ', 3) twice
 * becomes 4; then nothing occurs twice and learning stops at 2 merges. */
Test(tokenizer, a_hand_worked_merge_list_and_its_pieces)
{
    const unsigned char *text = (const unsigned char *)"ab ab ab";
    Tokenizer tok;
    char err[300];
    cr_assert_eq(tok_build(&tok, text, 8, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tok_learn(&tok, text, 8, 100, err, sizeof err), 0, "%s", err);
    cr_assert(tok.nbytes == 3 && tok.nmerges == 2 && tok.V == 5, "V %d = %d + %d", tok.V,
              tok.nbytes, tok.nmerges);
    cr_assert(tok.merges[0].left == 1 && tok.merges[0].right == 2);
    cr_assert(tok.merges[1].left == 0 && tok.merges[1].right == 3);
    size_t len;
    const unsigned char *p = tok_piece(&tok, 4, &len);
    cr_assert(len == 3 && memcmp(p, " ab", 3) == 0);
    cr_assert_eq(tok.last_byte[4], 'b');
    TokenId ids[16];
    const unsigned char *s = (const unsigned char *)"ab ab b a";
    long n = tok_encode(&tok, s, 9, ids, "s", err, sizeof err);
    TokenId want[] = {3, 4, 0, 2, 0, 1};
    cr_assert_eq(n, 6, "%ld ids", n);
    cr_assert_eq(memcmp(ids, want, sizeof want), 0);
    cr_assert_eq(tok_count_bytes(&tok, ids, (size_t)n), 9);
    cr_assert_eq(tok_count_bytes(&tok, ids + 1, 2), 4, "\" ab\" and \" \"");
    unsigned char back[16];
    cr_assert_eq(tok_decode(&tok, ids, (size_t)n, back), 9);
    cr_assert_eq(memcmp(back, s, 9), 0);
    tok_free(&tok);
}

Test(tokenizer, learning_refuses_sizes_outside_the_range_and_keeps_the_tokenizer)
{
    const unsigned char *text = (const unsigned char *)"the cat sat on the mat";
    Tokenizer tok;
    char err[300];
    cr_assert_eq(tok_build(&tok, text, 22, err, sizeof err), 0, "%s", err);
    int nbytes = tok.nbytes;
    cr_assert_eq(tok_learn(&tok, text, 22, nbytes - 1, err, sizeof err), -1);
    cr_assert(strstr(err, "is not in ["), "%s", err);
    cr_assert_eq(tok_learn(&tok, text, 22, TOK_VOCAB_MAX + 1, err, sizeof err), -1);
    cr_assert(tok.V == nbytes && tok.nmerges == 0 && tok.merges == NULL);
    /* Exactly the alphabet: no merge, still byte-level. */
    cr_assert_eq(tok_learn(&tok, text, 22, nbytes, err, sizeof err), 0, "%s", err);
    cr_assert(tok.V == nbytes && tok.nmerges == 0 && tok.enc == NULL);
    tok_free(&tok);
}

/* Encode then decode gives back any string of the alphabet's bytes, whatever
 * merges apply; the counts agree with the decoded length. */
Test(tokenizer, random_strings_of_the_alphabet_round_trip)
{
    enum { N = 40000 };
    char *text = malloc(N);
    synth_generate(text, N, 3);
    Tokenizer tok;
    char err[300];
    const unsigned char *t = (const unsigned char *)text;
    cr_assert_eq(tok_build(&tok, t, N, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tok_learn(&tok, t, N, 600, err, sizeof err), 0, "%s", err);
    cr_assert_gt(tok.nmerges, 100, "only %d merges learned", tok.nmerges);
    Rng rng;
    rng_init(&rng, 99, 0);
    unsigned char s[300], back[300];
    TokenId ids[300];
    for (int trial = 0; trial < 500; trial++) {
        size_t n = (size_t)rng_below(&rng, 300);
        for (size_t i = 0; i < n; i++)
            s[i] = rng_below(&rng, 4) ? t[rng_below(&rng, N)] : tok.bytes[rng_below(&rng, 4)];
        long m = tok_encode(&tok, s, n, ids, "s", err, sizeof err);
        cr_assert(m >= 0 && (size_t)m <= n, "%s", err);
        cr_assert_eq(tok_count_bytes(&tok, ids, (size_t)m), n);
        cr_assert_eq(tok_decode(&tok, ids, (size_t)m, back), n);
        cr_assert_eq(memcmp(back, s, n), 0, "trial %d did not round-trip", trial);
    }
    /* The training text encodes into fewer tokens than bytes. */
    TokenId *all = malloc(N * sizeof *all);
    long m = tok_encode(&tok, t, N, all, "text", err, sizeof err);
    cr_assert(m > 0 && m < N / 2, "%ld tokens for %d bytes", m, N);
    free(all);
    free(text);
    tok_free(&tok);
}

/* A stored list whose every merge joins the previous token with itself doubles
 * the piece each time: refused before the pieces are allocated. */
Test(tokenizer, stored_merges_with_pieces_too_long_to_keep_are_refused)
{
    enum { M = 40 };
    BpeMerge m[M];
    for (int k = 0; k < M; k++)
        m[k] = (BpeMerge){(TokenId)k, (TokenId)k};
    const unsigned char a[1] = {'a'};
    Tokenizer tok;
    char err[300];
    cr_assert_eq(tok_from_parts(&tok, a, 1, m, M, err, sizeof err), -1);
    cr_assert(strstr(err, "too long to keep"), "%s", err);
    expect_empty(&tok);
    /* Twenty doublings are fine: a token of 2^20 bytes. */
    cr_assert_eq(tok_from_parts(&tok, a, 1, m, 20, err, sizeof err), 0, "%s", err);
    size_t len;
    tok_piece(&tok, 20, &len);
    cr_assert_eq(len, (size_t)1 << 20);
    tok_free(&tok);
    cr_assert_eq(tok_from_parts(&tok, a, 1, m, TOK_VOCAB_MAX, err, sizeof err), -1);
    cr_assert(strstr(err, "exceed"), "%s", err);
}
