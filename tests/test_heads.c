/* Tests for model/heads: every metric on hand-built attention matrices whose
 * answers are known exactly (previous-token, uniform, sink, delimiter and
 * induction patterns, JSD of identical and disjoint heads, the effective
 * number of heads, the types), thread-count identity, and one end-to-end run
 * of `infer --heads --report` on a tiny checkpoint. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "model/ckpt.h"
#include "model/heads.h"
#include "tests/testutil.h"

enum { PAT_PREV, PAT_UNIFORM, PAT_SINK, PAT_SELF, PAT_INDUCTION, PAT_DUPLICATE };

/* Fills att[T][T] with one pattern; rows with no such key fall back to self.
 * P is the probe half-length for the induction and duplicate patterns. */
static void fill_pattern(float *att, int T, int pat, int P)
{
    memset(att, 0, (size_t)T * T * sizeof(float));
    for (int i = 0; i < T; i++) {
        float *row = att + (size_t)i * T;
        int key = i;
        switch (pat) {
        case PAT_PREV: key = i > 0 ? i - 1 : 0; break;
        case PAT_SINK: key = 0; break;
        case PAT_INDUCTION: key = i >= P ? i - P + 1 : i; break;
        case PAT_DUPLICATE: key = i >= P ? i - P : i; break;
        case PAT_UNIFORM:
            for (int j = 0; j <= i; j++)
                row[j] = 1.0f / (float)(i + 1);
            continue;
        default: break;
        }
        row[key] = 1.0f;
    }
}

/* A stand-in for gpt_forward's output: L layers of H heads over B windows,
 * head k of window b holding pattern pats[k]. */
typedef struct {
    Activations a;
    float *buf;
} FakeActs;

static void fake_init(FakeActs *f, int L, int H, int B, int T, const int *pats, int P)
{
    memset(f, 0, sizeof *f);
    f->buf = calloc((size_t)L * B * H * T * T, sizeof(float));
    cr_assert_not_null(f->buf);
    f->a.L = (size_t)L;
    f->a.H = (size_t)H;
    f->a.B = B;
    f->a.T = T;
    f->a.att = f->buf;
    for (int l = 0; l < L; l++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                fill_pattern((float *)heads_att(&f->a, l, b, h, T), T, pats[l * H + h], P);
}

static HeadStats stats_of(const FakeActs *f, int B, int T, const unsigned char *delim,
                          const int *match, int k)
{
    int n = (int)(f->a.L * f->a.H);
    HeadSums *sums = calloc((size_t)n, sizeof *sums);
    HeadStats *st = calloc((size_t)n, sizeof *st);
    heads_add_rows(sums, &f->a, delim, match, B, T);
    heads_finish(st, sums, n);
    HeadStats out = st[k];
    free(sums);
    free(st);
    return out;
}

#define T16 16

Test(heads, previous_token_pattern_scores_one)
{
    int pats[] = {PAT_PREV};
    FakeActs f;
    fake_init(&f, 1, 1, 2, T16, pats, 0);
    HeadStats s = stats_of(&f, 2, T16, NULL, NULL, 0);
    cr_assert_float_eq(s.prev, 1.0, 1e-12);
    cr_assert_float_eq(s.self, 0.0, 1e-12);
    cr_assert_float_eq(s.confidence, 1.0, 1e-12);
    cr_assert_float_eq(s.distance, 1.0, 1e-12);
    cr_assert_float_eq(s.entropy, 0.0, 1e-12);
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_PREVIOUS);
    free(f.buf);
}

Test(heads, uniform_rows_have_normalised_entropy_one)
{
    int pats[] = {PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 1, 1, T16, pats, 0);
    HeadStats s = stats_of(&f, 1, T16, NULL, NULL, 0);
    /* Rows 4..15 (skip = 16/4): uniform over i + 1 keys. */
    cr_assert_eq(heads_skip(T16), 4);
    double dist = 0, first = 0;
    for (int i = 4; i < T16; i++) {
        dist += i / 2.0;
        first += 1.0 / (i + 1);
    }
    cr_assert_float_eq(s.entropy, 1.0, 1e-6, "entropy %.9f", s.entropy);
    cr_assert_float_eq(s.distance, dist / 12, 1e-5);
    cr_assert_float_eq(s.first, first / 12, 1e-6);
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_BROAD);
    free(f.buf);
}

