/* Tests for data/induction (the induction-task generator) and for ./train
 * --corpus induction: every line is a string of lowercase letters written whole
 * two or more times and ended by '\n', lengths and copy counts stay in the spec's
 * ranges, back[] points at the same letter one copy earlier, the output is a pure
 * function of (seed, spec) with the prefix property, bad specs are refused by
 * name, the copy loss averages exactly the bytes it promises, and the trainer
 * accepts, records and resumes the corpus. The checks parse the text themselves. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/induction.h"
#include "util/hash.h"
#include "tests/testutil.h"

static char *generate(size_t n, uint64_t seed, const InductionSpec *spec, uint8_t **back)
{
    char *buf = malloc(n);
    uint8_t *b = malloc(n);
    char err[300] = "";
    cr_assert(buf && b);
    cr_assert_eq(induction_generate(buf, b, n, seed, spec, err, sizeof err), 0, "%s", err);
    if (back)
        *back = b;
    else
        free(b);
    return buf;
}

/* Checks every whole line of buf[0..n) against spec; returns the number of lines,
 * and counts period-2 lines in *p2. */
static size_t check_lines(const char *buf, const uint8_t *back, size_t n,
                          const InductionSpec *s, size_t *p2)
{
    size_t lines = 0, start = 0;
    *p2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != '\n') {
            cr_assert(buf[i] >= 'a' && buf[i] <= 'z', "byte %zu is 0x%02x", i,
                      (unsigned char)buf[i]);
            continue;
        }
        cr_assert_eq(back[i], INDUCTION_BACK_NONE, "newline at %zu", i);
        const char *line = buf + start;
        size_t len = i - start;
        int is_p2 = back[start] == INDUCTION_BACK_NONE;
        if (is_p2) {
            cr_assert(s->period2_percent > 0, "a period-2 line at %zu with share 0", start);
            cr_assert(len >= (size_t)s->period2_min && len <= (size_t)s->period2_max,
                      "period-2 line at %zu has %zu letters", start, len);
            cr_assert_neq(line[0], line[1], "period-2 line at %zu repeats one letter", start);
            for (size_t k = 0; k < len; k++) {
                cr_assert_eq(line[k], line[k % 2], "period-2 line at %zu breaks at %zu", start, k);
                cr_assert_eq(back[start + k], INDUCTION_BACK_NONE);
            }
            (*p2)++;
        } else {
            /* The string length is the first back[] value of a later copy. */
            size_t L = 0;
            while (L < len && back[start + L] == INDUCTION_BACK_FIRST)
                L++;
            cr_assert(L >= (size_t)s->min_len && L <= (size_t)s->max_len,
                      "line at %zu: string of %zu letters", start, L);
            cr_assert_eq(len % L, 0, "line at %zu: %zu letters is not whole copies of %zu", start,
                         len, L);
            size_t reps = len / L;
            cr_assert(reps >= (size_t)s->min_reps && reps <= (size_t)s->max_reps,
                      "line at %zu: %zu copies", start, reps);
            for (size_t k = L; k < len; k++) {
                cr_assert_eq(back[start + k], L, "line at %zu, letter %zu", start, k);
                cr_assert_eq(line[k], line[k - L], "line at %zu: copy differs at %zu", start, k);
            }
        }
        lines++;
        start = i + 1;
    }
    return lines;
}

Test(induction, every_line_is_whole_copies_of_a_string_within_the_spec)
{
    InductionSpec s = induction_default_spec();
    size_t n = 200000, p2;
    uint8_t *back;
    char *buf = generate(n, 7, &s, &back);
    size_t lines = check_lines(buf, back, n, &s, &p2);
    cr_assert_gt(lines, 4000u);
    cr_assert_eq(p2, 0u);
    free(buf);
    free(back);
}

Test(induction, lengths_and_copy_counts_cover_their_whole_ranges)
{
    InductionSpec s = induction_default_spec();
    size_t n = 200000;
    uint8_t *back;
    char *buf = generate(n, 3, &s, &back);
    int seen_len[INDUCTION_MAX_LEN + 1] = {0}, seen_reps[8] = {0};
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != '\n')
            continue;
        size_t L = 0;
        while (back[start + L] == INDUCTION_BACK_FIRST)
            L++;
        seen_len[L] = 1;
        seen_reps[(i - start) / L] = 1;
        start = i + 1;
    }
    for (int L = s.min_len; L <= s.max_len; L++)
        cr_assert(seen_len[L], "no string of %d letters", L);
    for (int r = s.min_reps; r <= s.max_reps; r++)
        cr_assert(seen_reps[r], "no line of %d copies", r);
    cr_assert(!seen_len[s.min_len - 1] && !seen_len[s.max_len + 1]);
    free(buf);
    free(back);
}

