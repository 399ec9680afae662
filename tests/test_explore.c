/* Command-line tests of ./infer --explore (the program in $HEADCOUNT_BIN): the
 * page is one self-contained file (no address it could fetch, no external
 * font or script), its embedded weights are the --explore-json weights rounded
 * to bytes, a text on standard input gives the same page as the same text in a
 * file, a sample can be explored, and flags that would do nothing are usage
 * errors; and, on choices written by hand, a routed model's "routed" lists.
 * The browser side of the page is tested in tests/browser. Every model
 * is tiny (one layer, C = 16, block 16), trained for a few steps. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads.h"
#include "app/report/explore.h"
#include "data/corpus.h"
#include "data/synth.h"
#include "tests/testutil.h"

#define TINY "--layers 2 --embd 16 --heads 2 --block 16 --batch 4 --eval-iters 2 --threads 1"
#define TEXT "The old mouse went twice. The boys"   /* built-in corpus bytes */

/* A tiny trained model (two layers, C = 16) for the page tests. */
static void trained(TuModel *m, const char *name)
{
    tu_model(m, name, 20000, 5, TINY " --steps 20");
}

/* The base64 "att" string of a page, decoded; *n receives its length. */
static unsigned char *page_weights(const char *page, size_t *n)
{
    const char *p = strstr(page, "\"att\":\"");
    cr_assert_not_null(p, "no attention data in the page");
    p += 7;
    const char *end = strchr(p, '"');
    cr_assert_not_null(end);
    unsigned char *out = malloc((size_t)(end - p));
    *n = 0;
    unsigned v = 0;
    int bits = 0;
    for (; p < end && *p != '='; p++) {
        const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *c = strchr(A, *p);
        cr_assert(c && *p, "bad base64 byte '%c'", *p);
        v = v << 6 | (unsigned)(c - A);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[(*n)++] = (unsigned char)(v >> bits & 255);
        }
    }
    return out;
}

Test(explore, page_is_self_contained)
{
    TuModel e;
    trained(&e, "explore-self");
    char *out, html[400];
    snprintf(html, sizeof html, "%s/p.html", e.dir);
    int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --text '" TEXT "'", tu_bin(), e.ckpt,
                    html);
    cr_assert_eq(rc, 0, "%s", out);
    char *page = tu_read_text(html);
    static const char *const banned[] = {"http:", "https:", "//cdn", "<link", "@import",
                                         "src=", "url(", "@font-face", "fetch(",
                                         "XMLHttpRequest", "/*@DATA@*/"};
    for (size_t k = 0; k < sizeof banned / sizeof banned[0]; k++)
        cr_assert_null(strstr(page, banned[k]), "the page contains '%s'", banned[k]);
    cr_assert_not_null(strstr(page, "const DATA = {"), "no data in the page");
    cr_assert_not_null(strstr(page, "\"relations\":{\n\"previous-token\":{"),
                       "no relation scores in the page");
    cr_assert_not_null(strstr(page, "</html>"), "the page is cut short");
    free(page);
    free(out);
}

Test(explore, names_cannot_end_the_pages_script)
{
    TuModel e;
    trained(&e, "explore-names");
    char *out, html[400];
    snprintf(html, sizeof html, "%s/p.html", e.dir);
    int rc = tu_run(&out, "mkdir -p '%s/x</script><!--' && cp %s '%s/x</script><!--/m.ckpt' && "
                    "%s/infer --ckpt '%s/x</script><!--/m.ckpt' --explore %s --text 'The old'",
                    e.dir, e.ckpt, e.dir, tu_bin(), e.dir, html);
    cr_assert_eq(rc, 0, "%s", out);
    char *page = tu_read_text(html);
    const char *first = strstr(page, "</script>");
    cr_assert_not_null(first);
    cr_assert_null(strstr(first + 1, "</script>"), "a second </script> in the page");
    cr_assert_null(strstr(page, "<!--'"), "the name's <!-- is in the page as is");
    cr_assert_not_null(strstr(page, "x\\u003c/script>\\u003c!--/m.ckpt"),
                       "the name is not escaped");
    free(page);
    free(out);
}

