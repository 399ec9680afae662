/* Byte-pair encoding tests (data/bpe): pre-tokenisation and merges worked out by
 * hand (a tie on the left id, a tie on the right id, overlapping "aaa"); the
 * learner against a slow reference written here straight from the rules of
 * bpe.h (count every pair, take the best, rewrite the whole text) on random
 * texts and on tiny Shakespeare; encoding the training text gives the learned
 * segmentation; encode then decode gives the bytes back; two runs agree; the
 * encoder gives the same ids from many threads; and bad arguments are refused. */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "data/bpe.h"
#include "tests/testutil.h"
#include "util/rng.h"

/* ---- helpers ------------------------------------------------------------------ */

/* The byte alphabet of text: ids in byte order, -1 for absent bytes; returns nbase. */
static int alphabet(const unsigned char *text, size_t n, int16_t byte_id[256])
{
    int seen[256] = {0}, nbase = 0;
    for (size_t i = 0; i < n; i++)
        seen[text[i]] = 1;
    for (int b = 0; b < 256; b++)
        byte_id[b] = seen[b] ? (int16_t)nbase++ : -1;
    return nbase;
}

/* Appends the bytes of token t to out (at *len); byte_of[] inverts byte_id. */
static void token_bytes(int t, int nbase, const BpeMerge *m, const unsigned char *byte_of,
                        unsigned char *out, size_t *len)
{
    if (t < nbase) {
        out[(*len)++] = byte_of[t];
        return;
    }
    token_bytes(m[t - nbase].left, nbase, m, byte_of, out, len);
    token_bytes(m[t - nbase].right, nbase, m, byte_of, out, len);
}

/* Decodes ids by expanding merges; returns the byte count (out has room for cap). */
static size_t decode(const TokenId *ids, size_t nids, const int16_t byte_id[256], int nbase,
                     const BpeMerge *m, unsigned char *out)
{
    unsigned char byte_of[256];
    for (int b = 0; b < 256; b++)
        if (byte_id[b] >= 0)
            byte_of[byte_id[b]] = (unsigned char)b;
    size_t len = 0;
    for (size_t i = 0; i < nids; i++)
        token_bytes(ids[i], nbase, m, byte_of, out, &len);
    return len;
}

/* Pre-tokenisation straight from bpe.h: 1 at each chunk start. */
static int is_word_byte(unsigned char b)
{
    return !(b == ' ' || b == '\n' || b == '\r' || b == '\t' || b == '\v' || b == '\f');
}

static int word_class(unsigned char b)
{
    if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b >= 0x80)
        return 0;
    if (b >= '0' && b <= '9')
        return 1;
    return 2;
}

static void ref_chunk_starts(const unsigned char *t, size_t n, unsigned char *start)
{
    memset(start, 0, n);
    size_t i = 0;
    while (i < n) {
        start[i] = 1;
        if (is_word_byte(t[i]) || (t[i] == ' ' && i + 1 < n && is_word_byte(t[i + 1]))) {
            size_t j = t[i] == ' ' ? i + 1 : i;
            int c = word_class(t[j]);
            j++;
            while (j < n && is_word_byte(t[j]) && word_class(t[j]) == c)
                j++;
            i = j;
        } else {
            size_t j = i;
            while (j < n && !is_word_byte(t[j]))
                j++;
            if (j < n && j - i >= 2 && t[j - 1] == ' ')
                j--;
            i = j;
        }
    }
}

/* The reference learner: every step counts every adjacent pair inside chunks,
 * takes the largest count (smallest left, then right, among equals), stops below
 * 2, and rewrites the whole text left to right. Leaves the final segmentation in
 * seg (room for n) and returns its length. */
