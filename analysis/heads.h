/* heads: what each attention head does, measured from the attention weights
 * gpt_forward leaves in Activations.att ([L][B][H][T][T], causal rows).
 *
 * Row statistics (entropy, confidence, distance, previous-token, self,
 * first-position, delimiter and in-text repeat scores), the repeated random
 * probe (induction and duplicate-token scores), the Jensen-Shannon divergence
 * between heads and the effective number of distinct heads it implies, head
 * importance by ablation and by the gate gradient, the type each head gets, and
 * the relations (keys, attention on them, the probe alphabet; implemented in
 * heads_relations.c). Everything is on tokens: a position is a token, and
 * where bytes matter (delimiters, brackets, the probe alphabet) a token stands
 * for its piece, so a byte-level model gets exactly the byte-level numbers.
 * docs/heads.md gives every formula with its source.
 * Choosing windows, reading files, printing and writing reports are left to the
 * caller (infer_heads.c, report.c). Nothing here prints or exits; every sum
 * runs in a fixed order, so results do not depend on the thread count. */
#ifndef HEADCOUNT_HEADS_H
#define HEADCOUNT_HEADS_H

#include <stddef.h>
#include <stdint.h>

#include "data/synth.h"
#include "data/synth_relations.h"
#include "data/tokenizer.h"
#include "analysis/heads_metrics.h"
#include "model/gpt.h"
#include "util/rng.h"

/* Query rows i < heads_skip(T) are not scored: row i has only i + 1 keys, so the
 * first rows are peaked whatever the head does. */
#define HEADS_SKIP_ROWS 8
/* Number of repeated random probes averaged for the induction scores. */
#define HEADS_PROBES 8

/* Type thresholds (docs/heads.md, "Types"), checked in this order. */
#define HEADS_INDUCTION_MIN 0.30  /* induction score on the probe */
#define HEADS_COPY_MIN 0.30       /* mean attention on the in-text copy key */
#define HEADS_PREV_MIN 0.50       /* mean A[i][i-1] */
#define HEADS_BRACKET_MIN 0.30    /* mean attention on the open bracket's position */
#define HEADS_SINK_MIN 0.50       /* mean A[i][0] */
#define HEADS_DELIM_MIN 0.50      /* mass on delimiter keys, and at least */
#define HEADS_DELIM_LIFT 2.0      /*   this many times the share of delimiter keys */
#define HEADS_LOCAL_MAX 4.0       /* mean attention distance, in positions */
#define HEADS_BROAD_MIN 0.75      /* normalised entropy */

/* Relations (docs/heads.md, "Relations"): for query row i of a window, the key
 * a head that has learnt the relation attends to (for rare, a set of keys).
 * HeadsRelKind is a relation's index in heads_rel_table, which says everything
 * else about it; the text relations come first, then the planted ones, one per
 * PLANTED row of SYNTH_RELATIONS (data/synth_relations.h) in its order. */
#define HEADS_KIND_OF_PLANTED(KIND, ...) HEADS_REL_##KIND,
#define HEADS_KIND_OF_TEXT(KIND)
typedef enum {
    HEADS_REL_PREV,
    HEADS_REL_BRACKET,
    HEADS_REL_COPY,
    HEADS_REL_RARE,
    SYNTH_RELATIONS(HEADS_KIND_OF_PLANTED, HEADS_KIND_OF_TEXT)
    HEADS_REL_COUNT
} HeadsRelKind;
#undef HEADS_KIND_OF_PLANTED
#undef HEADS_KIND_OF_TEXT
/* The relations found in any text are those before the first planted one
 * (test_heads checks each row's .planted against this). */
#define HEADS_REL_TEXT (HEADS_REL_RARE + 1)
/* Tokens of context a copy row's earlier occurrence must share (docs/heads.md). */
#define HEADS_COPY_CONTEXT 3
/* A probe alphabet smaller than this falls back to the next rule (heads_probe_alphabet). */
#define HEADS_PROBE_MIN_ALPHABET 8
/* The bar of every relation but previous-token, whose bar is its head type's
 * threshold HEADS_PREV_MIN. */
