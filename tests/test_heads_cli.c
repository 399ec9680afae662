/* Command-line tests of the head analysis: `infer --heads --report` on a tiny
 * checkpoint writes a complete report, `train --heads-every` logs relation
 * scores, `infer --heads` recognises a piece of the built-in corpus, and a
 * report path that is a file is refused. The metrics themselves are tested on
 * hand-built attention in test_heads.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/corpus.h"
#include "data/synth.h"
#include "data/tokenizer.h"
#include "trainer/ckpt.h"
#include "analysis/heads.h"
#include "tests/testutil.h"

/* A random tiny model saved as a checkpoint, for the command-line tests. */
static void write_tiny(const char *dir, char *ckpt, char *text, size_t len)
{
    const char *s = "The cat sat on the mat, and the dog (a big one) sat too.\n"
                    "Mira saw Tobe; Mira left. \"Go!\" said the man.\n";
    size_t n = strlen(s), total = 12 * n;
    char *buf = malloc(total);
    for (size_t i = 0; i < total; i++)
        buf[i] = s[i % n];
    snprintf(text, len, "%s/text.txt", dir);
    cr_assert_eq(tu_write_file(text, buf, total), 0);
    Tokenizer tok;
    cr_assert_eq(tok_build(&tok, (const unsigned char *)buf, total, NULL, 0), 0);
    Config cfg = {.V = tok.V, .T = 16, .L = 2, .H = 2, .C = 16, .D = 8};
    Model m;
    char err[512];
    cr_assert_eq(model_init(&m, &cfg, err, sizeof err), 0, "%s", err);
    params_init(&m.table, m.params, 5);
    snprintf(ckpt, len, "%s/tiny.ckpt", dir);
    cr_assert_eq(ckpt_save(ckpt, &m, &tok, 0, NULL, err, sizeof err), 0, "%s", err);
    model_free(&m);
    tok_free(&tok);
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
    char *b = tu_read_text(path);
    cr_assert(strncmp(b, prefix, strlen(prefix)) == 0, "%s starts '%.40s'", path, b);
    cr_assert_not_null(strstr(b, contains), "%s lacks '%s'", path, contains);
    free(b);
}

/* The line of s that starts with `start`, from the newline before it (or from
 * s itself when it is the first line, which then gets no newline); NULL if none. */
static const char *line_starting(const char *s, const char *start)
{
    if (strncmp(s, start, strlen(start)) == 0)
        return s;
    char want[64];
    snprintf(want, sizeof want, "\n%s", start);
    return strstr(s, want);
}

/* Every column name of the table header that starts at `header` in `table` (its
 * first line; names are separated by two or more spaces, or one when the names
 * are single words) has a legend line in `legends`: `indent` NAME then a space. */
static void expect_legends(const char *legends, const char *header, const char *first,
                           const char *indent)
{
    cr_assert_not_null(header, "no table header in:\n%s", legends);
    header += strspn(header, "\n");
    cr_assert(strncmp(header, first, strlen(first)) == 0, "%.80s", header);
    size_t len = strcspn(header, "\n");
    int names = 0;
    for (size_t i = 0; i < len;) {
        i += strspn(header + i, " ");
        size_t n = strcspn(header + i, " \n");
        if (!n)
            break;
        /* "vs base", "loss ratio" and the like: two words, one name. */
        if (header[i + n] == ' ' && i + n + 1 < len && header[i + n + 1] != ' ' &&
            (!strncmp(header + i, "vs", 2) || !strncmp(header + i, "logit", 5) ||
             !strncmp(header + i, "needed set", 10)))
            n += 1 + strcspn(header + i + n + 1, " \n");
        char want[64];
        snprintf(want, sizeof want, "%s%.*s ", indent, (int)n, header + i);
        cr_assert_not_null(strstr(legends, want), "no legend line '%s' in:\n%s", want, legends);
        names++;
        i += n;
    }
    cr_assert(names >= 4, "%.80s", header);
}

