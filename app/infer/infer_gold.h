/* infer_gold: the explorer on a treebank sentence (`./infer --explore OUT.html
 * --text-file FILE.conllu [--sentence N]`). Reads the CoNLL-U file
 * (data/conllu.h), windows and aligns it as --heads does (analysis/deps.h:
 * deps_prepare, so a word's tokens and the pairs are the ones --heads scores),
 * hands the explorer the bytes of the chosen sentence's window, and, once the
 * explorer has run the model over them, fills explore.h's ExploreGold: each
 * gold dependency with every head's attention on its earlier word
 * (deps_pair_attention), and per relation the head of most mean attention.
 * Bad input (a malformed file, no such sentence, a sentence longer than the
 * context) fails with one line, exit 1 (cli_fail). */
#ifndef HEADCOUNT_INFER_GOLD_H
#define HEADCOUNT_INFER_GOLD_H

#include <stddef.h>

#include "analysis/deps.h"
#include "app/report/explore.h"
#include "data/conllu.h"
#include "data/tokenizer.h"

typedef struct {
    Conllu c;
    DepsData d;
    size_t s;                   /* the sentence, 0-based */
    const unsigned char *bytes; /* its window's bytes, in c.text */
    size_t nbytes;
    ExploreGold g;
    ExploreGoldPair *pair;      /* [npair] */
    ExploreGoldRelation *rel;   /* [npair] at most */
    char *words;                /* each pair's two words, NUL-terminated, one after another */
    float *attn;                /* [npair][L*H] */
} GoldTree;

/* Reads path and picks its sentence-th sentence (1-based) for a model of
 * context T tokenised by tok. */
void gold_tree_read(GoldTree *g, const char *path, long sentence, const Tokenizer *tok, int T);

/* Checks that the explorer's window e->ids is the sentence's window and fills
 * g->g from e->att; sets e->gold. */
void gold_tree_attach(GoldTree *g, Explore *e);

void gold_tree_free(GoldTree *g);

#endif
