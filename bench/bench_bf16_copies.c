/* bench_bf16_copies: a bf16 training step whose AdamW writes the weights' bf16 copies
 * and whose layers read them (trainer_step, kernels/bf16_weight.h) against the same
 * step without copies (the layers round W at every call; written out as
 * tests/test_bf16_weight.c writes it), on two models of one configuration, the two
 * steps taking turns (which goes first alternates) in one process, one thread.
 *
 * Build (from the repository root, after `make`):
 *   gcc -std=c11 -O3 -march=native -fopenmp -ffp-contract=off -I. \
 *       bench/bench_bf16_copies.c build/libheadcount.a -lm -o build/bench_bf16_copies
 * Run: build/bench_bf16_copies [--config BABY|MID|NANO] [--steps N] [--rows]
 * --rows compares instead the activations' copies rounded by their producers for the
 * products (acts_bf16_init: the rows of the LayerNorms' outputs, dlogits, the residual
 * gradient, attention's output and dqkv, the columns of the residual gradient, dlogits
 * and dqkv, the LayerNorms' and attention's outputs' columns and, with the pairs, the
 * MLP's hidden rows and dfch's columns;
 * kernels/bf16_rows.h) against the products rounding
 * them, both sides written out without the weights' copies.
 * Prints each side's median step in thread CPU time (ms; on a loaded host it moves
 * less than wall time) and the median of the per-step ratios (with / without), and
 * whether the two models' parameters are still the same bits (they must be). It only
 * reports: nothing here asserts on a time. */
#define _POSIX_C_SOURCE 200809L

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_bf16_path.h"
#include "bench/bench_clock.h"
#include "trainer/schedule.h"
#include "trainer/trainer.h"
#include "util/rng.h"

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* trainer_step without the copies: the model's bf16_copies stay NULL. */
static void step_without(Trainer *t, const int *tok, const int *tgt)
{
    const TrainHyper *hp = &t->hp;
    PassOptions po = {.backward_next = 1};
    int B = t->B, T = t->model.cfg.T;
    gpt_forward(&t->model, &t->acts, tok, tgt, B, T, &po);
    grads_zero(&t->grads);
    gpt_backward(&t->model, &t->grads, &t->acts, tok, tgt, B, T, &po);
    grad_clip(t->grads.data, t->model.table.total, hp->clip);
    float lr = schedule_lr(t->step, hp->steps, hp->warmup, hp->lr, hp->min_lr);
    adamw_update(t->model.params, t->grads.data, t->adam_m, t->adam_v, &t->model.table,
                 &hp->adam, lr, t->step + 1);
    t->step++;
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int L, C, T, B, H; } configs[] = {
        {"BABY", 4, 128, 64, 12, 4}, {"MID", 4, 256, 256, 16, 4}, {"NANO", 6, 384, 256, 16, 6},
    };
    int which = 1, steps = 9, rows = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) {
            i++;
            which = -1;
            for (int k = 0; k < 3; k++)
                if (!strcmp(argv[i], configs[k].name))
                    which = k;
            if (which < 0) {
                fprintf(stderr, "bench_bf16_copies: --config %s: expected BABY, MID or NANO\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*argv[i] == '\0' || *end || v < 1 || v > 1000) {
                fprintf(stderr, "bench_bf16_copies: --steps %s: expected 1..1000\n", argv[i]);
                return 2;
            }
            steps = (int)v;
        } else if (!strcmp(argv[i], "--rows")) {
            rows = 1;
        } else {
            fprintf(stderr, "usage: bench_bf16_copies [--config BABY|MID|NANO] [--steps N] "
                            "[--rows]\n");
            return 2;
        }
    }
    omp_set_num_threads(1);
    int L = configs[which].L, C = configs[which].C, T = configs[which].T;
    int B = configs[which].B, H = configs[which].H, warmup = 2, total = warmup + steps;
    Config cfg = {.V = 65, .T = T, .L = L, .H = H, .C = C, .D = C / H};
    TrainHyper hp = {.lr = 1e-3f, .min_lr = 1e-4f, .warmup = 2, .steps = total, .clip = 1.0f,
                     .micro = 1, .adam = {0.9f, 0.99f, 1e-8f, 0.1f}};
    char err[256];
    Trainer t[2];
    memset(t, 0, sizeof t);
    for (int r = 0; r < 2; r++) {
        if (trainer_init(&t[r], &cfg, 1, err, sizeof err) ||
            trainer_prepare(&t[r], &hp, B, err, sizeof err)) {
            fprintf(stderr, "bench_bf16_copies: %s\n", err);
            return 1;
        }
        t[r].model.precision = PRECISION_BF16;
        t[r].model.bf16_path = bench_bf16_path();
    }
    if (rows && acts_bf16_init(&t[0].acts, bf16_copy_kind(t[0].model.bf16_path))) {
        fputs("bench_bf16_copies: out of memory\n", stderr);
        return 1;
    }
    bench_bf16_say(stdout);
    size_t N = (size_t)B * T;
    int *tok = malloc(N * sizeof(int)), *tgt = malloc(N * sizeof(int));
    double *ms = malloc(3 * (size_t)steps * sizeof(double));
    if (!tok || !tgt || !ms) {
        fputs("bench_bf16_copies: out of memory\n", stderr);
        return 1;
    }
    Rng rng;
    rng_init(&rng, 7, 0);
    for (int s = 0; s < total; s++) {
        for (size_t i = 0; i < N; i++) {
            tok[i] = (int)rng_below(&rng, (uint64_t)cfg.V);
            tgt[i] = (int)rng_below(&rng, (uint64_t)cfg.V);
        }
        double d[2];
        for (int q = 0; q < 2; q++) {
            int r = q ^ (s % 2);
            double c0 = thread_cpu();
            if (r == 0 && !rows)
                trainer_step(&t[0], tok, tgt, NULL);
            else
                step_without(&t[r], tok, tgt);
            d[r] = (thread_cpu() - c0) * 1e3;
        }
        if (s >= warmup) {
            int k = s - warmup;
            ms[k] = d[0], ms[steps + k] = d[1], ms[2 * steps + k] = d[0] / d[1];
        }
    }
    for (int k = 0; k < 3; k++)
        qsort(ms + (size_t)k * steps, (size_t)steps, sizeof(double), bench_cmp_double);
    int same = !memcmp(t[0].model.params, t[1].model.params,
                       t[0].model.table.total * sizeof(float));
    printf("%s H = %d, %d steps, one thread, thread CPU ms (medians): with %s %.1f, "
           "without %.1f, per-step ratio %.3f; parameters %s\n", configs[which].name, H, steps,
           rows ? "activations' rounded copies" : "copies",
           ms[steps / 2], ms[steps + steps / 2], ms[2 * steps + steps / 2],
           same ? "the same bits" : "DIFFER");
    free(tok), free(tgt), free(ms);
    trainer_free(&t[0]);
    trainer_free(&t[1]);
    return same ? 0 : 1;
}
