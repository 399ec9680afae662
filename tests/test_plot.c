/* Tests of scripts/plot_log.py, the run plots: on a real ./train --log with
 * --heads-every it draws every head's four metrics and the loss and learning
 * rate; with several logs it draws one line per log; relation scores in the
 * heads records become one panel per relation; a broken log is refused with the
 * line number. Skipped where python3 is missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

static char *read_text(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tu_read_text(path);
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(plot, a_train_log_gives_loss_lr_and_every_heads_metric)
{
    tu_need_python("json");
    const char *d = tu_tmpdir("plot-train");
    cr_assert_not_null(d);
    char dir[300], *out;
    snprintf(dir, sizeof dir, "%s", d);
    int rc = tu_run(&out,
                    "%s/train --layers 2 --heads 3 --embd 12 --block 16 "
                    "--batch 2 --steps 8 --eval-every 4 --eval-iters 1 --heads-every 2 --threads 1 "
                    "--out %s/m.ckpt --log %s/run.log", tu_bin(), dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "python3 scripts/plot_log.py %s/run.log --out %s/plots", dir, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/plots");
    char *loss = read_text(dir, "loss.svg"), *lr = read_text(dir, "lr.svg");
    char *heads = read_text(dir, "heads.svg"), *rel = read_text(dir, "relations.svg");
    char *index = read_text(dir, "index.html"), *jsd = read_text(dir, "jsd.svg");
    /* train: raw and smoothed; val: one line and a point per eval (steps 4, 8, final). */
    cr_assert_eq(count(loss, "<polyline"), 3, "loss.svg:\n%s", loss);
    cr_assert_geq(count(loss, "val "), 2);
    cr_assert_eq(count(lr, "<polyline"), 1);
    /* 2 x 3 heads in each of the four panels, each line named for its head. */
    cr_assert_eq(count(heads, "<polyline"), 4 * 6, "heads.svg has %d lines",
                 count(heads, "<polyline"));
    cr_assert_eq(count(heads, "<title>L1H2</title>"), 4);
    /* The log's relations: previous-token has rows in every batch of the built-in
     * corpus; a relation without rows in a batch (best_head null) gets no point. */
    cr_assert_not_null(strstr(rel, ": previous-token</title>"), "relations.svg:\n%s", rel);
    cr_assert_null(strstr(rel, "None"), "a batch without rows was drawn:\n%s", rel);
    cr_assert_not_null(strstr(index, "heads.svg"));
    cr_assert_null(strstr(heads, "href"), "an SVG links outside itself");
    /* JSD within a layer: a thin line per layer and the mean over the two. */
    cr_assert_eq(count(jsd, "<polyline"), 3, "jsd.svg:\n%s", jsd);
    cr_assert_not_null(strstr(jsd, ": mean over layers</title>"), "jsd.svg:\n%s", jsd);
    free(loss); free(lr); free(heads); free(rel); free(index); free(jsd);
}

/* A hand-made log: settings for H heads, two steps, and two heads records. */
static void write_log(const char *path, int H, int relations)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"type\":\"settings\",\"layers\":1,\"heads\":%d,\"embd\":16}\n", H);
    for (int s = 1; s <= 2; s++) {
        fprintf(f, "{\"type\":\"step\",\"step\":%d,\"loss\":%g,\"lr\":0.001}\n", s, 3.0 - s * 0.1);
        fprintf(f, "{\"type\":\"heads\",\"step\":%d,\"heads\":[", s);
        for (int h = 0; h < H; h++)
            fprintf(f, "%s{\"layer\":0,\"head\":%d,\"entropy\":0.9,\"prev\":%g,\"first\":0.1,"
                    "\"distance\":3,\"repeat\":0.1}", h ? "," : "", h, 0.1 * (h + s));
        fprintf(f, "]");
        if (relations)
            fprintf(f, ",\"relations\":{\"previous-token\":{\"best_head\":\"L0H0\",\"attention\":"
                    "%g,\"uniform\":0.05},\"copy\":{\"best_head\":\"L0H1\",\"attention\":0.3,"
                    "\"uniform\":0.05},\"bracket\":{\"best_head\":\"L0H0\",\"attention\":0.2,"
                    "\"uniform\":0.04}}", 0.3 * s);
        fprintf(f, "}\n");
    }
    fprintf(f, "{\"type\":\"eval\",\"step\":2,\"train_loss\":2.8,\"val_loss\":2.9}\n");
    cr_assert_eq(fclose(f), 0);
}

