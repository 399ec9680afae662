/* Command-line tests of the compare page, ./infer --explore with several
 * --ckpt or a sweep directory (the program in $HEADCOUNT_BIN): each model's
 * data on the page is byte for byte the data of its own one-model page, in the
 * order given; a sweep directory stands for the first seed of each finished
 * (H, D) run, ordered by H (other modes refuse a directory as before); and
 * inputs the page cannot use are refused with one line, writing nothing. The page's behaviour in a browser is tested in
 * tests/browser (test_compare.mjs). Every model is tiny and trained a few steps. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/testutil.h"

#define TINY "--layers 1 --embd 16 --block 16 --batch 4 --eval-iters 2 --steps 5"
#define TEXT "The old mouse went twice. The boys"   /* built-in corpus bytes */

/* A tiny model with H heads in its own directory. */
static void model_h(TuModel *m, const char *name, int H)
{
    char flags[200];
    snprintf(flags, sizeof flags, TINY " --heads %d", H);
    tu_model(m, name, 20000, 7, flags);
}

/* The DATA object of a one-model page (malloc'd): from "const DATA = " to the
 * ";" that ends it before the script's "use strict". */
static char *page_data(const char *page)
{
    const char *p = strstr(page, "const DATA = ");
    cr_assert_not_null(p, "no data in the page");
    p += strlen("const DATA = ");
    const char *end = strstr(p, ";\n\"use strict\"");
    cr_assert_not_null(end, "the page's data has no end");
    char *d = malloc((size_t)(end - p) + 1);
    memcpy(d, p, (size_t)(end - p));
    d[end - p] = '\0';
    return d;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

Test(explore_compare, each_model_has_its_own_pages_data_in_the_order_given, .timeout = 120)
{
    TuModel m[3];
    model_h(&m[0], "compare-h1", 1);
    model_h(&m[1], "compare-h4", 4);
    model_h(&m[2], "compare-h8", 8);
    char *out, page[600], alone[3][600];
    int rc;
    for (int k = 0; k < 3; k++) {
        int w = snprintf(alone[k], sizeof alone[k], "%s/alone.html", m[k].dir);
        cr_assert(w > 0 && w < (int)sizeof alone[k]);
        rc = tu_run(&out, "%s/infer --ckpt %s --threads 1 --explore %s --text '" TEXT "'", tu_bin(),
                    m[k].ckpt, alone[k]);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
    }
    /* The order given, not the order of H: 4, 1, 8. */
    snprintf(page, sizeof page, "%s/compare.html", m[0].dir);
    rc = tu_run(&out, "%s/infer --ckpt %s --ckpt %s --ckpt %s --threads 1 --explore %s --text '"
                TEXT "'", tu_bin(), m[1].ckpt, m[0].ckpt, m[2].ckpt, page);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "compare page of 3 models"), "%s", out);
    free(out);
    char *cmp = tu_read_text(page);
    const char *at = cmp;
    static const int head_size[3] = {16, 4, 2};   /* C = 16 over H = 1, 4, 8 */
    for (int k = 0; k < 3; k++) {
        int which = k == 0 ? 1 : k == 1 ? 0 : 2;
        char *one = tu_read_text(alone[which]), *data = page_data(one);
        size_t len = strlen(data) + 64;
        char *entry = malloc(len);
        snprintf(entry, len, "{\"D\":%d,\"page\":%s}", head_size[which], data);
        const char *found = strstr(at, entry);
        cr_assert_not_null(found, "model %d (%s): its head size and its page's data are not on "
                           "the compare page after the models before it", k, m[which].ckpt);
        at = found + strlen(entry);
        free(entry);
        free(data);
        free(one);
    }
    static const char *const banned[] = {"http:", "https:", "<link", "@import", "src=", "url(",
                                         "fetch(", "XMLHttpRequest", "/*@DATA@*/"};
    for (size_t k = 0; k < sizeof banned / sizeof banned[0]; k++)
        cr_assert_null(strstr(cmp, banned[k]), "the compare page contains '%s'", banned[k]);
    const char *script = strstr(cmp, "</script>");
    cr_assert_not_null(script);
    cr_assert_null(strstr(script + 1, "</script>"), "a second </script> in the page");
    cr_assert_not_null(strstr(cmp, "\"models\":["), "no models array");
    cr_assert_not_null(strstr(cmp, "</html>"), "the page is cut short");
    free(cmp);
}