Test(explore, page_weights_are_the_json_weights_rounded_to_bytes)
{
    TuModel e;
    trained(&e, "explore-json");
    char *out, html[400], json[400];
    snprintf(html, sizeof html, "%s/p.html", e.dir);
    snprintf(json, sizeof json, "%s/w.json", e.dir);
    int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --text '" TEXT "'",
                    tu_bin(), e.ckpt, html, json);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "shows its first 16"), "no note that the text was cut:\n%s",
                       out);
    char *page = tu_read_text(html), *js = tu_read_text(json);
    size_t n;
    unsigned char *q = page_weights(page, &n);
    const int L = 2, H = 2, T = 16;
    cr_assert_eq(n, (size_t)L * H * T * (T + 1) / 2, "%zu bytes of weights", n);
    /* Walk the JSON's numbers after "attention": row by row, as the page stores them. */
    const char *p = strstr(js, "\"attention\":[");
    cr_assert_not_null(p);
    p += 12;
    size_t k = 0;
    while (k < n) {
        p += strspn(p, "[],\n ");
        char *end;
        double w = strtod(p, &end);
        cr_assert(end != p, "the JSON ends after %zu weights", k);
        p = end;
        cr_assert(w >= 0 && w <= 1, "weight %zu is %g", k, w);
        cr_assert(fabs(q[k] / 255.0 - w) <= 0.5 / 255 + 1e-6,
                  "weight %zu: page %d/255, JSON %g", k, q[k], w);
        k++;
    }
    p += strspn(p, "[],\n ");
    cr_assert_eq(*p, '}', "the JSON has more weights than the page");
    free(q);
    free(page);
    free(js);
    free(out);
}

Test(explore, stdin_gives_the_same_weights_as_a_file)
{
    TuModel e;
    trained(&e, "explore-stdin");
    char *out, a[400], b[400], txt[400];
    snprintf(a, sizeof a, "%s/a.html", e.dir);
    snprintf(b, sizeof b, "%s/b.html", e.dir);
    snprintf(txt, sizeof txt, "%s/t.txt", e.dir);
    cr_assert_eq(tu_write_file(txt, TEXT, strlen(TEXT)), 0);
    int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --text-file %s", tu_bin(), e.ckpt, a,
                    txt);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --text-file - < %s", tu_bin(), e.ckpt, b,
                txt);
    cr_assert_eq(rc, 0, "%s", out);
    char *pa = tu_read_text(a), *pb = tu_read_text(b);
    const char *wa = strstr(pa, "\"att\":"), *wb = strstr(pb, "\"att\":");
    cr_assert(wa && wb);
    cr_assert_not_null(strstr(pb, "\"source\":\"\\u003cstdin>\""),
                       "stdin is not named as the source");
    cr_assert_eq(strcmp(wa, wb), 0, "the pages differ after their header");
    free(pa);
    free(pb);
    free(out);
}

Test(explore, a_sample_can_be_explored)
{
    TuModel e;
    trained(&e, "explore-sample");
    char *out, html[400], json[400];
    snprintf(html, sizeof html, "%s/s.html", e.dir);
    snprintf(json, sizeof json, "%s/s.json", e.dir);
    /* stdout alone: the pipe's last command gets tu_run's 2>&1. */
    int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --prompt 'The' "
                    "--tokens 7 --seed 3 2>/dev/null | cat", tu_bin(), e.ckpt, html, json);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(strncmp(out, "The", 3), 0, "the sample is not on stdout:\n%s", out);
    char *js = tu_read_text(json);
    cr_assert_not_null(strstr(js, "\"T\":10,"), "the page does not hold prompt + sample:\n%.200s",
                       js);
    /* The explored bytes are the printed ones. */
    char expect[64] = "\"tokens\":[";
    for (int i = 0; i < 10; i++)
        snprintf(expect + strlen(expect), sizeof expect - strlen(expect), "%s%d", i ? "," : "",
                 (unsigned char)out[i]);
    cr_assert_not_null(strstr(js, expect), "tokens differ from stdout: want %s", expect);
    free(js);
    free(out);
}