Test(heads, first_position_sink_scores_one)
{
    int pats[] = {PAT_SINK};
    FakeActs f;
    fake_init(&f, 1, 1, 1, T16, pats, 0);
    HeadStats s = stats_of(&f, 1, T16, NULL, NULL, 0);
    cr_assert_float_eq(s.first, 1.0, 1e-12);
    cr_assert_float_eq(s.prev, 0.0, 1e-12);
    cr_assert_float_eq(s.distance, (4 + 15) / 2.0, 1e-12);
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_SINK);
    free(f.buf);
}

Test(heads, delimiter_score_is_the_mass_on_delimiter_keys)
{
    const char *text = "ab, cd. ef gh!ij";
    unsigned char delim[T16];
    for (int t = 0; t < T16; t++)
        delim[t] = (unsigned char)heads_is_delim((unsigned char)text[t]);
    cr_assert(delim[2] && delim[3] && delim[6] && delim[10] && delim[13] && !delim[0]);
    int pats[] = {PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 1, 1, T16, pats, 0);
    /* A uniform head's delimiter mass equals the share of delimiter keys. */
    HeadStats s = stats_of(&f, 1, T16, delim, NULL, 0);
    double rows, share = heads_delim_share(delim, T16, &rows);
    cr_assert_float_eq(s.delim, share / rows, 1e-6);
    /* A head on the last delimiter at or before each query scores 1. */
    float *att = f.buf;
    memset(att, 0, sizeof(float) * T16 * T16);
    for (int i = 0; i < T16; i++) {
        int key = i;
        while (key > 0 && !delim[key])
            key--;
        att[i * T16 + key] = 1.0f;
    }
    s = stats_of(&f, 1, T16, delim, NULL, 0);
    cr_assert_float_eq(s.delim, 1.0, 1e-12);
    cr_assert_eq(heads_classify(&s, share / rows), HEAD_DELIMITER);
    free(f.buf);
}

Test(heads, probe_is_distinct_tokens_repeated_twice)
{
    Rng rng;
    rng_init(&rng, 7, RNG_STREAM_HEADS);
    int tokens[64];
    int P = heads_probe_build(tokens, 64, 40, &rng);
    cr_assert_eq(P, 32);
    for (int i = 0; i < P; i++) {
        cr_assert(tokens[i] >= 0 && tokens[i] < 40);
        cr_assert_eq(tokens[P + i], tokens[i]);
        for (int j = 0; j < i; j++)
            cr_assert_neq(tokens[i], tokens[j]);
    }
    cr_assert_eq(heads_probe_build(tokens, 64, 5, &rng), 5, "P is capped by the vocabulary");
}

Test(heads, induction_and_duplicate_on_a_hand_built_probe)
{
    enum { P = 8, TP = 2 * P };
    int pats[] = {PAT_INDUCTION, PAT_DUPLICATE, PAT_PREV};
    FakeActs f;
    fake_init(&f, 1, 3, 2, TP, pats, P);
    HeadSums sums[3] = {0};
    HeadStats st[3] = {0};
    heads_add_probe(sums, &f.a, 2, P);
    heads_finish(st, sums, 3);
    cr_assert_float_eq(st[0].induction, 1.0, 1e-12);
    cr_assert_float_eq(st[0].duplicate, 0.0, 1e-12);
    cr_assert_float_eq(st[1].induction, 0.0, 1e-12);
    cr_assert_float_eq(st[1].duplicate, 1.0, 1e-12);
    /* Previous-token: query P + q attends P + q - 1, the copy's key only at q = 0. */
    cr_assert_float_eq(st[2].induction, 0.0, 1e-12);
    cr_assert_float_eq(st[2].duplicate, 0.0, 1e-12);
    st[0].prev = 0.9;   /* induction takes precedence over other patterns */
    cr_assert_eq(heads_classify(&st[0], 0.2), HEAD_INDUCTION);
    st[1].entropy = 0.1;
    st[1].distance = 8;
    cr_assert_eq(heads_classify(&st[1], 0.2), HEAD_MIXED);
    free(f.buf);
}

