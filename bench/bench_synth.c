/* bench_synth: the built-in corpus's speed (data/synth.c), one thread: the
 * generator writing the default megabyte (synth_generate), and the parser
 * reading it back (synth_parse: every sentence understood, the generator's own
 * relations) and reading a text it does not understand (--other FILE, its first
 * 100,000 bytes, e.g. tiny Shakespeare). Medians of --runs runs. Prints one line
 * per measurement; nothing here asserts a time (docs/bench.md).
 *   bench_synth [--runs N] [--seed S] [--other FILE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_clock.h"
#include "data/synth.h"

enum { OTHER_BYTES = 100000 };

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Parses text[0..n) runs times; prints the median and the sentence counts. */
static void bench_parse(const char *label, const char *text, size_t n, int runs)
{
    size_t cap = n / 4 + 16, ns = 0, nrel = 0;
    SynthSentence *sent = malloc(cap * sizeof *sent);
    SynthRelation *rel = malloc(cap * sizeof *rel);
    double *t = malloc((size_t)runs * sizeof *t);
    if (!sent || !rel || !t) {
        fprintf(stderr, "bench_synth: out of memory\n");
        exit(1);
    }
    for (int k = 0; k < runs; k++) {
        double t0 = bench_now();
        nrel = synth_parse(text, n, sent, cap, &ns, rel, cap);
        t[k] = bench_now() - t0;
    }
    size_t understood = 0;
    for (size_t i = 0; i < ns && i < cap; i++)
        understood += sent[i].understood != 0;
    double m = median(t, runs);
    printf("parse %-9s %8zu bytes %6zu sentences (%zu understood, %zu relations): "
           "%8.1f ms  %7.0f sentences/s  %6.2f MB/s\n",
           label, n, ns, understood, nrel, 1e3 * m, (double)ns / m, (double)n / m / 1e6);
    free(t);
    free(rel);
    free(sent);
}

int main(int argc, char **argv)
{
    int runs = 5;
    unsigned long long seed = 1;
    const char *other = NULL;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1000) {
                fprintf(stderr, "bench_synth: --runs %s: expected 1..1000\n", argv[i]);
                return 2;
            }
            runs = (int)v;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "bench_synth: --seed %s: expected a whole number\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--other") == 0 && i + 1 < argc) {
            other = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_synth [--runs N] [--seed S] [--other FILE]\n");
            return 2;
        }
    }
    const size_t n = SYNTH_DEFAULT_BYTES;
    char *buf = malloc(n);
    double *t = malloc((size_t)runs * sizeof *t);
    if (!buf || !t) {
        fprintf(stderr, "bench_synth: out of memory\n");
        return 1;
    }
    for (int k = 0; k < runs; k++) {
        double t0 = bench_now();
        synth_generate(buf, n, seed);
        t[k] = bench_now() - t0;
    }
    double m = median(t, runs);
    printf("generate %zu bytes (seed %llu): %8.1f ms  %6.2f MB/s\n", n, seed, 1e3 * m,
           (double)n / m / 1e6);
    bench_parse("corpus", buf, n, runs);
    if (other) {
        FILE *f = fopen(other, "rb");
        if (!f) {
            printf("parse other: skipped, %s cannot be read\n", other);
        } else {
            char *o = malloc(OTHER_BYTES);
            size_t got = o ? fread(o, 1, OTHER_BYTES, f) : 0;
            fclose(f);
            if (got > 0)
                bench_parse("other", o, got, runs);
            free(o);
        }
    }
    free(t);
    free(buf);
    return 0;
}
