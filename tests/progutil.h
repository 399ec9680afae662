/* progutil: helpers for the command-line tests of ./train and ./infer: a scratch
 * directory with a small generated data file, the one-error-line contract, and a
 * trainer started in the background for signal and lock tests. Programs are run
 * with tu_run (testutil.h). */
#ifndef HEADCOUNT_PROGUTIL_H
#define HEADCOUNT_PROGUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* A model small enough that every run takes a fraction of a second. */
#define TINY "--layers 1 --embd 16 --heads 2 --block 16 --batch 4 --eval-iters 2 --threads 1"
#define DATA_BYTES 20000

typedef struct {
    char dir[256], data[320], out[320], log[320];
} Env;

/* A fresh scratch directory with data.txt (DATA_BYTES of the built-in corpus);
 * out.ckpt and run.log name files in it. */
void env_init(Env *e, const char *name);

int count_lines(const char *s);
int has_line_starting(const char *s, const char *prefix);
/* needle within s[0..n). */
const char *find_in(const char *s, size_t n, const char *needle);
/* The number after "key": in a JSON line (a failed assertion when it is missing). */
double json_number(const char *line, const char *key);
/* out without sanitizer lines (malloc'd). */
char *program_output(const char *out);

/* One "PROG: error: ..." line containing needle (plus the "see --help" hint
 * after a usage error), the expected exit status, and no training output. */
void expect_error(const char *raw, int rc, int code, const char *prog, const char *needle);

/* e->out holds "sentinel\n" and e->log is gone; expect_nothing_written checks
 * both are still so and that no temporary was left. */
void put_sentinel(const Env *e);
void expect_nothing_written(const Env *e);

/* train with TINY, --out e->out, --log e->log and extra must fail with code and
 * needle, training nothing and writing nothing. */
void refuse_train(const Env *e, const char *extra, int code, const char *needle);

/* Writes data to e->dir/name and puts that path in path. */
void make_file(const Env *e, const char *name, const void *data, size_t n, char *path,
               size_t len);

/* Trains 6 steps with flags in one run, and 3 steps then a resume to 6 in
 * another; the resume given `refused` (a flag contradicting the run) must fail
 * with exit 2 and needle first; then both checkpoints must be the same bytes.
 * flags should hold --warmup 100 so the schedule does not depend on --steps. */
void expect_resume_matches(const Env *e, const char *flags, const char *refused,
                           const char *needle);

/* 1 when the files a and b hold the same bytes (both must exist). */
int same_files(const char *a, const char *b);

/* A training log's lines without the settings line and the timings ("ms" in step
 * lines, the seconds of the final line), which alone may differ between thread
 * counts; the caller frees it. */
char *log_without_timings(const char *path);

/* Starts a very long TINY train on e->data into e->out and e->log in the
 * background, stderr and stdout in errpath; returns its pid once it has printed
 * its first step (so its signal handlers are installed). */
pid_t start_train(const Env *e, const char *errpath);

#endif
