/* heads: what each attention head does, measured from the attention weights
 * gpt_forward leaves in Activations.att ([L][B][H][T][T], causal rows).
 *
 * Row statistics (entropy, confidence, distance, previous-token, self,
 * first-position, delimiter and in-text repeat scores), the repeated random
 * probe (induction and duplicate-token scores), the Jensen-Shannon divergence
 * between heads and the effective number of distinct heads it implies, head
 * importance by ablation and by the gate gradient, and the type each head gets.
 * docs/heads.md gives every formula with its source. Choosing windows, reading
 * files, printing and writing reports are left to the caller (infer_heads.c,
 * report.c). Nothing here prints or exits; every sum runs in a fixed order, so
 * results do not depend on the thread count. */
#ifndef HEADCOUNT_HEADS_H
#define HEADCOUNT_HEADS_H

#include <stddef.h>

#include "gpt.h"
#include "rng.h"

/* Query rows i < heads_skip(T) are not scored: row i has only i + 1 keys, so the
 * first rows are peaked whatever the head does. */
#define HEADS_SKIP_ROWS 8
/* Number of repeated random probes averaged for the induction scores. */
#define HEADS_PROBES 8

/* Type thresholds (docs/heads.md, "Types"), checked in this order. */
#define HEADS_INDUCTION_MIN 0.30  /* induction score on the probe */
#define HEADS_PREV_MIN 0.50       /* mean A[i][i-1] */
#define HEADS_SINK_MIN 0.50       /* mean A[i][0] */
#define HEADS_DELIM_MIN 0.50      /* mass on delimiter keys, and at least */
#define HEADS_DELIM_LIFT 2.0      /*   this many times the share of delimiter keys */
#define HEADS_LOCAL_MAX 4.0       /* mean attention distance, in positions */
#define HEADS_BROAD_MIN 0.75      /* normalised entropy */

typedef enum {
    HEAD_INDUCTION,
    HEAD_PREVIOUS,
    HEAD_SINK,
    HEAD_DELIMITER,
    HEAD_LOCAL,
    HEAD_BROAD,
    HEAD_MIXED,
    HEAD_MASKED,
    HEAD_TYPES
} HeadType;

/* "induction", "previous-token", "first-position", "delimiter", "local",
 * "broad", "mixed", "masked". */
extern const char *const heads_type_names[HEAD_TYPES];

/* Everything measured about one head. Row means are over text windows, probe
 * scores over the repeated random probes. */
typedef struct {
    double entropy;        /* mean H(A[i,:]) / ln(i + 1), in [0, 1] */
    double confidence;     /* mean max_j A[i][j] */
    double distance;       /* mean sum_j A[i][j] (i - j), in positions */
    double prev;           /* mean A[i][i-1] */
    double self;           /* mean A[i][i] */
    double first;          /* mean A[i][0] */
    double delim;          /* mean attention mass on whitespace/punctuation keys */
    double repeat;         /* mean A[i][j+1], j the last earlier match of bytes i-1, i */
    double induction;      /* probe: attention to the token after the earlier copy */
    double duplicate;      /* probe: attention to the earlier copy itself */
    double delta_loss;     /* loss with this head silenced minus the base loss */
    double grad;           /* |sum_w dL_w/dxi| / windows (Michel et al., abs at the end) */
    double grad_window;    /* sum_w |dL_w/dxi| / windows (abs per window) */
    double jsd_layer;      /* mean JSD to the other heads of its layer (nats) */
    double jsd_nearest;    /* smallest JSD to any other head */
    int nearest;           /* that head, as l*H + h; -1 when there is none */
    int masked;            /* silenced by the caller's head mask */
    HeadType type;
} HeadStats;

/* Sums of row statistics for one head, over any number of windows. */
typedef struct {
    double entropy, confidence, distance, prev, self, first, delim, rows;
    double repeat, repeat_rows;
    double induction, duplicate, probe_rows;
} HeadSums;

/* The first scored query row for windows of T positions: min(8, T/4), at least 1. */
int heads_skip(int T);

/* Head h of layer l, batch row b, in activations filled by a forward over
 * windows of T positions: a [T][T] matrix, row i valid for j <= i. */
const float *heads_att(const Activations *a, int l, int b, int h, int T);

/* 1 for whitespace and ASCII punctuation bytes: the delimiter keys. */
int heads_is_delim(unsigned char byte);

/* For every window b of tokens[B][T], match[b][i] = j + 1 for the last j <= i - 3
 * with tokens[j-1..j] equal to tokens[i-1..i], or -1 when there is none (the
 * in-text induction target; j + 1 is never i - 1, a previous-token head's key). */
void heads_repeat_targets(int *match, const int *tokens, int B, int T);