Test(induction, period_two_lines_come_in_the_asked_share)
{
    InductionSpec s = induction_default_spec();
    s.period2_percent = 20;
    s.period2_min = 6;
    s.period2_max = 10;
    size_t n = 400000, p2;
    uint8_t *back;
    char *buf = generate(n, 11, &s, &back);
    size_t lines = check_lines(buf, back, n, &s, &p2);
    double share = (double)p2 / (double)lines;
    /* ~11,000 lines: the binomial standard deviation of the share is 0.004. */
    cr_assert(share > 0.18 && share < 0.22, "period-2 share %.3f of %zu lines", share, lines);
    free(buf);
    free(back);
}

Test(induction, same_seed_same_bytes_and_a_shorter_request_is_a_prefix)
{
    InductionSpec s = induction_default_spec();
    uint8_t *b1, *b2, *b3;
    char *a = generate(50000, 5, &s, &b1);
    char *b = generate(12345, 5, &s, &b2);
    char *c = generate(50000, 6, &s, &b3);
    cr_assert_eq(memcmp(a, b, 12345), 0);
    cr_assert_eq(memcmp(b1, b2, 12345), 0);
    cr_assert_neq(memcmp(a, c, 50000), 0, "seeds 5 and 6 gave the same text");
    char *again = generate(50000, 5, &s, NULL);
    cr_assert_eq(memcmp(a, again, 50000), 0);
    free(a);
    free(b);
    free(c);
    free(again);
    free(b1);
    free(b2);
    free(b3);
}

/* The first bytes of the built-in corpus, so a change to the generator or its
 * spec (which would change what every recipe number was measured on) is seen. */
