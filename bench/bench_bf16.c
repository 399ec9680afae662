/* bench_bf16: the linear layer's products in fp32 (matmul_forward, matmul_backward)
 * against bf16 (bf16_forward, bf16_backward, rounding included) at the layer shapes
 * of NANO (C = 384) and MID (C = 256), the two taking turns call by call.
 *
 * Build (from the repository root, after `make`, which builds the library):
 *   gcc -std=c11 -O3 -march=native -fopenmp -ffp-contract=off -I. \
 *       bench/bench_bf16.c build/libheadcount.a -lm -o build/bench_bf16
 * Run: build/bench_bf16 [--rows N] [--reps R] [--threads T] [--say]
 * It first says which code runs the bf16 products (--say: only that): the instruction,
 * or the emulation (HEADCOUNT_BF16=emulate picks it where the build has the
 * instruction).
 *
 * Time is the calling thread's CPU time at --threads 1 (the default; on a loaded
 * host it moves less than wall time), wall time otherwise. "fwd" counts 2*N*IC*OC
 * flops, "bwd" (din and dW) 4*N*IC*OC; each figure is the median of R calls after
 * one warm-up. It only reports: nothing here asserts on a time. */
#define _POSIX_C_SOURCE 200809L

#include "bench/bench_bf16_path.h"
#include "bench/bench_clock.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *filled(size_t n, float scale, unsigned seed)
{
    float *x = malloc(n * sizeof(float));
    if (!x) {
        fputs("bench_bf16: out of memory\n", stderr);
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * scale;
    }
    return x;
}

static long arg_long(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end || x < lo || x > hi) {
        fprintf(stderr, "bench_bf16: %s %s: expected %ld..%ld\n", flag, v, lo, hi);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    int N = 4096, reps = 7, threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            N = (int)arg_long("--rows", argv[++i], 1, 1 << 16);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = (int)arg_long("--reps", argv[++i], 1, 1000);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = (int)arg_long("--threads", argv[++i], 1, 1024);
        else if (!strcmp(argv[i], "--say")) {
            bench_bf16_say(stdout);
            return 0;
        } else {
            fprintf(stderr, "usage: bench_bf16 [--rows N] [--reps R] [--threads T] [--say]\n");
            return 2;
        }
    }
    Bf16Path path = bench_bf16_path();
    bench_bf16_say(stdout);
    omp_set_num_threads(threads);
    double (*clock_fn)(void) = threads == 1 ? thread_cpu : bench_now;
    static const struct { const char *name; int IC, OC; } shapes[] = {
        {"NANO qkv", 384, 1152}, {"NANO proj", 384, 384}, {"NANO fc", 384, 1536},
        {"NANO fcproj", 1536, 384}, {"MID qkv", 256, 768}, {"MID fc", 256, 1024},
    };
    printf("%d rows, %d thread(s), GFLOP/s (median of %d)\n", N, threads, reps);
    printf("%-12s %11s | %8s %8s %6s | %8s %8s %6s\n", "layer", "IC -> OC", "fwd fp32",
           "fwd bf16", "ratio", "bwd fp32", "bwd bf16", "ratio");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int IC = shapes[s].IC, OC = shapes[s].OC;
        float *in = filled((size_t)N * IC, 2.0f, 1), *W = filled((size_t)OC * IC, 0.1f, 2);
        float *b = filled((size_t)OC, 0.1f, 3), *out = filled((size_t)N * OC, 0.01f, 4);
        float *din = filled((size_t)N * IC, 0, 5), *dW = filled((size_t)OC * IC, 0, 6);
        double *t = malloc(4 * (size_t)reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c0 = clock_fn();
            matmul_forward(out, in, W, b, N, IC, OC);
            double c1 = clock_fn();
            bf16_forward(out, NULL, in, W, b, N, IC, OC, path);
            double c2 = clock_fn();
            matmul_backward(din, dW, NULL, out, in, W, N, IC, OC);
            double c3 = clock_fn();
            bf16_backward(din, dW, NULL, out, in, W, NULL, N, IC, OC, path);
            double c4 = clock_fn();
            if (r < 0)
                continue;
            t[r] = c1 - c0, t[reps + r] = c2 - c1, t[2 * reps + r] = c3 - c2;
            t[3 * reps + r] = c4 - c3;
        }
        double med[4];
        for (int k = 0; k < 4; k++) {
            qsort(t + (size_t)k * reps, (size_t)reps, sizeof(double), bench_cmp_double);
            med[k] = t[(size_t)k * reps + reps / 2];
        }
        double f = 2.0 * N * IC * OC / 1e9;
        char dims[32];
        snprintf(dims, sizeof dims, "%d -> %d", IC, OC);
        printf("%-12s %11s | %8.1f %8.1f %5.2fx | %8.1f %8.1f %5.2fx\n", shapes[s].name, dims,
               f / med[0], f / med[1], med[0] / med[1], 2 * f / med[2], 2 * f / med[3],
               med[2] / med[3]);
        fflush(stdout);
        free(in), free(W), free(b), free(out), free(din), free(dW), free(t);
    }
    return 0;
}
