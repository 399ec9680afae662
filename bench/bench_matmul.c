/* bench_matmul: GFLOP/s of the matmul kernels, and of OpenBLAS on the same shapes.
 *
 * Build (from the repository root, after `make`, which builds the library):
 *   gcc -std=c11 -O3 -march=native -fopenmp -ffp-contract=off -I. \
 *       bench/bench_matmul.c build/libheadcount.a -lm -o build/bench_matmul
 * With OpenBLAS for comparison (Debian: libopenblas-dev):
 *   gcc -std=c11 -O3 -march=native -fopenmp -ffp-contract=off -I. -DHAVE_OPENBLAS \
 *       bench/bench_matmul.c build/libheadcount.a -lopenblas -lm -o build/bench_matmul
 * Run: build/bench_matmul [--rows N] [--reps R] [--csv FILE]
 * OpenBLAS reads OPENBLAS_CORETYPE; the core it picked is printed first.
 *
 * Square n x n x n products go through the parallel layer functions (nt:
 * matmul_forward; nn: the din part of matmul_backward) on 1 and 2 threads. Training
 * shapes are the linear layers of the model: N rows, (IC, OC) per layer; "fwd" is
 * matmul_forward (2*N*IC*OC flops), "bwd" is matmul_backward with din, dW and dbias
 * (4*N*IC*OC flops). Each figure is the median over R timed repeats after one warm-up.
 * It only reports: timings are noisy and nothing here asserts on them. */
#define _POSIX_C_SOURCE 200809L

/* The kernels come from build/libheadcount.a, through their public header. (They
 * were once named sgemm_nn/nt/tn, which libopenblas also exports as internal
 * drivers: linked together, ours silently replaced OpenBLAS's. The matmul_ names
 * cannot clash.) */
#include "bench/bench_clock.h"
#include "kernels/matmul.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

typedef struct {
    int rows, reps;
    const char *csv;
} Opts;

typedef struct {
    float *a, *b, *c, *d, *e, *bias, *dbias;
} Bufs;

/* What one timed repeat runs: an operation on a shape with a thread count. */
typedef enum { OP_FWD, OP_BWD, OP_NN, OP_BLAS_NT, OP_BLAS_NN, OP_BLAS_BWD } Op;

typedef struct {
    Op op;
    int n, ic, oc, threads;
} Job;

static void job_run(const Job *j, Bufs *m)
{
    switch (j->op) {
    case OP_FWD:
        matmul_forward(m->c, m->a, m->b, m->bias, j->n, j->ic, j->oc);
        break;
    case OP_BWD:
        matmul_backward(m->d, m->e, m->dbias, m->c, m->a, m->b, j->n, j->ic, j->oc);
        break;
    case OP_NN:
        matmul_backward(m->d, NULL, NULL, m->c, m->a, m->b, j->n, j->ic, j->oc);
        break;
#ifdef HAVE_OPENBLAS
    case OP_BLAS_NT: /* out[n][oc] = in[n][ic] . W[oc][ic]^T */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, j->oc, j->ic, 1.0f, m->a,
                    j->ic, m->b, j->ic, 0.0f, m->c, j->oc);
        break;
    case OP_BLAS_NN: /* din[n][ic] += dout[n][oc] . W[oc][ic] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->n, j->ic, j->oc, 1.0f, m->c,
                    j->oc, m->b, j->ic, 1.0f, m->d, j->ic);
        break;
    case OP_BLAS_BWD: /* the nn above plus dW[oc][ic] += dout^T . in */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->n, j->ic, j->oc, 1.0f, m->c,
                    j->oc, m->b, j->ic, 1.0f, m->d, j->ic);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j->oc, j->ic, j->n, 1.0f, m->c,
                    j->oc, m->a, j->ic, 1.0f, m->e, j->ic);
        break;
#else
    default:
        break;
#endif
    }
}

static double job_flops(const Job *j)
{
    double f = 2.0 * j->n * j->ic * j->oc;
    return (j->op == OP_BWD || j->op == OP_BLAS_BWD) ? 2.0 * f : f;
}

/* Median GFLOP/s over reps repeats after one warm-up. */
static double job_gflops(const Job *j, Bufs *m, int reps)
{
    double t[64];
    omp_set_num_threads(j->threads);
#ifdef HAVE_OPENBLAS
    openblas_set_num_threads(j->threads);
#endif
    job_run(j, m);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        job_run(j, m);
        t[r] = bench_now() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), bench_cmp_double);
    double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    return job_flops(j) / med * 1e-9;
}

