/* bench_bpe: speed of the byte-pair tokenizer (data/bpe) on one thread.
 *
 * Reads a text file (default tiny Shakespeare), takes its byte alphabet as the
 * base ids, and times, each --runs times: learning --merges merges from the
 * whole file (bpe_learn), building the encoder, and encoding the whole file
 * (bpe_encode). Prints the median, minimum and maximum of each, the encoding
 * speed in MB/s (10^6 bytes per second) and the number of tokens; with --csv
 * FILE appends one row. The library calls are single-threaded, so the thread
 * count does not matter. This is not a test: it asserts nothing about time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_clock.h"
#include "data/bpe.h"
#include "data/corpus.h"
#include "data/tokenizer.h"

/* Sorts x[0..n) and returns its median. */
static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, bench_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static long parse_int(const char *flag, const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "bench_bpe: %s %s: expected a whole number in [%ld, %ld]\n", flag, s, lo,
                hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *path = "../shared/data/tinyshakespeare.txt", *csv_path = NULL;
    int runs = 5, want = 4096;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            path = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = (int)parse_int("--runs", argv[++i], 1, 1000);
        else if (!strcmp(argv[i], "--merges") && i + 1 < argc)
            want = (int)parse_int("--merges", argv[++i], 0, TOK_VOCAB_MAX - 256);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
            csv_path = argv[++i];
        else {
            int help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            fprintf(help ? stdout : stderr,
                    "usage: bench_bpe [--data FILE] [--merges N] [--runs R] [--csv FILE]\n"
                    "  --data: the text (default ../shared/data/tinyshakespeare.txt)\n"
                    "  --merges: merges to learn (default 4096)\n"
                    "  --runs: timed runs of each part; medians are reported (default 5)\n"
                    "  --csv: one row appended; the header only to a new file\n");
            return help ? 0 : 2;
        }
    }
    TextFile file;
    Tokenizer alphabet; /* the file's bytes: the base ids */
    char ferr[1500];
    if (textfile_read(&file, path, 1, ferr, sizeof ferr) ||
        tok_build(&alphabet, file.bytes, file.n, ferr, sizeof ferr)) {
        fprintf(stderr, "bench_bpe: %s\n", ferr);
        return 1;
    }
    const unsigned char *text = file.bytes;
    size_t n = file.n;
    const int16_t *byte_id = alphabet.id;
    int nbase = alphabet.nbytes;
    BpeMerge *merges = malloc(sizeof *merges * (size_t)(want ? want : 1));
    TokenId *ids = malloc(sizeof *ids * (n ? n : 1));
    double *learn_s = malloc(sizeof(double) * (size_t)runs);
    double *build_s = malloc(sizeof(double) * (size_t)runs);
    double *enc_s = malloc(sizeof(double) * (size_t)runs);
    if (!merges || !ids || !learn_s || !build_s || !enc_s) {
        fprintf(stderr, "bench_bpe: out of memory\n");
        return 1;
    }
    char err[256];
    int got = 0;
    size_t ntok = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = bench_now();
        if (bpe_learn(text, n, byte_id, nbase, want, merges, &got, err, sizeof err)) {
            fprintf(stderr, "bench_bpe: %s\n", err);
            return 1;
        }
        double t1 = bench_now();
        BpeEncoder *e = bpe_encoder_new(byte_id, nbase, merges, got, err, sizeof err);
        if (!e) {
            fprintf(stderr, "bench_bpe: %s\n", err);
            return 1;
        }
        double t2 = bench_now();
        ntok = bpe_encode(e, text, n, ids);
        double t3 = bench_now();
        bpe_encoder_free(e);
        learn_s[r] = t1 - t0;
        build_s[r] = t2 - t1;
        enc_s[r] = t3 - t2;
    }
    double lm = median(learn_s, runs), bm = median(build_s, runs), em = median(enc_s, runs);
    double mb = (double)n / 1e6;
    printf("file: %s (%zu bytes, %d distinct), %d merges learned, %zu tokens "
           "(%.2f bytes/token), %d runs\n",
           path, n, nbase, got, ntok, ntok ? (double)n / (double)ntok : 0.0, runs);
    printf("learn %d merges: median %.1f ms (min %.1f, max %.1f)\n", want, 1e3 * lm,
           1e3 * learn_s[0], 1e3 * learn_s[runs - 1]);
    printf("build encoder:   median %.2f ms\n", 1e3 * bm);
    printf("encode:          median %.1f ms = %.1f MB/s (min %.1f ms, max %.1f ms)\n", 1e3 * em,
           mb / em, 1e3 * enc_s[0], 1e3 * enc_s[runs - 1]);
    if (csv_path) {
        FILE *csv = fopen(csv_path, "a");
        if (!csv) {
            fprintf(stderr, "bench_bpe: cannot write %s\n", csv_path);
            return 1;
        }
        if (fseek(csv, 0, SEEK_END) == 0 && ftell(csv) == 0)
            fprintf(csv, "tokenizer,bytes,merges,runs,learn_ms_median,learn_ms_min,learn_ms_max,"
                         "encode_ms_median,encode_ms_min,encode_ms_max,encode_mb_per_s,tokens\n");
        fprintf(csv, "headcount,%zu,%d,%d,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%zu\n", n, got, runs,
                1e3 * lm, 1e3 * learn_s[0], 1e3 * learn_s[runs - 1], 1e3 * em, 1e3 * enc_s[0],
                1e3 * enc_s[runs - 1], mb / em, ntok);
        if (fclose(csv)) {
            fprintf(stderr, "bench_bpe: cannot write %s\n", csv_path);
            return 1;
        }
    }
    free(merges);
    free(ids);
    free(learn_s);
    free(build_s);
    free(enc_s);
    tok_free(&alphabet);
    textfile_free(&file);
    return 0;
}
