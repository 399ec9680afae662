/* Tests of scripts/bench_report.py, the summary of `make bench`: with several rounds
 * per configuration it quotes median tokens/s and the median of the per-round ratios
 * with their range, judges the target by that median, and takes NANO's share of the
 * sgemm peak from its median GFLOP/s. Hand-made CSVs with known answers; nothing is
 * timed. Skipped where python3 is missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

#define TRAIN_HEAD                                                                   \
    "config,L,C,T,B,H,D,threads,ms_median,ms_min,ms_max,tokens_per_s,gflops,params," \
    "peak_mb\n"
#define TORCH_HEAD "config,L,C,T,B,H,threads,ms_median,ms_min,ms_max,tokens_per_s,torch\n"

Test(bench_report, rounds_give_medians_and_the_median_ratio_with_its_range)
{
    char *out;
    if (tu_runf(&out, "python3 -c 'import csv, statistics'") != 0) {
        free(out);
        cr_skip_test("python3 is not installed");
    }
    free(out);
    const char *dir = tu_tmpdir("bench_report");
    /* MID H=1, three rounds: ours 2 threads 1000, 1200, 900 tok/s against PyTorch's
     * 500, 1000, 600: ratios 2.0, 1.2, 1.5 -> median 1.5 (target 1.5: met), range
     * 1.20-2.00; medians 1000 (ours) and 600 (PyTorch), 1 thread median 500 -> 2.00x.
     * NANO, two rounds: GFLOP/s 210 and 230 -> median 220 = 55% of OpenBLAS's best
     * square 2-thread figure, 400 (target 70%: missed); ratios 1.0 and 2.0 -> 1.50x. */
    write_text(dir, "train.csv",
               TRAIN_HEAD
               "MID,4,256,256,16,1,256,1,0,0,0,500,10,0,0\n"
               "MID,4,256,256,16,1,256,2,0,0,0,1000,100,0,0\n"
               "MID,4,256,256,16,1,256,1,0,0,0,400,10,0,0\n"
               "MID,4,256,256,16,1,256,2,0,0,0,1200,120,0,0\n"
               "MID,4,256,256,16,1,256,1,0,0,0,600,10,0,0\n"
               "MID,4,256,256,16,1,256,2,0,0,0,900,90,0,0\n"
               "NANO,6,384,256,16,6,64,2,0,0,0,300,210,0,0\n"
               "NANO,6,384,256,16,6,64,2,0,0,0,200,230,0,0\n");
    write_text(dir, "torch.csv",
               TORCH_HEAD
               "MID,4,256,256,16,1,2,0,0,0,500,x\n"
               "MID,4,256,256,16,1,2,0,0,0,1000,x\n"
               "MID,4,256,256,16,1,2,0,0,0,600,x\n"
               "NANO,6,384,256,16,6,2,0,0,0,300,x\n"
               "NANO,6,384,256,16,6,2,0,0,0,100,x\n");
    write_text(dir, "matmul.csv",
               "op,shape,ours_1t,ours_2t,blas_1t,blas_2t\n"
               "nt,256,1,200,1,300\n"
               "nn,256,1,250,1,400\n"
               "layer,shape,fwd_1t,fwd_2t,bwd_1t,bwd_2t,blas_fwd_2t,blas_bwd_2t\n"
               "qkv,768x128->384,1,999,1,999,999,999\n");
    int rc = tu_runf(&out, "python3 scripts/bench_report.py %s", dir);
    cr_assert_eq(rc, 0, "bench_report.py failed:\n%s", out);
    cr_assert(strstr(out, "| MID | 1 | 1,000 | 100.0 | 25% | 2.00x | 600 | 1.50x (1.20-2.00) | "
                          "1.5x | yes |"),
              "MID row wrong:\n%s", out);
    cr_assert(strstr(out, "| NANO | 6 | 250 | 220.0 | 55% | - | 200 | 1.50x (1.00-2.00) | "
                          "1.6x | no |"),
              "NANO row wrong:\n%s", out);
    cr_assert(strstr(out, "NANO at 55% of the sgemm peak (target 70%: missed)"), "%s", out);
    cr_assert(strstr(out, "ours 250 GFLOP/s, OpenBLAS 400 GFLOP/s"), "%s", out);
    free(out);
}
