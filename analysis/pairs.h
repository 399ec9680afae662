/* pairs: what the model does with a relation, not only where its heads look
 * (docs/heads.md, "Minimal pairs" and "Needed heads").
 *
 * A minimal pair is a place in the text where the built-in corpus's grammar
 * says which of two tokens comes next: the right one (the text's own) and a
 * wrong one (the same line with the relation broken: the verb of the other
 * number, the other closer, the line's other noun...). The model gets it right
 * when its logit for the right token beats the wrong one's. The generator
 * knows every form (data/synth.h, SynthRelation.alt), so the pairs come from it:
 * the text's line and the same line with the wrong form are both encoded, and
 * the pair sits on the first token where the two encodings differ; the row
 * that predicts it has seen the same tokens in both. At byte level that is the
 * first differing byte. Names have no wrong form: their continuation is scored
 * against the model's most likely other token.
 *
 * Silencing a head (the way --mask does) and scoring the pairs again gives the
 * head's effect on each relation; the share of the relation's logit difference
 * it takes away is its cost, and a head is needed for a relation when that
 * share reaches HEADS_NEEDED_SHARE. Nothing here prints or exits; every sum runs
 * in a fixed order. */
#ifndef HEADCOUNT_PAIRS_H
#define HEADCOUNT_PAIRS_H

#include <stddef.h>

#include "analysis/heads.h"
#include "data/synth.h"
#include "data/tokenizer.h"
#include "model/gpt.h"

/* The sets of pairs: one per relation (HeadsRelKind; the text relations but
 * bracket have none), and coreference's second contrast. */
enum { PAIRS_COREF_CLASS = HEADS_REL_COUNT, PAIRS_SETS };

/* JSON key of set s: heads_rel_table[s].name, or "coreference-class". */
const char *pairs_set_name(int s);

/* A head is needed for a relation when silencing it alone takes away at least
 * this share of the relation's logit difference (of its loss, for relations
 * without pairs: the loss on the relation's tokens rises by this share). */
#define HEADS_NEEDED_SHARE 0.10
/* The needed set removes at least this share of the logit difference. */
#define HEADS_NEEDED_SET_SHARE 0.50

typedef struct {
    int set;            /* a relation (HeadsRelKind) or PAIRS_COREF_CLASS */
    size_t row;         /* the text token whose prediction is scored */
    size_t key;         /* the relation's key token, <= row */
    int right;          /* the token that comes next: the text's own, tokens[row + 1] */
    int wrong;          /* the broken line's token there; -1: the most likely token but right */
} MinimalPair;

/* The minimal pairs of the planted relations rel[0..n) (corpus byte positions,
 * as synth_relations_in lists them) of a text that is the corpus from byte
 * `at` on: text[nb] its bytes, ids[nids] its tokens, token t holding bytes
 * [start[t], start[t + 1]). For a text whose relations come from parsing its
 * sentences (synth_parse), at is 0 and sent[nsent] are the sentences: each
 * contrast is encoded over its sentence instead of its line (sent NULL: lines).
 * Writes at most cap pairs to out sorted by row (then set) and returns their
 * count; *skipped counts the contrasts left out because their key is not
 * before the scored row, their line is cut by the text's ends, or their line's
 * encoding does not match the text's tokens (it always does for a tokenizer
 * whose chunks start at a line start). cap = n * SYNTH_ALTS always suffices. A
 * names relation gives one pair per row. -1 when out of memory. */
long pairs_from_planted(MinimalPair *out, size_t cap, size_t *skipped, const SynthRelation *rel,
                        size_t n, size_t at, const unsigned char *text, size_t nb,
                        const TokenId *ids, const size_t *start, size_t nids,
                        const Tokenizer *tok, const SynthSentence *sent, size_t nsent);

/* Sums of one set's scores over the windows read. */
typedef struct {
    double pairs;     /* pairs scored */
    double correct;   /* pairs whose right token's logit beats the wrong one's */
    double diff;      /* sum of logit(right) - logit(wrong) */
    double loss;      /* sum of the loss at the pairs' rows (predicting the right token) */
} PairSums;

/* Adds the pairs scored by a forward (with targets, so a->losses is filled)
 * over B consecutive windows of T tokens, window b being text tokens
 * [lo + b*T, lo + (b+1)*T): a pair counts when its row is at position
 * i >= heads_skip(T) of a window that also holds its key. p[0..np) sorted by
 * row; *next is where the walk resumes (0 first; windows in increasing order). */
void pairs_add(PairSums sums[PAIRS_SETS], const Activations *a, const MinimalPair *p, size_t np,
               size_t lo, int B, int T, size_t *next);

/* The same for B windows starting anywhere, window b at text token starts[b]
 * (./train --heads-every's batches). */
void pairs_add_at(PairSums sums[PAIRS_SETS], const Activations *a, const MinimalPair *p,
                  size_t np, const size_t *starts, int B, int T);

/* One set, measured. */
typedef struct {
    double pairs;
    double accuracy;    /* share of pairs right; 0 without pairs */
    double logit_diff;  /* mean logit(right) - logit(wrong) */
    double loss;        /* mean loss at the pairs' rows */
} PairScore;

void pairs_finish(PairScore *out, const PairSums *s);

/* What a causal pass measures with some heads silenced: every pair set's score
 * and every relation's mean loss on its tokens (0 without rows). */
typedef struct {
    PairScore pair[PAIRS_SETS];
    double rel_loss[HEADS_REL_COUNT];
} CausalScore;

/* The most heads a needed set holds. */
#define NEEDED_SET_MAX 8

/* A relation's needed set: head[0..n) (l*H + h), silenced together, take away
 * `share` of its logit difference; reached: share >= HEADS_NEEDED_SET_SHARE. */
typedef struct {
    int n;
    int head[NEEDED_SET_MAX];
    double share;
    int reached;
} NeededSet;

/* The cost of silencing a head (or a set) for one relation: the share of the
 * base logit difference it takes away, (base - ablated) / base, when the
 * relation has pairs and a positive base difference; for a relation without
 * pairs, the share its loss on the relation's tokens rises by,
 * (ablated - base) / base (base_loss > 0); 0 when neither is defined. */
double pairs_cost(const PairScore *base, const PairScore *ablated, double base_loss,
                  double ablated_loss);

#endif
