/* bench_bf16: the linear layer's products in fp32 (matmul_forward, matmul_backward)
 * against bf16 (bf16_forward, bf16_backward, rounding included) at the layer shapes
 * of NANO (C = 384) and MID (C = 256), the two taking turns call by call.
 *
 * Build (from the repository root, after `make`, which builds the library):
 *   gcc -std=c11 -O3 -march=native -fopenmp -ffp-contract=off -I. \
 *       bench/bench_bf16.c build/libheadcount.a -lm -o build/bench_bf16
 * Run: build/bench_bf16 [--rows N] [--reps R] [--threads T] [--passes-reps R]
 *                        [--only-passes] [--pass-table K] [--vocab V] [--say]
 * It first says which code runs the bf16 products (--say: only that): the instruction,
 * or the emulation (HEADCOUNT_BF16=emulate picks it where the build has the
 * instruction).
 *
 * Time is the calling thread's CPU time at --threads 1 (the default; on a loaded
 * host it moves less than wall time), wall time otherwise. "fwd" counts 2*N*IC*OC
 * flops, "bwd" (din and dW) 4*N*IC*OC; each figure is the median of R calls after
 * one warm-up. A second table times W's roundings (kernels/bf16_weight.h): in the
 * layers, in AdamW's update and as a pass of their own (weight_passes, median of
 * --passes-reps calls, default 31; --only-passes prints only it and the others). A
 * third times the LayerNorm outputs' roundings (kernels/bf16_rows.h): in a pass of
 * their own, as the products make them, and written by the LayerNorm (input_passes);
 * a fourth the same for dlogits' rows, written by the cross-entropy backward for the
 * logits' din (dlogits_passes); a fifth the same for the residual gradient's rows,
 * written by the LayerNorm's and the dropout's backward for proj's and fcproj's din
 * (dres_passes); a sixth for the MLP's hidden rows, written by fc's forward (the
 * GELU's output) and fcproj's din product (dfch) as their tiles finish
 * (hidden_passes); a seventh for the residual gradient's columns, written by the
 * LayerNorm's and the dropout's backward for proj's and fcproj's dW (dres_col_passes);
 * an eighth for attention's rows, its output's for proj's forward and dqkv's for qkv's
 * backward, written by attention's forward and backward once every head has written
 * its slice (attention_passes); a ninth for dlogits' and dqkv's columns, written by the
 * cross-entropy's and attention's backward for the logits' and qkv's dW
 * (dout_col_passes); a tenth for the columns of the dW products' input, written in the
 * forward by the LayerNorm (for qkv's, fc's and the logits' dW) and by attention
 * (proj's) (in_col_passes). --pass-table K prints only the K-th of the nine tables
 * after the first (1 the second, W's roundings; 9 the tenth). It only reports: nothing
 * here asserts on a time. */
#define _POSIX_C_SOURCE 200809L

#include "bench/bench_bf16_path.h"
#include "bench/bench_clock.h"
#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/bf16_weight.h"
#include "kernels/matmul.h"
#include "model/attention.h"
#include "model/layers.h"
#include "trainer/adamw.h"

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

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
    return t[n / 2];
}

/* The weights' rounding passes at NANO's shapes, ms (median of reps): what a layer
 * spends rounding W on each call (its time on 6 rows minus the same call reading W's
 * copies, kernels/bf16_weight.h), forward and backward (din only); AdamW's update of W
 * alone, the same writing the copies (adamw_update_bf16), and the copies written by a
 * pass of their own. A training step calls each layer forward and backward once and
 * updates once, so the copies save (fwd W + bwd W) - (AdamW with copies - AdamW). */
