/* cli: the command-line helpers train and infer share: checked number parsing
 * and the one-line usage error. These may print and exit: they belong to the
 * programs, not to the library (model/, data/). */
#ifndef HEADCOUNT_CLI_H
#define HEADCOUNT_CLI_H

#include <stdint.h>

/* Set once by main: the program name used in messages ("train", "infer"). */
extern const char *cli_prog;

/* Prints "PROG: error: ..." and exits 2 (usage error). */
void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Prints "PROG: error: ..." and exits 1. */
void cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Whole string consumed, within [lo, hi]; otherwise a usage error naming the
 * flag, the value and the range. */
long cli_long(const char *flag, const char *s, long lo, long hi);
double cli_double(const char *flag, const char *s, double lo, double hi);
uint64_t cli_u64(const char *flag, const char *s);

/* Seconds as "1m21s", "2h03m", "45s", "0.8s". */
void cli_duration(double seconds, char *buf, int len);
/* Wall-clock seconds (monotonic). */
double cli_now(void);

#endif
