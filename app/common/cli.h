/* cli: the command-line helpers train and infer share: checked number parsing
 * and the one-line usage error. These may print and exit: they belong to the
 * programs, not to the library (model/, data/). */
#ifndef HEADCOUNT_CLI_H
#define HEADCOUNT_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/bf16.h"

/* The version both programs print with --version ("infer (headcount) 0.2.0"). */
#define HEADCOUNT_VERSION "0.2.0"

/* Set once by main: the program name used in messages ("train", "infer"). */
extern const char *cli_prog;

/* Called instead of exit() by the two error functions below when set (once, by
 * main): a program that must end other processes too (MPI ranks) sets it. */
void cli_set_exit(void (*fn)(int code));

/* Where the two error functions below print (stderr unless set): a process whose
 * stderr is silenced (an MPI rank other than 0) still reports its errors. */
void cli_set_error_stream(FILE *f);

/* Prints "PROG: error: ..." and exits 2 (usage error). */
void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Prints "PROG: error: ..." and exits 1. */
void cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Whole string consumed, within [lo, hi]; otherwise a usage error naming the
 * flag, the value and the range. */
long cli_long(const char *flag, const char *s, long lo, long hi);
double cli_double(const char *flag, const char *s, double lo, double hi);
uint64_t cli_u64(const char *flag, const char *s);

/* v in the fewest significant digits (%g style, up to 17) that read back as
 * exactly v, so two different values never print alike ("0.5" and
 * "0.50000000001"). */
void cli_format_double(char *buf, size_t len, double v);

/* Opens /dev/null, for reading on 1 and 2 and for writing on 0, on any of the
 * three standard descriptors that is closed, so that no file the program opens
 * later takes its number (a closed stdout would send the results into a
 * report file) and a write to a closed stdout still fails (EBADF). Call first
 * thing in main. */
void cli_hold_std_fds(void);

/* Standard output is an output: flushes and closes it, and on any failure (a
 * full disk, a closed descriptor) exits 1 with "PROG: error: writing standard
 * output: REASON". Called where a program that printed its result exits 0. */
void cli_close_stdout(void);

/* A short flag and the id of the long option it stands for. */
typedef struct {
    char s;
    int id;
} CliShort;

/* getopt_long over argv with every short flag mapped to its long option's id;
 * an unknown option or a missing value is a usage error. Returns the id (or -1
 * at the end), with the value in optarg. opterr must be 0 (set on first call). */
int cli_next_option(int argc, char **argv, const char *shortopts, const struct option *longs,
                    const CliShort *shorts, size_t nshorts);

/* OpenMP threads that spin while they wait make a busy machine many times slower,
 * and threads that sleep at once make an idle one slower. Measured on a 2-core
 * Xeon, 100 default steps: idle, spinning 3.1-3.7 s, sleeping (passive) 4.3-4.6 s,
 * spinning 10,000 rounds then sleeping 3.2-3.6 s; beside two busy processes,
 * spinning 21-35 s, passive 5.9-13 s, 10,000 rounds 7.9-10 s. So when neither
 * OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, this sets GOMP_SPINCOUNT=10000 and
 * re-executes the program (the OpenMP runtime reads it only at start-up); it
 * returns only when nothing needed doing or exec failed. Results are identical
 * either way. Call first thing in main. */
void cli_bounded_spin_openmp(char **argv);

/* The bf16 path the environment asks for: HEADCOUNT_BF16 unset or empty: BF16_AUTO;
 * "emulate": BF16_EMULATED (kernels/bf16.h); anything else is a usage error. */
Bf16Path cli_bf16_path(void);

/* Where bf16 products on `path` are emulated, one line on stderr at a run's start:
 * "PROG: note: bf16 products are emulated (why): the same bits as the instruction,
 * what it costs". Prints nothing where the instruction runs them. */
void cli_say_bf16(Bf16Path path);

/* Seconds as "1m21s", "2h03m", "45s", "0.8s". */
void cli_duration(double seconds, char *buf, int len);
/* Wall-clock seconds (monotonic). */
double cli_now(void);

#endif