Test(heads, repeat_targets_point_after_the_last_earlier_bigram)
{
    /* "xabyabzab": at i = 5 ('b' after 'a') the last earlier "ab" ends at 2, so
     * the target is 3; at i = 8 it is the "ab" ending at 5, target 6. */
    const char *s = "xabyabzab";
    int tok[9], match[9];
    for (int i = 0; i < 9; i++)
        tok[i] = s[i];
    heads_repeat_targets(match, tok, 1, 9);
    int want[9] = {-1, -1, -1, -1, -1, 3, -1, -1, 6};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(match[i], want[i], "match[%d] = %d, want %d", i, match[i], want[i]);
    /* "abab": the match would be i - 1, a previous-token key, so it is not used. */
    int tok2[4] = {1, 2, 1, 2}, m2[4];
    heads_repeat_targets(m2, tok2, 1, 4);
    cr_assert_eq(m2[3], -1);
}

Test(heads, jsd_is_zero_for_identical_and_ln2_for_disjoint_rows)
{
    float p[4] = {0.1f, 0.2f, 0.3f, 0.4f}, q[4] = {0.5f, 0.5f, 0, 0}, r[4] = {0, 0, 0.25f, 0.75f};
    cr_assert_eq(heads_jsd(p, p, 4), 0.0);
    cr_assert_float_eq(heads_jsd(q, r, 4), log(2.0), 1e-12);
    cr_assert_float_eq(heads_jsd(p, q, 4), heads_jsd(q, p, 4), 1e-15);
    double d = heads_jsd(p, q, 4);
    cr_assert(d > 0 && d < log(2.0));
}

Test(heads, head_jsd_matrix_and_effective_number)
{
    /* Heads 0 and 1 identical (previous-token), head 2 a sink: rows i >= 4
     * have disjoint supports {i - 1} and {0}. */
    int pats[] = {PAT_PREV, PAT_PREV, PAT_SINK};
    FakeActs f;
    fake_init(&f, 1, 3, 2, T16, pats, 0);
    char err[256];
    double jsd[9] = {0};
    cr_assert_eq(heads_add_jsd(jsd, &f.a, 2, T16, err, sizeof err), 0, "%s", err);
    double rows = 2.0 * (T16 - heads_skip(T16));
    for (int i = 0; i < 9; i++)
        jsd[i] /= rows;
    cr_assert_eq(jsd[0 * 3 + 1], 0.0);
    cr_assert_float_eq(jsd[0 * 3 + 2], log(2.0), 1e-12);
    cr_assert_float_eq(jsd[2 * 3 + 1], log(2.0), 1e-12);
    int same[2] = {0, 1}, apart[2] = {0, 2}, all[3] = {0, 1, 2};
    double e;
    cr_assert_eq(heads_effective(&e, jsd, 3, same, 2, err, sizeof err), 0);
    cr_assert_float_eq(e, 1.0, 1e-9, "identical heads count once, got %g", e);
    cr_assert_eq(heads_effective(&e, jsd, 3, apart, 2, err, sizeof err), 0);
    cr_assert_float_eq(e, 2.0, 1e-9, "disjoint heads count fully, got %g", e);
    /* Two patterns among three heads: S has eigenvalues 2, 1, 0, so the count is
     * exp(H(2/3, 1/3)) = 1.89: a pair of twins weighs more than a loner. */
    cr_assert_eq(heads_effective(&e, jsd, 3, all, 3, err, sizeof err), 0);
    double want = exp(-(2.0 / 3) * log(2.0 / 3) - (1.0 / 3) * log(1.0 / 3));
    cr_assert_float_eq(e, want, 1e-9, "got %g, want %g", e, want);
    HeadStats st[3] = {0};
    heads_redundancy(st, jsd, 1, 3);
    cr_assert_eq(st[0].nearest, 1);
    cr_assert_eq(st[0].jsd_nearest, 0.0);
    cr_assert_float_eq(st[2].jsd_layer, log(2.0), 1e-12);
    free(f.buf);
}

Test(heads, effective_number_of_many_disjoint_heads_is_their_count)
{
    enum { K = 16 };
    double jsd[K * K];
    int idx[K];
    for (int i = 0; i < K; i++) {
        idx[i] = i;
        for (int j = 0; j < K; j++)
            jsd[i * K + j] = i == j ? 0.0 : log(2.0);
    }
    double e;
    cr_assert_eq(heads_effective(&e, jsd, K, idx, K, NULL, 0), 0);
    cr_assert_float_eq(e, (double)K, 1e-9);
}