static void weight_passes(int reps, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int IC, OC; } shapes[] = {
        {"NANO qkv", 384, 1152}, {"NANO proj", 384, 384}, {"NANO fc", 384, 1536},
        {"NANO fcproj", 1536, 384}, {"NANO logits", 384, 1536},
    };
    enum { ROWS = 6, CASES = 7 };
    printf("\nW's roundings (%s copies), ms, median of %d; a layer's on %d rows\n",
           bf16_copy_kind(path) == BF16_COPY_FLOATS ? "float" : "panel", reps, ROWS);
    printf("%-12s %11s | %7s %7s | %7s %7s %7s | %7s\n", "layer", "IC -> OC", "fwd W",
           "bwd W", "AdamW", "+copies", "copies", "saved");
    static ParamTable table;
    AdamW opt = {0.9f, 0.95f, 1e-8f, 0.1f};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int IC = shapes[s].IC, OC = shapes[s].OC;
        size_t nw = (size_t)OC * IC;
        float *in = filled((size_t)ROWS * IC, 2.0f, 1), *W = filled(nw, 0.1f, 2);
        float *out = filled((size_t)ROWS * OC, 0.01f, 4), *din = filled((size_t)ROWS * IC, 0, 5);
        float *g = filled(nw, 0.01f, 7), *m = filled(nw, 0.001f, 8), *v = filled(nw, 0, 9);
        table.n = 1, table.total = nw;
        table.spec[0] = (ParamSpec){.kind = P_QKVW, .rows = OC, .cols = IC, .count = nw,
                                    .decay = 1, .lr_scale = 1.0f};
        Bf16WeightSet set = {1, bf16_copy_kind(path), calloc(1, sizeof(Bf16Weight))};
        if (!set.w || bf16_weight_init(&set.w[0], W, OC, IC, set.kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        bf16_weight_write(&set.w[0]);
        const Bf16Weight *c = &set.w[0];
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c0 = clock_fn();
            bf16_forward(out, NULL, in, W, NULL, ROWS, IC, OC, path);
            double c1 = clock_fn();
            bf16_forward_with(out, NULL, in, NULL, W, c, NULL, ROWS, IC, OC, path);
            double c2 = clock_fn();
            bf16_backward(din, NULL, NULL, out, in, W, NULL, ROWS, IC, OC, path);
            double c3 = clock_fn();
            bf16_backward_with(din, NULL, NULL, out, NULL, in, W, c, NULL, ROWS, IC, OC, path);
            double c4 = clock_fn();
            adamw_update(W, g, m, v, &table, &opt, 1e-4f, 1);
            double c5 = clock_fn();
            adamw_update_bf16(W, g, m, v, &table, &opt, 1e-4f, 1, &set);
            double c6 = clock_fn();
            bf16_weight_write(&set.w[0]);
            double c7 = clock_fn();
            if (r < 0)
                continue;
            double d[CASES] = {c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4, c6 - c5, c7 - c6};
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = d[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double fw = med[0] - med[1], bw = med[2] - med[3], extra = med[5] - med[4];
        char dims[32];
        snprintf(dims, sizeof dims, "%d -> %d", IC, OC);
        printf("%-12s %11s | %7.3f %7.3f | %7.3f %7.3f %7.3f | %7.3f\n", shapes[s].name, dims,
               fw, bw, med[4], med[5], med[6], fw + bw - extra);
        fflush(stdout);
        bf16_weights_free(&set);
        free(in), free(W), free(out), free(din), free(g), free(m), free(v), free(t);
    }
}

/* The rounding of a LayerNorm's output for the product that reads it (bf16_rows.h), at
 * the bench_train configurations' shapes (N = B T rows of C), ms (median of reps, the
 * cases taking turns): "pass" rounds the rows in a pass of their own, as the product
 * does when it is handed no copy (the same per-row function); "LN" is
 * layernorm_forward, "LN+round" layernorm_forward_rounded writing the copy; "fused"
 * their difference; "saved" pass - fused, per call, and per training step (2 L + 1
 * calls: ln1, ln2 per layer and lnf). "fwd" and "fwd+rin" are the qkv product (C ->
 * 3C) rounding in itself and reading the copy (W read from its copies in both).
 * "4C pass": the same pass over fcproj's input (N x 4C, the GELU's output), which the
 * product still rounds itself, once per layer and step. */
static void input_passes(int reps, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int N, C, L; } shapes[] = {
        {"BABY", 768, 128, 4}, {"MID", 4096, 256, 4}, {"NANO", 4096, 384, 6},
    };
    enum { CASES = 6 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\nLayerNorm outputs' roundings (%s copies), ms, median of %d\n",
           kind == BF16_COPY_FLOATS ? "float" : "pair", reps);
    printf("%-6s %11s | %7s %7s %8s %7s | %7s %9s | %8s %8s | %8s\n", "config", "N x C",
           "pass", "LN", "LN+round", "fused", "saved", "saved/step", "fwd", "fwd+rin",
           "4C pass");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s].N, C = shapes[s].C, OC = 3 * C;
        size_t nc = (size_t)N * C;
        float *x = filled(nc, 2.0f, 1), *out = filled(nc, 0, 2), *w = filled((size_t)C, 1.0f, 3);
        float *b = filled((size_t)C, 0.1f, 4), *mean = filled((size_t)N, 0, 5);
        float *rstd = filled((size_t)N, 0, 6), *W = filled((size_t)OC * C, 0.1f, 7);
        float *y = filled((size_t)N * OC, 0, 8), *h = filled(nc * 4, 2.0f, 9);
        Bf16Rows rows, hrows;
        Bf16Weight wc;
        if (bf16_rows_init(&rows, N, C, kind) || bf16_rows_init(&hrows, N, 4 * C, kind) ||
            bf16_weight_init(&wc, W, OC, C, kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        bf16_weight_write(&wc);
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c0 = clock_fn();
            bf16_rows_start(&rows, x, N, C);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&rows, n, x + (size_t)n * C);
            double c1 = clock_fn();
            layernorm_forward(out, mean, rstd, x, w, b, N, C);
            double c2 = clock_fn();
            layernorm_forward_rounded(out, mean, rstd, x, w, b, N, C, &rows, NULL);
            double c3 = clock_fn();
            bf16_forward_with(y, NULL, out, NULL, W, &wc, NULL, N, C, OC, path);
            double c4 = clock_fn();
            bf16_forward_with(y, NULL, out, &rows, W, &wc, NULL, N, C, OC, path);
            double c5 = clock_fn();
            bf16_rows_start(&hrows, h, N, 4 * C);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&hrows, n, h + (size_t)n * 4 * C);
            double c6 = clock_fn();
            if (r < 0)
                continue;
            double d[CASES] = {c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4, c6 - c5};
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = d[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double fused = med[2] - med[1], saved = med[0] - fused;
        char dims[32];
        snprintf(dims, sizeof dims, "%d x %d", N, C);
        printf("%-6s %11s | %7.3f %7.3f %8.3f %7.3f | %7.3f %9.3f | %8.2f %8.2f | %8.3f\n",
               shapes[s].name, dims, med[0], med[1], med[2], fused, saved,
               saved * (2 * shapes[s].L + 1), med[3], med[4], med[5]);
        fflush(stdout);
        bf16_rows_free(&rows);
        bf16_rows_free(&hrows);
        bf16_weight_free(&wc);
        free(x), free(out), free(w), free(b), free(mean), free(rstd), free(W), free(y), free(h);
        free(t);
    }
}

/* The rounding of dlogits' rows for the logits layer's din (bf16_backward_with's
 * rdout), N x V at the bench_train configurations' N and vocabulary V, ms (median of
 * reps, the cases taking turns): "pass" rounds the rows in a pass of their own, as the
 * backward does when it is handed no copy (the same per-row function); "CE" is
 * crossentropy_backward, "CE+round" crossentropy_backward_rounded writing the copy;
 * "fused" their difference; "saved" pass - fused, per call and so per training step
 * (one call). "din" and "din+rdout" are the logits' din product (V -> C, W read from its
 * copies) rounding dout itself and reading the copy. */
