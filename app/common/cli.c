/* cli: shared command-line helpers (see cli.h). */
#include "app/common/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *cli_prog = "headcount";
static void (*exit_fn)(int) = NULL;
static FILE *err_stream = NULL; /* stderr unless cli_set_error_stream */

void cli_set_error_stream(FILE *f)
{
    err_stream = f;
}

void cli_set_exit(void (*fn)(int code))
{
    exit_fn = fn;
}

static void leave(int code) __attribute__((noreturn));
static void leave(int code)
{
    if (exit_fn)
        exit_fn(code);
    exit(code);
}

static void vreport(const char *fmt, va_list ap)
{
    FILE *f = err_stream ? err_stream : stderr;
    fprintf(f, "%s: error: ", cli_prog);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
}

void cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    fprintf(err_stream ? err_stream : stderr, "%s: see '%s --help'\n", cli_prog, cli_prog);
    leave(2);
}

void cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    leave(1);
}

long cli_long(const char *flag, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        cli_usage_error("--%s: expected an integer in [%ld, %ld], got '%s'", flag, lo, hi, s);
    return v;
}

double cli_double(const char *flag, const char *s, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* An underflow (1e-400, 4.9e-324) is ERANGE with a result of 0 or a
     * subnormal of the right sign: a number inside the range when the range
     * holds numbers that small of that sign. An overflow is out of range. */
    int underflow = errno == ERANGE && fabs(v) <= DBL_MIN;
    int small_ok = signbit(v) ? lo < 0 : hi > 0;
    if ((errno && !(underflow && small_ok)) || end == s || *end != '\0' || !isfinite(v) ||
        v < lo || v > hi)
        cli_usage_error("--%s: expected a number in [%g, %g], got '%s'", flag, lo, hi, s);
    return v;
}

uint64_t cli_u64(const char *flag, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0' || s[0] == '-')
        cli_usage_error("--%s: expected a non-negative integer, got '%s'", flag, s);
    return (uint64_t)v;
}

void cli_format_double(char *buf, size_t len, double v)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v || !isfinite(v))
            return;
    }
}

void cli_hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int got = open("/dev/null", fd ? O_RDONLY : O_WRONLY);
            if (got >= 0 && got != fd) {
                dup2(got, fd);
                close(got);
            }
        }
}

void cli_close_stdout(void)
{
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int why = errno;
    /* stdio keeps only a flag for a failed write, and errno may have changed
     * since: the output is incomplete anyway, so one more byte asks why. */
    if (bad && !why && write(STDOUT_FILENO, "\n", 1) < 0)
        why = errno;
    errno = 0;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        why = errno;
    }
    if (bad)
        cli_fail("writing standard output: %s", why ? strerror(why) : "a write failed");
}

int cli_next_option(int argc, char **argv, const char *shortopts, const struct option *longs,
                    const CliShort *shorts, size_t nshorts)
{
    opterr = 0;
    int idx, c = getopt_long(argc, argv, shortopts, longs, &idx);
    for (size_t i = 0; i < nshorts; i++)
        if (c == shorts[i].s)
            return shorts[i].id;
    if (c == '?')
        cli_usage_error("unknown option '%s'", argv[optind - 1]);
    if (c == ':')
        cli_usage_error("option '%s' needs a value", argv[optind - 1]);
    return c;
}

void cli_duration(double s, char *buf, int len)
{
    if (!(s >= 0))
        s = 0;
    if (s < 10)
        snprintf(buf, (size_t)len, "%.1fs", s);
    else if (s < 3600)
        snprintf(buf, (size_t)len, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, (size_t)len, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

Bf16Path cli_bf16_path(void)
{
    const char *v = getenv("HEADCOUNT_BF16");
    if (!v || !*v)
        return BF16_AUTO;
    if (strcmp(v, "emulate") != 0)
        cli_usage_error("HEADCOUNT_BF16='%s': expected 'emulate' or nothing", v);
    return BF16_EMULATED;
}

/* Whether this CPU has AVX512-BF16 (whatever the build targets). */
static int cpu_has_bf16(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

void cli_say_bf16(Bf16Path path)
{
    if (!bf16_emulated(path))
        return;
    const char *why = BF16_NATIVE ? "HEADCOUNT_BF16=emulate"
                      : cpu_has_bf16() ? "this build does not target this CPU's AVX512-BF16: "
                                         "build with ARCH=-march=native"
                                       : "this CPU has no AVX512-BF16";
    fprintf(stderr, "%s: note: bf16 products are emulated (%s): the same bits as the "
            "instruction, %s (docs/matmul.md)\n", cli_prog, why,
            bf16_emulation_fast() ? BF16_EMULATION_COST : BF16_EMULATION_STEPWISE_COST);
}

void cli_bounded_spin_openmp(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
        return;
    if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* No /proc, or exec failed: carry on with the runtime's default. */
}