Test(explore, flags_that_would_do_nothing_are_usage_errors)
{
    TuModel e;
    trained(&e, "explore-flags");
    static const char *const cases[][2] = {
        {"--report r", "--report needs --heads"},
        {"--prune-curve", "--prune-curve needs --heads"},
        {"--windows 4", "--windows needs --heads"},
        {"--text abc", "--text needs --explore"},
        {"--explore-json w.json", "--explore-json needs --explore"},
        {"--explore p.html --heads x.txt", "--explore is its own mode"},
        {"--explore p.html --text abc --prompt x", "a prompt would not be used"},
        {"--explore p.html --text abc --text-file f", "--text and --text-file both given"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *out;
        int rc = tu_run(&out, "%s/infer --ckpt %s %s", tu_bin(), e.ckpt, cases[k][0]);
        cr_assert_eq(rc, 2, "'%s': exit %d, expected 2:\n%s", cases[k][0], rc, out);
        cr_assert_not_null(strstr(out, cases[k][1]), "'%s': expected '%s' in:\n%s",
                           cases[k][0], cases[k][1], out);
        free(out);
    }
}

Test(explore, version_names_the_program)
{
    char *out;
    int rc = tu_run(&out, "%s/infer --version", tu_bin());
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(strncmp(out, "infer (headcount) ", 18), 0, "%s", out);
    cr_assert(out[18] >= '0' && out[18] <= '9' && strchr(out, '\n'), "%s", out);
    free(out);
}

Test(explore, heads_on_a_short_file_says_the_numbers_are_rough)
{
    TuModel e;
    trained(&e, "explore-short");
    char *out, txt[400];
    snprintf(txt, sizeof txt, "%s/short.txt", e.dir);
    cr_assert_eq(tu_write_file(txt, TEXT, strlen(TEXT)), 0);
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s", tu_bin(), e.ckpt, txt);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "will be rough"), "no note on a %zu-byte file:\n%s",
                       strlen(TEXT), out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --windows 4", tu_bin(), e.ckpt, e.data);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "will be rough"), "a 20 KB file is called short:\n%s", out);
    free(out);
}

/* Row i's keys in --explore-json's relation_keys[name] (rows[i][0..n[i])), or -1
 * when the relation is null there; returns the number of rows. */
static int json_keys(const char *json, const char *name, int rows[][16], int *n, int T)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = strstr(strstr(json, "\"relation_keys\":{"), key);
    cr_assert_not_null(p, "no relation_keys for %s", name);
    p += strlen(key);
    if (strncmp(p, "null", 4) == 0)
        return -1;
    cr_assert_eq(*p, '[');
    p++;
    int i = 0;
    for (; *p == '[' || *p == ','; i++) {
        if (*p == ',')
            p++;
        cr_assert(i < T && *p == '[', "%s: row %d", name, i);
        p++;
        n[i] = 0;
        while (*p != ']') {
            char *end;
            long v = strtol(p, &end, 10);
            cr_assert(end > p && n[i] < 16, "%s: row %d: %.20s", name, i, p);
            rows[i][n[i]++] = (int)v;
            p = *end == ',' ? end + 1 : end;
        }
        p++;
    }
    cr_assert_eq(*p, ']');
    return i;
}

