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

Test(train, head_dropout_gives_identical_checkpoints_for_one_and_two_threads)
{
    Env e;
    env_init(&e, "hd-threads");
    char ck[4][400], lg[4][400];
    expect_option_threads(&e, "--head-dropout 0.3", "--head-dropout 0", "\"head_dropout\":0.3,",
                          ck, lg);
    cr_assert(!same_files(ck[0], ck[2]), "--head-dropout 0.3 trained what 0 trains");
}

/* 3 steps, save, resume to 6 equals 6 straight (warm-up beyond the end keeps the
 * schedule independent of --steps); the resumed run takes P from the checkpoint,
 * which stores it, and refuses a different one. */
Test(train, head_dropout_is_kept_in_the_checkpoint_and_resumes_bit_identically)
{
    Env e;
    env_init(&e, "hd-resume");
    Model m;
    Tokenizer tok;
    TrainState ts;
    expect_option_resumes(&e, TINY " --heads 4 --head-dropout 0.3 --warmup 100 --eval-every 0",
                          "--head-dropout 0.1", &m, &tok, &ts);
    cr_assert(ts.head_dropout == 0.3, "stored head_dropout %g", ts.head_dropout);
    model_free(&m);
    tok_free(&tok);
}

Test(train, head_dropout_outside_its_range_is_one_usage_error_line)
{
    Env e;
    env_init(&e, "hd-range");
    const char *bad[] = {"1", "1.5", "0.96", "-0.1", "nan", "inf", "0.2x", "", "abc"};
    refuse_values(&e, "--head-dropout", bad, sizeof bad / sizeof bad[0],
                  "--head-dropout: expected a number in [0, 0.95]");
}

/* The val loss a run reports (its estimates run without any dropout) is what
 * ./infer --eval computes on the split, which has no head-dropout flag at all. */
Test(train, evaluation_runs_without_head_dropout)
{
    Env e;
    env_init(&e, "hd-eval");
    char val[400], *out;
    expect_eval_matches_train(&e, "--head-dropout 0.5 --threads 1", val, sizeof val);
    int rc = tu_run(&out, "%s/infer --ckpt %s --eval %s --head-dropout 0.5", tu_bin(), e.out, val);
    expect_error(out, rc, 2, "infer", "--head-dropout");
    free(out);
}