static void dlogits_passes(int reps, int V, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int N, C; } shapes[] = {
        {"BABY", 768, 128}, {"MID", 4096, 256}, {"NANO", 4096, 384},
    };
    enum { CASES = 5 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\ndlogits' row roundings (%s copies), V = %d, ms, median of %d\n",
           kind == BF16_COPY_FLOATS ? "float" : "pair", V, reps);
    printf("%-6s %11s | %7s %7s %8s %7s | %7s | %8s %9s\n", "config", "N x V", "pass", "CE",
           "CE+round", "fused", "saved", "din", "din+rdout");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s].N, C = shapes[s].C;
        size_t nv = (size_t)N * V;
        float *probs = filled(nv, 1.0f / (float)V, 1), *d = filled(nv, 0, 2);
        float *W = filled((size_t)V * C, 0.1f, 3), *din = filled((size_t)N * C, 0, 4);
        int *targets = malloc((size_t)N * sizeof(int));
        Bf16Rows rows;
        Bf16Weight wc;
        if (!targets || bf16_rows_init(&rows, N, V, kind) || bf16_weight_init(&wc, W, V, C, kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        for (int n = 0; n < N; n++)
            targets[n] = (int)((unsigned)n * 2654435761u % (unsigned)V);
        bf16_weight_write(&wc);
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c0 = clock_fn();
            bf16_rows_start(&rows, d, N, V);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&rows, n, d + (size_t)n * V);
            double c1 = clock_fn();
            crossentropy_backward(d, probs, targets, N, V, 1.0f / (float)N);
            double c2 = clock_fn();
            crossentropy_backward_rounded(d, probs, targets, N, V, 1.0f / (float)N, &rows);
            double c3 = clock_fn();
            bf16_backward_with(din, NULL, NULL, d, NULL, NULL, W, &wc, NULL, N, C, V, path);
            double c4 = clock_fn();
            bf16_backward_with(din, NULL, NULL, d, &rows, NULL, W, &wc, NULL, N, C, V, path);
            double c5 = clock_fn();
            if (r < 0)
                continue;
            double dt[CASES] = {c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4};
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = dt[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double fused = med[2] - med[1];
        char dims[32];
        snprintf(dims, sizeof dims, "%d x %d", N, V);
        printf("%-6s %11s | %7.3f %7.3f %8.3f %7.3f | %7.3f | %8.2f %9.2f\n", shapes[s].name,
               dims, med[0], med[1], med[2], fused, med[0] - fused, med[3], med[4]);
        fflush(stdout);
        bf16_rows_free(&rows);
        bf16_weight_free(&wc);
        free(probs), free(d), free(W), free(din), free(targets), free(t);
    }
}

/* The rounding of the residual gradient's rows for proj's and fcproj's din
 * (bf16_backward_with's rdout), N x C at the bench_train configurations' shapes, ms
 * (median of reps, the cases taking turns): "pass" rounds dres' rows in a pass of their
 * own, as the backward does when it is handed no copy (the same per-row function);
 * "LNb" is layernorm_backward, "LNb+round" layernorm_backward_rounded writing the copy
 * of dres (the rows read without dropout); "drop" dropout_backward (p = 0.1) and
 * "drop+round" dropout_backward_rounded writing dbranch's (with dropout); "fused" each
 * pair's difference, "saved" pass - fused per call, and per training step (2 L calls:
 * proj's and fcproj's backward in every layer). "din" and "din+rdout" are proj's din
 * product (C -> C, W read from its copies) rounding dres itself and reading the copy. */
static void dres_passes(int reps, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int N, C, L; } shapes[] = {
        {"BABY", 768, 128, 4}, {"MID", 4096, 256, 4}, {"NANO", 4096, 384, 6},
    };
    enum { CASES = 7 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\nResidual gradient's row roundings (%s copies), ms, median of %d\n",
           kind == BF16_COPY_FLOATS ? "float" : "pair", reps);
    printf("%-6s %11s | %7s | %7s %9s %7s %7s %9s | %7s %10s %7s %7s %9s | %8s %9s\n",
           "config", "N x C", "pass", "LNb", "LNb+round", "fused", "saved", "saved/step",
           "drop", "drop+round", "fused", "saved", "saved/step", "din", "din+rdout");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s].N, C = shapes[s].C, L2 = 2 * shapes[s].L;
        size_t nc = (size_t)N * C;
        float *x = filled(nc, 2.0f, 1), *dln = filled(nc, 0.01f, 2);
        float *w = filled((size_t)C, 1.0f, 3);
        float *dres = filled(nc, 0.01f, 4), *dbranch = filled(nc, 0, 5);
        float *dw = filled((size_t)C, 0, 6), *db = filled((size_t)C, 0, 7);
        float *mean = filled((size_t)N, 0, 8), *rstd = filled((size_t)N, 0, 9);
        float *ln = filled(nc, 0, 10), *W = filled((size_t)C * C, 0.1f, 11);
        float *din = filled(nc, 0, 12);
        Bf16Rows rows;
        Bf16Weight wc;
        if (bf16_rows_init(&rows, N, C, kind) || bf16_weight_init(&wc, W, C, C, kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        bf16_weight_write(&wc);
        layernorm_forward(ln, mean, rstd, x, w, w, N, C);      /* the stored mean, rstd */
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c0 = clock_fn();
            bf16_rows_start(&rows, dres, N, C);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&rows, n, dres + (size_t)n * C);
            double c1 = clock_fn();
            layernorm_backward(dres, dw, db, dln, x, w, mean, rstd, N, C);
            double c2 = clock_fn();
            dropout_backward(dbranch, dres, nc, 0.1f, 7);
            double c3 = clock_fn();
            dropout_backward_rounded(dbranch, dres, N, C, 0.1f, 7, &rows);
            double c4 = clock_fn();
            layernorm_backward_rounded(dres, dw, db, dln, x, w, mean, rstd, N, C, &rows);
            double c5 = clock_fn();
            bf16_backward_with(din, NULL, NULL, dres, NULL, NULL, W, &wc, NULL, N, C, C, path);
            double c6 = clock_fn();
            bf16_backward_with(din, NULL, NULL, dres, &rows, NULL, W, &wc, NULL, N, C, C, path);
            double c7 = clock_fn();
            if (r < 0)
                continue;
            /* in the printed order: pass, LNb, LNb+round, drop, drop+round, din, din+rdout */
            double dt[CASES] = {c1 - c0, c2 - c1, c5 - c4, c3 - c2, c4 - c3, c6 - c5, c7 - c6};
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = dt[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double fl = med[2] - med[1], fd = med[4] - med[3];
        char dims[32];
        snprintf(dims, sizeof dims, "%d x %d", N, C);
        printf("%-6s %11s | %7.3f | %7.3f %9.3f %7.3f %7.3f %9.3f | %7.3f %10.3f %7.3f %7.3f "
               "%9.3f | %8.2f %9.2f\n", shapes[s].name, dims, med[0], med[1], med[2], fl,
               med[0] - fl, (med[0] - fl) * L2, med[3], med[4], fd, med[0] - fd,
               (med[0] - fd) * L2, med[5], med[6]);
        fflush(stdout);
        bf16_rows_free(&rows);
        bf16_weight_free(&wc);
        free(x), free(dln), free(w), free(dres), free(dbranch), free(dw), free(db), free(mean);
        free(rstd), free(ln), free(W), free(din), free(t);
    }
}

