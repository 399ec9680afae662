/* Command-line tests of ./train --head-gates (programs found in $HEADCOUNT_BIN):
 * 1 and 2 threads train the same checkpoint and log; LAMBDA = 0 given is the run
 * without the flag, and LAMBDA > 0 writes a checkpoint with the gates' flag and
 * tensor; the checkpoint keeps LAMBDA and a resumed run continues bit-identically
 * (and refuses another LAMBDA); values outside the range are one usage-error
 * line; the log reports the penalty apart from the loss and the open heads at
 * each evaluation; ./infer --eval scores with the evaluation gates, as train's
 * own final val loss does. Every run is tiny (2 layers of 4 heads, C = 16, a 20 KB
 * generated text file), with OMP_WAIT_POLICY=passive (see test_train.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gates.h"
#include "trainer/ckpt.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

Test(train, head_gates_give_identical_checkpoints_for_one_and_two_threads)
{
    Env e;
    env_init(&e, "hg-threads");
    char ck[4][400], lg[4][400];
    expect_option_threads(&e, "--head-gates 0.01 --dropout 0.1", "--head-gates 0",
                          "\"head_gates\":0.01,", ck, lg);
    char *log = tu_read_text(lg[0]), *plain = tu_read_text(lg[2]);
    cr_assert(strstr(log, "\"gate_penalty\":") && strstr(log, "\"open_heads\":"), "%s", log);
    cr_assert(!strstr(plain, "\"gate_penalty\":") && !strstr(plain, "\"open_heads\":"), "%s",
              plain);
    free(log);
    free(plain);

    /* The gated checkpoint: the header's flag, one log_alpha per layer and head,
     * moved from its initial value by training; the plain one has neither. */
    Model m;
    Tokenizer tok;
    char err[2000];
    cr_assert_eq(ckpt_load(ck[0], &m, &tok, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert(m.cfg.gates && m.w.log_alpha);
    int moved = 0;
    for (int i = 0; i < 8; i++)
        moved += m.w.log_alpha[i] != GATE_LOG_ALPHA_INIT;
    cr_assert_eq(moved, 8, "%d of 8 log_alpha moved", moved);
    model_free(&m);
    tok_free(&tok);
    cr_assert_eq(ckpt_load(ck[2], &m, &tok, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert(!m.cfg.gates && !m.w.log_alpha);
    model_free(&m);
    tok_free(&tok);
}

/* The step's penalty is LAMBDA times the expected open heads, so it lies in
 * (0, LAMBDA L H]; the step's loss is the cross-entropy alone. */
Test(train, head_gates_penalty_is_logged_apart_from_the_loss)
{
    Env e;
    env_init(&e, "hg-log");
    train_two_by_four(&e, e.out, e.log, "--head-gates 0.5 --threads 1");
    char *log = tu_read_text(e.log);
    int steps = 0;
    for (char *line = strstr(log, "{\"type\":\"step\""); line;
         line = strstr(line + 1, "{\"type\":\"step\"")) {
        double pen = json_number(line, "gate_penalty"), loss = json_number(line, "loss");
        cr_assert(pen > 0 && pen <= 0.5 * 8, "penalty %g", pen);
        cr_assert(loss > 1.0 && loss < 6.0, "loss %g", loss);
        steps++;
    }
    cr_assert_eq(steps, 12);
    free(log);
}

/* 3 steps, save, resume to 6 equals 6 straight; the resumed run takes LAMBDA
 * from the checkpoint, which stores it, and refuses a different one. */
Test(train, head_gates_are_kept_in_the_checkpoint_and_resume_bit_identically)
{
    Env e;
    env_init(&e, "hg-resume");
    Model m;
    Tokenizer tok;
    TrainState ts;
    expect_option_resumes(&e, TINY " --heads 4 --head-gates 0.02 --warmup 100 --eval-every 0",
                          "--head-gates 0.1", &m, &tok, &ts);
    cr_assert(ts.head_gates == 0.02 && m.cfg.gates, "stored head_gates %g", ts.head_gates);
    model_free(&m);
    tok_free(&tok);
}

Test(train, head_gates_outside_their_range_are_one_usage_error_line)
{
    Env e;
    env_init(&e, "hg-range");
    const char *bad[] = {"101", "-0.1", "nan", "inf", "0.2x", "", "abc", "1e-400"};
    refuse_values(&e, "--head-gates", bad, sizeof bad / sizeof bad[0], "--head-gates: expected");
    /* 1e-400 is 0 only because a double cannot hold it, and 0 means no gates:
     * refused, where a subnormal (a gate, however weak) and 0 itself are taken. */
    char *out;
    int rc = tu_run(&out, "%s/train --head-gates 1e-400 --print-settings", tu_bin());
    expect_error(out, rc, 2, "train", "got '1e-400', which is too small for a double");
    free(out);
    const char *ok[] = {"4.9e-324", "0", "0e-500", "0.0"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        rc = tu_run(&out, "%s/train --head-gates %s --print-settings", tu_bin(), ok[i]);
        cr_assert_eq(rc, 0, "--head-gates %s: %s", ok[i], out);
        free(out);
    }
}

/* The val loss a run reports (its estimates use the evaluation gates) is what
 * ./infer --eval computes on the split. */
Test(train, evaluation_uses_the_deterministic_gates)
{
    Env e;
    env_init(&e, "hg-eval");
    char val[400];
    expect_eval_matches_train(&e, "--head-gates 0.05 --threads 1", val, sizeof val);
}

/* Writes src's model to dst with every gate open (log_alpha 3: gate exactly 1)
 * but head `closed` (log_alpha -10: gate 0), or none closed when it is -1. */
static void set_gates(const char *src, const char *dst, int closed)
{
    Model m;
    Tokenizer tok;
    char err[2000];
    long steps;
    cr_assert_eq(ckpt_load(src, &m, &tok, &steps, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert(m.cfg.gates);
    for (int i = 0; i < m.cfg.L * m.cfg.H; i++)
        m.w.log_alpha[i] = i == closed ? -10.0f : 3.0f;
    cr_assert_eq(ckpt_save(dst, &m, &tok, steps, NULL, err, sizeof err), 0, "%s", err);
    model_free(&m);
    tok_free(&tok);
}

/* ./infer applies the evaluation gates: a closed head scores as the same head
 * silenced by --mask in a model whose gates are all 1; --heads marks it closed
 * and counts the open heads, and the explorer's JSON carries each gate. */
Test(train, infer_applies_the_gates_and_marks_closed_heads)
{
    Env e;
    env_init(&e, "hg-infer");
    train_two_by_four(&e, e.out, e.log, "--head-gates 0.01 --threads 1");
    char closed[400], open[400], json[400], page[400];
    snprintf(closed, sizeof closed, "%s/closed.ckpt", e.dir);
    snprintf(open, sizeof open, "%s/open.ckpt", e.dir);
    snprintf(json, sizeof json, "%s/explore.json", e.dir);
    snprintf(page, sizeof page, "%s/explore.html", e.dir);
    set_gates(e.out, closed, 1);
    set_gates(e.out, open, -1);
    char *a, *b, *c;
    cr_assert_eq(tu_run(&a, "%s/infer --ckpt %s --eval %s --threads 1", tu_bin(), closed,
                        e.data), 0);
    cr_assert_eq(tu_run(&b, "%s/infer --ckpt %s --eval %s --mask 0.1 --threads 1", tu_bin(), open,
                        e.data), 0);
    cr_assert_eq(tu_run(&c, "%s/infer --ckpt %s --eval %s --threads 1", tu_bin(), open, e.data), 0);
    cr_assert_str_eq(a, b, "a closed head and a silenced one score differently");
    cr_assert_str_neq(a, c, "closing a head changed nothing");
    free(a); free(b); free(c);
    char rep[400], path[500];
    snprintf(rep, sizeof rep, "%s/report", e.dir);
    cr_assert_eq(tu_run(&a, "%s/infer --ckpt %s --heads %s --windows 4 --report %s --threads 1",
                        tu_bin(), closed, e.data, rep), 0, "%s", a);
    const char *row = strstr(a, "\nL0H1 ");
    cr_assert(row && find_in(row, strcspn(row + 1, "\n"), " closed "), "%s", a);
    cr_assert(strstr(a, "head gates (evaluation, docs/heads.md): 7 of 8 open"), "%s", a);
    free(a);
    snprintf(path, sizeof path, "%s/heads.json", rep);
    char *hj = tu_read_text(path);
    const char *r1 = strstr(hj, "{\"layer\":0,\"head\":1,");
    cr_assert(r1 && strstr(r1, "\"gate\":0,\"closed\":true}"), "%s", hj);
    free(hj);
    snprintf(path, sizeof path, "%s/heads.csv", rep);
    char *csv = tu_read_text(path);
    cr_assert(strstr(csv, ",cost_pronoun,gate\n") && strstr(csv, ",0\n") &&
              strstr(csv, ",1\n"), "%s", csv);
    free(csv);
    cr_assert_eq(tu_run(&a, "%s/infer --ckpt %s --explore %s --explore-json %s --text-file %s "
                        "--threads 1", tu_bin(), closed, page, json, e.data), 0, "%s", a);
    free(a);
    char *j = tu_read_text(json);
    const char *h1 = strstr(j, "\"id\":\"L0H1\""), *h0 = strstr(j, "\"id\":\"L0H0\"");
    cr_assert(h1 && h0, "%s", j);
    cr_assert(strstr(h1, "\"gate\":0,\"closed\":true"), "%s", h1);
    cr_assert(strstr(h0, "\"gate\":1,\"closed\":false"), "%s", h0);
    free(j);
}

/* The relation's best head in summary.json ("L0H1"), into buf; the test fails when
 * the relation is not there. */
static void best_head_of(char buf[32], const char *summary, const char *relation)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":{\"best_head\":\"", relation);
    const char *p = strstr(summary, key);
    cr_assert(p, "no %s in %s", key, summary);
    p += strlen(key);
    size_t n = strcspn(p, "\"");
    cr_assert(n > 0 && n < 32);
    memcpy(buf, p, n);
    buf[n] = '\0';
}

/* A closed head is never a relation's best head, nor needed, nor serving: the
 * previous-token relation's best head of the all-open model is closed by hand, and
 * --heads then names another head (or none) for every relation, in the table and in
 * summary.json, while the table and the report page mark the head closed. */
Test(train, infer_heads_never_names_a_closed_head)
{
    Env e;
    env_init(&e, "hg-best");
    train_two_by_four(&e, e.out, e.log, "--head-gates 0.01 --threads 1");
    char open[400], closed[400], rep[400], path[500], best[32];
    snprintf(open, sizeof open, "%s/open.ckpt", e.dir);
    snprintf(closed, sizeof closed, "%s/closed.ckpt", e.dir);
    set_gates(e.out, open, -1);
    char *out;
    snprintf(rep, sizeof rep, "%s/open-report", e.dir);
    cr_assert_eq(tu_run(&out, "%s/infer --ckpt %s --heads %s --windows 4 --report %s --threads 1",
                        tu_bin(), open, e.data, rep), 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/summary.json", rep);
    char *s = tu_read_text(path);
    best_head_of(best, s, "previous-token");
    free(s);
    int layer, head;
    cr_assert_eq(sscanf(best, "L%dH%d", &layer, &head), 2, "%s", best);
    set_gates(e.out, closed, layer * 4 + head);
    snprintf(rep, sizeof rep, "%s/closed-report", e.dir);
    cr_assert_eq(tu_run(&out, "%s/infer --ckpt %s --heads %s --windows 4 --report %s --threads 1",
                        tu_bin(), closed, e.data, rep), 0, "%s", out);
    char row[40];
    snprintf(row, sizeof row, "\n%s ", best);
    const char *r = strstr(out, row);
    cr_assert(r && find_in(r, strcspn(r + 1, "\n"), " closed "), "%s", out);
    /* The relations table: no line names the closed head as best or needed. */
    const char *rel = strstr(out, "\n  relation        best");
    cr_assert(rel, "%s", out);
    char named[40];
    snprintf(named, sizeof named, " %s ", best);
    const char *end = strstr(rel, "\n\n") ? strstr(rel, "\n\n") : rel + strlen(rel);
    cr_assert_null(find_in(rel, (size_t)(end - rel), named), "%s is named:\n%s", best, rel);
    free(out);
    snprintf(path, sizeof path, "%s/summary.json", rep);
    s = tu_read_text(path);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"best_head\":\"%s\"", best);
    cr_assert_null(strstr(s, quoted), "%s", s);
    snprintf(quoted, sizeof quoted, "\"needed_head\":\"%s\"", best);
    cr_assert_null(strstr(s, quoted), "%s", s);
    snprintf(quoted, sizeof quoted, "\"%s\":[]", best);
    const char *serves = strstr(s, "\"serves\":{"), *attends = strstr(s, "\"attends\":{");
    cr_assert(serves && attends && strstr(serves, quoted) && strstr(attends, quoted), "%s", s);
    free(s);
    /* The page's Metrics table has the gate column, the closed head's cell says so. */
    snprintf(path, sizeof path, "%s/index.html", rep);
    char *page = tu_read_text(path);
    char cell[64];
    snprintf(cell, sizeof cell, "<tr><td>%s</td><td><span", best);
    const char *tr = strstr(page, cell);
    cr_assert(strstr(page, "<th>gate</th>") && tr && find_in(tr, strcspn(tr, "\n"),
                                                            "<td>closed</td></tr>"), "%s", path);
    free(page);
}