/* Every <th> of the table after `heading` in the page at path has a <dt> legend. */
static void expect_page_legends(const char *path, const char *heading)
{
    char *page = tu_read_text(path);
    const char *t = strstr(page, heading);
    cr_assert_not_null(t, "%s: no %s", path, heading);
    const char *end = strstr(t, "</tr>"), *legend = strstr(t, "<dl class=\"cols\">");
    cr_assert(end && legend, "%s: %s has no legend", path, heading);
    const char *dl_end = strstr(legend, "</dl>");
    for (const char *th = strstr(t, "<th>"); th && th < end; th = strstr(th + 4, "<th>")) {
        size_t n = strcspn(th + 4, "<");
        char want[128];
        snprintf(want, sizeof want, "<dt>%.*s</dt>", (int)n, th + 4);
        /* The page may give a column a longer title than its name (entropy). */
        if (strchr(want, ' ') && !strncmp(th + 4, "entropy", 7))
            snprintf(want, sizeof want, "<dt>entropy</dt>");
        const char *found = strstr(legend, want);
        cr_assert(found && found < (dl_end ? dl_end : found) + 1, "%s: no %s", path, want);
    }
    free(page);
}

Test(heads, infer_heads_writes_a_complete_report, .timeout = 60)
{
    const char *dir = tu_tmpdir("heads-e2e");
    cr_assert_not_null(dir);
    char d[300], ckpt[400], text[400], rep[400], cmd[2048], path[600], *out;
    snprintf(d, sizeof d, "%s", dir);
    write_tiny(d, ckpt, text, sizeof ckpt);
    snprintf(rep, sizeof rep, "%s/report/sub", d);
    /* Standard output only: the tables' lines must not meet stderr's progress. */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/report && (%s/infer --ckpt %s --heads %s --report %s "
             "--windows 6 --mask 1.0 --prune-curve -j 2 2>/dev/null)", d, tu_bin(), ckpt, text,
             rep);
    int rc = tu_run(&out, "%s", cmd);
    cr_assert_eq(rc, 0, "infer --heads failed (%d):\n%s", rc, out);
    cr_assert_not_null(strstr(out, "masked"), "the silenced head is reported:\n%s", out);
    cr_assert_not_null(strstr(out, "prune curve"), "%s", out);
    expect_legends(out, line_starting(out, "head "), "head ", "\n  ");
    expect_legends(out, strstr(out, "\n  relation        best"), "  relation ", "\n  ");
    expect_legends(out, strstr(out, "\n  removed  kept"), "  removed ", "\n  ");
    free(out);
    /* --help lists the same legends, one level deeper. */
    snprintf(cmd, sizeof cmd, "%s/infer --help", tu_bin());
    cr_assert_eq(tu_run(&out, "%s", cmd), 0);
    char *table;
    snprintf(cmd, sizeof cmd, "(%s/infer --ckpt %s --heads %s --windows 2 -j 1 2>/dev/null)",
             tu_bin(), ckpt, text);
    cr_assert_eq(tu_run(&table, "%s", cmd), 0, "%s", table);
    expect_legends(out, line_starting(table, "head "), "head ", "\n    ");
    expect_legends(out, strstr(table, "\n  relation        best"), "  relation ", "\n    ");
    free(table);
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
    assert_starts(path, "{", "\"relations\":{\"previous-token\":{\"best_head\":\"L");
    assert_starts(path, "{", "\"copy\":{\"best_head\":");
    assert_starts(path, "{", "\"loss_ratio\":");
    snprintf(path, sizeof path, "%s/relations.csv", rep);
    cr_assert_eq(count_lines(path), 1 + 4, "a header and the four text relations");
    assert_starts(path, "relation,best_head,attention,uniform,loss", "bracket,L");
    assert_starts(path, "relation,", "\nrare,L");
    snprintf(path, sizeof path, "%s/summary.json", rep);
    assert_starts(path, "{", "\"rare\":{\"best_head\":\"L");
    assert_starts(path, "{", "\"rare_counts\":\"file\",\"rare_counts_source\":\"the analysed "
                  "file (");
    snprintf(path, sizeof path, "%s/heads.csv", rep);
    assert_starts(path, "layer,head,type", ",copy,rare,");
    snprintf(path, sizeof path, "%s/prune.csv", rep);
    cr_assert_eq(count_lines(path), 1 + 1 + 3, "header, no removal, then the 3 active heads");
    snprintf(path, sizeof path, "%s/heatmaps/text_L1_H1.svg", rep);
    assert_starts(path, "<svg", "</svg>");
    snprintf(path, sizeof path, "%s/index.html", rep);
    assert_starts(path, "<!DOCTYPE html>", "heatmaps/probe_L0_H0.svg");
    expect_page_legends(path, "<h2>Metrics</h2>");
    expect_page_legends(path, "<h2>Relations</h2>");
    /* Not the built-in corpus: the Metrics table and its legend list the relations
     * any text has, not the planted ones. */
    char *page = tu_read_text(path);
    const char *metrics = strstr(page, "<h2>Metrics</h2>");
    cr_assert_not_null(metrics);
    cr_assert_not_null(strstr(metrics, "<th>copy</th>"), "%s", path);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (heads_rel_table[q].planted) {
            char th[80], dt[80];
            snprintf(th, sizeof th, "<th>%s</th>", heads_rel_table[q].name);
            snprintf(dt, sizeof dt, "<dt>%s</dt>", heads_rel_table[q].name);
            cr_assert_null(strstr(metrics, th), "%s: the Metrics table has %s", path, th);
            cr_assert_null(strstr(metrics, dt), "%s: the legend lists %s", path, dt);
        }
    free(page);
}