/* The residual gradient's columns, rounded by its producers for proj's and fcproj's dW
 * (kernels/bf16_rows.h), at the bench_train configurations' shapes, ms (median of reps,
 * the cases taking turns). "LNb+rows" is layernorm_backward_rounded writing dres' rows
 * (what the trainer ran before), "+cols" the same writing its columns too, "fused"
 * their difference; "drop+rows", "+cols", "fused" the same for
 * dropout_backward_rounded (p = 0.1); "dW" is proj's dW product (C -> C, dout =
 * dbranch) rounding dout's columns itself, "dW+cols" the same reading the producer's
 * columns, "pass" their difference (the column pass as the product makes it); "saved"
 * pass - fused per call, and per step (2L calls). */
static void dres_col_passes(int reps, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int N, C, L; } shapes[] = {
        {"BABY", 768, 128, 4}, {"MID", 4096, 256, 4}, {"NANO", 4096, 384, 6},
    };
    enum { CASES = 6 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\nResidual gradient's column roundings (%s copies), ms, median of %d\n",
           kind == BF16_COPY_FLOATS ? "float" : "pair", reps);
    printf("%-6s %11s | %8s %7s %7s | %9s %7s %7s | %7s %7s %7s | %7s %9s | %7s %9s\n",
           "config", "N x C", "LNb+rows", "+cols", "fused", "drop+rows", "+cols", "fused",
           "dW", "dW+cols", "pass", "LN save", "per step", "dr save", "per step");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s].N, C = shapes[s].C, L2 = 2 * shapes[s].L;
        size_t nc = (size_t)N * C;
        float *x = filled(nc, 2.0f, 1), *dln = filled(nc, 0.01f, 2);
        float *w = filled((size_t)C, 1.0f, 3);
        float *dres = filled(nc, 0.01f, 4), *dbranch = filled(nc, 0, 5);
        float *dw = filled((size_t)C, 0, 6), *db = filled((size_t)C, 0, 7);
        float *mean = filled((size_t)N, 0, 8), *rstd = filled((size_t)N, 0, 9);
        float *ln = filled(nc, 0, 10), *W = filled((size_t)C * C, 0.1f, 11);
        float *in = filled(nc, 1.0f, 12), *dW = filled((size_t)C * C, 0, 13);
        Bf16Rows rows, rc;
        Bf16Weight wc;
        if (bf16_rows_init(&rows, N, C, kind) || bf16_rows_init(&rc, N, C, kind) ||
            bf16_rows_init_cols(&rc, N, C) || bf16_weight_init(&wc, W, C, C, kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        bf16_weight_write(&wc);
        layernorm_forward(ln, mean, rstd, x, w, w, N, C);      /* the stored mean, rstd */
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c0 = clock_fn();
            layernorm_backward_rounded(dres, dw, db, dln, x, w, mean, rstd, N, C, &rows);
            double c1 = clock_fn();
            layernorm_backward_rounded(dres, dw, db, dln, x, w, mean, rstd, N, C, &rc);
            double c2 = clock_fn();
            memset(dbranch, 0, nc * sizeof(float));
            double c3 = clock_fn();
            dropout_backward_rounded(dbranch, dres, N, C, 0.1f, 7, &rows);
            double c4 = clock_fn();
            memset(dbranch, 0, nc * sizeof(float));
            double c5 = clock_fn();
            dropout_backward_rounded(dbranch, dres, N, C, 0.1f, 7, &rc);
            double c6 = clock_fn();
            bf16_backward_with(NULL, dW, NULL, dbranch, NULL, in, W, &wc, NULL, N, C, C, path);
            double c7 = clock_fn();
            bf16_backward_with(NULL, dW, NULL, dbranch, &rc, in, W, &wc, NULL, N, C, C, path);
            double c8 = clock_fn();
            if (r < 0)
                continue;
            double dt[CASES] = {c1 - c0, c2 - c1, c4 - c3, c6 - c5, c7 - c6, c8 - c7};
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = dt[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double fl = med[1] - med[0], fd = med[3] - med[2], pass = med[4] - med[5];
        char dims[32];
        snprintf(dims, sizeof dims, "%d x %d", N, C);
        printf("%-6s %11s | %8.3f %7.3f %7.3f | %9.3f %7.3f %7.3f | %7.2f %7.2f %7.3f | %7.3f "
               "%9.2f | %7.3f %9.2f\n", shapes[s].name, dims, med[0], med[1], fl, med[2],
               med[3], fd, med[4], med[5], pass, pass - fl, (pass - fl) * L2, pass - fd,
               (pass - fd) * L2);
        fflush(stdout);
        bf16_rows_free(&rows);
        bf16_rows_free(&rc);
        bf16_weight_free(&wc);
        free(x), free(dln), free(w), free(dres), free(dbranch), free(dw), free(db), free(mean);
        free(rstd), free(ln), free(W), free(in), free(dW), free(t);
    }
}

/* The rounding of `in`'s columns for the dW products, written in the forward by its
 * producer into a copy kept for the backward (kernels/bf16_rows.h's
 * bf16_rows_init_in_cols), at the bench_train configurations' shapes, ms (median of
 * reps, the cases taking turns). "LN+rows" is layernorm_forward_rounded writing its
 * output's rows (what the trainer ran before), "+cols" the same writing its columns
 * too, "fused" their difference; "dW" is qkv's dW product (C -> 3C, W from its copies)
 * rounding in's columns itself, "dW+cols" the same reading the LayerNorm's, "pass"
 * their difference (the column pass as the product makes it); "saved" pass - fused per
 * call, and per step (2L + 1 calls: qkv's and fc's dW in every layer, the logits').
 * Then the same for attention's output (H = 4, A = C): "attn+rows"
 * attention_forward_rounded writing its rows, "+cols" its columns too; "proj dW"
 * proj's dW product (A -> C), "+cols" reading attention's; per step L calls. */
static void in_col_passes(int reps, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int B, T, C, L; } shapes[] = {
        {"BABY", 12, 64, 128, 4}, {"MID", 16, 256, 256, 4}, {"NANO", 16, 256, 384, 6},
    };
    enum { CASES = 8, H = 4 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\nThe dW inputs' column roundings (%s copies), ms, median of %d\n",
           kind == BF16_COPY_FLOATS ? "float" : "pair", reps);
    printf("%-6s %11s | %7s %6s %6s | %6s %7s %6s | %6s %8s | %9s %6s %6s | %7s %6s %6s | "
           "%6s %8s\n", "config", "N x C", "LN+rows", "+cols", "fused", "dW", "dW+cols",
           "pass", "saved", "per step", "attn+rows", "+cols", "fused", "proj dW", "+cols",
           "pass", "saved", "per step");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s].B, T = shapes[s].T, C = shapes[s].C, D = C / H, A = H * D;
        int N = B * T, OC = 3 * C, L = shapes[s].L;
        size_t nc = (size_t)N * C, na = (size_t)N * A, tt = (size_t)B * H * T * T;
        float *x = filled(nc, 2.0f, 1), *w = filled((size_t)C, 1.0f, 2);
        float *b = filled((size_t)C, 0.1f, 3), *ln = filled(nc, 0, 4);
        float *mean = filled((size_t)N, 0, 5), *rstd = filled((size_t)N, 0, 6);
        float *W = filled((size_t)OC * C, 0.1f, 7), *dout = filled((size_t)N * OC, 0.01f, 8);
        float *dW = filled((size_t)OC * C, 0, 9), *qkv = filled(3 * na, 2.0f, 10);
        float *att = filled(tt, 0, 11), *y = filled(na, 0, 12);
        float *Wp = filled((size_t)C * A, 0.1f, 13), *dWp = filled((size_t)C * A, 0, 14);
        Bf16Rows rows, rc, rca;
        Bf16Weight wc, wp;
        if (bf16_rows_init(&rows, N, C > A ? C : A, kind) ||
            bf16_rows_init_in_cols(&rc, N, C, kind) || bf16_rows_init_in_cols(&rca, N, A, kind) ||
            bf16_weight_init(&wc, W, OC, C, kind) || bf16_weight_init(&wp, Wp, C, A, kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        bf16_weight_write(&wc);
        bf16_weight_write(&wp);
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c[CASES + 1];
            c[0] = clock_fn();
            layernorm_forward_rounded(ln, mean, rstd, x, w, b, N, C, &rows, NULL);
            c[1] = clock_fn();
            layernorm_forward_rounded(ln, mean, rstd, x, w, b, N, C, &rows, &rc);
            c[2] = clock_fn();
            bf16_backward_rounding(NULL, NULL, dW, NULL, dout, NULL, ln, NULL, W, &wc, NULL, N,
                                   C, OC, path);
            c[3] = clock_fn();
            bf16_backward_rounding(NULL, NULL, dW, NULL, dout, NULL, ln, &rc, W, &wc, NULL, N,
                                   C, OC, path);
            c[4] = clock_fn();
            attention_forward_rounded(y, att, NULL, qkv, B, T, H, D, 0.0f, 1, &rows, NULL);
            c[5] = clock_fn();
            attention_forward_rounded(y, att, NULL, qkv, B, T, H, D, 0.0f, 1, &rows, &rca);
            c[6] = clock_fn();
            bf16_backward_rounding(NULL, NULL, dWp, NULL, x, NULL, y, NULL, Wp, &wp, NULL, N,
                                   A, C, path);
            c[7] = clock_fn();
            bf16_backward_rounding(NULL, NULL, dWp, NULL, x, NULL, y, &rca, Wp, &wp, NULL, N,
                                   A, C, path);
            c[8] = clock_fn();
            if (r < 0)
                continue;
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = c[k + 1] - c[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double fused = med[1] - med[0], pass = med[2] - med[3];
        double afused = med[5] - med[4], apass = med[6] - med[7];
        char dims[32];
        snprintf(dims, sizeof dims, "%d x %d", N, C);
        printf("%-6s %11s | %7.3f %6.3f %6.3f | %6.2f %7.2f %6.3f | %6.3f %8.2f | %9.3f %6.3f "
               "%6.3f | %7.2f %6.2f %6.3f | %6.3f %8.2f\n", shapes[s].name, dims, med[0],
               med[1], fused, med[2], med[3], pass, pass - fused, (pass - fused) * (2 * L + 1),
               med[4], med[5], afused, med[6], med[7], apass, apass - afused,
               (apass - afused) * L);
        fflush(stdout);
        bf16_rows_free(&rows), bf16_rows_free(&rc), bf16_rows_free(&rca);
        bf16_weight_free(&wc), bf16_weight_free(&wp);
        free(x), free(w), free(b), free(ln), free(mean), free(rstd), free(W), free(dout);
        free(dW), free(qkv), free(att), free(y), free(Wp), free(dWp), free(t);
    }
}

/* The rounding of the MLP's hidden rows (N x 4C) by the products that write them
 * (bf16_forward_rounding, bf16_backward_rounding: the step-by-step and the
 * instruction's tiles as they finish, the emulation on the float32 kernels in a pass
 * after the product), at the bench_train configurations' shapes, ms (median of reps, the cases taking turns): "pass" rounds the rows in a pass
 * of their own, as fcproj's forward (the GELU's output) and fc's backward (dfch) do
 * when handed no copy (the same per-row function); "fc" is fc's forward with its GELU
 * (C -> 4C, W from its copies), "fc+round" the same writing the copy, "fused" their
 * difference, "saved" pass - fused; "din" is fcproj's din product with the GELU's
 * derivative (4C -> C, dfch = dgelu (dout W)), "din+round" the same writing the copy,
 * and its "fused" and "saved" likewise. "saved/step": both saved, L times (one of each
 * per layer and step). "fcproj", "+rin": fcproj's forward rounding its input / reading
 * the copy. */
static void hidden_passes(int reps, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int N, C, L; } shapes[] = {
        {"BABY", 768, 128, 4}, {"MID", 4096, 256, 4}, {"NANO", 4096, 384, 6},
    };
    enum { CASES = 7 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\nThe MLP's hidden rows' roundings (%s copies), ms, median of %d\n",
           kind == BF16_COPY_FLOATS ? "float" : "pair", reps);
    printf("%-6s %12s | %7s | %7s %8s %7s %7s | %7s %9s %7s %7s | %10s | %7s %7s\n", "config",
           "N x 4C", "pass", "fc", "fc+round", "fused", "saved", "din", "din+round", "fused",
           "saved", "saved/step", "fcproj", "+rin");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s].N, C = shapes[s].C, H4 = 4 * C;
        size_t nc = (size_t)N * C, nh = (size_t)N * H4;
        float *x = filled(nc, 2.0f, 1), *Wfc = filled((size_t)H4 * C, 0.1f, 2);
        float *bfc = filled((size_t)H4, 0.1f, 3), *Wp = filled((size_t)C * H4, 0.05f, 4);
        float *h = filled(nh, 0, 5), *dg = filled(nh, 0, 6), *dout = filled(nc, 0.01f, 7);
        float *dh = filled(nh, 0, 8), *y = filled(nc, 0, 9);
        Bf16Rows rows;
        Bf16Weight wfc, wp;
        if (bf16_rows_init(&rows, N, H4, kind) || bf16_weight_init(&wfc, Wfc, H4, C, kind) ||
            bf16_weight_init(&wp, Wp, C, H4, kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        bf16_weight_write(&wfc);
        bf16_weight_write(&wp);
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c0 = clock_fn();
            bf16_rows_start(&rows, h, N, H4);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&rows, n, h + (size_t)n * H4);
            double c1 = clock_fn();
            bf16_forward_with(h, dg, x, NULL, Wfc, &wfc, bfc, N, C, H4, path);
            double c2 = clock_fn();
            bf16_forward_rounding(h, dg, &rows, x, NULL, Wfc, &wfc, bfc, N, C, H4, path);
            double c3 = clock_fn();
            bf16_forward_with(y, NULL, h, NULL, Wp, &wp, NULL, N, H4, C, path);
            double c4 = clock_fn();
            bf16_forward_with(y, NULL, h, &rows, Wp, &wp, NULL, N, H4, C, path);
            double c5 = clock_fn();
            bf16_backward_with(dh, NULL, NULL, dout, NULL, NULL, Wp, &wp, dg, N, H4, C, path);
            double c6 = clock_fn();
            bf16_backward_rounding(dh, &rows, NULL, NULL, dout, NULL, NULL, NULL, Wp, &wp, dg,
                                   N, H4, C, path);
            double c7 = clock_fn();
            if (r < 0)
                continue;
            double d[CASES] = {c1 - c0, c2 - c1, c3 - c2, c6 - c5, c7 - c6, c4 - c3, c5 - c4};
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = d[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double ff = med[2] - med[1], fd = med[4] - med[3];
        char dims[32];
        snprintf(dims, sizeof dims, "%d x %d", N, H4);
        printf("%-6s %12s | %7.3f | %7.2f %8.2f %7.3f %7.3f | %7.2f %9.2f %7.3f %7.3f | %10.2f | "
               "%7.2f %7.2f\n", shapes[s].name, dims, med[0], med[1], med[2], ff, med[0] - ff,
               med[3], med[4], fd, med[0] - fd, shapes[s].L * (2 * med[0] - ff - fd), med[5],
               med[6]);
        fflush(stdout);
        bf16_rows_free(&rows);
        bf16_weight_free(&wfc);
        bf16_weight_free(&wp);
        free(x), free(Wfc), free(bfc), free(Wp), free(h), free(dg), free(dout), free(dh);
        free(y), free(t);
    }
}