/* Adds the row statistics of every head over a batch of B windows of T
 * positions into sums[L*H]: delim[B][T] flags delimiter keys, match[B][T] comes
 * from heads_repeat_targets (NULL: no repeat score). */
void heads_add_rows(HeadSums *sums, const Activations *a, const unsigned char *delim,
                    const int *match, int B, int T);

/* The share of delimiter keys in the scored rows of one window (what a uniform
 * head would score), as a sum over rows; *rows receives the number of rows. */
double heads_delim_share(const unsigned char *delim, int T, double *rows);

/* Writes one probe into tokens[2P]: P distinct tokens drawn from [0, V), then
 * the same P again. Returns P = min(T / 2, V) (T >= 2). */
int heads_probe_build(int *tokens, int T, int V, Rng *rng);

/* Adds the induction and duplicate scores of every head over B probes of 2P
 * positions (run through gpt_forward as a batch of B rows of T = 2P). */
void heads_add_probe(HeadSums *sums, const Activations *a, int B, int P);

/* Divides the sums into st[n] (n = L*H); fills the row and probe fields only. */
void heads_finish(HeadStats *st, const HeadSums *sums, int n);

/* Jensen-Shannon divergence (nats) of two distributions over n entries. */
double heads_jsd(const float *p, const float *q, int n);

/* Adds into jsd[n*n] (n = L*H, both triangles, zero diagonal) the JSD between
 * every pair of heads, summed over the scored rows of B windows of T positions.
 * -1 only when out of memory. */
int heads_add_jsd(double *jsd, const Activations *a, int B, int T, char *err, size_t errlen);

/* The effective number of distinct heads among the k heads idx[0..k) of the
 * mean-JSD matrix jsd[n*n]: exp of the entropy of the normalised eigenvalues of
 * S = 1 - JSD / ln 2 (negative eigenvalues count as 0). 1 for k identical heads,
 * k for k heads on disjoint keys. Fills *out; -1 only when out of memory. */
int heads_effective(double *out, const double *jsd, int n, const int *idx, int k,
                    char *err, size_t errlen);

/* Fills jsd_layer, jsd_nearest and nearest of st[L*H] from the mean-JSD matrix;
 * masked heads are left out of every comparison. */
void heads_redundancy(HeadStats *st, const double *jsd, int L, int H);

/* The type of a head from its scores and the corpus' delimiter share. */
HeadType heads_classify(const HeadStats *s, double delim_share);

/* The mean loss of windows inputs[n][T] -> targets[n][T] with the heads in
 * head_on (NULL: all) active, going through a's batch capacity; every token
 * counts once and the sum runs in order. */
double heads_loss(const Model *m, Activations *a, const int *inputs, const int *targets,
                  int n, int T, const unsigned char *head_on);

/* The gate gradient of every head (gpt.h, PassOptions.head_grad) over windows
 * inputs[n][T]: window by window, total[L*H] = |sum_w g_w| / n and
 * per_window[L*H] = sum_w |g_w| / n, g_w = d(mean loss of window w)/dxi.
 * a needs capacity for one window; m is only read. -1 when out of memory. */
int heads_gate_grad(double *total, double *per_window, const Model *m, Activations *a,
                    const int *inputs, const int *targets, int n, int T,
                    const unsigned char *head_on, char *err, size_t errlen);

/* Model-level numbers over n = L*H heads. */
typedef struct {
    int type_counts[HEAD_TYPES];
    int active;            /* heads not masked */
    double mean_entropy, mean_distance;   /* over active heads */
    double max_importance; /* largest delta_loss */
    int removable_1pct;    /* active heads whose removal raises the loss < 1% */
    double jsd_within, jsd_between;       /* mean JSD of pairs in one / two layers */
} HeadsSummary;

void heads_summarise(HeadsSummary *s, const HeadStats *st, const double *jsd, int L, int H,
                     double base_loss);

/* The cheap per-head numbers ./train --heads-every logs, from activations
 * after a forward over tokens[B][T]. out[(l*H + h) * HEADS_QUICK_COUNT + k]. */
enum {
    HEADS_QUICK_ENTROPY,
    HEADS_QUICK_PREV,
    HEADS_QUICK_FIRST,
    HEADS_QUICK_DISTANCE,
    HEADS_QUICK_REPEAT,
    HEADS_QUICK_COUNT
};
/* "entropy", "prev", "first", "distance", "repeat": JSON keys. */
extern const char *const heads_quick_names[HEADS_QUICK_COUNT];
/* -1 when out of memory (scratch of B*T ints). */
int heads_quick(float *out, const Activations *a, const int *tokens, int B, int T,
                char *err, size_t errlen);

#endif