/* Runs the ./train command cmd, which must succeed, and returns its log at path
 * as a string. */
static char *train_log(const char *cmd, const char *path)
{
    char *out;
    int rc = tu_run(&out, "%s", cmd);
    cr_assert_eq(rc, 0, "train failed (%d):\n%s", rc, out);
    free(out);
    return tu_read_text(path);
}

Test(heads, training_log_carries_relation_scores_of_each_heads_step, .timeout = 60)
{
    const char *dir = tu_tmpdir("heads-log");
    cr_assert_not_null(dir);
    char d[300], ckpt[400], text[400], cmd[2048], path[600], *out;
    snprintf(d, sizeof d, "%s", dir);
    write_tiny(d, ckpt, text, sizeof ckpt);
    snprintf(path, sizeof path, "%s/train.jsonl", d);
    snprintf(cmd, sizeof cmd, "%s/train --data %s --layers 1 --heads 2 --embd 16 --block 16 "
             "--batch 4 --steps 4 --eval-every 0 --save-every 0 --heads-every 2 --log %s "
             "--out %s/log.ckpt", tu_bin(), text, path, d);
    char *log = train_log(cmd, path);
    int lines = 0;
    const char *tag = "{\"type\":\"heads\"";
    for (char *p = strstr(log, tag); p; p = strstr(p + 1, tag)) {
        char *end = strchr(p, '\n');
        cr_assert_not_null(end);
        *end = '\0';
        /* Today's per-head fields stay; the relations follow them. */
        cr_assert_not_null(strstr(p, "\"heads\":[{\"layer\":0,\"head\":0,\"entropy\":"), "%s", p);
        const char *rel = strstr(p, "],\"relations\":{\"previous-token\":{\"best_head\":\"L0H");
        cr_assert_not_null(rel, "%s", p);
        cr_assert_not_null(strstr(rel, "\"bracket\":{\"best_head\":"), "%s", p);
        cr_assert_not_null(strstr(rel, "\"copy\":{\"best_head\":"), "%s", p);
        cr_assert_not_null(strstr(rel, "\"rare\":{\"best_head\":\"L0H"), "%s", p);
        cr_assert_not_null(strstr(rel, "\"uniform\":"), "%s", p);
        cr_assert_eq(strcmp(end - 2, "}}"), 0, "the line ends with the relations: %s", p);
        *end = '\n';
        lines++;
    }
    cr_assert_eq(lines, 3, "the first step, then steps 2 and 4 are logged");
    free(log);

    /* The rare relation counts the training text while it is unchanged, else the
     * analysed file, and says which. */
    for (int changed = 0; changed < 2; changed++) {
        if (changed) {
            size_t n;
            unsigned char *b = tu_read_file(text, &n);
            b[0] = b[0] == 'T' ? 'M' : 'T';   /* a byte of the vocabulary */
            cr_assert_eq(tu_write_file(text, b, n), 0);
            free(b);
        }
        snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s/log.ckpt --heads %s --windows 2 -j 1",
                 tu_bin(), d, text);
        int rc = tu_run(&out, "%s", cmd);
        cr_assert_eq(rc, 0, "infer --heads failed (%d):\n%s", rc, out);
        cr_assert_not_null(strstr(out, "\n  rare "), "%s", out);
        cr_assert_not_null(strstr(out, changed ? "(rare: token counts of the analysed file"
                                               : "(rare: token counts of the training text"),
                           "%s", out);
        if (changed)
            cr_assert_not_null(strstr(out, "has changed since training"), "%s", out);
        free(out);
    }
}