static float *alloc_fill(size_t count, unsigned *seed)
{
    float *p = malloc(count * sizeof(float));
    if (!p)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = (float)((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

static int bufs_init(Bufs *m, size_t max_n, size_t max_c)
{
    unsigned seed = 12345;
    m->a = alloc_fill(max_n * max_c, &seed);
    m->b = alloc_fill(max_c * max_c, &seed);
    m->c = alloc_fill(max_n * max_c, &seed);
    m->d = alloc_fill(max_n * max_c, &seed);
    m->e = alloc_fill(max_c * max_c, &seed);
    m->bias = alloc_fill(max_c, &seed);
    m->dbias = alloc_fill(max_c, &seed);
    return m->a && m->b && m->c && m->d && m->e && m->bias && m->dbias;
}

static void bufs_free(Bufs *m)
{
    free(m->a);
    free(m->b);
    free(m->c);
    free(m->d);
    free(m->e);
    free(m->bias);
    free(m->dbias);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

static int parse_args(int argc, char **argv, Opts *o)
{
    o->rows = 768;
    o->reps = 9;
    o->csv = NULL;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int ok;
        if (!strcmp(flag, "--help")) {
            printf("usage: bench_matmul [--rows N (768)] [--reps R (9)] [--csv FILE]\n");
            exit(0);
        }
        if (!strcmp(flag, "--rows"))
            ok = val && parse_int(val, 1, 65536, &o->rows);
        else if (!strcmp(flag, "--reps"))
            ok = val && parse_int(val, 1, 63, &o->reps);
        else if (!strcmp(flag, "--csv"))
            ok = (o->csv = val) != NULL;
        else {
            fprintf(stderr, "bench_matmul: error: unknown flag '%s' (see --help)\n", flag);
            return 0;
        }
        if (!ok) {
            fprintf(stderr, "bench_matmul: error: bad value '%s' for %s (--rows 1..65536, "
                            "--reps 1..63, --csv FILE)\n", val ? val : "", flag);
            return 0;
        }
        i++;
    }
    return 1;
}

/* One table row: a label and up to 6 GFLOP/s figures (negative: not measured). */
static void emit(FILE *csv, const char *kind, const char *shape, const double *g, int ng)
{
    printf("%-6s %-22s", kind, shape);
    for (int i = 0; i < ng; i++) {
        if (g[i] < 0)
            printf(" %9s", "-");
        else
            printf(" %9.1f", g[i]);
    }
    printf("\n");
    if (csv) {
        fprintf(csv, "%s,%s", kind, shape);
        for (int i = 0; i < ng; i++) {
            if (g[i] < 0)
                fprintf(csv, ",");
            else
                fprintf(csv, ",%.2f", g[i]);
        }
        fprintf(csv, "\n");
    }
}

/* Prints the 1-minute load average where Linux provides one: other processes on the
 * same cores make the 2-thread figures collapse (each parallel call ends in a
 * barrier that waits for a descheduled thread), so the figures need this context. */
static void print_load(const char *when)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double load;
    if (f && fscanf(f, "%lf", &load) == 1)
        printf("load average %s: %.2f\n", when, load);
    if (f)
        fclose(f);
}

static int have_blas(void)
{
#ifdef HAVE_OPENBLAS
    return 1;
#else
    return 0;
#endif
}

/* OpenBLAS's worker threads keep spinning for a while after a call; measured during
 * that time, our 2-thread figures would mostly measure the competition for the cores.
 * So every OpenBLAS section is followed by a pause before anything else is timed. */
static void let_blas_idle(void)
{
    if (have_blas()) {
        struct timespec ts = { 0, 500000000L };
        nanosleep(&ts, NULL);
    }
}

/* Ours first, then OpenBLAS, so that neither library's idle threads (both spin a
 * while after a parallel call) share the cores with the other's timed runs. */
static void bench_square(const Opts *o, Bufs *m, FILE *csv)
{
    enum { NS = 3 };
    static const int sizes[NS] = { 256, 512, 1024 };
    double g[NS][2][4];
    for (int lib = 0; lib < 1 + have_blas(); lib++)
        for (int s = 0; s < NS; s++)
            for (int nn = 0; nn < 2; nn++)
                for (int t = 0; t < 2; t++) {
                    Op op = lib ? (nn ? OP_BLAS_NN : OP_BLAS_NT) : (nn ? OP_NN : OP_FWD);
                    Job j = { op, sizes[s], sizes[s], sizes[s], t + 1 };
                    g[s][nn][2 * lib + t] = job_gflops(&j, m, o->reps);
                    if (!have_blas())
                        g[s][nn][2 + t] = -1.0;
                }
    let_blas_idle();
    printf("%-6s %-22s %9s %9s %9s %9s\n", "op", "shape (M=N=K)", "ours 1t", "ours 2t",
           "blas 1t", "blas 2t");
    if (csv)
        fprintf(csv, "op,shape,ours_1t,ours_2t,blas_1t,blas_2t\n");
    for (int s = 0; s < NS; s++)
        for (int nn = 0; nn < 2; nn++) {
            char shape[32];
            snprintf(shape, sizeof shape, "%d", sizes[s]);
            emit(csv, nn ? "nn" : "nt", shape, g[s][nn], 4);
        }
}

static void bench_training(const Opts *o, Bufs *m, FILE *csv)
{
    enum { NC = 3, NL = 5 };
    static const int chans[NC] = { 128, 256, 384 };
    static const char *names[NL] = { "qkv", "proj", "fc", "fc2", "logits" };
    double g[NC][NL][6];
    for (int lib = 0; lib < 1 + have_blas(); lib++)
        for (int ci = 0; ci < NC; ci++) {
            int C = chans[ci];
            const int ics[NL] = { C, C, C, 4 * C, C }, ocs[NL] = { 3 * C, C, 4 * C, C, 65 };
            for (int l = 0; l < NL; l++) {
                double *gl = g[ci][l];
                if (lib) {
                    Job bf = { OP_BLAS_NT, o->rows, ics[l], ocs[l], 2 };
                    Job bb = { OP_BLAS_BWD, o->rows, ics[l], ocs[l], 2 };
                    gl[4] = job_gflops(&bf, m, o->reps);
                    gl[5] = job_gflops(&bb, m, o->reps);
                    continue;
                }
                for (int t = 0; t < 2; t++) {
                    Job f = { OP_FWD, o->rows, ics[l], ocs[l], t + 1 };
                    Job b = { OP_BWD, o->rows, ics[l], ocs[l], t + 1 };
                    gl[t] = job_gflops(&f, m, o->reps);
                    gl[2 + t] = job_gflops(&b, m, o->reps);
                }
                gl[4] = gl[5] = -1.0;
            }
        }
    let_blas_idle();
    printf("\ntraining shapes, N = %d rows; fwd = matmul_forward, bwd = matmul_backward\n",
           o->rows);
    printf("%-6s %-22s %9s %9s %9s %9s %9s %9s\n", "layer", "N x IC -> OC", "fwd 1t",
           "fwd 2t", "bwd 1t", "bwd 2t", "blasf 2t", "blasb 2t");
    if (csv)
        fprintf(csv, "layer,shape,fwd_1t,fwd_2t,bwd_1t,bwd_2t,blas_fwd_2t,blas_bwd_2t\n");
    for (int ci = 0; ci < NC; ci++) {
        int C = chans[ci];
        const int ics[NL] = { C, C, C, 4 * C, C }, ocs[NL] = { 3 * C, C, 4 * C, C, 65 };
        for (int l = 0; l < NL; l++) {
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%d->%d", o->rows, ics[l], ocs[l]);
            emit(csv, names[l], shape, g[ci][l], 6);
        }
    }
}

#ifdef HAVE_OPENBLAS
/* Guards the comparison itself: OpenBLAS and our nt must agree on a small product. */
static int blas_agrees(Bufs *m)
{
    enum { S = 96 };
    static float ours[S * S];
    openblas_set_num_threads(1);
    matmul_forward(ours, m->a, m->b, NULL, S, S, S);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, S, 1.0f, m->a, S, m->b, S, 0.0f,
                m->c, S);
    for (int i = 0; i < S * S; i++)
        if (fabsf(ours[i] - m->c[i]) > 1e-4f * (1.0f + fabsf(ours[i])))
            return 0;
    return 1;
}
#endif

int main(int argc, char **argv)
{
    Opts o;
    if (!parse_args(argc, argv, &o))
        return 2;
    size_t max_n = (size_t)(o.rows > 1024 ? o.rows : 1024), max_c = 4 * 384;
    Bufs m;
    if (!bufs_init(&m, max_n, max_c)) {
        fprintf(stderr, "bench_matmul: error: out of memory\n");
        bufs_free(&m);
        return 1;
    }
    FILE *csv = NULL;
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        fprintf(stderr, "bench_matmul: error: cannot open '%s' for writing\n", o.csv);
        bufs_free(&m);
        return 1;
    }
#ifdef HAVE_OPENBLAS
    printf("OpenBLAS core: %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_corename(),
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
    if (!blas_agrees(&m)) {
        fprintf(stderr, "bench_matmul: error: OpenBLAS and matmul_forward disagree on a "
                        "96x96x96 product; the comparison would be meaningless\n");
        bufs_free(&m);
        return 1;
    }
    let_blas_idle();
#else
    printf("OpenBLAS: not linked (build with -DHAVE_OPENBLAS ... -lopenblas)\n");
#endif
    printf("median GFLOP/s over %d repeats\n", o.reps);
    print_load("before");
    bench_square(&o, &m, csv);
    bench_training(&o, &m, csv);
    print_load("after");
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "bench_matmul: error: writing '%s' failed\n", o.csv);
        bufs_free(&m);
        return 1;
    }
    bufs_free(&m);
    return 0;
}