/* Attention's rows (model/attention.h), at the bench_train configurations' shapes with
 * H = 4, ms (median of reps, the cases taking turns): "pass" rounds attention's output
 * (N x A) along its rows in a pass of its own, as proj's forward does when handed no
 * copy (the same per-row function); "attn" is attention_forward (no dropout), "+round"
 * attention_forward_rounded writing the copy, "fused" their difference, "saved" pass -
 * fused; "3A pass", "attb", "+round", "fused", "saved" the same for dqkv (N x 3A), read
 * by qkv's backward, and attention_backward. "saved/step": both saved, L times.
 * "proj", "+rin": proj's forward (A -> C, W from its copies) rounding its input /
 * reading the copy; "qkv din", "+rdout": qkv's din product (3A -> C) likewise. */
static void attention_passes(int reps, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int B, T, C, L; } shapes[] = {
        {"BABY", 12, 64, 128, 4}, {"MID", 16, 256, 256, 4}, {"NANO", 16, 256, 384, 6},
    };
    enum { CASES = 10, H = 4 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\nAttention's rows' roundings (%s copies, H = %d), ms, median of %d\n",
           kind == BF16_COPY_FLOATS ? "float" : "pair", H, reps);
    printf("%-6s %11s | %6s | %7s %7s %6s %6s | %7s | %7s %7s %6s %6s | %10s | %6s %6s | "
           "%7s %7s\n", "config", "N x A", "pass", "attn", "+round", "fused", "saved",
           "3A pass", "attb", "+round", "fused", "saved", "saved/step", "proj", "+rin",
           "qkv din", "+rdout");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s].B, T = shapes[s].T, C = shapes[s].C, D = C / H, A = H * D;
        int N = B * T;
        size_t na = (size_t)N * A, nq = 3 * na, tt = (size_t)B * H * T * T;
        float *qkv = filled(nq, 2.0f, 1), *att = filled(tt, 0, 2), *y = filled(na, 0, 3);
        float *dy = filled(na, 0.01f, 4), *dqkv = filled(nq, 0, 5), *datt = filled(tt, 0, 6);
        float *Wp = filled((size_t)C * A, 0.1f, 7), *Wq = filled((size_t)3 * A * C, 0.1f, 8);
        float *out = filled((size_t)N * C, 0, 9), *din = filled((size_t)N * C, 0, 10);
        Bf16Rows rows;
        Bf16Weight wp, wq;
        if (bf16_rows_init(&rows, N, 3 * A, kind) || bf16_weight_init(&wp, Wp, C, A, kind) ||
            bf16_weight_init(&wq, Wq, 3 * A, C, kind)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        bf16_weight_write(&wp);
        bf16_weight_write(&wq);
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c[CASES + 1];
            c[0] = clock_fn();
            bf16_rows_start(&rows, y, N, A);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&rows, n, y + (size_t)n * A);
            c[1] = clock_fn();
            attention_forward(y, att, NULL, qkv, B, T, H, D, 0.0f, 1);
            c[2] = clock_fn();
            attention_forward_rounded(y, att, NULL, qkv, B, T, H, D, 0.0f, 1, &rows, NULL);
            c[3] = clock_fn();
            bf16_forward_with(out, NULL, y, NULL, Wp, &wp, NULL, N, A, C, path);
            c[4] = clock_fn();
            bf16_forward_with(out, NULL, y, &rows, Wp, &wp, NULL, N, A, C, path);
            c[5] = clock_fn();
            bf16_rows_start(&rows, dqkv, N, 3 * A);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&rows, n, dqkv + (size_t)n * 3 * A);
            c[6] = clock_fn();
            attention_backward(dqkv, datt, dy, qkv, att, NULL, B, T, H, D, 0.0f);
            c[7] = clock_fn();
            attention_backward_rounded(dqkv, datt, dy, qkv, att, NULL, B, T, H, D, 0.0f, &rows);
            c[8] = clock_fn();
            bf16_backward_with(din, NULL, NULL, dqkv, NULL, NULL, Wq, &wq, NULL, N, C, 3 * A,
                               path);
            c[9] = clock_fn();
            bf16_backward_with(din, NULL, NULL, dqkv, &rows, NULL, Wq, &wq, NULL, N, C, 3 * A,
                               path);
            c[10] = clock_fn();
            if (r < 0)
                continue;
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = c[k + 1] - c[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double ff = med[2] - med[1], fb = med[7] - med[6];
        char dims[32];
        snprintf(dims, sizeof dims, "%d x %d", N, A);
        printf("%-6s %11s | %6.3f | %7.2f %7.2f %6.3f %6.3f | %7.3f | %7.2f %7.2f %6.3f %6.3f | "
               "%10.2f | %6.2f %6.2f | %7.2f %7.2f\n", shapes[s].name, dims, med[0], med[1],
               med[2], ff, med[0] - ff, med[5], med[6], med[7], fb, med[5] - fb,
               shapes[s].L * (med[0] - ff + med[5] - fb), med[3], med[4], med[8], med[9]);
        fflush(stdout);
        bf16_rows_free(&rows);
        bf16_weight_free(&wp);
        bf16_weight_free(&wq);
        free(qkv), free(att), free(y), free(dy), free(dqkv), free(datt), free(Wp), free(Wq);
        free(out), free(din), free(t);
    }
}

