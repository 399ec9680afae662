/* The optimizer pieces: learning-rate schedule, gradient clipping, AdamW. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/adamw.h"
#include "trainer/schedule.h"
#include "tests/testutil.h"

Test(optim, schedule_warms_up_linearly_then_decays_to_min_lr_at_the_last_step)
{
    cr_assert_float_eq(schedule_lr(0, 2000, 100, 1e-3f, 1e-4f), 1e-5, 1e-12);
    cr_assert_float_eq(schedule_lr(49, 2000, 100, 1e-3f, 1e-4f), 5e-4, 1e-9);
    cr_assert_float_eq(schedule_lr(99, 2000, 100, 1e-3f, 1e-4f), 1e-3, 1e-9);
    cr_assert_float_eq(schedule_lr(100, 2000, 100, 1e-3f, 1e-4f), 1e-3, 1e-9);
    /* Halfway through the decay the cosine is at its midpoint. */
    double mid = schedule_lr(100 + 1899 / 2, 2000, 100, 1e-3f, 1e-4f);
    cr_assert(fabs(mid - 5.5e-4) < 1e-6, "midpoint lr %g", mid);
    cr_assert_float_eq(schedule_lr(1999, 2000, 100, 1e-3f, 1e-4f), 1e-4, 1e-9);
    for (long s = 101; s < 2000; s++)
        cr_assert(schedule_lr(s, 2000, 100, 1e-3f, 1e-4f) <=
                  schedule_lr(s - 1, 2000, 100, 1e-3f, 1e-4f));
    /* No warm-up and a single step: the only step gets min_lr (its last step). */
    cr_assert_float_eq(schedule_lr(0, 1, 0, 1e-3f, 1e-4f), 1e-4, 1e-9);
}

Test(optim, clipping_scales_to_the_threshold_and_leaves_small_gradients_alone)
{
    float g[3] = {3.0f, 4.0f, 0.0f};
    double norm = grad_clip(g, 3, 1.0f);
    cr_assert_float_eq(norm, 5.0, 1e-12);
    cr_assert_float_eq(sqrt(g[0] * g[0] + g[1] * g[1]), 1.0, 1e-5);
    float h[2] = {0.3f, 0.4f};
    grad_clip(h, 2, 1.0f);
    cr_assert_eq(h[0], 0.3f);
    cr_assert_eq(h[1], 0.4f);
}

Test(optim, global_norm_is_identical_for_one_and_two_threads)
{
    Rng rng;
    rng_init(&rng, 3, 0);
    size_t n = 100003;
    float *g = tu_alloc_random(n, &rng, -1, 1);
    omp_set_num_threads(1);
    double a = grad_global_norm(g, n);
    omp_set_num_threads(2);
    double b = grad_global_norm(g, n);
    cr_assert(memcmp(&a, &b, sizeof a) == 0);
    free(g);
}

Test(optim, adamw_matches_the_formula_and_decays_only_flagged_tensors)
{
    Config cfg = {.V = 3, .T = 2, .L = 1, .H = 1, .C = 2, .D = 2};
    ParamTable t;
    params_table_init(&t, &cfg);
    float *p = calloc(t.total, sizeof(float)), *g = calloc(t.total, sizeof(float));
    float *m = calloc(t.total, sizeof(float)), *v = calloc(t.total, sizeof(float));
    for (size_t i = 0; i < t.total; i++) {
        p[i] = 0.5f;
        g[i] = 0.1f;
    }
    AdamW opt = {0.9f, 0.99f, 1e-8f, 0.1f};
    adamw_update(p, g, m, v, &t, &opt, 1e-2f, 1);
    /* Step 1: mhat = g, vhat = g^2, so the update is lr * g / (|g| + eps) = lr. */
    for (int k = 0; k < t.n; k++) {
        const ParamSpec *s = &t.spec[k];
        double want = (s->decay ? 0.5 * (1 - 1e-2 * 0.1) : 0.5) - 1e-2 * 0.1 / (0.1 + 1e-8);
        cr_assert(fabs(p[s->offset] - want) < 1e-6, "%s: %g, want %g", s->name, p[s->offset],
                  want);
        cr_assert_eq(s->decay, s->rows > 1, "%s: decay flag %d", s->name, s->decay);
    }
    free(p); free(g); free(m); free(v);
}
