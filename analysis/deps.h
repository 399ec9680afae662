/* deps: attention heads scored against gold dependency trees, relation by
 * relation, as Clark et al. 2019 ("What Does BERT Look At?") do for BERT, and
 * all relations at once as Vig & Belinkov 2019's dependency alignment does for
 * GPT-2 (DepsAlign below), on a causal model's tokens.
 *
 * The text is a CoNLL-U file's (data/conllu.h), encoded whole with the model's
 * tokenizer as ./train encodes it. Each sentence is one window: its tokens
 * after the newline that ends the sentence before it, run alone through the
 * model. A token belongs to the word its first byte is in, the spaces before a
 * word counting as the word's (so " cat" is cat's at any vocabulary, and a
 * byte-level model's space byte too); the newline before the sentence is no
 * word's, as BERT's [CLS] is none. A word may so have several tokens, or none
 * (a word inside a token that starts in the word before it).
 *
 * Each dependency (a word and its head; the root has none) is a pair seen by a
 * causal model from its later word, the query, looking back at its earlier
 * word, the key: dependent -> head when the head comes first, head ->
 * dependent when the dependent does. For each head of the model:
 *   - attention on a word = the sum of the query row's weights over the
 *     word's tokens, the row being the query word's last token (the first
 *     row that has read the whole word; Clark et al. average the rows of a
 *     split word, which in a causal model mixes rows that have not seen it);
 *   - a pair is right when the earlier word of most attention (ties: the first)
 *     is the key; accuracy = the share of pairs right.
 * The offset baseline predicts the word k back, for the k in 1..DEPS_MAX_OFFSET
 * right most often; a uniform head (every earlier token the same weight) picks
 * the earlier word of most tokens, so its accuracy is reported beside. The best head is the eligible head of highest accuracy
 * (ties: the lower index); it beats the baseline when its accuracy exceeds
 * the baseline's by more than the standard error of the paired difference,
 * sd(right_head - right_offset) / sqrt(pairs).
 * What the model loses without a head: the mean loss on the query words'
 * tokens (each predicted from the row before it: the tokens the relation can
 * help predict) with that head alone silenced, against the intact model, over
 * the first sentences holding up to causal_tokens tokens; cost = the relative
 * rise. docs/heads.md, "Gold dependencies", has it all with its reasons.
 * Nothing here prints or exits; sums run in the file's order, so results do not
 * depend on the thread count or the batching. Memory is linear in the file. */
#ifndef HEADCOUNT_DEPS_H
#define HEADCOUNT_DEPS_H

#include <stddef.h>
#include <stdint.h>

#include "data/conllu.h"
#include "data/tokenizer.h"
#include "model/gpt.h"

typedef enum { DEPS_TO_HEAD, DEPS_TO_DEP, DEPS_DIRS } DepsDir;
/* "dependent->head", "head->dependent": who looks back at whom. */
extern const char *const deps_dir_names[DEPS_DIRS];

/* The offsets the baseline tries: the word 1, 2, ... this many back. */
#define DEPS_MAX_OFFSET 32

typedef struct {
    uint32_t sent;        /* its sentence */
    uint32_t query, key;  /* words, 0-based in the sentence: query later, key earlier */
    uint32_t rel;         /* Conllu.rel_name index */
    uint8_t dir;          /* DepsDir */
} DepsPair;

/* The treebank on tokens: windows, each word's tokens, the pairs. */
typedef struct {
    const Conllu *c;
    TokenId *ids;          /* [nids] the text encoded whole */
    size_t nids;
    size_t *win0;          /* [nsent] a sentence's first token (after the newline) */
    uint32_t *wlen;        /* [nsent] tokens in its window, newline included; 0: not scored */
    int32_t *tok0, *tok1;  /* [nword] a word's first and last token in its window; -1: none */
    DepsPair *pair;        /* [npair], sentence after sentence */
    size_t npair;
    size_t *pair0;         /* [nsent + 1] sentence s's pairs are pair[pair0[s] .. pair0[s+1]) */
    int T;                 /* the longest window scored: the model's context */
    size_t roots;          /* words whose head is the root: no pair */
    size_t over_context;   /* sentences longer than T tokens, not scored */
    size_t pairs_over_context;  /* their dependencies */
    size_t pairs_no_token; /* dependencies with a word that has no token of its own */
} DepsData;

/* Encodes c's text with tok and builds the windows and pairs for a context of
 * T tokens. 0, or -1 with a message (a byte outside the tokenizer's alphabet,
 * memory). c must outlive d. */
int deps_prepare(DepsData *d, const Conllu *c, const Tokenizer *tok, int T, const char *name,
                 char *err, size_t errlen);
void deps_free(DepsData *d);

/* Pair pr's attention in one head's attention matrix A (rows of Tb, the
 * sentence's window from token 0): the query word's last token's weights
 * summed over the key word's tokens; *right (when not NULL) = 1 when the key is
 * the earlier word of most attention (ties: the first). What --heads scores
 * and the explorer's gold relations show. */
double deps_pair_attention(const DepsData *d, const DepsPair *pr, const float *A, int Tb,
                           int *right);