/* A tiny random checkpoint whose vocabulary covers text[n], saved to ckpt. */
static void save_tiny_for(const char *ckpt, const unsigned char *text, size_t n)
{
    Tokenizer tok;
    cr_assert_eq(tok_build(&tok, text, n, NULL, 0), 0);
    Config cfg = {.V = tok.V, .T = 64, .L = 1, .H = 2, .C = 16, .D = 8};
    Model m;
    char err[512];
    cr_assert_eq(model_init(&m, &cfg, err, sizeof err), 0, "%s", err);
    params_init(&m.table, m.params, 9);
    cr_assert_eq(ckpt_save(ckpt, &m, &tok, 0, NULL, err, sizeof err), 0, "%s", err);
    model_free(&m);
    tok_free(&tok);
}

Test(heads, training_log_on_the_built_in_corpus_carries_its_planted_relations, .timeout = 60)
{
    const char *dir = tu_tmpdir("heads-log-planted");
    cr_assert_not_null(dir);
    char path[600], cmd[2048];
    snprintf(path, sizeof path, "%s/train.jsonl", dir);
    snprintf(cmd, sizeof cmd, "%s/train --layers 1 --heads 2 --embd 16 --block 64 --batch 8 "
             "--steps 2 --eval-every 0 --save-every 0 --heads-every 1 --threads 1 --log %s "
             "--out %s/log.ckpt", tu_bin(), path, dir);
    char *log = train_log(cmd, path);
    const char *p = strstr(log, "{\"type\":\"heads\"");
    cr_assert_not_null(p);
    /* Eight windows of 64 bytes always hold determiner rows (a tenth of the
     * bytes' lines plant several); every planted relation has its entry, null
     * when the batch has no row of it. */
    const char *rel = strstr(p, "\"relations\":{\"previous-token\"");
    cr_assert_not_null(rel, "%.300s", p);
    cr_assert_not_null(strstr(rel, "\"determiner\":{\"best_head\":\"L0H"), "%.1500s", rel);
    cr_assert_not_null(strstr(rel, "\"agreement\":{\"best_head\":"), "%.1500s", rel);
    cr_assert_not_null(strstr(rel, "\"names\":{\"best_head\":"), "%.1500s", rel);
    cr_assert_not_null(strstr(rel, "\"coreference\":{\"best_head\":"), "%.1500s", rel);
    /* Its minimal pairs: accuracy, logit difference and count wherever the batch
     * holds pairs; the determiner's always, by the same count as its rows. */
    const char *det = strstr(rel, "\"determiner\":{");
    const char *acc = strstr(det, "\"accuracy\":"), *end = strchr(det, '}');
    cr_assert(acc && acc < end, "no determiner pairs: %.300s", det);
    double a = strtod(acc + strlen("\"accuracy\":"), NULL);
    cr_assert(a >= 0.0 && a <= 1.0, "accuracy %g", a);
    const char *np = strstr(det, "\"pairs\":");
    cr_assert(np && np < end && strtod(np + strlen("\"pairs\":"), NULL) >= 1, "%.300s", det);
    cr_assert(strstr(det, "\"logit_diff\":") < end);
    free(log);
}