Test(induction, builtin_corpus_is_the_default_spec_at_the_fixed_seed)
{
    TextFile f;
    char err[300] = "";
    cr_assert_eq(induction_textfile(&f, 100000, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(f.name, INDUCTION_CORPUS_NAME);
    cr_assert_eq(f.n, 100000u);
    InductionSpec s = induction_default_spec();
    char *buf = generate(100000, INDUCTION_CORPUS_SEED, &s, NULL);
    cr_assert_eq(memcmp(f.bytes, buf, 100000), 0);
    cr_assert_eq(f.hash, hash_fnv1a(HASH_FNV_INIT, buf, 100000));
    static const char head[] = "mzzfxuohqoifdylpuemzzfxuohqoifdylpuemzzfxuohqoifdylpue\neuuw";
    cr_assert_eq(memcmp(f.bytes, head, sizeof head - 1), 0, "corpus starts '%.40s'", f.bytes);
    free(buf);
    textfile_free(&f);
}

static void expect_spec_refused(InductionSpec s, const char *needle)
{
    char err[300] = "", buf[16] = "untouched";
    cr_assert_eq(induction_generate(buf, NULL, sizeof buf, 1, &s, err, sizeof err), -1,
                 "accepted (expected '%s')", needle);
    cr_assert(strstr(err, needle), "expected '%s' in: %s", needle, err);
    cr_assert_str_eq(buf, "untouched", "a refused spec wrote output");
}

Test(induction, bad_specs_are_refused_naming_the_field)
{
    InductionSpec s = induction_default_spec();
    InductionSpec t = s;
    t.min_len = 0;
    expect_spec_refused(t, "string length");
    t = s;
    t.max_len = INDUCTION_MAX_LEN + 1;
    expect_spec_refused(t, "string length");
    t = s;
    t.min_reps = 4;
    expect_spec_refused(t, "copies");
    t = s;
    t.period2_percent = 101;
    expect_spec_refused(t, "period-2 share");
    t = s;
    t.period2_percent = 10;
    t.period2_min = 1;
    expect_spec_refused(t, "period-2 length");
}

/* Two lines "abab\n" (string "ab" twice) and "cdcd\n", scored in windows of T = 4
 * from byte 0: window 0 predicts bytes 1..4, window 1 bytes 5..8, window 2 byte 9.
 * back: a b a b \n c d c d \n  =  0 0 2 2 N 0 0 2 2 N. Byte 7 ('c', back 2) has its
 * earlier copy at 5, inside window 1 (bytes 4..): counted; byte 2 ('a') has it at
 * 0, inside window 0: counted; byte 3 too; byte 8 ('d') at 6: counted. Bytes 1
 * and 6 are first-copy letters; byte 5 is one too. Newlines are in neither. */
Test(induction, copy_loss_averages_first_and_in_window_repeated_letters)
{
    const uint8_t N = INDUCTION_BACK_NONE;
    const uint8_t back[10] = {0, 0, 2, 2, N, 0, 0, 2, 2, N};
    float loss[9];
    for (int i = 0; i < 9; i++)
        loss[i] = (float)(i + 1); /* loss[i] predicts byte i + 1 */
    double first, repeat;
    size_t nf, nr;
    induction_copy_loss(back, 0, 10, 4, loss, &first, &nf, &repeat, &nr);
    /* first copy: bytes 1, 5, 6 -> losses 1, 5, 6; repeated: bytes 2, 3, 7, 8 -> 2, 3, 7, 8 */
    cr_assert_eq(nf, 3u);
    cr_assert_eq(nr, 4u);
    cr_assert_float_eq(first, 4.0, 1e-12);
    cr_assert_float_eq(repeat, 5.0, 1e-12);
    /* Windows of T = 2 from byte 0: window k predicts bytes 2k + 1, 2k + 2 and sees
     * bytes from 2k. Byte 2 (window 0) has its copy at 0: in; byte 3 (window 1,
     * sees 2..) at 1: out; byte 7 (window 3, sees 6..) at 5: out; byte 8 at 6: in. */
    induction_copy_loss(back, 0, 10, 2, loss, &first, &nf, &repeat, &nr);
    cr_assert_eq(nr, 2u, "got %zu", nr);
    cr_assert_float_eq(repeat, (2.0 + 8.0) / 2.0, 1e-12);
    /* Starting at byte 5 (the val split of a corpus): only the second line. */
    induction_copy_loss(back, 5, 5, 8, loss, &first, &nf, &repeat, &nr);
    cr_assert_eq(nf, 1u); /* byte 6 */
    cr_assert_eq(nr, 2u); /* bytes 7 and 8 */
    cr_assert_float_eq(first, 1.0, 1e-12);
    cr_assert_float_eq(repeat, 2.5, 1e-12);
    induction_copy_loss(back, 4, 1, 8, loss, &first, &nf, &repeat, &nr);
    cr_assert(isnan(first) && isnan(repeat) && nf == 0 && nr == 0);
}

/* ---- ./train --corpus ---- */

Test(induction, data_and_corpus_together_or_an_unknown_corpus_are_usage_errors)
{
    const char *dir = tu_tmpdir("induction-usage");
    char *out, path[400];
    snprintf(path, sizeof path, "%s/x.ckpt", dir);
    int rc = tu_run(&out, "%s/train --data README.md --corpus induction --out %s", tu_bin(),
                    path);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--data") && strstr(out, "--corpus"), "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --corpus shakespeare --out %s", tu_bin(), path);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "shakespeare") && strstr(out, "induction"), "%s", out);
    free(out);
}

/* A short run on the induction corpus takes the recipe's model unless a flag says
 * otherwise, logs the copy loss, and a resume without --corpus continues on the
 * same corpus (refusing --corpus text). */
Test(induction, the_trainer_applies_the_recipe_records_the_corpus_and_resumes_on_it)
{
    const char *dir = tu_tmpdir("induction-train");
    char ck[400], log[400], ck2[400], *out;
    snprintf(ck, sizeof ck, "%s/a.ckpt", dir);
    snprintf(log, sizeof log, "%s/a.log", dir);
    snprintf(ck2, sizeof ck2, "%s/b.ckpt", dir);
    int rc = tu_run(&out, "%s/train --corpus induction -n 6 --eval-every 3 --eval-iters 1 -B 4 "
                    "--threads 1 --out %s --log %s", tu_bin(), ck, log);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, INDUCTION_CORPUS_NAME), "%s", out);
    cr_assert(strstr(out, "L=2 H=4 C=64 D=16 T=64 V=27"), "recipe model not used:\n%s", out);
    cr_assert(strstr(out, "lr 0.005 -> 0.0005 (warm-up 200"), "recipe schedule not used:\n%s", out);
    free(out);
    size_t n;
    char *text = (char *)tu_read_file(log, &n);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "\"copy_loss_first\":") && strstr(text, "\"copy_loss_repeat\":"),
              "no copy loss in the final line");
    free(text);
    rc = tu_run(&out, "%s/train --resume %s --corpus text -n 8 --out %s", tu_bin(), ck, ck2);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "contradicts"), "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --resume %s -n 8 --threads 1 --out %s", tu_bin(), ck, ck2);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "resuming") && strstr(out, INDUCTION_CORPUS_NAME), "%s", out);
    free(out);
    /* A flag given beside --corpus wins over the recipe. */
    rc = tu_run(&out, "%s/train --corpus induction -H 2 -n 2 --eval-every 0 --eval-iters 1 -B 2 "
                "--threads 1 --out %s", tu_bin(), ck);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "L=2 H=2 C=64 D=32"), "%s", out);
    free(out);
}