/* Every row of relation `name` has exactly the keys want[i] (-1: none). */
static void expect_single_keys(const char *json, const char *name, const int *want, int T)
{
    int rows[64][16], n[64];
    cr_assert_eq(json_keys(json, name, rows, n, T), T, "%s: not one entry per row", name);
    for (int i = 0; i < T; i++) {
        cr_assert_eq(n[i], want[i] >= 0, "%s, row %d: %d keys, want %s", name, i, n[i],
                     want[i] >= 0 ? "one" : "none");
        if (want[i] >= 0)
            cr_assert_eq(rows[i][0], want[i], "%s, row %d: key %d, want %d", name, i,
                         rows[i][0], want[i]);
    }
}

/* Whether head k's "serves" list in the explore JSON names relation `name`. */
static int json_attends(const char *json, int k, const char *name)
{
    const char *p = strstr(json, "\"heads\":[");
    cr_assert_not_null(p);
    for (int i = 0; i <= k; i++) {
        p = strstr(p + 1, "\"attends\":[");
        cr_assert_not_null(p, "head %d has no attends list", i);
    }
    const char *end = strchr(p, ']');
    char want[64];
    snprintf(want, sizeof want, "\"%s\"", name);
    const char *hit = strstr(p, want);
    return hit && hit < end;
}

/* Each head attends to relation `name` (row i's keys keys[i][0..nk[i])) exactly
 * when its mean attention on the keys over the scored rows with keys,
 * recomputed from the JSON's weights (L = 2, H = 2), is above the bar. Returns
 * how many heads attend to it. */
static int expect_serves(const char *json, const char *name, double bar, int keys[][16],
                         const int *nk, int T)
{
    const char *p = strstr(json, "\"attention\":[");
    cr_assert_not_null(p);
    p += strlen("\"attention\":[");
    int skip = T / 4 < 8 ? T / 4 : 8, serving = 0;
    for (int k = 0; k < 4; k++) {
        double sum = 0.0, rows = 0.0;
        for (int i = 0; i < T; i++) {
            rows += i >= skip && nk[i] > 0;
            for (int j = 0; j <= i; j++) {
                while (*p == '[' || *p == ']' || *p == ',' || *p == '\n')
                    p++;
                char *end;
                double w = strtod(p, &end);
                cr_assert(end > p, "head %d, row %d: %.20s", k, i, p);
                p = end;
                for (int m = 0; i >= skip && m < nk[i]; m++)
                    sum += keys[i][m] == j ? w : 0.0;
            }
        }
        cr_assert_gt(rows, 0.0);
        int serves = json_attends(json, k, name);
        cr_assert_eq(serves, sum / rows > bar, "head %d, %s: mean attention %g on the key, bar %g",
                     k, name, sum / rows, bar);
        serving += serves;
    }
    return serving;
}

/* expect_serves for a relation with one key per row, want[i] (-1: none). */
static int expect_serves_single(const char *json, const char *name, double bar, const int *want,
                                int T)
{
    int keys[64][16], nk[64];
    for (int i = 0; i < T; i++) {
        nk[i] = want[i] >= 0;
        keys[i][0] = want[i];
    }
    return expect_serves(json, name, bar, keys, nk, T);
}