#define HEADS_REL_BAR 0.30

/* How a relation's keys are found in a window of tokens. */
typedef enum {
    HEADS_KEY_PREV,    /* heads_keys_prev: the token before the query */
    HEADS_KEY_BRACKET, /* heads_keys_bracket: the opener of the closer after the query */
    HEADS_KEY_COPY,    /* heads_keys_copy: what followed the query's context earlier */
    HEADS_KEY_RARE,    /* heads_rare_keys: a set, the window's rarest earlier tokens */
    HEADS_KEY_PLANTED, /* planted_keys: the built-in corpus's list (data/synth.h) */
} HeadsKeyRule;

/* One relation: everything the programs, the report and the scripts know of it. */
typedef struct {
    /* Its one name: the key in summary.json, explore JSON and --heads-every's log,
     * the row in relations.csv and ablation.csv, the column in heads.csv,
     * heads.json and the page's tables. */
    const char *name;
    /* A head attends to the relation when its mean attention on the key is above
     * this (docs/heads.md, "Serves"). */
    double bar;
    /* 1: known only in text the built-in corpus's grammar writes (summary.json's
     * kind "planted"), 0: found in any text ("text"). */
    int planted;
    HeadsKeyRule key;
    /* The SynthRelKind whose planted instances give the relation's minimal pairs
     * (pairs_from_planted) and, for a planted relation, its keys; -1: none. */
    int synth;
    /* 1: the token the relation predicts repeats an earlier one, so its loss is
     * also compared with the loss at the first occurrence (loss_ratio). */
    int repeat;
    /* What its minimal pairs' wrong token is where the reports say it: NULL for
     * the form data/synth.h lists as the line's broken one. */
    const char *against;
    /* One sentence for a reader: which token is the query (the row whose next
     * token the relation predicts) and which is the key. */
    const char *about;
    /* How a reader names one pair in words (the explorer's chips): 0 by its query
     * and key ("sat → cat", "it → Apple"), 1 by its key and the word the key
     * decides, the query's next ("on → mat", "The → cat"), for the relations whose
     * query is only the token before that word. */
    int named_by_key;
} HeadsRelRow;

/* One row per relation, indexed by HeadsRelKind (heads_relations.c; a planted
 * relation's fields are its row of SYNTH_RELATIONS, data/synth_relations.h). */
extern const HeadsRelRow heads_rel_table[HEADS_REL_COUNT];

/* The relation a planted SynthRelKind is measured as (the row whose synth it is),
 * -1 for none. */
int heads_rel_of_synth(int synth_kind);

typedef enum {
    HEAD_INDUCTION,
    HEAD_COPY,
    HEAD_PREVIOUS,
    HEAD_BRACKET,
    HEAD_SINK,
    HEAD_DELIMITER,
    HEAD_LOCAL,
    HEAD_BROAD,
    HEAD_MIXED,
    HEAD_MASKED,
    HEAD_TYPES
} HeadType;

/* "induction", "copy", "previous-token", "bracket", "first-position",
 * "delimiter", "local", "broad", "mixed", "masked". */
extern const char *const heads_type_names[HEAD_TYPES];

/* Everything measured about one head. Row means are over text windows, probe
 * scores over the repeated random probes. The metrics (entropy ... jsd_nearest,
 * each a double) are HEADS_METRICS' rows (analysis/heads_metrics.h, which says
 * what each one is); the rest follows. */
typedef struct {
    HEADS_METRICS(HEADS_METRIC_FIELD)
    double rel[HEADS_REL_COUNT]; /* mean attention on each relation's key (0: no rows) */
    int nearest;           /* that head, as l*H + h; -1 when there is none */
    int masked;            /* silenced by the caller's head mask */
    int closed;            /* its learned gate is 0 (model/gates.h): the model itself
                            * silences it, so it attends to and serves nothing */
    int costed;            /* cost[] was measured (analysis/pairs.h) */
    double cost[HEADS_REL_COUNT]; /* share of each relation's logit difference (or loss,
                                   * pairs_cost) its silencing alone takes away */
    HeadType type;
} HeadStats;

