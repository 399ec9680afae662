/* bench_clock: what every benchmark program times with: a monotonic clock in
 * seconds and the order qsort needs to take medians of doubles. Header-only,
 * since each benchmark is built from one .c file. */
#ifndef HEADCOUNT_BENCH_CLOCK_H
#define HEADCOUNT_BENCH_CLOCK_H

#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
