/* bench_train: training throughput of the model configurations of issue 6.
 *
 * For each configuration it runs warm-up steps, then timed full training steps
 * (trainer_step: forward, backward, clipping, AdamW) on random tokens (V = 65 as tiny
 * Shakespeare's bytes, or --vocab V; speed does not depend on the text), each in a child
 * process so its peak memory can be read, in the precision --precision names (fp32, the
 * default, or bf16: the model's Precision; HEADCOUNT_BF16=emulate runs the bf16 products'
 * emulation where the build has the instruction). Prints a table and, with --csv FILE,
 * writes one CSV row per (configuration, threads). With --route K every model is a
 * mixture of heads (Config.route_k, model/route.h): each token's top K heads of
 * every layer, the configuration's name suffixed "/K<k>".
 *
 * Model FLOPs per token (docs/bench.md): 6 N + 6 L A (T + 1), with N the weights
 * that take part in matrix products (qkv, proj, fc, fcproj and the tied output
 * layer) and A = H D; the second term is causal attention (each query scores
 * (T + 1) / 2 keys on average, forward QK^T and AV, backward twice the forward).
 * A routed model adds its routers' 6 L H C and counts K / H of the attention term:
 * a training step attends each head only at the tokens whose router chose it
 * (PassOptions.skip_unrouted).
 * Steps are timed in wall time, or with --cpu in the process's CPU time (docs/bench.md,
 * "bf16 where it is emulated", compares bf16 builds that way on a loaded host).
 * This is not a test: it asserts nothing about time. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_bf16_path.h"
#include "bench/bench_clock.h"
#include "model/gpt.h"
#include "trainer/trainer.h"
#include "util/rng.h"

typedef struct {
    const char *name;
    int L, C, T, B, H;
    int warmup, steps;
} BenchConfig;

static const BenchConfig CONFIGS[] = {
    {"BABY", 4, 128, 64, 12, 1, 3, 30}, {"BABY", 4, 128, 64, 12, 4, 3, 30},
    {"BABY", 4, 128, 64, 12, 8, 3, 30}, {"BABY", 4, 128, 64, 12, 16, 3, 30},
    {"MID", 4, 256, 256, 16, 1, 2, 8},  {"MID", 4, 256, 256, 16, 4, 2, 8},
    {"MID", 4, 256, 256, 16, 8, 2, 8},  {"MID", 4, 256, 256, 16, 16, 2, 8},
    {"NANO", 6, 384, 256, 16, 6, 1, 5},
};

double bench_flops_per_token(const Config *c)
{
    double A = (double)c->H * c->D, C = c->C;
    double n_mm = (double)c->L * (3 * A * C + A * C + 8 * C * C) + (double)c->V * C;
    double router = c->route_k ? 6.0 * c->L * c->H * C : 0.0;
    double attended = c->route_k ? (double)c->route_k / c->H : 1.0;
    return 6.0 * n_mm + 6.0 * c->L * A * (c->T + 1) * attended + router;
}

/* Runs one configuration in this process; writes "median min max" ms to out. */
/* The process's CPU time in seconds (all its threads). */
static double process_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_config(const BenchConfig *bc, int V, int route_k, int threads,
                      Precision precision, int cpu, double out[3])
{
    double (*clock_fn)(void) = cpu ? process_cpu : bench_now;
    omp_set_num_threads(threads);
    Config cfg = {.V = V, .T = bc->T, .L = bc->L, .H = bc->H, .C = bc->C, .D = bc->C / bc->H,
                  .route_k = route_k};
    char err[256];
    int total = bc->warmup + bc->steps;
    TrainHyper hp = {.lr = 1e-3f, .min_lr = 1e-4f, .warmup = 2, .steps = total, .clip = 1.0f,
                     .micro = 1, .adam = {0.9f, 0.99f, 1e-8f, 0.1f}};
    Trainer t;
    if (trainer_init(&t, &cfg, 1, err, sizeof err) ||
        trainer_prepare(&t, &hp, bc->B, err, sizeof err)) {
        fprintf(stderr, "bench: %s\n", err);
        trainer_free(&t);
        return -1;
    }
    t.model.precision = precision;
    t.model.bf16_path = bench_bf16_path();
    size_t N = (size_t)bc->B * bc->T;
    int *tok = malloc(N * sizeof(int)), *tgt = malloc(N * sizeof(int));
    Rng rng;
    rng_init(&rng, 7, 0);
    double *ms = malloc(sizeof(double) * (size_t)bc->steps);
    for (int s = 0; s < total; s++) {
        for (size_t i = 0; i < N; i++) {
            tok[i] = (int)rng_below(&rng, (uint64_t)V);
            tgt[i] = (int)rng_below(&rng, (uint64_t)V);
        }
        double t0 = clock_fn();
        trainer_step(&t, tok, tgt, NULL);
        double t1 = clock_fn();
        if (s >= bc->warmup)
            ms[s - bc->warmup] = (t1 - t0) * 1e3;
    }
    qsort(ms, (size_t)bc->steps, sizeof(double), bench_cmp_double);
    out[0] = ms[bc->steps / 2];
    out[1] = ms[0];
    out[2] = ms[bc->steps - 1];
    free(ms);
    free(tok);
    free(tgt);
    trainer_free(&t);
    return 0;
}