static size_t ref_learn(const unsigned char *text, size_t n, const int16_t byte_id[256],
                        int nbase, int want, BpeMerge *merges, int *got, TokenId *seg)
{
    unsigned char *start = malloc(n + 1);
    ref_chunk_starts(text, n, start);
    for (size_t i = 0; i < n; i++)
        seg[i] = (TokenId)byte_id[text[i]];
    size_t m = n;
    int V = nbase + want;
    long long *count = calloc((size_t)V * V, sizeof *count);
    *got = 0;
    for (int k = 0; k < want; k++) {
        for (size_t i = 1; i < m; i++)
            if (!start[i])
                count[(size_t)seg[i - 1] * V + seg[i]]++;
        long long best = 0;
        int bl = -1, br = -1;
        for (int l = 0; l < nbase + k; l++)
            for (int r = 0; r < nbase + k; r++)
                if (count[(size_t)l * V + r] > best) {
                    best = count[(size_t)l * V + r];
                    bl = l;
                    br = r;
                }
        for (size_t i = 1; i < m; i++)
            count[(size_t)seg[i - 1] * V + seg[i]] = 0;
        if (best < 2)
            break;
        merges[k] = (BpeMerge){(TokenId)bl, (TokenId)br};
        *got = k + 1;
        size_t j = 0;
        for (size_t i = 0; i < m;) {
            if (i + 1 < m && !start[i + 1] && seg[i] == bl && seg[i + 1] == br) {
                start[j] = start[i];
                seg[j++] = (TokenId)(nbase + k);
                i += 2;
            } else {
                start[j] = start[i];
                seg[j++] = seg[i++];
            }
        }
        m = j;
    }
    free(count);
    free(start);
    return m;
}

/* Learns with bpe_learn and with the reference; both merge lists and the
 * encoding of the text must agree with the reference's. */
static void check_against_reference(const unsigned char *text, size_t n, int want,
                                    const char *what)
{
    int16_t byte_id[256];
    int nbase = alphabet(text, n, byte_id);
    BpeMerge *fast = malloc(sizeof(BpeMerge) * (size_t)(want + 1));
    BpeMerge *slow = malloc(sizeof(BpeMerge) * (size_t)(want + 1));
    TokenId *seg = malloc(sizeof(TokenId) * (n + 1)), *ids = malloc(sizeof(TokenId) * (n + 1));
    int got_fast = -1, got_slow = -1;
    char err[256] = "";
    cr_assert_eq(bpe_learn(text, n, byte_id, nbase, want, fast, &got_fast, err, sizeof err), 0,
                 "%s: %s", what, err);
    size_t nseg = ref_learn(text, n, byte_id, nbase, want, slow, &got_slow, seg);
    cr_assert_eq(got_fast, got_slow, "%s: %d merges learned, the reference %d", what, got_fast,
                 got_slow);
    for (int k = 0; k < got_fast; k++)
        cr_assert(fast[k].left == slow[k].left && fast[k].right == slow[k].right,
                  "%s: merge %d is (%d, %d), the reference (%d, %d)", what, k, fast[k].left,
                  fast[k].right, slow[k].left, slow[k].right);
    BpeEncoder *e = bpe_encoder_new(byte_id, nbase, fast, got_fast, err, sizeof err);
    cr_assert_not_null(e, "%s: %s", what, err);
    size_t nids = bpe_encode(e, text, n, ids);
    cr_assert_eq(nids, nseg, "%s: encoding gives %zu ids, the learned segmentation %zu", what,
                 nids, nseg);
    for (size_t i = 0; i < nids; i++)
        cr_assert_eq(ids[i], seg[i], "%s: id %zu is %d, learned %d", what, i, ids[i], seg[i]);
    bpe_encoder_free(e);
    free(fast);
    free(slow);
    free(seg);
    free(ids);
}

/* Random text of n bytes drawn from the bytes of alpha (alen of them). */
static unsigned char *random_text(Rng *rng, const char *alpha, size_t alen, size_t n)
{
    unsigned char *t = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        t[i] = (unsigned char)alpha[rng_below(rng, alen)];
    return t;
}

/* Random text with word-like structure: a small vocabulary of random words
 * joined by separators drawn from seps, so that pairs repeat a lot. */
static unsigned char *random_words(Rng *rng, const char *letters, const char *seps, size_t n)
{
    char words[40][12];
    size_t nl = strlen(letters), ns = strlen(seps);
    for (int w = 0; w < 40; w++) {
        int len = 1 + (int)rng_below(rng, 8);
        for (int i = 0; i < len; i++)
            words[w][i] = letters[rng_below(rng, nl)];
        words[w][len] = '\0';
    }
    unsigned char *t = malloc(n + 16);
    size_t i = 0;
    while (i < n) {
        /* Zipf-like: low word indices far more often. */
        int w = (int)(rng_below(rng, 40) * rng_below(rng, 40) / 40);
        for (const char *c = words[w]; *c && i < n; c++)
            t[i++] = (unsigned char)*c;
        int nsep = 1 + (rng_below(rng, 4) == 0);
        for (int s = 0; s < nsep && i < n; s++)
            t[i++] = (unsigned char)seps[rng_below(rng, ns)];
    }
    return t;
}

