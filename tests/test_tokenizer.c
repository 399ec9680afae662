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

/* The label of bytes s[0..n). */
static const char *label_of(const char *s, size_t n, char *buf, size_t len)
{
    size_t need = tok_label_bytes((const unsigned char *)s, n, buf, len);
    cr_assert_eq(need, strlen(buf), "the whole label fits here: %zu vs %zu", need, strlen(buf));
    return buf;
}

Test(tokenizer, labels_show_spaces_newlines_and_escape_what_is_not_text)
{
    char b[200];
    cr_assert_str_eq(label_of(" cat", 4, b, sizeof b), "\xe2\x90\xa3" "cat");
    cr_assert_str_eq(label_of("a\nb\tc", 5, b, sizeof b), "a\xe2\x86\xb5" "b\xe2\x87\xa5" "c");
    /* Quotes and commas are themselves (the file formats quote them); a backslash
     * doubles, so "\x01" the text and byte 0x01 differ. */
    cr_assert_str_eq(label_of("\"a,b'", 5, b, sizeof b), "\"a,b'");
    cr_assert_str_eq(label_of("\\x01", 4, b, sizeof b), "\\\\x01");
    cr_assert_str_eq(label_of("\x01\x7f\r", 3, b, sizeof b), "\\x01\\x7f\\x0d");
    /* Well-formed UTF-8 stays whole; stray, overlong, surrogate and C1 bytes do not. */
    cr_assert_str_eq(label_of("caf\xc3\xa9", 5, b, sizeof b), "caf\xc3\xa9");
    cr_assert_str_eq(label_of("\xe2\x82\xac!", 4, b, sizeof b), "\xe2\x82\xac!", "the euro sign");
    cr_assert_str_eq(label_of("\xc3", 1, b, sizeof b), "\\xc3", "a lead byte alone");
    cr_assert_str_eq(label_of("\xc3(", 2, b, sizeof b), "\\xc3(");
    cr_assert_str_eq(label_of("\x80", 1, b, sizeof b), "\\x80");
    cr_assert_str_eq(label_of("\xc0\xaf", 2, b, sizeof b), "\\xc0\\xaf", "overlong '/'");
    cr_assert_str_eq(label_of("\xed\xa0\x80", 3, b, sizeof b), "\\xed\\xa0\\x80", "a surrogate");
    cr_assert_str_eq(label_of("\xc2\x85", 2, b, sizeof b), "\\xc2\\x85", "C1 control NEL");
    cr_assert_str_eq(label_of("\xf4\x90\x80\x80", 4, b, sizeof b), "\\xf4\\x90\\x80\\x80",
                     "past U+10FFFF");
    /* The label's own symbols, met in the text, are escaped byte by byte. */
    cr_assert_str_eq(label_of("\xe2\x90\xa3", 3, b, sizeof b), "\\xe2\\x90\\xa3");
    /* A short buffer keeps whole symbols only and reports the full length. */
    char small[6];
    cr_assert_eq(tok_label_bytes((const unsigned char *)"a cat", 5, small, sizeof small), 7u);
    cr_assert_str_eq(small, "a\xe2\x90\xa3" "c");
    cr_assert_eq(tok_label_bytes((const unsigned char *)"  ", 2, small, 3), 6u);
    cr_assert_str_eq(small, "", "no half of the open box");
}

Test(tokenizer, a_token_label_is_its_piece_written_readably)
{
    /* Bytes ' ' (0) 'a' (1) 'c' (2) 't' (3); merges: c+a -> 4 "ca", ' '+4 -> 5 " ca",
     * 5+t -> 6 " cat". */
    const unsigned char bytes[4] = {' ', 'a', 'c', 't'};
    const BpeMerge m[3] = {{2, 1}, {0, 4}, {5, 3}};
    Tokenizer tok;
    char err[300], b[64];
    cr_assert_eq(tok_from_parts(&tok, bytes, 4, m, 3, err, sizeof err), 0, "%s", err);
    tok_label(&tok, 6, b, sizeof b);
    cr_assert_str_eq(b, "\xe2\x90\xa3" "cat");
    tok_label(&tok, 0, b, sizeof b);
    cr_assert_str_eq(b, "\xe2\x90\xa3");
    tok_label(&tok, 4, b, sizeof b);
    cr_assert_str_eq(b, "ca");
    tok_free(&tok);
}

/* Starting from all 256 byte values instead of the text's own bytes renumbers
 * the tokens but keeps their order (bytes by value, then merges by rank), so
 * the tie rule of data/bpe.h picks the same pairs: the first M merges are the
 * same pieces, in the same order, as over the text's alphabet, and the text
 * encodes into the same pieces. Every byte of the 256 is token i = byte i. */
Test(tokenizer, a_base_of_all_256_bytes_learns_the_same_merges_as_the_text_alphabet)
{
    enum { N = 40000, M = 300 };
    char *text = malloc(N);
    synth_generate(text, N, 5);
    const unsigned char *t = (const unsigned char *)text;
    Tokenizer own, all;
    char err[300];
    cr_assert_eq(tok_build(&own, t, N, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tok_learn(&own, t, N, own.nbytes + M, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tok_build_all_bytes(&all, err, sizeof err), 0, "%s", err);
    cr_assert(all.nbytes == 256 && all.V == 256);
    for (int b = 0; b < 256; b++) {
        size_t len;
        const unsigned char *p = tok_piece(&all, b, &len);
        cr_assert(all.id[b] == b && len == 1 && p[0] == b, "byte %d is not token %d", b, b);
    }
    cr_assert_eq(tok_learn(&all, t, N, 256 + M, err, sizeof err), 0, "%s", err);
    cr_assert(own.nmerges == M && all.nmerges == M, "%d and %d merges", own.nmerges,
              all.nmerges);
    for (int k = 0; k < M; k++) {
        size_t la, lb;
        const unsigned char *a = tok_piece(&own, own.nbytes + k, &la);
        const unsigned char *b = tok_piece(&all, 256 + k, &lb);
        cr_assert(la == lb && memcmp(a, b, la) == 0, "merge %d: \"%.*s\" against \"%.*s\"", k,
                  (int)la, a, (int)lb, b);
    }
    TokenId *ia = malloc(N * sizeof *ia), *ib = malloc(N * sizeof *ib);
    long na = tok_encode(&own, t, N, ia, "text", err, sizeof err);
    long nb = tok_encode(&all, t, N, ib, "text", err, sizeof err);
    cr_assert(na > 0 && na == nb, "%ld against %ld tokens", na, nb);
    for (long i = 0; i < na; i++) {
        size_t la, lb;
        const unsigned char *a = tok_piece(&own, ia[i], &la), *b = tok_piece(&all, ib[i], &lb);
        cr_assert(la == lb && memcmp(a, b, la) == 0, "token %ld differs", i);
    }
    free(ia);
    free(ib);
    free(text);
    tok_free(&own);
    tok_free(&all);
}