/* Sums of row statistics for one head, over any number of windows: one per
 * metric (those heads_finish does not divide stay 0) and the counts they are
 * divided by. */
typedef struct {
    HEADS_METRICS(HEADS_METRIC_FIELD)
    double rows, repeat_rows, probe_rows;
    double rel[HEADS_REL_COUNT], rel_rows[HEADS_REL_COUNT];
} HeadSums;

/* The per-relation sums that do not depend on the head. */
typedef struct {
    double rows;        /* scored query rows with a key */
    double uniform;     /* sum of 1 / (i + 1): a uniform head's attention on the key */
    double loss;        /* sum of the loss at those rows (predicting token i + 1) */
    double loss_rows;
    double pairs;       /* rows with a first occurrence (copy, names) */
    double pair_loss;   /* their loss */
    double first_loss;  /* the loss at their first occurrences */
} RelationSums;

/* One relation, measured: the best head and what it and the model score. */
typedef struct {
    int best;           /* l*H + h of the active head with the largest attention; -1: no rows */
    double attention;   /* its mean attention on the key */
    double uniform;     /* mean 1 / (i + 1) over the same rows */
    double loss;        /* mean loss on the tokens the relation predicts (nats) */
    double loss_ratio;  /* copy, names: pair_loss / first_loss; 0 without pairs */
    double first_loss;  /* mean loss at the first occurrences */
    double rows, pairs;
} HeadsRelation;

/* The first scored query row for windows of T positions: min(8, T/4), at least 1. */
int heads_skip(int T);

/* Head h of layer l, batch row b, in activations filled by a forward over
 * windows of T positions: a [T][T] matrix, row i valid for j <= i. */
const float *heads_att(const Activations *a, int l, int b, int h, int T);

/* 1 for whitespace and ASCII punctuation bytes. */
int heads_is_delim(unsigned char byte);
/* 1 when every byte of token id's piece is one heads_is_delim accepts: the
 * delimiter keys (" ", ".\n" are; " the", "a." are not). */
int heads_token_is_delim(const Tokenizer *tok, int id);

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

/* key[b][i] = i - 1 for i >= 1, else -1. */
void heads_keys_prev(int *key, int B, int T);

/* For windows tokens[B][T]: key[b][i] = the token holding the opener that a
 * closer in token i + 1 closes, else -1. The pieces' bytes are read in order:
 * ( [ { pair with ) ] }; a '"' closes an open '"' on top of the stack and opens
 * one otherwise; a closer that does not match the top is ignored; a newline
 * empties the stack (brackets are matched within a line). When token i + 1
 * closes several, its first closer counts; a closer whose opener is in its own
 * token gives no row. At byte level: the byte before a closer, keyed on its
 * opener. */
void heads_keys_bracket(int *key, const int *tokens, const Tokenizer *tok, int B, int T);

/* For windows tokens[B][T] (any ids; only equality counts): a copy row i
 * (i <= T - 2) is one whose last HEADS_COPY_CONTEXT tokens occurred earlier in
 * the window, ending at j <= i - 3, and for the last such j, x[j + 1] == x[i + 1]
 * != x[i - 1] (a token equal to the one before i is a previous-token head's):
 * key[b][i] = j + 1. Its first[b][i] is the row f where those context tokens
 * followed by x[i + 1] first occur in the window (the same prediction with
 * nothing to copy from); -1 elsewhere in both. */
void heads_keys_copy(int *key, int *first, const int *tokens, int B, int T);