/* One relation in one direction. */
typedef struct {
    size_t pairs;
    double *acc;         /* [n] each head's accuracy */
    double *attn;        /* [n] each head's mean attention on the key word */
    int best;            /* the best eligible head; -1: none (no pairs or no eligible head) */
    int offset;          /* the baseline's k (0: no pairs) */
    double offset_acc;
    double uniform_acc;  /* what a head spreading its weight evenly scores: the earlier
                            word of most tokens (ties: the first) is the key */
    double se;           /* of the paired difference best - offset (0 under 2 pairs) */
    int beats;           /* acc[best] - offset_acc > se */
    size_t loss_pairs, loss_tokens; /* in the causal sentences */
    double loss;         /* mean loss on the query words' tokens, heads as given */
    double *cost;        /* [n] (loss with the head silenced - loss) / loss; 0 if not eligible */
} DepsScore;

/* Vig & Belinkov 2019's dependency alignment (their Eq. 4; deps_align.c,
 * docs/heads.md "Dependency alignment"): the share of a head's weight that
 * falls on keys whose word is in a dependency relation with the query's word
 * (either is the other's head; a word with itself is not), every token
 * carrying its word's label. Rows are the tokens with a word (all but the
 * newline that opens a window); keys are the tokens with a word at or before
 * the row, the window's first token left out (their filter of attention to
 * the first token, GPT-2's attention sink). */
#define DEPS_ALIGN_MAX_DIST 10 /* pairs in a relation are counted at distances 1..this */

/* One head's sums over the counted (row i, key j) of some windows. */
typedef struct {
    double weight;   /* sum of A[i][j] */
    double on_dep;   /* of it, on keys in a relation with the row's word */
    double dist;     /* sum of A[i][j] (i - j), tokens */
} DepsAlignSums;

typedef struct {
    int L, H;
    double *head;          /* [L * H] on_dep / weight; NAN: no weight counted */
    double *distance;      /* [L * H] the mean attention distance dist / weight; NAN likewise */
    double *layer_mean;    /* [L] the mean of its eligible heads' alignment; NAN: none */
    double *layer_pooled;  /* [L] its eligible heads' on_dep over their weight; NAN: none */
    int *layer_best;       /* [L] its eligible head of highest alignment (ties: the lower); -1 */
    double uniform;        /* what a uniform head (row i: 1/(i+1) on each key) scores */
    size_t token_pairs, token_pairs_dep; /* every counted (i, j), those in a relation */
    double pair_share;     /* token_pairs_dep / token_pairs; NAN: none */
    /* [k] pairs at distance k (tokens: counted (i, i-k); words: the scored
     * sentences' words q, q-k) and those in a relation, k in 1..DEPS_ALIGN_MAX_DIST */
    size_t tok_at[DEPS_ALIGN_MAX_DIST + 1], tok_dep_at[DEPS_ALIGN_MAX_DIST + 1];
    size_t word_at[DEPS_ALIGN_MAX_DIST + 1], word_dep_at[DEPS_ALIGN_MAX_DIST + 1];
    double r;              /* Pearson r over the eligible heads with weight of distance
                              against alignment; NAN: under 2 heads or no spread */
} DepsAlign;

/* Adds one head's attention A (rows of Tb, sentence s's window from token 0)
 * into *sum. */
void deps_align_window(const DepsData *d, size_t s, const float *A, int Tb, DepsAlignSums *sum);

/* The alignment of L * H heads from sums[nsent][L * H] (each scored
 * sentence's, from deps_align_window; zeros for the others), added in the
 * file's order, and the treebank's pair counts. eligible (NULL: all): the heads
 * the layers' values and r take. 0, or -1 (memory). */
int deps_align_finish(DepsAlign *al, const DepsData *d, const DepsAlignSums *sums, int L, int H,
                      const unsigned char *eligible);
void deps_align_free(DepsAlign *al);

typedef struct {
    int n;               /* heads, L * H */
    size_t nrel;         /* the file's relations, then "all" */
    const char *const *rel_name; /* [nrel - 1] (the last is "all") */
    DepsScore *score;    /* [nrel][DEPS_DIRS] */
    size_t sentences, scored, causal_sentences, causal_tokens;
    size_t pairs, roots, over_context, pairs_over_context, pairs_no_token;
    int T;
    DepsAlign align;     /* Vig & Belinkov's dependency alignment */
} DepsResult;

/* The name of relation r of res ("all" for the last). */
const char *deps_rel_name(const DepsResult *res, size_t r);

/* Runs the model over d's windows with the heads in head_on (NULL: all) and,
 * for the first sentences holding up to causal_tokens tokens, once more per
 * eligible head with it silenced too. eligible[n]: the heads that may be best
 * and are ablated (not masked, not closed). 0, or -1 with a message. */
int deps_measure(DepsResult *res, const DepsData *d, const Model *m, const unsigned char *head_on,
                 const unsigned char *eligible, size_t causal_tokens, char *err, size_t errlen);
void deps_result_free(DepsResult *res);

/* 1 when head k serves the relation in the project's sense (docs/heads.md,
 * "Serves"): it attends to the partner word above the relations' bar
 * (HEADS_REL_BAR, analysis/heads.h) and silencing it alone raises the loss on
 * the later words by at least HEADS_NEEDED_SHARE (analysis/pairs.h). */
int deps_serves(const DepsScore *sc, int k);

#endif