Test(explore, a_hand_built_window_has_its_known_relation_keys, .timeout = 60)
{
    TuModel e;
    trained(&e, "explore-relkeys");
    char json[600], html[600], *out;
    snprintf(json, sizeof json, "%s/w.json", e.dir);
    snprintf(html, sizeof html, "%s/w.html", e.dir);
    /* 16 tokens (the block): "(ab) the (ab) th".
     * bracket: the closer at 3 ends row 2's "(ab", opened at 0; the one at 12, row 11 (9).
     * copy: "(ab" at 9..11 repeats 0..2, and the next bytes keep repeating: rows
     * 11..14 copy from 3..6 (row 15 has no next token in the window). */
    const char *text = "(ab) the (ab) th";
    int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --text '%s'", tu_bin(),
                    e.ckpt, html, json, text);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char *j = tu_read_text(json);
    int T = 16, prev[16], bracket[16], copy[16];
    for (int i = 0; i < T; i++) {
        prev[i] = i - 1;
        bracket[i] = copy[i] = -1;
    }
    bracket[2] = 0;
    bracket[11] = 9;
    for (int i = 11; i <= 14; i++)
        copy[i] = i - 8;
    expect_single_keys(j, "previous-token", prev, T);
    expect_single_keys(j, "bracket", bracket, T);
    expect_single_keys(j, "copy", copy, T);
    int serving = expect_serves_single(j, "previous-token", 0.5, prev, T) +
                  expect_serves_single(j, "bracket", 0.3, bracket, T) +
                  expect_serves_single(j, "copy", 0.3, copy, T);
    int rows[64][16], n[64];
    cr_assert_eq(json_keys(j, "rare", rows, n, T), T);
    cr_assert(n[0] == 0 && n[1] == 0 && n[2] > 0, "rare keys start at row 2");
    for (int i = 2; i < T; i++)
        for (int k = 0; k < n[i]; k++)
            cr_assert(rows[i][k] <= i - 2, "rare, row %d: key %d", i, rows[i][k]);
    serving += expect_serves(j, "rare", 0.3, rows, n, T);
    cr_assert_eq(json_keys(j, "agreement", rows, n, T), -1, "not the built-in corpus");
    cr_assert_eq(json_keys(j, "names", rows, n, T), -1);
    cr_assert_eq(json_keys(j, "determiner", rows, n, T), -1);
    cr_assert_eq(json_keys(j, "coreference", rows, n, T), -1);
    cr_assert_not_null(strstr(j, "\"builtin_corpus\":false"));
    free(j);
    /* The page carries the same keys. */
    char *page = tu_read_text(html);
    cr_assert_not_null(strstr(page, "\"bracket\":[[],[],[0],[],[],[],[],[],[],[],[],[9],"), "%.300s",
                       strstr(page, "\"relation_keys\""));
    free(page);
    /* One token repeated: row i's rare key set is every position up to i - 2, so
     * a head serves rare unless it keeps 70 % of its weight on the last two
     * keys (a uniform head puts (i - 1) / (i + 1) there), and no row is a copy
     * row (the token after is the token before). */
    rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --text '%s'", tu_bin(),
                e.ckpt, html, json, "aaaaaaaaaaaaaaaa");
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    j = tu_read_text(json);
    cr_assert_eq(json_keys(j, "rare", rows, n, T), T);
    for (int i = 0; i < T; i++) {
        cr_assert_eq(n[i], i >= 2 ? i - 1 : 0, "row %d: %d rare keys", i, n[i]);
        for (int k = 0; k < n[i]; k++)
            cr_assert_eq(rows[i][k], k);
    }
    int none[16];
    for (int i = 0; i < T; i++)
        none[i] = -1;
    expect_single_keys(j, "copy", none, T);
    serving = expect_serves(j, "rare", 0.3, rows, n, T);
    cr_assert_gt(serving, 0, "no head of the model serves rare on one repeated token");
    expect_serves_single(j, "previous-token", 0.5, prev, T);
    free(j);
}

