/* planted: the built-in corpus' planted relations (data/synth.h) on a text
 * being analysed: ./infer's --heads and --explore, and ./train's --heads-every.
 * It finds whether the text is a piece of the built-in corpus (synth_locate:
 * by the text's first line end, walking the generator, never holding the
 * corpus); if it is not, which of its sentences the corpus's grammar writes
 * (synth_parse: a user's own "The cat sat on the mat."). It lists the
 * relations on the text's tokens, with their minimal pairs, and gives each
 * window's query rows their keys. The generator is the one source of these
 * relations; the text relations (previous-token, bracket, copy, rare) are
 * analysis/heads' own. Nothing here prints or exits. */
#ifndef HEADCOUNT_PLANTED_H
#define HEADCOUNT_PLANTED_H

#include <stddef.h>

#include "analysis/heads.h"
#include "analysis/pairs.h"
#include "data/synth.h"
#include "data/tokenizer.h"

/* One sentence of the analysed text, as tokens [first, end) and as the bytes
 * [byte_first, byte_end) the parser read (0, 0 on a piece of the corpus):
 * understood when the corpus's grammar produced it, so its planted relations
 * are known. */
typedef struct {
    size_t first, end;
    int understood;
    size_t byte_first, byte_end;
} PlantedSentence;

typedef struct {
    int builtin;          /* the text is a piece of the built-in corpus */
    size_t parsed;        /* else: how many of its sentences the grammar parsed */
    size_t at;            /* the corpus byte it starts at */
    SynthRelation *rel;   /* [n] its planted relations on its tokens, in order of query */
    size_t n;
    size_t dropped;       /* relations left out: key and query fall in one token */
    MinimalPair *pair;    /* [npair] the relations' minimal pairs on its tokens, by row */
    size_t npair;
    size_t pairs_skipped; /* contrasts left out (pairs_from_planted says why) */
    PlantedSentence *sentence; /* [nsentence] the text's sentences, in order */
    size_t nsentence;
    char *text;           /* the text's bytes when it is not a piece of the corpus */
} Planted;

/* Fills p for the text ids[nids]. The corpus searched is the built-in corpus
 * of corpus_bytes bytes (the size a checkpoint trained on it records), or, when
 * corpus_bytes is 0, the SYNTH_DEFAULT_BYTES ./train generates. A piece of it gets builtin = 1 and the relations
 * synth_relations_in lists; any other text gets the relations of the
 * sentences synth_parse understands (parsed counts them). Either way they are
 * moved onto the tokens by heads_planted_to_tokens, with their minimal pairs
 * (pairs_from_planted).
 * 0, or -1 when out of memory (p is then safe to planted_free). */
int planted_find(Planted *p, const TokenId *ids, size_t nids, const Tokenizer *tok,
                 size_t corpus_bytes, char *err, size_t errlen);
void planted_free(Planted *p);

/* Sentence s of a text that is not a piece of the corpus, as the parser read
 * it without the spaces around it: its first byte and *len; NULL (*len 0) on a
 * piece of the corpus. */
const char *planted_sentence_text(const Planted *p, size_t s, size_t *len);

/* Why sentence s of a text that is not a piece of the corpus is not understood:
 * synth_why_text's line ("`purred`: not a verb the corpus knows; ...") into
 * buf, and 1; 0 (buf "") when the sentence is understood or the text is a
 * piece of the corpus. */
int planted_why(const Planted *p, size_t s, char *buf, size_t cap);

/* Whether the text's planted relations are known: it is a piece of the
 * built-in corpus, or the grammar understood at least one of its sentences. */
int planted_known(const Planted *p);

/* The keys of the planted relations for B windows of T tokens, window b
 * starting at text token lo + b * T: key[q][b * T + i] for every planted
 * relation q (>= HEADS_REL_TEXT), -1 where row i has none; for a repeat
 * relation (its row's .repeat: names) the first occurrence row first[q][.] is
 * key - 1 (the row that predicted the key token there) when it is in the window. When several relations give one query row,
 * the last (in byte order) is kept. *next is where the walk through p->rel
 * resumes: 0 for the first call, then windows must come in increasing order. */
void planted_keys(int *const *key, int *const *first, const Planted *p, size_t lo, int B, int T,
                  size_t *next);

/* The same for B windows of T tokens starting anywhere, window b at text token
 * starts[b] (./train --heads-every's batches): key[q][b * T + i] and first[q][.]
 * as planted_keys gives them for that window alone. */
void planted_keys_at(int *const *key, int *const *first, const Planted *p, const size_t *starts,
                     int B, int T);

#endif