/* Relation q's keys in windows tokens[B][T] by its row's key rule, for the rules
 * a window alone decides (HEADS_KEY_PREV, _BRACKET, _COPY; first[B][T] is
 * filled for copy): 1. 0 and nothing written for the others, whose keys come
 * from heads_add_rare (rare) or planted_keys (planted). */
int heads_keys_find(int *key, int *first, int q, const int *tokens, const Tokenizer *tok, int B,
                    int T);

/* The token holding byte b of a text whose token t holds bytes
 * [start[t], start[t + 1]): the last t < nids with start[t] <= b. */
size_t heads_token_at(const size_t *start, size_t nids, size_t b);

/* The planted relations of the built-in corpus (rel[0..n),
 * byte positions in the corpus, in order of query) moved onto the tokens of a
 * text that is the corpus from byte `at` on, token t holding the text's bytes
 * [start[t], start[t + 1]) (start[0] = 0, start[nids] = its length). Bracket
 * relations, and relations with a byte outside the text, are skipped. A kept
 * relation's query row is the token before the one holding byte query + 1 (the
 * row that predicts that byte), or before the one holding byte query when that
 * token also holds the start of the relation's form (the word the key decides,
 * chosen whole with the token: " cat", not " cats") and byte query + 1 lies in
 * the next; its key is the token holding byte key; one
 * whose key token is not before that row (key and query fall in one token) is
 * dropped and counted in *dropped. At byte level every relation is kept
 * unchanged but for the shift by `at`. Writes out (room for n) in order of
 * query and returns the count. */
size_t heads_planted_to_tokens(SynthRelation *out, size_t *dropped, const SynthRelation *rel,
                               size_t n, size_t at, const size_t *start, size_t nids);

/* Adds relation `kind` over B windows: into sums[k].rel[kind] every head's
 * attention A[i][key[i]] for the scored rows i >= heads_skip(T) with key[i] >= 0,
 * and into *rs the uniform baseline and, when losses[B][T] (the per-position
 * loss of gpt_forward) is given, the loss at those rows and at first[i]
 * (first may be NULL). */
void heads_add_relation(HeadSums *sums, RelationSums *rs, int kind, const Activations *a,
                        const int *key, const int *first, const float *losses, int B, int T);

/* counts[V] = the number of times each token id occurs in ids[n] (ids >= V are
 * not counted): the training text's unigram counts for the rare relation. */
void heads_token_counts(uint64_t *counts, const TokenId *ids, size_t n, int V);

/* The rare relation's key sets for windows tokens[B][T], as thresholds: for
 * i >= 2, minc[b][i] = min over j <= i - 2 of counts[tokens[b][j]], and row i's
 * key set R(i) is every j <= i - 2 whose token has that count (ties all in);
 * UINT64_MAX for i < 2 (no key). Returns nothing; writes minc[B*T]. */
void heads_rare_min(uint64_t *minc, const int *tokens, const uint64_t *counts, int B, int T);

/* |R(i)| for row i of one window x[T] (0 when i < 2): the positions j <= i - 2
 * with counts[x[j]] == minc_i; when in_set is not NULL, in_set[j] = 1 for them
 * and 0 for every other j < T. */
int heads_rare_keys(unsigned char *in_set, const int *x, int i, int T, const uint64_t *counts,
                    uint64_t minc_i);

/* The first row the rare relation scores: max(2, heads_skip(T)) (a key set
 * needs i >= 2). */
int heads_rare_first_row(int T);

/* Adds the rare relation over B windows tokens[B][T]: into sums[k].rel[HEADS_REL_RARE]
 * every head's attention mass on R(i) for the scored rows i >= max(2, heads_skip(T)),
 * and into *rs the rows, the uniform baseline |R(i)| / (i + 1) and, when
 * losses[B][T] and targets[B][T] are given, the loss at the rows whose target
 * token is a token of R(i) (the rare token comes back) into loss and loss_rows.
 * -1 when out of memory (nothing added). */
int heads_add_rare(HeadSums *sums, RelationSums *rs, const Activations *a, const int *tokens,
                   const int *targets, const uint64_t *counts, const float *losses, int B,
                   int T);