Test(heads, infer_recognises_a_piece_of_the_built_in_corpus, .timeout = 60)
{
    const char *dir = tu_tmpdir("heads-builtin");
    cr_assert_not_null(dir);
    char ckpt[400], text[400], rep[400], cmd[2048], path[600], *out;
    size_t N = SYNTH_DEFAULT_BYTES, at = 900000, n = 4000;
    char *corpus = malloc(N);
    cr_assert_not_null(corpus);
    synth_generate(corpus, N, CORPUS_BUILTIN_SEED);
    snprintf(ckpt, sizeof ckpt, "%s/tiny.ckpt", dir);
    snprintf(text, sizeof text, "%s/piece.txt", dir);
    snprintf(rep, sizeof rep, "%s/report", dir);
    save_tiny_for(ckpt, (const unsigned char *)corpus + at, n);
    for (int edited = 0; edited < 2; edited++) {
        /* An edited copy (one letter changed) is no longer the built-in corpus. */
        if (edited)
            corpus[at + n / 2] = corpus[at + n / 2] == 'e' ? 'a' : 'e';
        cr_assert_eq(tu_write_file(text, corpus + at, n), 0);
        snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s --heads %s --report %s --windows 4 -j 1",
                 tu_bin(), ckpt, text, rep);
        int rc = tu_run(&out, "%s", cmd);
        cr_assert_eq(rc, 0, "infer --heads failed (%d):\n%s", rc, out);
        const char *planted = "the built-in corpus from byte 900000";
        if (edited)
            cr_assert_null(strstr(out, planted), "%s", out);
        else
            cr_assert_not_null(strstr(out, planted), "%s", out);
        if (!edited) {
            /* The counts of left-out rows say why, here and on the page. */
            cr_assert_not_null(strstr(out, " contrasts left out: their key is not before the "
                                      "scored token, or their line is cut"), "%s", out);
            snprintf(path, sizeof path, "%s/index.html", rep);
            char *page = tu_read_text(path);
            cr_assert_not_null(strstr(page, " minimal-pair contrasts are left out: their key "
                                      "is not before"), "%s", path);
            /* The needed head's number is the share of the margin it takes away,
             * which can pass 1: the column says so. */
            cr_assert_not_null(strstr(page, "<th>needed head (share lost)</th>"), "%s", path);
            cr_assert_not_null(strstr(page, "above 1 the margin turns over"), "%s", path);
            cr_assert_null(strstr(page, "needed head (cost)"), "%s", path);
            /* The built-in corpus: its planted relations have Metrics columns. */
            cr_assert_not_null(strstr(strstr(page, "<h2>Metrics</h2>"), "<th>agreement</th>"),
                               "%s", path);
            free(page);
        }
        free(out);
        snprintf(path, sizeof path, "%s/summary.json", rep);
        assert_starts(path, "{", edited ? "\"builtin_corpus\":false" : "\"builtin_corpus\":true");
        if (!edited) {
            assert_starts(path, "{", "\"agreement\":{\"best_head\":\"L0H");
            assert_starts(path, "{", "\"names\":{\"best_head\":\"L0H");
            assert_starts(path, "{", "\"determiner\":{\"best_head\":\"L0H");
            assert_starts(path, "{", "\"coreference\":{\"best_head\":\"L0H");
        }
    }
    free(corpus);
}