Test(plot, several_logs_give_one_line_each_and_relations_their_panels)
{
    tu_need_python("json");
    const char *d = tu_tmpdir("plot-many");
    cr_assert_not_null(d);
    char dir[300], a[400], b[400], *out;
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(a, sizeof a, "%s/h2.log", dir);
    snprintf(b, sizeof b, "%s/h4.log", dir);
    write_log(a, 2, 1);
    write_log(b, 4, 0);
    int rc = tu_run(&out, "python3 scripts/plot_log.py %s %s --out %s/plots", a, b, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/plots");
    char *heads = read_text(dir, "heads.svg"), *rel = read_text(dir, "relations.svg");
    cr_assert_eq(count(heads, "<polyline"), 4 * 2, "one line per log in each panel");
    cr_assert_not_null(strstr(heads, "H=4 (L=1, C=16)"), "lines not labelled by H");
    /* Three relations, each a panel: best-head and uniform lines for the log that has them. */
    for (const char *const *n = (const char *const[]){"previous-token", "copy", "bracket", NULL};
         *n; n++) {
        char title[80];
        snprintf(title, sizeof title, "%s: attention of the best head", *n);
        cr_assert_not_null(strstr(rel, title), "no panel for %s", *n);
    }
    cr_assert_eq(count(rel, "<polyline"), 3 * 2, "relations.svg has %d lines",
                 count(rel, "<polyline"));
    cr_assert_not_null(strstr(rel, "step 2: L0H0 0.600"), "the best head's value is not shown");
    free(heads);
    free(rel);
}

/* A log without head records (no --heads-every): the loss and learning rate, no
 * empty head charts, and the page says how to get them. Run as README runs it,
 * scripts/plot_log.py itself (it is executable). */
Test(plot, a_log_without_head_records_draws_no_head_charts)
{
    tu_need_python("json");
    const char *d = tu_tmpdir("plot-noheads");
    cr_assert_not_null(d);
    char dir[300], log[400], *out;
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(log, sizeof log, "%s/run.log", dir);
    FILE *f = fopen(log, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"type\":\"settings\",\"layers\":1,\"heads\":2,\"embd\":16}\n");
    for (int s = 1; s <= 3; s++)
        fprintf(f, "{\"type\":\"step\",\"step\":%d,\"loss\":%g,\"lr\":0.001}\n", s, 3.0 - s * 0.1);
    cr_assert_eq(fclose(f), 0);
    int rc = tu_run(&out, "scripts/plot_log.py %s --out %s/plots", log, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/plots");
    char *index = read_text(dir, "index.html"), *loss = read_text(dir, "loss.svg");
    cr_assert_not_null(index);
    cr_assert_not_null(loss, "no loss.svg");
    for (const char *const *n = (const char *const[]){"heads.svg", "jsd.svg", "relations.svg",
                                                       NULL}; *n; n++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", dir, *n);
        cr_assert_neq(access(path, F_OK), 0, "%s drawn without head records", *n);
        cr_assert_null(strstr(index, *n), "index.html shows %s", *n);
    }
    cr_assert_not_null(strstr(index, "--heads-every N"), "index.html:\n%s", index);
    free(index);
    free(loss);
}

Test(plot, a_broken_log_is_refused_with_its_line)
{
    tu_need_python("json");
    const char *d = tu_tmpdir("plot-bad");
    cr_assert_not_null(d);
    char path[400], *out;
    snprintf(path, sizeof path, "%s/bad.log", d);
    const char *text = "{\"type\":\"step\",\"step\":1,\"loss\":3,\"lr\":0.001}\n{oops\n";
    cr_assert_eq(tu_write_file(path, text, strlen(text)), 0);
    int rc = tu_run(&out, "python3 scripts/plot_log.py %s --out %s/plots", path, d);
    cr_assert_neq(rc, 0);
    cr_assert_not_null(strstr(out, "bad.log:2: not JSON"), "%s", out);
    free(out);
}
