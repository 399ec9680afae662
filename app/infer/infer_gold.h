/* infer_gold: the explorer on a treebank sentence (`./infer --explore OUT.html
 * --text-file FILE.conllu [--sentence N|TEXT]`). Reads the CoNLL-U file
 * (data/conllu.h), windows and aligns it as --heads does (analysis/deps.h:
 * deps_prepare, so a word's tokens and the pairs are the ones --heads scores),
 * hands the explorer the bytes of the chosen sentence's window, and, once the
 * explorer has run the model over them, fills explore.h's ExploreGold: each
 * gold dependency with every head's attention on its earlier word
 * (deps_pair_attention), and per relation the head of most mean attention.
 * Bad input (a malformed file, no such sentence, a sentence longer than the
 * context) fails with one line, exit 1 (cli_fail); a text no sentence has is
 * a usage error, exit 2. */
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
    size_t matches;             /* picked by text: the sentences whose text it is; else 0 */
    const unsigned char *bytes; /* its window's bytes, in c.text */
    size_t nbytes;
    ExploreGold g;
    ExploreGoldPair *pair;      /* [npair] */
    ExploreGoldRelation *rel;   /* [npair] at most */
    char *words;                /* each pair's two words, NUL-terminated, one after another */
    float *attn;                /* [npair][L*H] */
} GoldTree;

/* Reads path and picks a sentence for a model of context T tokenised by tok:
 * the sentence-th (1-based) when text is NULL, else the first whose text (its
 * `# text =` line, or its tokens joined: the sentence's bytes in Conllu.text)
 * is text once each run of white space is one space and the ends are trimmed,
 * and failing that the first that is so in another case (ASCII letters);
 * g->matches says how many matched. A text no sentence has is a usage error
 * (exit 2) naming the sentence that shares the most words with it; both are
 * decided before the file is tokenised. */
void gold_tree_read(GoldTree *g, const char *path, long sentence, const char *text,
                    const Tokenizer *tok, int T);

/* The bytes of text a message shows at most, and the room gold_show_text needs. */
#define GOLD_SHOWN_CUT 60
#define GOLD_SHOWN_MAX (GOLD_SHOWN_CUT + 6)

/* s[0..n) for a one-line message, in buf[GOLD_SHOWN_MAX]: each run of white
 * space one space, the ends trimmed, cut to GOLD_SHOWN_CUT bytes (never inside
 * a UTF-8 character) with "..." after a cut; in single quotes when quote. */
void gold_show_text(char *buf, const char *s, size_t n, int quote);

/* Checks that the explorer's window e->ids is the sentence's window and fills
 * g->g from e->att; sets e->gold. */
void gold_tree_attach(GoldTree *g, Explore *e);

void gold_tree_free(GoldTree *g);

#endif
