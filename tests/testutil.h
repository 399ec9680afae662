/* testutil: shared helpers for the Criterion suite: seeded random tensors, the
 * central-difference gradient check, the corpus locator, and running the
 * binaries for command-line tests. */
#ifndef HEADCOUNT_TESTUTIL_H
#define HEADCOUNT_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/params.h"
#include "util/rng.h"

/* Parameters spread wider than the real init, drawn in table order from (seed,
 * stream 0): uniform +-0.3, LayerNorm weights uniform in [0.7, 1.3), so every
 * nonlinearity is exercised and distributions are far from uniform. */
void tu_spread_params(const ParamTable *t, float *params, uint64_t seed);

/* A float's bits and back (the bf16 suites compare and build values bit by bit). */
static inline uint32_t tu_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float tu_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Fills x[n] with uniform values in [lo, hi). */
void tu_fill(float *x, size_t n, Rng *rng, float lo, float hi);
float *tu_alloc_random(size_t n, Rng *rng, float lo, float hi);

/* The objective whose gradient is checked: evaluated at the current value of
 * the perturbed tensor, in double. */
typedef double (*TuObjective)(void *ctx);

/* Central differences f(x + h) - f(x - h) / 2h at `checks` indices of x (drawn
 * from rng, plus the index of the largest analytic entry), against analytic[].
 * An entry passes when |a - n| <= rtol |n| + atol * scale, scale = max |analytic|
 * over the tensor: float32 forwards leave noise of about 1e-7 * |f| / h in the
 * numeric value, which atol absorbs for entries far smaller than the largest.
 * Prints tensor, index, analytic and numeric on failure; returns the number of
 * failures. */
int tu_gradcheck(const char *name, float *x, const float *analytic, size_t n, TuObjective f,
                 void *ctx, double h, double rtol, double atol, int checks, Rng *rng);

/* Skips the calling test, saying why, when `python3` (the first on PATH, which the
 * scripts' tests run) cannot import the standard modules `modules` ("json, csv"). */
void tu_need_python(const char *modules);

/* Path of tiny Shakespeare beside the repository, or NULL when absent. */
const char *tu_shakespeare(void);

/* Directory of the train and infer programs under test: $HEADCOUNT_BIN, or ".". */
const char *tu_bin(void);

/* The one way the tests run a program: the printf-style shell command fmt..., run by
 * sh with core dumps off and OMP_WAIT_POLICY=passive exported (idle OpenMP threads
 * sleep instead of spinning on a shared machine), both streams of the whole command
 * captured into *out (malloc'd, NUL-terminated). Returns the exit status, or 128 +
 * the signal that ended it. The programs under test are "%s/train" and "%s/infer"
 * with tu_bin(). */
int tu_run(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A trained model for the command-line tests: dir (tu_tmpdir(name)), data.txt in it
 * (`bytes` of the built-in corpus drawn with `seed`) and m.ckpt, trained on it by
 * <bin>/train with `flags` (one thread, passive waiting); the training must succeed. */
typedef struct {
    char dir[256], data[320], ckpt[320];
} TuModel;
void tu_model(TuModel *m, const char *name, size_t bytes, unsigned long long seed,
              const char *flags);

/* A fresh empty scratch directory under build/test-tmp; returns its path. */
const char *tu_tmpdir(const char *name);

/* Writes n bytes to path; returns 0 on success. */
int tu_write_file(const char *path, const void *data, size_t n);
/* Number of entries of dir whose names start with prefix; the first one's path
 * (dir/name) goes to found when found is not NULL. */
int tu_find_prefix(const char *dir, const char *prefix, char *found, size_t len);

/* Reads a whole file (malloc'd, with a NUL after its n bytes) or NULL. */
unsigned char *tu_read_file(const char *path, size_t *n);
/* A file that must exist, as a NUL-terminated string (malloc'd). */
char *tu_read_text(const char *path);

#endif