Test(heads, infer_heads_refuses_a_report_path_that_is_a_file, .timeout = 30)
{
    const char *dir = tu_tmpdir("heads-badreport");
    char d[300], ckpt[400], text[400], cmd[2048], *out;
    snprintf(d, sizeof d, "%s", dir);
    write_tiny(d, ckpt, text, sizeof ckpt);
    snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s --heads %s --report %s --windows 2", tu_bin(),
             ckpt, text, text);
    int rc = tu_run(&out, "%s", cmd);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert_not_null(strstr(out, "not a directory"), "%s", out);
    free(out);
    size_t len;
    unsigned char *b = tu_read_file(text, &len);
    cr_assert(b && len > 0 && b[0] == 'T', "the file given as --report is untouched");
    free(b);
}

/* The number after "key": inside relation rel's object of a summary line. */
static double rel_number(const char *json, const char *rel, const char *within, const char *key)
{
    char want[96];
    snprintf(want, sizeof want, "\"%s\":{\"best_head\"", rel);
    const char *p = strstr(json, want);
    cr_assert_not_null(p, "no %s in %.200s", rel, json);
    if (within) {
        snprintf(want, sizeof want, "\"%s\":{", within);
        p = strstr(p, want);
        cr_assert_not_null(p, "%s has no %s", rel, within);
    }
    snprintf(want, sizeof want, "\"%s\":", key);
    p = strstr(p, want);
    cr_assert_not_null(p, "%s has no %s", rel, key);
    return strtod(p + strlen(want), NULL);
}

/* An untrained tiny model (save_tiny_for) of the built-in corpus's 6,000 bytes from byte
 * 900,000, and those bytes as a text, in a fresh directory named for `name`: ckpt and
 * text receive their paths (room for 400 bytes each). */
static void tiny_on_piece(const char *name, char *ckpt, char *text)
{
    const char *dir = tu_tmpdir(name);
    cr_assert_not_null(dir);
    size_t N = SYNTH_DEFAULT_BYTES, at = 900000, n = 6000;
    char *corpus = malloc(N);
    cr_assert_not_null(corpus);
    synth_generate(corpus, N, CORPUS_BUILTIN_SEED);
    snprintf(ckpt, 400, "%s/tiny.ckpt", dir);
    snprintf(text, 400, "%s/piece.txt", dir);
    save_tiny_for(ckpt, (const unsigned char *)corpus + at, n);
    cr_assert_eq(tu_write_file(text, corpus + at, n), 0);
    free(corpus);
}

/* The ablation matrix of --heads holds, cell by cell, what a separate run
 * with that one head masked reports as the relation's own scores. */
Test(heads, the_ablation_matrix_is_what_masking_each_head_reports, .timeout = 120)
{
    char ckpt[400], text[400], cmd[2048], *base, *masked;
    tiny_on_piece("heads-ablation", ckpt, text);
    snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s --heads %s --json -j 1", tu_bin(), ckpt, text);
    cr_assert_eq(tu_run(&base, "%s", cmd), 0, "%s", base);
    static const char *const rels[] = {"agreement", "bracket", "determiner", "coreference"};
    for (int k = 0; k < 2; k++) {
        char head[16];
        snprintf(head, sizeof head, "L0H%d", k);
        snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s --heads %s --json -j 2 --mask 0.%d",
                 tu_bin(), ckpt, text, k);
        cr_assert_eq(tu_run(&masked, "%s", cmd), 0, "%s", masked);
        for (int r = 0; r < 4; r++) {
            double pairs = rel_number(base, rels[r], NULL, "pairs");
            cr_assert_gt(pairs, 0, "%s has no pairs", rels[r]);
            double d = rel_number(base, rels[r], "ablation", head);
            double got = rel_number(masked, rels[r], NULL, "logit_diff") -
                         rel_number(base, rels[r], NULL, "logit_diff");
            cr_assert_float_eq(d, got, 1e-6, "%s, %s: matrix %.9g, masked run %.9g", rels[r],
                               head, d, got);
            double da = rel_number(base, rels[r], "ablation_accuracy", head);
            double ga = rel_number(masked, rels[r], NULL, "accuracy") -
                        rel_number(base, rels[r], NULL, "accuracy");
            cr_assert_float_eq(da, ga, 1e-6, "%s, %s accuracy", rels[r], head);
        }
        free(masked);
    }
    free(base);
}

