/* induction: the built-in induction corpus, a generated copying task.
 *
 * Every line is a random lowercase string written two or more times with nothing
 * between, then '\n' ("qzkfmwqzkfmw\n"). The first copy cannot be predicted; every
 * later letter can, by a head that finds the earlier occurrence of the current
 * letter and attends to the letter after it: an induction head. A share of lines
 * can instead be a period-2 pattern ("zyzyzyzy\n"), which rewards a head that
 * looks one byte back (the previous-token head an induction head is built on).
 * docs/induction.md gives the format, the recipe that trains on it and the numbers
 * behind it. This file generates bytes and, per byte, where its earlier copy is;
 * tokenising, batching and loss are left to data/corpus, data/batch and model/. */
#ifndef HEADCOUNT_INDUCTION_H
#define HEADCOUNT_INDUCTION_H

#include <stddef.h>
#include <stdint.h>

#include "data/corpus.h"

/* The built-in corpus: its name (what a checkpoint records as the data path), its
 * size and its fixed seed, so every user trains on the same text. */
#define INDUCTION_CORPUS_NAME "<built-in induction corpus>"
#define INDUCTION_DEFAULT_BYTES 1000000
#define INDUCTION_CORPUS_SEED 20261123u

/* Longest string a spec may ask for (so a distance fits in a byte). */
#define INDUCTION_MAX_LEN 200

/* The shape of the lines. Lengths count letters of one copy, without the '\n'. */
typedef struct {
    int min_len, max_len;   /* letters in the random string, uniform in [min, max] */
    int min_reps, max_reps; /* copies written, uniform in [min, max] */
    int period2_percent;    /* share of lines that are "abab..." instead, 0..100 */
    int period2_min, period2_max; /* letters in a period-2 line, uniform in [min, max] */
} InductionSpec;

/* The spec of the built-in corpus (docs/induction.md says why these numbers). */
InductionSpec induction_default_spec(void);

/* 0 if spec is usable, else -1 and a message naming the field and its range. */
int induction_validate(const InductionSpec *spec, char *err, size_t errlen);

/* What back[i] holds for a byte that is not a letter of a second or later copy. */
enum {
    INDUCTION_BACK_FIRST = 0,  /* a letter of a line's first copy: unpredictable */
    INDUCTION_BACK_NONE = 255  /* '\n' or a letter of a period-2 line */
};

/* Fills buf with exactly nbytes of lines drawn from spec (no NUL added) and, if
 * back is not NULL, back[i] with the distance from byte i to the same letter in
 * the previous copy (1..max_len) when byte i is a letter of a second or later
 * copy, else one of the INDUCTION_BACK_* values. Deterministic in (seed, spec): a
 * shorter nbytes gives a prefix of a longer one. Returns -1 (with a message) only
 * for an invalid spec. */
int induction_generate(char *buf, uint8_t *back, size_t nbytes, uint64_t seed,
                       const InductionSpec *spec, char *err, size_t errlen);

/* The built-in induction corpus, nbytes long, as a TextFile named
 * INDUCTION_CORPUS_NAME (the induction counterpart of textfile_builtin). */
int induction_textfile(TextFile *f, size_t nbytes, char *err, size_t errlen);

/* The copy loss of a model on the built-in corpus's bytes [start, start + n), as
 * eval_sequence scores them: token_loss[i] (i < n - 1) is the loss of predicting
 * byte start + i + 1, in window k = i / T, which sees bytes start + kT onwards.
 * back is the whole corpus's back array. Averages the loss over letters of a
 * first copy (*first) and over letters of a later copy whose earlier copy lies
 * in the same window (*repeat); *n_first and *n_repeat count them. A mean over
 * no bytes is NAN. */
void induction_copy_loss(const uint8_t *back, size_t start, size_t n, int T,
                         const float *token_loss, double *first, size_t *n_first,
                         double *repeat, size_t *n_repeat);

#endif