/* The rounding of dlogits' and dqkv's columns for the logits' and qkv's dW
 * (bf16_backward_with's rdout), at the bench_train configurations' shapes (H = 4, so A
 * = C; the vocabulary V), ms (median of reps, the cases taking turns): "CE+rows" is
 * crossentropy_backward_rounded writing dlogits' rows (what a step ran before), "+cols"
 * the same writing its columns too, "fused" their difference; "dW" the logits' dW
 * product (C -> V, in = lnf) rounding dlogits' columns itself, "dW+cols" the same
 * reading the producer's, "pass" their difference (the column pass as the product makes
 * it), "saved" pass - fused (one call a step). "attb+rows", "+cols", "fused", "dW",
 * "dW+cols", "pass", "saved" the same for attention_backward_rounded and qkv's dW (C ->
 * 3A, dout = dqkv), L calls a step. */
static void dout_col_passes(int reps, int V, Bf16Path path, double (*clock_fn)(void))
{
    static const struct { const char *name; int B, T, C, L; } shapes[] = {
        {"BABY", 12, 64, 128, 4}, {"MID", 16, 256, 256, 4}, {"NANO", 16, 256, 384, 6},
    };
    enum { CASES = 8, H = 4 };
    Bf16CopyKind kind = bf16_copy_kind(path);
    printf("\ndlogits' and dqkv's column roundings (%s copies, V = %d, H = %d), ms, median "
           "of %d\n", kind == BF16_COPY_FLOATS ? "float" : "pair", V, H, reps);
    printf("%-6s %5s | %7s %7s %6s | %7s %7s %6s %6s | %9s %7s %6s | %7s %7s %6s %6s %9s\n",
           "config", "N", "CE+rows", "+cols", "fused", "dW", "dW+cols", "pass", "saved",
           "attb+rows", "+cols", "fused", "dW", "dW+cols", "pass", "saved", "saved/step");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s].B, T = shapes[s].T, C = shapes[s].C, D = C / H, A = H * D;
        int N = B * T, K = V > 3 * A ? V : 3 * A;
        size_t nv = (size_t)N * V, nq = (size_t)N * 3 * A, tt = (size_t)B * H * T * T;
        float *probs = filled(nv, 1.0f / (float)V, 1), *dl = filled(nv, 0, 2);
        float *ln = filled((size_t)N * C, 1.0f, 3), *Wl = filled((size_t)V * C, 0.1f, 4);
        float *dWl = filled((size_t)V * C, 0, 5), *qkv = filled(nq, 2.0f, 6);
        float *att = filled(tt, 0, 7), *dy = filled((size_t)N * A, 0.01f, 8);
        float *dqkv = filled(nq, 0, 9), *datt = filled(tt, 0, 10);
        float *Wq = filled((size_t)3 * A * C, 0.1f, 11), *dWq = filled((size_t)3 * A * C, 0, 12);
        int *targets = malloc((size_t)N * sizeof(int));
        Bf16Rows rows, rc;
        if (!targets || bf16_rows_init(&rows, N, K, kind) || bf16_rows_init(&rc, N, K, kind) ||
            bf16_rows_init_cols(&rc, N, K)) {
            fputs("bench_bf16: out of memory\n", stderr);
            exit(1);
        }
        for (int n = 0; n < N; n++)
            targets[n] = (int)((unsigned)n * 2654435761u % (unsigned)V);
        attention_forward(dqkv, att, NULL, qkv, B, T, H, D, 0.0f, 1);  /* att's weights */
        double *t = malloc((size_t)CASES * reps * sizeof(double));
        for (int r = -1; r < reps; r++) {
            double c[CASES + 1];
            c[0] = clock_fn();
            crossentropy_backward_rounded(dl, probs, targets, N, V, 1.0f / (float)N, &rows);
            c[1] = clock_fn();
            crossentropy_backward_rounded(dl, probs, targets, N, V, 1.0f / (float)N, &rc);
            c[2] = clock_fn();
            bf16_backward_with(NULL, dWl, NULL, dl, NULL, ln, Wl, NULL, NULL, N, C, V, path);
            c[3] = clock_fn();
            bf16_backward_with(NULL, dWl, NULL, dl, &rc, ln, Wl, NULL, NULL, N, C, V, path);
            c[4] = clock_fn();
            attention_backward_rounded(dqkv, datt, dy, qkv, att, NULL, B, T, H, D, 0.0f, &rows);
            c[5] = clock_fn();
            attention_backward_rounded(dqkv, datt, dy, qkv, att, NULL, B, T, H, D, 0.0f, &rc);
            c[6] = clock_fn();
            bf16_backward_with(NULL, dWq, NULL, dqkv, NULL, ln, Wq, NULL, NULL, N, C, 3 * A,
                               path);
            c[7] = clock_fn();
            bf16_backward_with(NULL, dWq, NULL, dqkv, &rc, ln, Wq, NULL, NULL, N, C, 3 * A,
                               path);
            c[8] = clock_fn();
            if (r < 0)
                continue;
            for (int k = 0; k < CASES; k++)
                t[(size_t)k * reps + r] = c[k + 1] - c[k];
        }
        double med[CASES];
        for (int k = 0; k < CASES; k++)
            med[k] = 1e3 * median(t + (size_t)k * reps, reps);
        double fl = med[1] - med[0], pl = med[2] - med[3];
        double fq = med[5] - med[4], pq = med[6] - med[7];
        printf("%-6s %5d | %7.3f %7.3f %6.3f | %7.2f %7.2f %6.3f %6.3f | %9.2f %7.2f %6.3f | "
               "%7.2f %7.2f %6.3f %6.3f %9.2f\n", shapes[s].name, N, med[0], med[1], fl,
               med[2], med[3], pl, pl - fl, med[4], med[5], fq, med[6], med[7], pq, pq - fq,
               pl - fl + shapes[s].L * (pq - fq));
        fflush(stdout);
        bf16_rows_free(&rows);
        bf16_rows_free(&rc);
        free(probs), free(dl), free(ln), free(Wl), free(dWl), free(qkv), free(att), free(dy);
        free(dqkv), free(datt), free(Wq), free(dWq), free(targets), free(t);
    }
}