/* DIR/runs/NAME/model.ckpt, a copy of ckpt, and done.json when done. */
static void sweep_run(const char *dir, const char *name, const char *ckpt, int done)
{
    char *out;
    int rc = tu_run(&out, "mkdir -p %s/runs/%s && cp %s %s/runs/%s/model.ckpt", dir, name, ckpt,
                    dir, name);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    if (done) {
        char path[700];
        snprintf(path, sizeof path, "%s/runs/%s/done.json", dir, name);
        cr_assert_eq(tu_write_file(path, "{}\n", 3), 0);
    }
}

Test(explore_compare, a_sweep_directory_is_the_first_seed_of_each_finished_run_by_l_h_d,
     .timeout = 120)
{
    TuModel m1, m4;
    model_h(&m1, "compare-sweep-h1", 1);
    model_h(&m4, "compare-sweep-h4", 4);
    const char *dir = tu_tmpdir("compare-sweep");
    char sweep[400];
    snprintf(sweep, sizeof sweep, "%s/sweep", dir);
    sweep_run(sweep, "H04-D004-s2", m4.ckpt, 1);
    sweep_run(sweep, "H04-D004-s1", m4.ckpt, 1);
    sweep_run(sweep, "H04-D016-s1", m4.ckpt, 1);   /* the other arm: its own D */
    sweep_run(sweep, "H01-D016-s3", m1.ckpt, 1);
    sweep_run(sweep, "H02-D008-s1", m1.ckpt, 0);   /* not finished */
    sweep_run(sweep, "H02-D008-s1.partial", m1.ckpt, 0);
    sweep_run(sweep, "H8-D2-s1x", m1.ckpt, 1);     /* not a run's name */
    sweep_run(sweep, "H99999999999-D8-s1", m1.ckpt, 1); /* a number out of range */
    sweep_run(sweep, "L0-H04-D004-s1", m1.ckpt, 1);     /* no depth 0 */
    sweep_run(sweep, "L1-H04-D004-s2", m4.ckpt, 1);     /* --layers: another depth, */
    sweep_run(sweep, "L1-H04-D004-s1", m4.ckpt, 1);     /* first, by its first seed */
    /* Nor these: a seed past the range, a sign, a run a rerun set aside. */
    sweep_run(sweep, "H02-D008-s4294967297", m1.ckpt, 1);
    sweep_run(sweep, "H+2-D008-s1", m1.ckpt, 1);
    sweep_run(sweep, "H02-D008-s1.damaged", m1.ckpt, 1);
    char *out, page[500];
    snprintf(page, sizeof page, "%s/p.html", dir);
    int rc = tu_run(&out, "%s/infer --ckpt %s --threads 1 --explore %s --text '" TEXT "'", tu_bin(),
                    sweep, page);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char *p = tu_read_text(page);
    static const char *const want[] = {"L1-H04-D004-s1", "H01-D016-s3", "H04-D004-s1",
                                       "H04-D016-s1"};
    const char *at = p;
    for (int k = 0; k < 4; k++) {
        char ckpt[600];
        snprintf(ckpt, sizeof ckpt, "\"ckpt\":\"%s/runs/%s/model.ckpt\"", sweep, want[k]);
        const char *found = strstr(at, ckpt);
        cr_assert_not_null(found, "model %d is not %s, after the ones before it", k, want[k]);
        at = found + 1;
    }
    int nckpt = 0;
    for (const char *q = p; (q = strstr(q, "\"ckpt\":")) != NULL; q++)
        nckpt++;
    cr_assert_eq(nckpt, 4, "%d models on the page, 4 expected", nckpt);
    free(p);

    /* A directory without runs/, one without a finished run, and --heads on one. */
    char empty[500];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    rc = tu_run(&out, "mkdir -p %s/runs", empty);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --explore %s/q.html --text ab", tu_bin(), empty, dir);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "no finished run"), "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --explore %s/q.html --text ab", tu_bin(), dir, dir);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "has no runs/ directory"), "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --heads %s", tu_bin(), sweep, m1.data);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "is a directory"), "%s", out);
    free(out);
    char q[600];
    snprintf(q, sizeof q, "%s/q.html", dir);
    cr_assert(!exists(q), "a refused command wrote %s", q);

    /* The sweep's 3 models and 15 more --ckpt are more than a page's 16: the
     * message names that limit, not the room left for the sweep. */
    char many[4000] = "";
    for (int k = 0; k < 15; k++) {
        size_t used = strlen(many);
        snprintf(many + used, sizeof many - used, " --ckpt %s", m1.ckpt);
    }
    rc = tu_run(&out, "%s/infer --ckpt %s%s --explore %s --text ab", tu_bin(), sweep, many, q);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "the compare page shows at most 16 models") &&
              !strstr(out, "at most 1 models"), "%s", out);
    free(out);
    cr_assert(!exists(q), "a refused command wrote %s", q);
}

