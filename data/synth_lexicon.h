/* synth_lexicon: the words the built-in corpus is made of (data/synth.c), by
 * class: animate nouns (subjects), things, present-tense verbs as {singular,
 * plural} pairs, past tenses, adjectives, determiners, prepositions, adverbs and
 * conjunctions. The sizes are part of the declarations, so the generator can
 * draw uniformly from each list and a list edited here without its size stops
 * the build. Internal to data/synth*.c. */
#ifndef HEADCOUNT_SYNTH_LEXICON_H
#define HEADCOUNT_SYNTH_LEXICON_H

typedef struct {
    const char *sg;
    const char *pl;
} WordPair;

extern const WordPair ANIMATE[31];
extern const WordPair THINGS[47];
extern const WordPair VERBS_INTRANS[20];
extern const WordPair VERBS_TRANS[23];
extern const char *const PAST_INTRANS[20];
extern const char *const PAST_TRANS[24];
extern const char *const PAST_SPEECH[4];
extern const char *const ADJS[42];
extern const char *const DETS_SG[5];
extern const char *const DETS_PL[7];
extern const char *const PREPS_PLACE[15];
extern const char *const PREPS_PATH[5];
extern const char *const ADVS_MID[8];
extern const char *const ADVS_END[11];
extern const char *const CONJS[4];
extern const WordPair COPULA;
/* Coreference lines (synth.c, gen_coref): animals and portable things that can stand
 * side by side, a property that fits only animals or only things, and what each
 * does afterwards. The properties occur in no other line, so the property alone
 * tells which of the two nouns "it" is. */
extern const char *const COREF_ANIMALS[10];
extern const char *const COREF_THINGS[12];
extern const char *const PROPS_ANIMAL[5];
extern const char *const PROPS_THING[5];
extern const char *const AFTER_ANIMAL[5];
extern const char *const AFTER_THING[4];
extern const char *const COREF_LINKS[5];
extern const char *const COREF_CONJS[3];

#endif
