/* Command-line tests of ./train --head-dropout (programs found in $HEADCOUNT_BIN):
 * 1 and 2 threads train the same checkpoint; P = 0 given is the run without the
 * flag and P > 0 changes it; the checkpoint keeps P and a resumed run continues
 * bit-identically (and refuses another P); values outside the range are one
 * usage-error line; evaluation (train's own estimates and ./infer --eval) runs
 * without it. Every run is tiny (2 layers of 4 heads, C = 16, a 20 KB generated
 * text file), with OMP_WAIT_POLICY=passive (see test_train.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/ckpt.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

#define HD_FLAGS "--layers 2 --embd 16 --heads 4 --block 16 --batch 4 --eval-iters 2 " \
                 "--steps 12 --eval-every 6 --warmup 4"

static void train_ok(const Env *e, const char *ckpt, const char *log, const char *extra)
{
    char *out;
    int rc = tu_run(&out, "%s/train " HD_FLAGS " --data %s --out %s --log %s %s", tu_bin(), e->data,
                    ckpt, log, extra);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

Test(train, head_dropout_gives_identical_checkpoints_for_one_and_two_threads)
{
    Env e;
    env_init(&e, "hd-threads");
    char ck[4][400], lg[4][400];
    const char *extra[4] = {"--head-dropout 0.3 --threads 1", "--head-dropout 0.3 --threads 2",
                            "--head-dropout 0 --threads 1", "--threads 2"};
    for (int i = 0; i < 4; i++) {
        snprintf(ck[i], sizeof ck[i], "%s/r%d.ckpt", e.dir, i);
        snprintf(lg[i], sizeof lg[i], "%s/r%d.log", e.dir, i);
        train_ok(&e, ck[i], lg[i], extra[i]);
    }
    cr_assert(same_files(ck[0], ck[1]), "--head-dropout 0.3: 1 and 2 threads differ");
    char *a = log_without_timings(lg[0]), *b = log_without_timings(lg[1]);
    cr_assert_str_eq(a, b, "--head-dropout 0.3: the logs of 1 and 2 threads differ");
    free(a);
    free(b);
    cr_assert(same_files(ck[2], ck[3]), "--head-dropout 0 differs from no flag");
    cr_assert(!same_files(ck[0], ck[2]), "--head-dropout 0.3 trained what 0 trains");
    /* The settings record names it. */
    char *log = tu_read_text(lg[0]);
    cr_assert(strstr(log, "\"head_dropout\":0.3,"), "%s", log);
    free(log);
}

/* 3 steps, save, resume to 6 equals 6 straight (warm-up beyond the end keeps the
 * schedule independent of --steps); the resumed run takes P from the checkpoint,
 * which stores it, and refuses a different one. */
Test(train, head_dropout_is_kept_in_the_checkpoint_and_resumes_bit_identically)
{
    Env e;
    env_init(&e, "hd-resume");
    expect_resume_matches(&e, TINY " --heads 4 --head-dropout 0.3 --warmup 100 --eval-every 0",
                          "--head-dropout 0.1", "--head-dropout 0.1 contradicts the checkpoint");
    char path[400], err[2000];
    snprintf(path, sizeof path, "%s/part.ckpt", e.dir);
    Model m;
    Tokenizer tok;
    TrainState ts;
    int has;
    cr_assert_eq(ckpt_load(path, &m, &tok, NULL, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has && ts.head_dropout == 0.3, "stored head_dropout %g", ts.head_dropout);
    model_free(&m);
    tok_free(&tok);
}

Test(train, head_dropout_outside_its_range_is_one_usage_error_line)
{
    Env e;
    env_init(&e, "hd-range");
    const char *bad[] = {"1", "1.5", "0.96", "-0.1", "nan", "inf", "0.2x", "", "abc"};
    char extra[700];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(extra, sizeof extra, "--data %s '--head-dropout=%s'", e.data, bad[i]);
        refuse_train(&e, extra, 2, "--head-dropout: expected a number in [0, 0.95]");
    }
}

/* The val loss a run reports (its estimates run without any dropout) is what
 * ./infer --eval computes on the split, which has no head-dropout flag at all. */
Test(train, evaluation_runs_without_head_dropout)
{
    Env e;
    env_init(&e, "hd-eval");
    train_ok(&e, e.out, e.log, "--head-dropout 0.5 --threads 1");
    char *out, val[400];
    snprintf(val, sizeof val, "%s/val.txt", e.dir);
    int rc = tu_run(&out, "%s/train --data %s --dump-val %s", tu_bin(), e.data, val);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char *log = tu_read_text(e.log);
    const char *fin = strstr(log, "{\"type\":\"final\"");
    const char *jv = fin ? strstr(fin, "\"val_loss\":") : NULL;
    cr_assert_not_null(jv, "%s", log);
    char want[32];
    snprintf(want, sizeof want, "%.*s", (int)strcspn(jv + 11, ",}"), jv + 11);
    free(log);
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s", tu_bin(), e.out, val);
    cr_assert_eq(rc, 0, "%s", out);
    char got[32] = "";
    cr_assert_eq(sscanf(out, "eval loss %31s", got), 1, "%s", out);
    cr_assert_str_eq(got, want, "infer --eval %s, train's final val loss %s", got, want);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s --head-dropout 0.5", tu_bin(), e.out, val);
    expect_error(out, rc, 2, "infer", "--head-dropout");
    free(out);
}
