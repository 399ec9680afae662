/* progutil: helpers for the command-line tests of ./train and ./infer: a scratch
 * directory with a small generated data file, the one-error-line contract, the
 * checks every training option with a value gets (thread counts, resume, range,
 * evaluation), and a trainer started in the background for signal and lock
 * tests. Programs are run with tu_run (testutil.h). */
#ifndef HEADCOUNT_PROGUTIL_H
#define HEADCOUNT_PROGUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "trainer/ckpt.h"

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

/* The tests of a training option that takes a value (--head-dropout P,
 * --head-gates LAMBDA) share these. A run of them is TWO_BY_FOUR: 2 layers of 4
 * heads, C = 16, 12 steps with an evaluation every 6. */
#define TWO_BY_FOUR "--layers 2 --embd 16 --heads 4 --block 16 --batch 4 --eval-iters 2 " \
                    "--steps 12 --eval-every 6 --warmup 4"

/* train TWO_BY_FOUR extra on e->data into ckpt and log must succeed. */
void train_two_by_four(const Env *e, const char *ckpt, const char *log, const char *extra);

/* Four TWO_BY_FOUR runs into ck[i] and lg[i] (e->dir/r<i>.ckpt and .log): `on`
 * with 1 thread and with 2, `zero` (the option given 0) with 1, and no option
 * with 2. The thread counts must give the same checkpoint and the same log
 * (timings aside), `zero` the checkpoint of no option, and the first log's
 * settings record must hold `record`. The caller checks the rest on the files. */
void expect_option_threads(const Env *e, const char *on, const char *zero, const char *record,
                           char ck[4][400], char lg[4][400]);

/* expect_resume_matches(e, flags, refused, "<refused> contradicts the
 * checkpoint"), then the part run's checkpoint (e->dir/part.ckpt) loaded into
 * m, tok and ts, which must hold a training state; the caller frees m and tok. */
void expect_option_resumes(const Env *e, const char *flags, const char *refused, Model *m,
                           Tokenizer *tok, TrainState *ts);

/* train --data e->data '--<flag>=<bad[i]>' must fail for each of the n values
 * with a usage error holding needle, training and writing nothing. */
void refuse_values(const Env *e, const char *flag, const char *const *bad, size_t n,
                   const char *needle);

/* A TWO_BY_FOUR run with extra (into e->out and e->log), its validation split
 * dumped to val (len bytes: e->dir/val.txt), and ./infer --eval on the split must
 * print the run's own final val loss, to the digit. */
void expect_eval_matches_train(const Env *e, const char *extra, char *val, size_t len);

/* Starts a very long TINY train on e->data into e->out and e->log in the
 * background, stderr and stdout in errpath; returns its pid once it has printed
 * its first step (so its signal handlers are installed). */
pid_t start_train(const Env *e, const char *errpath);

#endif
