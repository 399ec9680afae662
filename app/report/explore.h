/* explore: writes the files of `./infer --explore OUT.html`: one self-contained
 * HTML page (inline CSS and JavaScript, no network, no fonts) showing every
 * head's attention on one text, and optionally the same weights at full
 * precision as JSON (--explore-json) for other tools and for the browser test;
 * and the compare page, the same data for several models on one text.
 *
 * The page embeds each head's causal attention rows quantised to one byte
 * (q = round(255 w), so a shown weight is within 1/510 of the float) and
 * base64-encoded: 64 heads at T = 256 take about 2.8 MB. The page's code is
 * explore_page.html, embedded at build time (Makefile: explore_page.c). The
 * numbers come from the caller (infer_explore.c), which also opens, checks and
 * commits the files (fileguard.h); this file only formats them. */
#ifndef HEADCOUNT_EXPLORE_H
#define HEADCOUNT_EXPLORE_H

#include <stddef.h>
#include <stdio.h>

#include "data/tokenizer.h"
#include "model/config.h"
#include "analysis/heads.h"
#include "analysis/pairs.h"
#include "analysis/planted.h"

/* One gold dependency of a treebank sentence on the window (analysis/deps.h):
 * the later word (query) looks back at the earlier one (key). */
typedef struct {
    const char *label;            /* its DEPREL */
    int dir;                      /* DepsDir: DEPS_TO_HEAD or DEPS_TO_DEP */
    const char *dependent, *head; /* the two words' text */
    unsigned dependent_id, head_id; /* their CoNLL-U IDs */
    int query;                    /* the query row: the later word's last token */
    int key0, key1;               /* the earlier word's tokens [key0, key1] */
    const float *attn;            /* [L*H] each head's attention on the key word */
    int best;                     /* the head of most attention on it (ties: the lower) */
} ExploreGoldPair;

/* A relation (label and direction) of the sentence: its pairs' mean attention. */
typedef struct {
    const char *label;
    int dir;
    size_t pairs;
    int best;                     /* the head of highest mean attention (ties: the lower) */
    double attention;             /* its mean attention on the key word */
    double uniform;               /* a uniform head's mean (key tokens / row length) */
} ExploreGoldRelation;

/* The gold tree of the sentence shown (--text-file FILE.conllu): the window is
 * that sentence's, as --heads windows it. */
typedef struct {
    const char *file;
    size_t sentence;              /* 1-based */
    unsigned line;                /* its first line in the file */
    size_t words, roots, no_token; /* words; roots (no pair); pairs with a word of no token */
    const ExploreGoldPair *pair;
    size_t npair;
    const ExploreGoldRelation *rel;
    size_t nrel;
} ExploreGold;

typedef struct {
    const char *ckpt;             /* names shown on the page */
    const char *source;           /* where the text came from: a file, "--text", ... */
    Config cfg;
    int T;                        /* tokens shown (<= cfg.T) */
    const int *ids;               /* [T] token ids */
    const Tokenizer *tok;         /* their pieces and labels */
    size_t text_bytes;            /* bytes the user gave */
    size_t text_tokens;           /* the tokens they make (> T: the page says it was cut) */
    int from_end;                 /* the last T tokens are shown, else the first T */
    const float *att;             /* [L*H][T][T], row i valid for keys j <= i */
    const HeadStats *st;          /* [L*H]: scores on this text and the probes */
    int scored_rows;              /* query rows behind the row scores */
    double loss;                  /* mean next-token loss on the text (NAN: too short) */
    double delim_share;
    /* Every relation measured on the window (heads_relation_finish: the best
     * head, its attention, the uniform baseline, the loss), [HEADS_REL_COUNT];
     * causal: its minimal pairs (pair[q], and coreference's second contrast)
     * with every head on, NULL when the causal passes did not run. Written as
     * "relations" for the relations with keys on this text (rel_key). */
    const HeadsRelation *rel;
    const CausalScore *causal;
    /* The text's sentences and why one is not understood (analysis/planted.h),
     * in text tokens (NULL: none); the window shows text tokens [base, base + T). */
    const Planted *planted;
    size_t base;
    /* Each relation's ground-truth keys in the shown window, the ones --heads
     * scores (docs/explorer.md, "Relation view"): rel_key[q][i] is query row
     * i's key, -1 when it has none; the rare relation's rows have key sets,
     * rare_keys[i * T + j] = 1 for every key j of row i (rel_key[HEADS_REL_RARE]
     * is not read). rel_key[q] is NULL for a relation not known on this text:
     * the planted ones, unless builtin (the text is a piece of the built-in
     * corpus, or holds sentences its grammar parses: planted_known). */
    const int *rel_key[HEADS_REL_COUNT];
    const unsigned char *rare_keys;   /* [T][T] */
    int builtin;
    const float *log_alpha;       /* [L*H]: the head gates' log_alpha (model/gates.h), whose
                                     evaluation gate each head carries; NULL without gates */
    const ExploreGold *gold;      /* the sentence's gold dependencies; NULL: not a treebank */
    const unsigned char *routed;  /* [L][T][H]: a routed model's choices, 1 where token t's
                                     router chose head h; NULL for a plain model (written
                                     as "routed" only when set) */
} Explore;

/* The page (explore_page.html), split at its data marker: prefix, then the
 * DATA object, then the rest. Defined in the generated explore_page.c. */
extern const char explore_page[];

/* The gold-dependency view (explore_gold.js), written after the DATA object
 * only when Explore.gold is set, so that other pages stay as they were.
 * Defined in the generated explore_gold.c. */
extern const char explore_gold[];

/* Writes the page to f (the caller checks the writes and commits the file);
 * -1 only when the built-in page is broken. */
int explore_write_html(FILE *f, const Explore *e, char *err, size_t errlen);

/* The compare page (compare_page.html), split at the same data marker. */
extern const char compare_page[];

/* Writes the compare page of n models on one text to f: its DATA is
 * {"program", "source", "text_bytes", "models": [{"D": head size, "page": the
 * model's explorer page's DATA}, one per model in the order given]}
 * (docs/explorer.md). -1 as explore_write_html. */
int explore_write_compare(FILE *f, const Explore *const *es, int n, char *err, size_t errlen);

/* A piece's label is cut (whole symbols) to fit this many bytes with its NUL:
 * about 250 characters of text, far more than any token a page can show. */
#define EXPLORE_LABEL_MAX 1024

/* Writes {L, H, T, "tokens", "ids", "pieces", "heads", "builtin_corpus",
 * "relation_keys", a routed model's "routed", "attention":[L][H][T][i+1] floats},
 * and "gold" on a treebank sentence (docs/explorer.md) to f: tokens[t] is token
 * t's byte for a byte-level vocabulary, the array of its bytes for a byte-pair
 * one; pieces[t] its label (tok_label). */
void explore_write_json(FILE *f, const Explore *e);

#endif