/* Whether --configs (NAME or NAME:H entries, comma-separated) selects this run. */
static int wanted(const char *list, const char *name, int H)
{
    if (!list)
        return 1;
    char buf[256], key[32], keyh[40];
    snprintf(buf, sizeof buf, ",%s,", list);
    snprintf(key, sizeof key, ",%s,", name);
    snprintf(keyh, sizeof keyh, ",%s:%d,", name, H);
    return strstr(buf, key) != NULL || strstr(buf, keyh) != NULL;
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL, *only = NULL, *threads_list = "1,2";
    int header = 1, V = 65, route_k = 0, cpu = 0;
    Precision precision = PRECISION_FP32;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv_path = argv[++i];
        else if (!strcmp(argv[i], "--no-header"))
            header = 0;
        else if (!strcmp(argv[i], "--list")) {
            for (size_t k = 0; k < sizeof CONFIGS / sizeof CONFIGS[0]; k++)
                printf("%s:%d\n", CONFIGS[k].name, CONFIGS[k].H);
            return 0;
        }
        else if (!strcmp(argv[i], "--configs") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads_list = argv[++i];
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            const char *name = argv[++i];
            int k = 0;
            while (precision_names[k] && strcmp(name, precision_names[k]) != 0)
                k++;
            if (!precision_names[k]) {
                fprintf(stderr, "bench: --precision %s: expected fp32 or bf16\n", name);
                return 2;
            }
            precision = (Precision)k;
        }
        else if (!strcmp(argv[i], "--route") && i + 1 < argc) {
            char *end;
            long k = strtol(argv[++i], &end, 10);
            if (*end || k < 0 || k > CONFIG_MAX_HEADS) {
                fprintf(stderr, "bench: --route %s: expected 0..%d\n", argv[i], CONFIG_MAX_HEADS);
                return 2;
            }
            route_k = (int)k;
        }
        else if (!strcmp(argv[i], "--cpu"))
            cpu = 1;
        else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 2 || v > CONFIG_MAX_VOCAB) {
                fprintf(stderr, "bench: --vocab %s: expected 2..%d\n", argv[i], CONFIG_MAX_VOCAB);
                return 2;
            }
            V = (int)v;
        }
        else {
            int help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            fprintf(help ? stdout : stderr,
                    "usage: bench_train [--configs BABY,MID:4,...] [--threads 1,2] [--vocab V]\n"
                    "       [--route K] [--precision fp32|bf16] [--cpu] [--csv FILE] [--no-header]\n"
                    "       [--list]\n"
                    "  --configs: NAME (every H) or NAME:H entries\n"
                    "  --cpu: time steps in the process's CPU time (all threads), not wall\n"
                    "         time (on a loaded host it moves less; tok/s then per CPU-second)\n"
                    "  --csv: rows appended; the header only to a new file\n"
                    "  --vocab: the vocabulary size (default 65, a byte vocabulary; a\n"
                    "           byte-pair one makes the output layer and softmax larger)\n"
                    "  --route: each token uses its top K heads per layer (mixture of heads;\n"
                    "           default 0, every head); a configuration with H < K is skipped\n"
                    "  --list: print the NAME:H entries and exit\n");
            return help ? 0 : 2;
        }
    }
    FILE *csv = NULL;
    if (csv_path) {
        csv = fopen(csv_path, "a");
        if (!csv) {
            fprintf(stderr, "bench: cannot write %s\n", csv_path);
            return 1;
        }
        if (fseek(csv, 0, SEEK_END) == 0 && ftell(csv) == 0)
            fprintf(csv, "config,L,C,T,B,H,D,threads,ms_median,ms_min,ms_max,tokens_per_s,"
                         "gflops,params,peak_mb\n");
    }
    int width = route_k ? 8 : 5; /* "BABY/K16" */
    if (header)
        printf("%-*s %2s %4s %4s %3s %3s %3s | %8s %8s %8s | %9s %7s %8s\n", width, "cfg", "L", "C",
               "T", "B", "H", "thr", "ms(med)", "min", "max", "tok/s", "GFLOP/s", "peak MB");
    for (size_t k = 0; k < sizeof CONFIGS / sizeof CONFIGS[0]; k++) {
        const BenchConfig *bc = &CONFIGS[k];
        if (!wanted(only, bc->name, bc->H) || route_k > bc->H)
            continue;
        char name[16];
        snprintf(name, sizeof name, route_k ? "%s/K%d" : "%s", bc->name, route_k);
        char tl[64];
        snprintf(tl, sizeof tl, "%s", threads_list);
        for (char *tok = strtok(tl, ","); tok; tok = strtok(NULL, ",")) {
            int threads = atoi(tok);
            if (threads < 1)
                continue;
            int fd[2];
            if (pipe(fd) != 0)
                return 1;
            pid_t pid = fork();
            if (pid == 0) {
                double r[3];
                close(fd[0]);
                int rc = run_config(bc, V, route_k, threads, precision, cpu, r);
                if (rc == 0 && write(fd[1], r, sizeof r) != (ssize_t)sizeof r)
                    rc = 1;
                _exit(rc ? 1 : 0);
            }
            close(fd[1]);
            double r[3];
            ssize_t got = read(fd[0], r, sizeof r);
            close(fd[0]);
            int status;
            struct rusage ru;
            wait4(pid, &status, 0, &ru);
            if (got != (ssize_t)sizeof r || !WIFEXITED(status) || WEXITSTATUS(status)) {
                fprintf(stderr, "bench: %s H=%d failed\n", name, bc->H);
                continue;
            }
            Config cfg = {.V = V, .T = bc->T, .L = bc->L, .H = bc->H, .C = bc->C,
                          .D = bc->C / bc->H, .route_k = route_k};
            double tokens = (double)bc->B * bc->T, tps = tokens / (r[0] / 1e3);
            double gflops = bench_flops_per_token(&cfg) * tps / 1e9;
            double peak_mb = (double)ru.ru_maxrss / 1024.0;
            printf("%-*s %2d %4d %4d %3d %3d %3d | %8.1f %8.1f %8.1f | %9.0f %7.1f %8.1f\n",
                   width, name, bc->L, bc->C, bc->T, bc->B, bc->H, threads, r[0], r[1], r[2], tps,
                   gflops, peak_mb);
            fflush(stdout);
            if (csv)
                fprintf(csv, "%s,%d,%d,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.1f,%.2f,%zu,%.1f\n",
                        name, bc->L, bc->C, bc->T, bc->B, bc->H, cfg.D, threads, r[0], r[1],
                        r[2], tps, gflops, config_param_count(&cfg), peak_mb);
        }
    }
    if (csv)
        fclose(csv);
    return 0;
}