Test(explore_compare, inputs_the_page_cannot_use_are_refused_in_one_line, .timeout = 120)
{
    TuModel m1, m4;
    model_h(&m1, "compare-refuse-h1", 1);
    model_h(&m4, "compare-refuse-h4", 4);
    char two[800], page[400];
    snprintf(two, sizeof two, "--ckpt %s --ckpt %s", m1.ckpt, m4.ckpt);
    snprintf(page, sizeof page, "%s/p.html", m1.dir);
    static const char *const cases[][3] = {
        {"--heads %s", "data", "--ckpt given 2 times; only --explore OUT.html compares"},
        {"--eval %s", "data", "--ckpt given 2 times"},
        {"--prompt The", "", "--ckpt given 2 times"},
        {"--explore %s", "page", "needs --text or --text-file"},
        {"--explore %s --prompt The", "page", "needs --text or --text-file"},
        {"--explore %s --text ab --explore-json w.json", "page", "--explore-json works on one"},
        {"--explore %s --text ab --mask 0.0", "page", "--mask works on one model"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char flags[600];
        snprintf(flags, sizeof flags, cases[k][0],
                 !strcmp(cases[k][1], "data") ? m1.data : page);
        char *out;
        int rc = tu_run(&out, "%s/infer %s %s", tu_bin(), two, flags);
        cr_assert_eq(rc, 2, "'%s': exit %d, expected 2:\n%s", flags, rc, out);
        cr_assert_not_null(strstr(out, cases[k][2]), "'%s': expected '%s' in:\n%s", flags,
                           cases[k][2], out);
        free(out);
    }
    /* 17 checkpoints: one more than a page compares. */
    char many[8000] = "";
    for (int k = 0; k < 17; k++) {
        size_t n = strlen(many);
        snprintf(many + n, sizeof many - n, " --ckpt %s", m1.ckpt);
    }
    char *out;
    int rc = tu_run(&out, "%s/infer %s --explore %s --text ab", tu_bin(), many, page);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "--ckpt given more than 16 times"), "%s", out);
    free(out);
    /* A text one model's byte-level vocabulary cannot encode: that model is named. */
    rc = tu_run(&out, "%s/infer %s --explore %s --text 'The \xc3\xa9t\xc3\xa9'", tu_bin(), two,
                page);
    cr_assert_eq(rc, 1, "%s", out);
    char want[600];
    snprintf(want, sizeof want, "infer: error: --ckpt %s (L 1, H 1, D 16): ", m1.ckpt);
    cr_assert_not_null(strstr(out, want), "expected '%s' in:\n%s", want, out);
    cr_assert_not_null(strstr(out, "not in the model's vocabulary"), "%s", out);
    free(out);
    /* The page may not overwrite either checkpoint's training data. */
    rc = tu_run(&out, "%s/infer %s --explore %s --text ab", tu_bin(), two, m4.data);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "training data"), "%s", out);
    free(out);
    cr_assert(!exists(page), "a refused command wrote %s", page);
}