Test(explore, a_piece_of_the_built_in_corpus_has_its_planted_keys, .timeout = 120)
{
    const char *dir = tu_tmpdir("explore-planted");
    cr_assert_not_null(dir);
    char ckpt[600], text[600], json[600], html[600], *out;
    snprintf(ckpt, sizeof ckpt, "%s/bi.ckpt", dir);
    snprintf(text, sizeof text, "%s/piece.txt", dir);
    snprintf(json, sizeof json, "%s/p.json", dir);
    snprintf(html, sizeof html, "%s/p.html", dir);
    int rc = tu_run(&out,
                    "%s/train --vocab 0 --steps 1 --layers 1 --embd 16 --heads 2 --block 64 --batch 2 "
                    "--eval-iters 1 --eval-every 0 --threads 1 --out %s", tu_bin(), ckpt);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* A piece from inside a line whose first 64 bytes hold planted relations:
     * the first such start from byte 200,003 on. */
    size_t N = 300000, at = 200003, n = 3000;
    int T = 64;
    char *corpus = malloc(N);
    cr_assert_not_null(corpus);
    size_t total = synth_generate_relations(corpus, N, CORPUS_BUILTIN_SEED, NULL, 0);
    SynthRelation *rel = malloc(total * sizeof *rel);
    cr_assert_not_null(rel);
    synth_generate_relations(corpus, N, CORPUS_BUILTIN_SEED, rel, total);
    for (int found = 0; !found && at < 210000; at += !found) {
        for (size_t r = 0; r < total && !found; r++)
            found = rel[r].kind != SYNTH_REL_BRACKET && rel[r].key >= at &&
                    rel[r].query < at + (size_t)T && corpus[at - 1] != '\n';
    }
    cr_assert_eq(tu_write_file(text, corpus + at, n), 0);
    rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --text-file %s", tu_bin(),
                ckpt, html, json, text);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* Byte level: row query - at keys key - at, the last relation of a row kept. */
    int want[SYNTH_REL_KINDS][64], seen = 0;
    for (int q = 0; q < SYNTH_REL_KINDS; q++)
        for (int i = 0; i < T; i++)
            want[q][i] = -1;
    for (size_t r = 0; r < total; r++)
        if (rel[r].kind != SYNTH_REL_BRACKET && rel[r].key >= at && rel[r].query < at + T) {
            want[rel[r].kind][rel[r].query - at] = (int)(rel[r].key - at);
            seen++;
        }
    cr_assert_gt(seen, 0, "the window holds no planted relation: pick another piece");
    char *j = tu_read_text(json);
    cr_assert_not_null(strstr(j, "\"builtin_corpus\":true"));
    for (int q = 0; q < SYNTH_REL_KINDS; q++)
        if (q != SYNTH_REL_BRACKET)
            expect_single_keys(j, heads_rel_table[heads_rel_of_synth(q)].name, want[q], T);
    free(j);
    free(rel);
    free(corpus);
}

/* A routed model's page data lists, per layer and token, the heads its router
 * chose; a plain model's has no "routed" at all. */
Test(explore, a_routed_models_choices_are_listed_per_token)
{
    enum { L = 2, H = 3, T = 3 };
    Tokenizer tok;
    unsigned char b[256];
    for (int c = 0; c < 256; c++)
        b[c] = (unsigned char)c;
    cr_assert_eq(tok_build(&tok, b, 256, NULL, 0), 0);
    int ids[T] = {'a', 'b', 'c'};
    HeadStats st[L * H];
    memset(st, 0, sizeof st);
    unsigned char routed[L * T * H] = {0};
    /* Layer 0: tokens choose heads {0, 2}, {1, 2}, {0, 1}; layer 1: head 1 always. */
    const int pick[T][2] = {{0, 2}, {1, 2}, {0, 1}};
    for (int t = 0; t < T; t++) {
        routed[(size_t)t * H + pick[t][0]] = routed[(size_t)t * H + pick[t][1]] = 1;
        routed[((size_t)T + t) * H + 1] = 1;
    }
    float att[L * H * T * T];
    memset(att, 0, sizeof att);
    Explore e = {.cfg = {.L = L, .H = H, .T = T}, .T = T, .ids = ids, .tok = &tok, .att = att,
                 .st = st, .loss = NAN, .routed = routed};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    explore_write_json(f, &e);
    fclose(f);
    cr_assert_not_null(strstr(text, "\"routed\":[\n[[0,2],[1,2],[0,1]],\n[[1],[1],[1]]],\n"),
                       "%s", text);
    free(text);
    e.routed = NULL;
    f = open_memstream(&text, &len);
    explore_write_json(f, &e);
    fclose(f);
    cr_assert_null(strstr(text, "routed"), "a plain model: %s", text);
    free(text);
    tok_free(&tok);
}