/* The first n bytes of tiny Shakespeare (n = 0: all), or NULL with a skip. */
static unsigned char *shakespeare(size_t *n)
{
    const char *path = tu_shakespeare();
    if (!path) {
        cr_skip_test("../shared/data/tinyshakespeare.txt is absent");
        return NULL;
    }
    size_t len;
    unsigned char *t = tu_read_file(path, &len);
    cr_assert_not_null(t, "cannot read %s", path);
    if (*n == 0 || *n > len)
        *n = len;
    return t;
}

/* ---- pre-tokenisation --------------------------------------------------------- */

/* Chunks of s, joined with '|'. */
static void chunks_of(const char *s, char *out, size_t cap)
{
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = bpe_chunk_len((const unsigned char *)s + i, n - i);
        cr_assert(len >= 1 && len <= n - i, "chunk length %zu at %zu of \"%s\"", len, i, s);
        if (i > 0)
            out[o++] = '|';
        cr_assert(o + len + 2 < cap);
        memcpy(out + o, s + i, len);
        o += len;
        i += len;
    }
    out[o] = '\0';
}

Test(bpe, pretokenisation_known_answers)
{
    static const char *cases[][2] = {
        {"The cat  sat.\n", "The| cat| | sat|.|\n"},
        {"a\n\n b", "a|\n\n| b"},
        {"x  \n", "x|  \n"},
        {"\t b", "\t| b"},
        {" \n", " \n"},
        {"  ", "  "},
        {" ", " "},
        {"1,000 ...!", "1|,|000| ...!"},
        {"don't stop", "don|'|t| stop"},
        {"caf\xc3\xa9 42x", "caf\xc3\xa9| 42|x"},
        {"\x01\x02" "ab", "\x01\x02|ab"},
        {"a  \n  b", "a|  \n | b"},
    };
    char got[128];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        chunks_of(cases[k][0], got, sizeof got);
        cr_assert_str_eq(got, cases[k][1], "case %zu", k);
    }
}

Test(bpe, pretokenisation_matches_the_rule_on_random_bytes)
{
    /* Every class: letters, a UTF-8 byte, digits, punctuation, a control byte,
     * ' ' and the other whitespace. */
    static const char alpha[] = "ab\xc3Z09.,'\x01 \n\t\r\v\f ";
    Rng rng;
    rng_init(&rng, 29, 0);
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 1 + rng_below(&rng, 60);
        unsigned char *t = random_text(&rng, alpha, sizeof alpha - 1, n);
        unsigned char want[64], got[64] = {0};
        ref_chunk_starts(t, n, want);
        for (size_t i = 0; i < n;) {
            got[i] = 1;
            i += bpe_chunk_len(t + i, n - i);
        }
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], want[i], "trial %d: chunk start at %zu: %d, the rule says %d",
                         trial, i, got[i], want[i]);
        free(t);
    }
}

Test(bpe, pretokenisation_classes_every_byte_as_the_rule_says)
{
    /* Every byte pair b c, alone and after a space and after "\n ": together
     * these see the class of every byte and every pair of classes. */
    unsigned char t[4], want[4], got[4];
    for (int b = 0; b < 256; b++)
        for (int c = 0; c < 256; c++)
            for (int pre = 0; pre < 3; pre++) {
                size_t n = 0;
                if (pre == 2)
                    t[n++] = '\n';
                if (pre >= 1)
                    t[n++] = ' ';
                t[n++] = (unsigned char)b;
                t[n++] = (unsigned char)c;
                ref_chunk_starts(t, n, want);
                memset(got, 0, sizeof got);
                for (size_t i = 0; i < n;) {
                    got[i] = 1;
                    i += bpe_chunk_len(t + i, n - i);
                }
                cr_assert(memcmp(got, want, n) == 0, "bytes 0x%02x 0x%02x after %d", b, c, pre);
            }
}

/* ---- merges worked out by hand ------------------------------------------------ */

/* bpe_learn on text must give exactly the merges want[0..nwant) (asking for
 * ask), and encoding the text exactly the ids seg[0..nseg). */
