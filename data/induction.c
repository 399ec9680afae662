/* induction: the induction-task generator (see induction.h and docs/induction.md).
 *
 * Lines are drawn one at a time from one Rng stream and copied into the caller's
 * buffer until it is full; a line never depends on how many bytes were asked
 * for, so a shorter request is a prefix of a longer one. Integer draws only, so
 * the bytes are the same on every machine. */
#include "data/induction.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/errbuf.h"
#include "util/hash.h"
#include "util/rng.h"

InductionSpec induction_default_spec(void)
{
    return (InductionSpec){.min_len = 8, .max_len = 24, .min_reps = 2, .max_reps = 3,
                           .period2_percent = 0, .period2_min = 8, .period2_max = 24};
}

static int check_range(const char *what, int lo, int hi, int min, int max, char *err,
                       size_t errlen)
{
    if (lo < min || hi > max || lo > hi)
        return err_set(err, errlen, "induction spec: %s is %d..%d, expected %d <= min <= max <= %d",
                       what, lo, hi, min, max);
    return 0;
}

int induction_validate(const InductionSpec *s, char *err, size_t errlen)
{
    if (check_range("string length", s->min_len, s->max_len, 1, INDUCTION_MAX_LEN, err, errlen) ||
        check_range("copies", s->min_reps, s->max_reps, 1, 100, err, errlen) ||
        check_range("period-2 share (percent)", s->period2_percent, s->period2_percent, 0, 100,
                    err, errlen))
        return -1;
    if (s->period2_percent > 0 &&
        check_range("period-2 length", s->period2_min, s->period2_max, 2, 1000, err, errlen))
        return -1;
    return 0;
}

static int uniform_in(Rng *rng, int lo, int hi)
{
    return lo + (int)rng_below(rng, (uint64_t)(hi - lo + 1));
}

/* One line into line[] / back[] (both large enough); returns its length. */
static size_t draw_line(Rng *rng, const InductionSpec *s, char *line, uint8_t *back)
{
    size_t n = 0;
    if (s->period2_percent > 0 && (int)rng_below(rng, 100) < s->period2_percent) {
        char a = (char)('a' + rng_below(rng, 26));
        char b = (char)('a' + rng_below(rng, 25));
        if (b >= a)
            b++; /* two different letters */
        int len = uniform_in(rng, s->period2_min, s->period2_max);
        for (int i = 0; i < len; i++, n++) {
            line[n] = i % 2 ? b : a;
            back[n] = INDUCTION_BACK_NONE;
        }
    } else {
        int len = uniform_in(rng, s->min_len, s->max_len);
        int reps = uniform_in(rng, s->min_reps, s->max_reps);
        for (int i = 0; i < len; i++, n++) {
            line[n] = (char)('a' + rng_below(rng, 26));
            back[n] = INDUCTION_BACK_FIRST;
        }
        for (int r = 1; r < reps; r++)
            for (int i = 0; i < len; i++, n++) {
                line[n] = line[i];
                back[n] = (uint8_t)len;
            }
    }
    line[n] = '\n';
    back[n] = INDUCTION_BACK_NONE;
    return n + 1;
}

int induction_generate(char *buf, uint8_t *back, size_t nbytes, uint64_t seed,
                       const InductionSpec *spec, char *err, size_t errlen)
{
    if (induction_validate(spec, err, errlen))
        return -1;
    size_t cap = (size_t)spec->max_len * (size_t)spec->max_reps;
    if ((size_t)spec->period2_max > cap)
        cap = (size_t)spec->period2_max;
    cap += 1;
    char *line = malloc(cap);
    uint8_t *lback = malloc(cap);
    if (!line || !lback) {
        free(line);
        free(lback);
        return err_set(err, errlen, "induction corpus: out of memory for a %zu-byte line", cap);
    }
    Rng rng;
    rng_init(&rng, seed, RNG_STREAM_CORPUS);
    for (size_t at = 0; at < nbytes;) {
        size_t len = draw_line(&rng, spec, line, lback);
        size_t take = len < nbytes - at ? len : nbytes - at;
        memcpy(buf + at, line, take);
        if (back)
            memcpy(back + at, lback, take);
        at += take;
    }
    free(line);
    free(lback);
    return 0;
}

int induction_textfile(TextFile *f, size_t nbytes, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->bytes = malloc(nbytes ? nbytes : 1);
    if (!f->bytes)
        return err_set(err, errlen, "out of memory generating the induction corpus");
    InductionSpec spec = induction_default_spec();
    if (induction_generate((char *)f->bytes, NULL, nbytes, INDUCTION_CORPUS_SEED, &spec, err,
                           errlen)) {
        textfile_free(f);
        return -1;
    }
    f->n = nbytes;
    f->hash = hash_fnv1a(HASH_FNV_INIT, f->bytes, nbytes);
    snprintf(f->name, sizeof f->name, "%s", INDUCTION_CORPUS_NAME);
    return 0;
}

void induction_copy_loss(const uint8_t *back, size_t start, size_t n, int T,
                         const float *token_loss, double *first, size_t *n_first,
                         double *repeat, size_t *n_repeat)
{
    double sf = 0.0, sr = 0.0;
    size_t nf = 0, nr = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        size_t t = start + i + 1;           /* the predicted byte */
        size_t seen = start + (i / (size_t)T) * (size_t)T; /* its window's first byte */
        uint8_t b = back[t];
        if (b == INDUCTION_BACK_FIRST) {
            sf += token_loss[i];
            nf++;
        } else if (b != INDUCTION_BACK_NONE && t - b >= seen) {
            sr += token_loss[i];
            nr++;
        }
    }
    *first = nf ? sf / (double)nf : NAN;
    *repeat = nr ? sr / (double)nr : NAN;
    *n_first = nf;
    *n_repeat = nr;
}