/* --heads --json's compromise: every pair's overlap is its heads' sum of min(a, b)
 * over their sum of max(a, b), as printed beside it, and a masked head has no
 * attention there (the formula itself: test_compromise.c). */
Test(heads, the_compromise_overlap_is_what_its_heads_attention_gives, .timeout = 120)
{
    char ckpt[400], text[400], *out;
    tiny_on_piece("heads-compromise", ckpt, text);
    cr_assert_eq(tu_run(&out, "%s/infer --ckpt %s --heads %s --json -j 1", tu_bin(), ckpt, text),
                 0, "%s", out);
    const char *p = strstr(out, "\"compromise\":{\"min_rows\":20,\"overlap\":");
    cr_assert_not_null(p, "no compromise in %.300s", out);
    int pairs = 0;
    for (p = strstr(p, "{\"relations\":"); p; p = strstr(p + 1, "{\"relations\":")) {
        const char *o = strstr(p, "\"overlap\":"), *h = strstr(p, "\"attention\":{");
        cr_assert(o && h);
        double overlap = strtod(o + 10, NULL), a[2][2];
        cr_assert_eq(sscanf(h, "\"attention\":{\"L0H0\":[%lf,%lf],\"L0H1\":[%lf,%lf]}", &a[0][0],
                            &a[0][1], &a[1][0], &a[1][1]), 4, "%.200s", h);
        double lo = fmin(a[0][0], a[0][1]) + fmin(a[1][0], a[1][1]);
        double hi = fmax(a[0][0], a[0][1]) + fmax(a[1][0], a[1][1]);
        cr_assert_float_eq(overlap, lo / hi, 1e-5, "%.200s", p);
        pairs++;
    }
    cr_assert_gt(pairs, 0);
    free(out);
    cr_assert_eq(tu_run(&out, "%s/infer --ckpt %s --heads %s --json -j 1 --mask 0.1", tu_bin(),
                        ckpt, text), 0, "%s", out);
    p = strstr(out, "\"compromise\":");
    cr_assert_not_null(p);
    cr_assert_not_null(strstr(p, "\"L0H1\":[null,null]"), "%.300s", p);
    free(out);
}

/* --windows past the windows a short file holds: the windows overlap and the
 * passes over them grow with --windows, so --heads says so up front and gives a
 * line as each long pass begins (on a terminal the head count runs in place);
 * without it, nothing of the kind is printed. */
Test(heads_cli, more_windows_than_the_file_holds_are_announced_with_a_line_per_pass,
     .timeout = 60)
{
    const char *dir = tu_tmpdir("heads-cli-windows");
    char ckpt[400], text[400], *out;
    write_tiny(dir, ckpt, text, sizeof ckpt);
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --windows 400 --threads 1 "
                    "</dev/null 2>&1 >/dev/null", tu_bin(), ckpt, text);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "infer: note: --windows 400 is more than the ") &&
              strstr(out, "so they overlap"), "%s", out);
    cr_assert(strstr(out, "infer: heads: attention over 400 windows\n") &&
              strstr(out, "infer: heads: ablating head 4/4 over 400 windows\n"), "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --threads 1 2>&1 >/dev/null", tu_bin(), ckpt,
                text);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(!strstr(out, "overlap") && !strstr(out, "infer: heads: "), "%s", out);
    free(out);
}
