/* Gradient accumulation (--accum) and the fixed-order fold behind it (dist.c,
 * one process; tests/mpi_check.sh runs the same over MPI ranks): the fold is
 * ((g0 + g1) + g2) exactly; K micro-batches of B sequences give the gradient of
 * one batch of K*B (the same sequences, so only float rounding differs); the
 * result does not depend on the thread count; resume keeps the micro-batch count. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/train/dist.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

Test(accum, the_fold_adds_micro_batches_in_order_and_scales_once)
{
    Dist d;
    cr_assert_eq(dist_init(&d, NULL, NULL), 0);
    cr_assert_eq(d.size, 1);
    enum { P = 37 };
    cr_assert_eq(dist_setup(&d, P), 0);
    float g[3][P], acc[P], want[P];
    Rng rng;
    rng_init(&rng, 3, 0);
    for (int k = 0; k < 3; k++)
        tu_fill(g[k], P, &rng, -1.0f, 1.0f);
    for (int k = 0; k < 3; k++)
        dist_fold(&d, acc, g[k], k);
    for (int i = 0; i < P; i++) {
        volatile float s = g[0][i] + g[1][i];
        s = s + g[2][i];
        want[i] = s * (1.0f / 3.0f);
    }
    dist_gather(&d, acc, 1.0f / 3.0f);
    cr_assert_eq(memcmp(acc, want, sizeof acc), 0, "the fold is not ((g0 + g1) + g2) / 3");
    double mine[3] = {1.5, 2.5, 3.5}, all[3];
    dist_losses(&d, mine, 3, all);
    cr_assert(all[0] == 1.5 && all[1] == 2.5 && all[2] == 3.5);
    cr_assert_eq(dist_any(&d, 7), 7);
    dist_finish(&d);
}

/* The first step's record of a --log file: loss and gradient norm. */
static void first_step(const char *log, double *loss, double *norm)
{
    char *text = tu_read_text(log);
    const char *at = strstr(text, "{\"type\":\"step\",\"step\":1,");
    cr_assert_not_null(at, "no step 1 in %s", log);
    const char *l = strstr(at, "\"loss\":"), *g = strstr(at, "\"grad_norm\":");
    cr_assert(l && g);
    *loss = strtod(l + 7, NULL);
    *norm = strtod(g + 12, NULL);
    free(text);
}

Test(accum, k_micro_batches_of_b_give_the_gradient_of_one_batch_of_k_times_b)
{
    Env e;
    env_init(&e, "accum-big");
    char big[400], acc[400], *out;
    snprintf(big, sizeof big, "%s/big.log", e.dir);
    snprintf(acc, sizeof acc, "%s/acc.log", e.dir);
    /* The sampler draws one sequence at a time, so 3 micro-batches of 4 see the
     * same 12 sequences as one batch of 12. */
    int rc = tu_run(&out, "%s/train " TINY " --steps 1 --eval-every 0 --batch 12 --data %s "
                    "--out %s --log %s", tu_bin(), e.data, e.out, big);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train " TINY " --steps 1 --eval-every 0 --batch 4 --accum 3 --data %s "
                "--out %s/acc.ckpt --log %s", tu_bin(), e.data, e.dir, acc);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "sums 3 micro-batches"), "%s", out);
    free(out);
    double l1, n1, l2, n2;
    first_step(big, &l1, &n1);
    first_step(acc, &l2, &n2);
    /* Mean losses of the same tokens summed in another order, and gradients
     * summed in another order: float32 rounding, far below 1e-5 relative. */
    cr_assert(fabs(l1 - l2) <= 1e-5 * fabs(l1), "loss %.8f vs %.8f", l1, l2);
    cr_assert(fabs(n1 - n2) <= 1e-4 * fabs(n1), "gradient norm %.8f vs %.8f", n1, n2);
    cr_assert(n1 > 0.0);
}

Test(accum, accumulated_steps_are_the_same_bits_for_one_and_two_threads)
{
    Env e;
    env_init(&e, "accum-threads");
    char *out;
    for (int t = 1; t <= 2; t++) {
        int rc = tu_run(&out, "%s/train --layers 1 --embd 16 --heads 2 --block 16 --batch 4 "
                        "--eval-iters 2 --steps 6 --accum 3 --dropout 0.1 --threads %d --data %s "
                        "--out %s/t%d.ckpt", tu_bin(), t, e.data, e.dir, t);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
    }
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/t1.ckpt", e.dir);
    snprintf(b, sizeof b, "%s/t2.ckpt", e.dir);
    size_t na, nb;
    unsigned char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    cr_assert(x && y && na == nb && memcmp(x, y, na) == 0, "1 and 2 threads differ");
    free(x);
    free(y);
}

/* Warm-up beyond the last step keeps the schedule independent of --steps, so 3 +
 * 3 accumulated steps must equal 6; another micro-batch count is refused. */
Test(accum, resume_keeps_the_micro_batch_count_and_refuses_another)
{
    Env e;
    env_init(&e, "accum-resume");
    expect_resume_matches(&e, TINY " --accum 2 --warmup 100 --eval-every 0", "--accum 3",
                          "--accum 3");
}