Test(heads, classification_follows_the_documented_thresholds)
{
    HeadStats s = {.entropy = 0.5, .distance = 10.0};
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_MIXED);
    s.entropy = HEADS_BROAD_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_BROAD);
    s.distance = HEADS_LOCAL_MAX;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_LOCAL);
    s.delim = 0.55;
    cr_assert_eq(heads_classify(&s, 0.3), HEAD_LOCAL, "0.55 is under 2 x a 0.3 share");
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_DELIMITER);
    s.first = HEADS_SINK_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_SINK);
    s.prev = HEADS_PREV_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_PREVIOUS);
    s.induction = HEADS_INDUCTION_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_INDUCTION);
    s.masked = 1;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_MASKED);
    cr_assert_str_eq(heads_type_names[HEAD_PREVIOUS], "previous-token");
}

Test(heads, quick_metrics_for_training_logs)
{
    int pats[] = {PAT_PREV, PAT_SINK};
    FakeActs f;
    fake_init(&f, 1, 2, 1, T16, pats, 0);
    int tokens[T16];
    for (int t = 0; t < T16; t++)
        tokens[t] = t % 5;
    float out[2 * HEADS_QUICK_COUNT];
    cr_assert_eq(heads_quick(out, &f.a, tokens, 1, T16, NULL, 0), 0);
    cr_assert_float_eq(out[HEADS_QUICK_PREV], 1.0f, 1e-6);
    cr_assert_float_eq(out[HEADS_QUICK_DISTANCE], 1.0f, 1e-6);
    cr_assert_float_eq(out[HEADS_QUICK_COUNT + HEADS_QUICK_FIRST], 1.0f, 1e-6);
    cr_assert_float_eq(out[HEADS_QUICK_COUNT + HEADS_QUICK_ENTROPY], 0.0f, 1e-6);
    cr_assert_str_eq(heads_quick_names[HEADS_QUICK_REPEAT], "repeat");
    free(f.buf);
}

Test(heads, statistics_are_identical_for_one_and_two_threads)
{
    enum { L = 2, H = 3, B = 2, T = 24 };
    FakeActs f;
    int pats[L * H] = {0};
    fake_init(&f, L, H, B, T, pats, 0);
    Rng rng;
    rng_init(&rng, 3, 0);
    /* Random causal rows. */
    for (size_t r = 0; r < (size_t)L * B * H * T; r++) {
        int i = (int)(r % T);
        float *row = f.buf + r * T, s = 0;
        for (int j = 0; j <= i; j++)
            s += row[j] = rng_uniform(&rng) + 1e-3f;
        for (int j = 0; j <= i; j++)
            row[j] /= s;
    }
    double jsd1[L * H * L * H] = {0}, jsd2[L * H * L * H] = {0};
    HeadSums s1[L * H] = {0}, s2[L * H] = {0};
    omp_set_num_threads(1);
    heads_add_rows(s1, &f.a, NULL, NULL, B, T);
    heads_add_jsd(jsd1, &f.a, B, T, NULL, 0);
    omp_set_num_threads(2);
    heads_add_rows(s2, &f.a, NULL, NULL, B, T);
    heads_add_jsd(jsd2, &f.a, B, T, NULL, 0);
    cr_assert(memcmp(s1, s2, sizeof s1) == 0);
    cr_assert(memcmp(jsd1, jsd2, sizeof jsd1) == 0);
    free(f.buf);
}

/* A random tiny model saved as a checkpoint, for the command-line tests. */
static void write_tiny(const char *dir, char *ckpt, char *text, size_t len)
{
    const char *s = "The cat sat on the mat, and the dog (a big one) sat too.\n"
                    "Mira saw Tobe, and Mira left. \"Go!\" said the man.\n";
    size_t n = strlen(s), total = 12 * n;
    char *buf = malloc(total);
    for (size_t i = 0; i < total; i++)
        buf[i] = s[i % n];
    snprintf(text, len, "%s/text.txt", dir);
    cr_assert_eq(tu_write_file(text, buf, total), 0);
    Tokenizer tok;
    tok_build(&tok, (const unsigned char *)buf, total);
    Config cfg = {.V = tok.V, .T = 16, .L = 2, .H = 2, .C = 16, .D = 8};
    Model m;
    char err[512];
    cr_assert_eq(model_init(&m, &cfg, err, sizeof err), 0, "%s", err);
    params_init(&m.table, m.params, 5);
    snprintf(ckpt, len, "%s/tiny.ckpt", dir);
    cr_assert_eq(ckpt_save(ckpt, &m, &tok, 0, NULL, err, sizeof err), 0, "%s", err);
    model_free(&m);
    free(buf);
}