/* Head s attends to relation q: it is neither masked nor closed and
 * s->rel[q] > heads_rel_table[q].bar. */
int heads_attends(const HeadStats *s, int q);
/* Head s is needed for relation q: it is neither masked nor closed, and its cost
 * was measured and is at least HEADS_NEEDED_SHARE (analysis/pairs.h). */
int heads_needed(const HeadStats *s, int q);
/* Head s serves relation q: it attends and it is needed. */
int heads_serves(const HeadStats *s, int q);

/* A head's role (docs/heads.md, "Types"): the relation it serves with the
 * largest mean attention on the key, ties to the lower relation, or -1 when it
 * serves none. */
int heads_role_relation(const HeadStats *s);
/* The role's name: that relation's (heads_rel_table), else the head's type
 * (heads_type_names), so a "broad" head that serves agreement is "agreement". */
const char *heads_role(const HeadStats *s);

/* The clearest serving head of st[n]: the one whose role relation
 * (heads_role_relation) has the largest mean attention on its key, ties to the
 * lower head; *rel receives that relation. -1 (and *rel = -1) when no head
 * serves any relation. */
int heads_clearest(const HeadStats *st, int n, int *rel);

/* Relation `kind` from the finished st[n] (heads_finish) and its sums: the best
 * head is the one neither masked nor closed with the largest st[k].rel[kind],
 * ties to the lower index; -1 when the relation has no rows or every head is
 * masked or closed. */
void heads_relation_finish(HeadsRelation *r, const HeadStats *st, const RelationSums *rs,
                           int kind, int n);
/* The best head a reader is told of: r->best when it attends to the key more than
 * a uniform head would (attention > uniform), else -1, which the reports print as
 * "none" (or "-" when the relation has no rows). */
int heads_relation_named(const HeadsRelation *r);

/* The probe alphabet, as token ids in ascending order into alpha (room for
 * tok->V; returns the count; *rule receives the number of the rule that chose
 * it). A word token is one whose piece is ASCII letters, optionally after one
 * leading space ("a", "the", " cat"; at byte level, a letter).
 * 1. the word tokens that are the predicted token of a copy row (copy_key >= 0
 *    at row i, token tokens[i + 1]) in windows tokens[nwin][T];
 * 2. fewer than HEADS_PROBE_MIN_ALPHABET: every word token in those windows;
 * 3. still fewer: every token in them whose piece holds no '\n';
 * 4. still fewer: every token of the vocabulary with no '\n' (all of them when
 *    that leaves none). */
int heads_probe_alphabet(int *alpha, int *rule, const int *tokens, const int *copy_key,
                         int nwin, int T, const Tokenizer *tok);

/* Writes one probe into tokens[2P]: P distinct tokens drawn from alpha[0..n),
 * then the same P again; pool is scratch for n ints. Returns P = min(T / 2, n)
 * (T >= 2, n >= 1). */
int heads_probe_build(int *tokens, int T, const int *alpha, int n, int *pool, Rng *rng);

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

/* Metric m of head s (HEADS_M_...). */
double heads_metric(const HeadStats *s, int m);

/* One row of HEADS_METRICS (analysis/heads_metrics.h), for the programs that list
 * the metrics: its field's name and offset in HeadStats, and the row's words. */
typedef struct {
    const char *name;
    size_t offset;          /* of the double in HeadStats */
    const char *legend, *col, *fmt;
    int pct;
    const char *col_legend;
    int explore, log;
} HeadsMetricRow;
extern const HeadsMetricRow heads_metric_table[HEADS_METRIC_COUNT];

/* The metric at place `place` (1 first) of a listing whose places the rows give
 * in .explore or .log (which: offsetof(HeadsMetricRow, explore) or
 * offsetof(HeadsMetricRow, log)); -1 past the last. */
int heads_metric_at(size_t which, int place);

#endif