static void expect_merges(const char *text, int ask, const BpeMerge *want, int nwant,
                          const TokenId *seg, size_t nseg)
{
    size_t n = strlen(text);
    int16_t byte_id[256];
    int nbase = alphabet((const unsigned char *)text, n, byte_id);
    BpeMerge got[16];
    int ngot = -1;
    char err[256] = "";
    cr_assert_eq(bpe_learn((const unsigned char *)text, n, byte_id, nbase, ask, got, &ngot, err,
                           sizeof err),
                 0, "%s", err);
    cr_assert_eq(ngot, nwant, "\"%s\": %d merges, expected %d", text, ngot, nwant);
    for (int k = 0; k < nwant; k++)
        cr_assert(got[k].left == want[k].left && got[k].right == want[k].right,
                  "\"%s\": merge %d is (%d, %d), expected (%d, %d)", text, k, got[k].left,
                  got[k].right, want[k].left, want[k].right);
    BpeEncoder *e = bpe_encoder_new(byte_id, nbase, got, ngot, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    TokenId ids[64];
    size_t nids = bpe_encode(e, (const unsigned char *)text, n, ids);
    cr_assert_eq(nids, nseg, "\"%s\": %zu ids, expected %zu", text, nids, nseg);
    for (size_t i = 0; i < nseg; i++)
        cr_assert_eq(ids[i], seg[i], "\"%s\": id %zu is %d, expected %d", text, i, ids[i],
                     seg[i]);
    bpe_encoder_free(e);
}

Test(bpe, overlapping_pairs_count_twice_and_merge_left_to_right)
{
    /* Chunks "aaa" "\n" "aaa" "\n" "aaaaa"; ids '\n' 0, 'a' 1. (a,a) occurs
     * 2 + 2 + 4 = 8 times -> A = 2: "aaa" -> A a, "aaaaa" -> A A a. Then (A,a)
     * 3 times, (A,A) once -> B = 3: B, B, A B. Then (A,B) once: stop. */
    static const BpeMerge want[] = {{1, 1}, {2, 1}};
    static const TokenId seg[] = {3, 0, 3, 0, 2, 3};
    expect_merges("aaa\naaa\naaaaa", 10, want, 2, seg, 6);
}

Test(bpe, ties_go_to_the_smallest_left_id)
{
    /* Chunks "ab" " ab" " ba" " ba"; ids ' ' 0, 'a' 1, 'b' 2. Counts: (a,b) 2,
     * (' ',b) 2, (b,a) 2, (' ',a) 1: the smallest left id wins, (' ',b) -> 3.
     * Then (a,b) 2 and (3,a) 2: (a,b) -> 4. Then (3,a) 2 -> 5. Then
     * (' ',4) once: stop. */
    static const BpeMerge want[] = {{0, 2}, {1, 2}, {3, 1}};
    static const TokenId seg[] = {4, 0, 4, 5, 5};
    expect_merges("ab ab ba ba", 10, want, 3, seg, 5);
}

Test(bpe, ties_on_the_left_id_go_to_the_smallest_right_id)
{
    /* Chunks "ab" "\n" "ac" "\n" "ab" "\n" "ac"; ids '\n' 0, a 1, b 2, c 3:
     * (a,b) and (a,c) both twice, (a,b) first. */
    static const BpeMerge want[] = {{1, 2}, {1, 3}};
    static const TokenId seg[] = {4, 0, 5, 0, 4, 0, 5};
    expect_merges("ab\nac\nab\nac", 10, want, 2, seg, 7);
}

Test(bpe, learning_stops_at_the_number_asked_for)
{
    static const BpeMerge want[] = {{1, 2}};
    static const TokenId seg[] = {4, 0, 1, 3, 0, 4, 0, 1, 3};
    expect_merges("ab\nac\nab\nac", 1, want, 1, seg, 9);
}

Test(bpe, merges_never_cross_a_chunk_boundary)
{
    /* "a a a a": chunks "a" " a" " a" " a"; (a,' ') never counts, (' ',a) 3 times. */
    static const BpeMerge want[] = {{0, 1}};
    static const TokenId seg[] = {1, 2, 2, 2};
    expect_merges("a a a a", 10, want, 1, seg, 4);
}

Test(bpe, encoding_applies_merges_in_learned_order)
{
    /* Merges (a,a) -> A, then (A,a) -> B, as learned from "aaa\naaa\naaaaa".
     * Seven a's: (a,a) left to right gives A A A a, then (A,a): A A B. */
    int16_t byte_id[256];
    int nbase = alphabet((const unsigned char *)"\na", 2, byte_id);
    static const BpeMerge m[] = {{1, 1}, {2, 1}};
    char err[256] = "";
    BpeEncoder *e = bpe_encoder_new(byte_id, nbase, m, 2, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    TokenId ids[16];
    size_t n = bpe_encode(e, (const unsigned char *)"aaaaaaa\na", 9, ids);
    static const TokenId want[] = {2, 2, 3, 0, 1};
    cr_assert_eq(n, 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(ids[i], want[i], "id %zu is %d, expected %d", i, ids[i], want[i]);
    cr_assert_eq(bpe_encode(e, (const unsigned char *)"", 0, ids), 0);
    bpe_encoder_free(e);
}

/* ---- against the reference learner -------------------------------------------- */

Test(bpe, learner_matches_the_reference_on_random_texts)
{
    static const struct {
        const char *alpha;
        int want;
    } cases[] = {
        {"ab", 60},           /* one long chunk: long-chunk paths */
        {"aab", 80},
        {"ab ", 80},
        {"a b\n", 100},
        {"ab1 .\n", 120},
        {"xyz\xc3\xa9 \n,;", 150},
        {"aaaaab  ", 100},
    };
    Rng rng;
    rng_init(&rng, 7, 0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int trial = 0; trial < 4; trial++) {
            size_t n = 200 + rng_below(&rng, 3000);
            unsigned char *t = random_text(&rng, cases[c].alpha, strlen(cases[c].alpha), n);
            char what[64];
            snprintf(what, sizeof what, "alphabet %zu trial %d", c, trial);
            check_against_reference(t, n, cases[c].want, what);
            free(t);
        }
}

Test(bpe, learner_matches_the_reference_on_word_like_texts)
{
    Rng rng;
    rng_init(&rng, 11, 0);
    for (int trial = 0; trial < 6; trial++) {
        unsigned char *t = random_words(&rng, trial % 2 ? "abcde" : "etaoinshr", " \n.,", 6000);
        char what[64];
        snprintf(what, sizeof what, "word-like trial %d", trial);
        check_against_reference(t, 6000, 300, what);
        free(t);
    }
}

Test(bpe, learner_matches_the_reference_on_shakespeare)
{
    size_t n = 60000;
    unsigned char *t = shakespeare(&n);
    check_against_reference(t, n, 400, "tiny Shakespeare, first 60000 bytes");
    free(t);
}

Test(bpe, two_runs_give_the_same_merges)
{
    size_t n = 0;
    unsigned char *t = shakespeare(&n);
    int16_t byte_id[256];
    int nbase = alphabet(t, n, byte_id);
    BpeMerge *a = malloc(sizeof(BpeMerge) * 4096), *b = malloc(sizeof(BpeMerge) * 4096);
    int na = 0, nb = 0;
    char err[256] = "";
    cr_assert_eq(bpe_learn(t, n, byte_id, nbase, 4096, a, &na, err, sizeof err), 0, "%s", err);
    cr_assert_eq(bpe_learn(t, n, byte_id, nbase, 4096, b, &nb, err, sizeof err), 0, "%s", err);
    cr_assert_eq(na, 4096, "tiny Shakespeare gave only %d merges", na);
    cr_assert_eq(na, nb);
    cr_assert_eq(memcmp(a, b, sizeof(BpeMerge) * (size_t)na), 0, "two runs differ");
    free(a);
    free(b);
    free(t);
}

/* ---- round trips and threads -------------------------------------------------- */

Test(bpe, encode_then_decode_gives_the_bytes_back)
{
    Rng rng;
    rng_init(&rng, 3, 0);
    static const char *alphas[] = {"ab", "ab \n", "the q.\n", "xy\xc3\xa9\x80 ,\t1"};
    for (size_t c = 0; c < sizeof alphas / sizeof alphas[0]; c++) {
        size_t alen = strlen(alphas[c]);
        unsigned char *train = random_words(&rng, alphas[c], alphas[c], 5000);
        /* The alphabet is every byte of alphas[c], whether the text drew it or not. */
        int16_t byte_id[256];
        int nbase = alphabet((const unsigned char *)alphas[c], alen, byte_id);
        BpeMerge m[500];
        int got = 0;
        char err[256] = "";
        cr_assert_eq(bpe_learn(train, 5000, byte_id, nbase, 500 - nbase, m, &got, err,
                               sizeof err),
                     0, "%s", err);
        BpeEncoder *e = bpe_encoder_new(byte_id, nbase, m, got, err, sizeof err);
        cr_assert_not_null(e, "%s", err);
        for (int trial = 0; trial < 50; trial++) {
            size_t n = rng_below(&rng, 400);
            unsigned char *x = random_text(&rng, alphas[c], alen, n);
            TokenId *ids = malloc(sizeof(TokenId) * (n + 1));
            unsigned char *back = malloc(8 * n + 1);
            size_t nids = bpe_encode(e, x, n, ids);
            cr_assert_leq(nids, n);
            size_t nb = decode(ids, nids, byte_id, nbase, m, back);
            cr_assert(nb == n && memcmp(back, x, n) == 0, "alphabet %zu trial %d: round trip",
                      c, trial);
            free(ids);
            free(back);
            free(x);
        }
        bpe_encoder_free(e);
        free(train);
    }
}

/* Encodes t with one thread, then split at chunk boundaries over 4 threads, and
 * whole by 4 threads at once: all must agree. */
Test(bpe, encoding_from_many_threads_matches_one_thread)
{
    size_t n = 0;
    unsigned char *t = shakespeare(&n);
    int16_t byte_id[256];
    int nbase = alphabet(t, n, byte_id);
    BpeMerge *m = malloc(sizeof(BpeMerge) * 2048);
    int got = 0;
    char err[256] = "";
    cr_assert_eq(bpe_learn(t, n / 2, byte_id, nbase, 2048, m, &got, err, sizeof err), 0, "%s",
                 err);
    BpeEncoder *e = bpe_encoder_new(byte_id, nbase, m, got, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    TokenId *serial = malloc(sizeof(TokenId) * n);
    size_t ns = bpe_encode(e, t, n, serial);
    size_t nt = 0;
    for (size_t i = 0; i < n; nt++)
        i += bpe_chunk_len(t + i, n - i);
    cr_assert_lt(ns, nt * 2, "tokens %zu, chunks %zu", ns, nt);

    enum { P = 4 };
    size_t cut[P + 1] = {0}, len[P];
    cut[P] = n;
    for (int p = 1; p < P; p++) { /* the first chunk start at or after p n / P */
        size_t i = cut[p - 1];
        while (i < n * p / P)
            i += bpe_chunk_len(t + i, n - i);
        cut[p] = i;
    }
    TokenId *part = malloc(sizeof(TokenId) * n);
    TokenId *whole[P];
    size_t nwhole[P];
#pragma omp parallel for num_threads(P) schedule(static, 1)
    for (int p = 0; p < 2 * P; p++) {
        if (p < P) {
            len[p] = bpe_encode(e, t + cut[p], cut[p + 1] - cut[p], part + cut[p]);
        } else {
            whole[p - P] = malloc(sizeof(TokenId) * n);
            nwhole[p - P] = bpe_encode(e, t, n, whole[p - P]);
        }
    }
    size_t k = 0;
    for (int p = 0; p < P; p++)
        for (size_t i = 0; i < len[p]; i++, k++)
            cr_assert(k < ns && part[cut[p] + i] == serial[k], "part %d, id %zu differs", p, i);
    cr_assert_eq(k, ns);
    for (int p = 0; p < P; p++) {
        cr_assert_eq(nwhole[p], ns);
        cr_assert_eq(memcmp(whole[p], serial, ns * sizeof(TokenId)), 0, "thread copy %d", p);
        free(whole[p]);
    }
    free(part);
    free(serial);
    bpe_encoder_free(e);
    free(m);
    free(t);
}

/* ---- refusals ------------------------------------------------------------------ */

Test(bpe, learning_refuses_a_vocabulary_over_the_limit)
{
    int16_t byte_id[256];
    int nbase = alphabet((const unsigned char *)"abc", 3, byte_id);
    BpeMerge m[4] = {{7, 7}};
    int got = 5;
    char err[256] = "";
    cr_assert_eq(bpe_learn((const unsigned char *)"abcabc", 6, byte_id, nbase,
                           TOK_VOCAB_MAX - nbase + 1, m, &got, err, sizeof err),
                 -1);
    cr_assert(strstr(err, "32768"), "%s", err);
    cr_assert_eq(got, 0);
    cr_assert(m[0].left == 7 && m[0].right == 7, "merges were written");
    /* Exactly at the limit is fine (the text stops it long before). */
    BpeMerge one[8];
    cr_assert_eq(bpe_learn((const unsigned char *)"abcabc", 6, byte_id, nbase, 2, one, &got, err,
                           sizeof err),
                 0, "%s", err);
    cr_assert_eq(got, 2);
}

Test(bpe, learning_refuses_a_byte_without_an_id)
{
    int16_t byte_id[256];
    int nbase = alphabet((const unsigned char *)"ab", 2, byte_id);
    BpeMerge m[4];
    int got = 0;
    char err[256] = "";
    cr_assert_eq(bpe_learn((const unsigned char *)"abzab", 5, byte_id, nbase, 4, m, &got, err,
                           sizeof err),
                 -1);
    cr_assert(strstr(err, "0x7a (z) at offset 2"), "%s", err);
}

Test(bpe, encoder_refuses_invalid_merge_lists)
{
    int16_t byte_id[256];
    int nbase = alphabet((const unsigned char *)"abc", 3, byte_id);
    char err[256];
    static const struct {
        BpeMerge m[3];
        int n;
        const char *needle;
    } cases[] = {
        {{{0, 3}}, 1, "merge 0 joins ids 0 and 3, but only ids below 3"},
        {{{0, 1}, {3, 4}}, 2, "merge 1 joins ids 3 and 4, but only ids below 4"},
        {{{0, 1}, {2, 2}, {0, 1}}, 3, "merge 2 repeats merge 0"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        err[0] = '\0';
        cr_assert_null(bpe_encoder_new(byte_id, nbase, cases[c].m, cases[c].n, err, sizeof err),
                       "case %zu accepted", c);
        cr_assert(strstr(err, cases[c].needle), "case %zu: %s", c, err);
    }
    BpeMerge ok[1] = {{0, 1}};
    err[0] = '\0';
    cr_assert_null(bpe_encoder_new(byte_id, nbase, ok, TOK_VOCAB_MAX - nbase + 1, err,
                                   sizeof err));
    cr_assert(strstr(err, "limit of 32768"), "%s", err);
    cr_assert_null(bpe_encoder_new(byte_id, 0, ok, 1, err, sizeof err));
    cr_assert(strstr(err, "0 base ids"), "%s", err);
    int16_t bad[256];
    memcpy(bad, byte_id, sizeof bad);
    bad['z'] = 3;
    cr_assert_null(bpe_encoder_new(bad, nbase, ok, 1, err, sizeof err));
    cr_assert(strstr(err, "byte 0x7a has id 3"), "%s", err);
    BpeEncoder *e = bpe_encoder_new(byte_id, nbase, ok, 1, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    bpe_encoder_free(e);
    bpe_encoder_free(NULL);
}

/* ---- chunks that never end (BPE_CHUNK_MAX) ------------------------------------ */

/* Learning counts a chunk's first BPE_CHUNK_MAX bytes only: a run of letters
 * three and a half pieces long learns exactly the merges of its first piece. */
Test(bpe, learning_counts_only_the_first_piece_of_a_long_chunk)
{
    Rng rng;
    rng_init(&rng, 21, 0);
    size_t n = 3 * BPE_CHUNK_MAX + BPE_CHUNK_MAX / 2;
    unsigned char *t = random_text(&rng, "abc", 3, n);
    int16_t byte_id[256];
    int nbase = alphabet(t, n, byte_id);
    BpeMerge whole[300], first[300];
    int got_whole = 0, got_first = 0;
    char err[256] = "";
    cr_assert_eq(bpe_learn(t, n, byte_id, nbase, 300, whole, &got_whole, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(bpe_learn(t, BPE_CHUNK_MAX, byte_id, nbase, 300, first, &got_first, err,
                           sizeof err), 0, "%s", err);
    cr_assert_eq(got_whole, got_first);
    cr_assert(got_whole > 10, "only %d merges", got_whole);
    cr_assert_eq(memcmp(whole, first, (size_t)got_whole * sizeof *whole), 0,
                 "the merges differ from those of the first piece");
    cr_assert_eq(bpe_uncounted(t, n), n - BPE_CHUNK_MAX);
    cr_assert_eq(bpe_uncounted(t, BPE_CHUNK_MAX), 0);
    free(t);
}

/* Encoding cuts a long chunk into pieces of BPE_CHUNK_MAX bytes: the ids are
 * those of each piece encoded alone, and decode to the bytes. A whitespace run
 * longer than a piece, ending in the ' ' that joins the next word, is cut the
 * same way. */
Test(bpe, encoding_cuts_a_long_chunk_into_pieces)
{
    Rng rng;
    rng_init(&rng, 22, 0);
    size_t n = 2 * BPE_CHUNK_MAX + 700;
    unsigned char *t = random_text(&rng, "ab", 2, n);
    int16_t byte_id[256];
    int nbase = alphabet(t, n, byte_id);
    BpeMerge m[200];
    int got = 0;
    char err[256] = "";
    cr_assert_eq(bpe_learn(t, n, byte_id, nbase, 200, m, &got, err, sizeof err), 0, "%s", err);
    BpeEncoder *e = bpe_encoder_new(byte_id, nbase, m, got, err, sizeof err);
    cr_assert_not_null(e, "%s", err);
    TokenId *all = malloc(n * sizeof *all), *part = malloc(n * sizeof *part);
    size_t nall = bpe_encode(e, t, n, all), k = 0;
    for (size_t at = 0; at < n; at += BPE_CHUNK_MAX) {
        size_t len = n - at < BPE_CHUNK_MAX ? n - at : BPE_CHUNK_MAX;
        size_t np = bpe_encode(e, t + at, len, part);
        cr_assert_leq(k + np, nall);
        cr_assert_eq(memcmp(all + k, part, np * sizeof *part), 0, "piece at %zu differs", at);
        k += np;
    }
    cr_assert_eq(k, nall);
    bpe_encoder_free(e);
    free(all);
    free(part);
    free(t);
    /* Spaces: BPE_CHUNK_MAX + 2 of them and a word. Chunks "  ...  " (all but
     * the last space) and " ab"; the long one is cut into one piece and a rest. */
    size_t ns = BPE_CHUNK_MAX + 2;
    unsigned char *s = malloc(ns + 2);
    memset(s, ' ', ns);
    s[ns] = 'a';
    s[ns + 1] = 'b';
    cr_assert_eq(bpe_chunk_len(s, ns + 2), ns - 1);
    cr_assert_eq(bpe_uncounted(s, ns + 2), ns - 1 - BPE_CHUNK_MAX);
    free(s);
}

/* A stop asked for before learning starts ends it with no merges (1), and one
 * never asked for changes nothing. */
Test(bpe, a_stop_flag_ends_learning)
{
    Rng rng;
    rng_init(&rng, 23, 0);
    size_t n = 20000;
    unsigned char *t = random_words(&rng, "etaoinshr", " \n.,", n);
    int16_t byte_id[256];
    int nbase = alphabet(t, n, byte_id);
    BpeMerge a[400], b[400];
    int got_a = 0, got_b = -1;
    char err[256] = "";
    volatile int stop = 0;
    cr_assert_eq(bpe_learn(t, n, byte_id, nbase, 400, a, &got_a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(bpe_learn_until(t, n, byte_id, nbase, 400, b, &got_b, &stop, err, sizeof err),
                 0, "%s", err);
    cr_assert(got_a == got_b && memcmp(a, b, (size_t)got_a * sizeof *a) == 0);
    stop = 2;
    cr_assert_eq(bpe_learn_until(t, n, byte_id, nbase, 400, b, &got_b, &stop, err, sizeof err),
                 1);
    cr_assert_eq(got_b, 0);
    free(t);
}

/* The memory of learning from a text whose one chunk never ends is that of its
 * first piece: 16 MB of letters learn within an address space of 256 MiB (all
 * 16 MB counted would take about a gigabyte). Sanitizers reserve far more
 * address space, so there the limit is not set. */
Test(bpe, a_chunk_that_never_ends_learns_in_bounded_memory)
{
    Rng rng;
    rng_init(&rng, 24, 0);
    size_t n = (size_t)16 << 20;
    unsigned char *t = random_text(&rng, "abcdefghijklmnopqrstuvwxyz", 26, n);
    int16_t byte_id[256];
    int nbase = alphabet(t, n, byte_id);
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit lim = {(rlim_t)256 << 20, (rlim_t)256 << 20};
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
#endif
    BpeMerge m[1000];
    int got = 0;
    char err[256] = "";
    cr_assert_eq(bpe_learn(t, n, byte_id, nbase, 1000, m, &got, err, sizeof err), 0, "%s", err);
    cr_assert(got > 0);
    free(t);
}