static size_t count_lines(const char *path)
{
    size_t n = 0, len;
    unsigned char *b = tu_read_file(path, &len);
    cr_assert_not_null(b, "%s missing", path);
    for (size_t i = 0; i < len; i++)
        n += b[i] == '\n';
    free(b);
    return n;
}

static void assert_starts(const char *path, const char *prefix, const char *contains)
{
    size_t len;
    unsigned char *b = tu_read_file(path, &len);
    cr_assert_not_null(b, "%s missing", path);
    b[len] = '\0';
    cr_assert(strncmp((char *)b, prefix, strlen(prefix)) == 0, "%s starts '%.40s'", path, b);
    cr_assert_not_null(strstr((char *)b, contains), "%s lacks '%s'", path, contains);
    free(b);
}

Test(heads, infer_heads_writes_a_complete_report, .timeout = 60)
{
    const char *dir = tu_tmpdir("heads-e2e");
    cr_assert_not_null(dir);
    char d[300], ckpt[400], text[400], rep[400], cmd[2048], path[600], *out;
    snprintf(d, sizeof d, "%s", dir);
    write_tiny(d, ckpt, text, sizeof ckpt);
    snprintf(rep, sizeof rep, "%s/report/sub", d);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/report && %s/infer --ckpt %s --heads %s --report %s "
             "--windows 6 --mask 1.0 --prune-curve -j 2", d, tu_bin(), ckpt, text, rep);
    int rc = tu_run(cmd, &out);
    cr_assert_eq(rc, 0, "infer --heads failed (%d):\n%s", rc, out);
    cr_assert_not_null(strstr(out, "masked"), "the silenced head is reported:\n%s", out);
    cr_assert_not_null(strstr(out, "prune curve"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/heads.csv", rep);
    cr_assert_eq(count_lines(path), 1 + 2 * 2, "a header and one row per head");
    assert_starts(path, "layer,head,type", "masked");
    snprintf(path, sizeof path, "%s/heads.json", rep);
    assert_starts(path, "{", "\"induction\":");
    snprintf(path, sizeof path, "%s/summary.json", rep);
    assert_starts(path, "{\"layers\":2,\"heads\":2", "\"removable_heads_1pct\":");
    assert_starts(path, "{", "\"type_counts\":{\"induction\":");
    assert_starts(path, "{", "\"effective_heads\":");
    snprintf(path, sizeof path, "%s/prune.csv", rep);
    cr_assert_eq(count_lines(path), 1 + 1 + 3, "header, no removal, then the 3 active heads");
    snprintf(path, sizeof path, "%s/heatmaps/text_L1_H1.svg", rep);
    assert_starts(path, "<svg", "</svg>");
    snprintf(path, sizeof path, "%s/index.html", rep);
    assert_starts(path, "<!DOCTYPE html>", "heatmaps/probe_L0_H0.svg");
}

Test(heads, infer_heads_refuses_a_report_path_that_is_a_file, .timeout = 30)
{
    const char *dir = tu_tmpdir("heads-badreport");
    char d[300], ckpt[400], text[400], cmd[2048], *out;
    snprintf(d, sizeof d, "%s", dir);
    write_tiny(d, ckpt, text, sizeof ckpt);
    snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s --heads %s --report %s --windows 2", tu_bin(),
             ckpt, text, text);
    int rc = tu_run(cmd, &out);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert_not_null(strstr(out, "not a directory"), "%s", out);
    free(out);
    size_t len;
    unsigned char *b = tu_read_file(text, &len);
    cr_assert(b && len > 0 && b[0] == 'T', "the file given as --report is untouched");
    free(b);
}