int main(int argc, char **argv)
{
    int N = 4096, reps = 7, threads = 1, passes_reps = 31, only_passes = 0, vocab = 1536;
    int table = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            N = (int)arg_long("--rows", argv[++i], 1, 1 << 16);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = (int)arg_long("--reps", argv[++i], 1, 1000);
        else if (!strcmp(argv[i], "--passes-reps") && i + 1 < argc)
            passes_reps = (int)arg_long("--passes-reps", argv[++i], 1, 10000);
        else if (!strcmp(argv[i], "--only-passes"))
            only_passes = 1;
        else if (!strcmp(argv[i], "--pass-table") && i + 1 < argc)
            table = (int)arg_long("--pass-table", argv[++i], 1, 9);
        else if (!strcmp(argv[i], "--vocab") && i + 1 < argc)
            vocab = (int)arg_long("--vocab", argv[++i], 2, 1 << 16);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = (int)arg_long("--threads", argv[++i], 1, 1024);
        else if (!strcmp(argv[i], "--say")) {
            bench_bf16_say(stdout);
            return 0;
        } else {
            fprintf(stderr, "usage: bench_bf16 [--rows N] [--reps R] [--threads T] "
                            "[--passes-reps R] [--only-passes] [--pass-table K] [--vocab V] "
                            "[--say]\n");
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
    if (!only_passes && !table) {
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
    }
    if (!table || table == 1)
        weight_passes(passes_reps, path, clock_fn);
    if (!table || table == 2)
        input_passes(passes_reps, path, clock_fn);
    if (!table || table == 3)
        dlogits_passes(passes_reps, vocab, path, clock_fn);
    if (!table || table == 4)
        dres_passes(passes_reps, path, clock_fn);
    if (!table || table == 5)
        hidden_passes(passes_reps, path, clock_fn);
    if (!table || table == 6)
        dres_col_passes(passes_reps, path, clock_fn);
    if (!table || table == 7)
        attention_passes(passes_reps, path, clock_fn);
    if (!table || table == 8)
        dout_col_passes(passes_reps, vocab, path, clock_fn);
    if (!table || table == 9)
        in_col_passes(passes_reps, path, clock_fn);
    return 0;
}
