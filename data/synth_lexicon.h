/* synth_lexicon: the words the built-in corpus is made of (data/synth.c), by
 * class: animate nouns (subjects), things, present-tense verbs as {singular,
 * plural} pairs, past tenses, adjectives, determiners, prepositions, adverbs and
 * conjunctions. The sizes are part of the declarations, so the generator can
 * draw uniformly from each list and a list edited here without its size stops
 * the build. Internal to data/synth*.c. */
#ifndef HEADCOUNT_SYNTH_LEXICON_H
#define HEADCOUNT_SYNTH_LEXICON_H

#include <stddef.h>

#include "data/lexicon.h"

typedef struct {
    const char *sg;
    const char *pl;
} WordPair;

/* The hand-written nouns, verbs and adjectives, as lexicon entries
 * (synth_lexicon.c): HAND_CLASS_START[k] .. [k + 1] are the nouns (k = 0,
 * tagged animate or inanimate), the verbs (1: intrans, trans, speech) and the
 * adjectives (2). */
enum { HAND_CLASSES = 3, HAND_FREQ = 50000 };
extern const LexEntry HAND_ENTRIES[];
extern const size_t HAND_CLASS_START[HAND_CLASSES + 1];
extern const char *const ADJS_HYPHEN[4];
extern const char *const DETS_SG[5];
extern const char *const DETS_PL[11];
extern const char *const PREPS_PLACE[15];
extern const char *const PREPS_PATH[5];
extern const char *const ADVS_MID[8];
extern const char *const ADVS_END[11];
extern const char *const CONJS[4];
extern const WordPair COPULA;
extern const WordPair COPULA_NOT;
extern const WordPair DO_NOT;
extern const char *const DETS_POSS[6];
/* Coreference lines (synth.c, gen_coref): animals and portable things that can stand
 * side by side, a property that fits only animals or only things, and what each
 * does afterwards. Inside a coreference line the property alone tells which of
 * the two nouns "it" is (some of the words recur in other kinds: hungry, sleepy,
 * scared and sick as moods and pronoun properties, broken and cheap in pronoun
 * lines). */
extern const char *const COREF_ANIMALS[10];
extern const char *const COREF_THINGS[12];
extern const char *const PROPS_ANIMAL[5];
extern const char *const PROPS_THING[5];
extern const char *const AFTER_ANIMAL[5];
extern const char *const AFTER_THING[4];
extern const char *const COREF_LINKS[5];
extern const char *const COREF_CONJS[3];

/* Scene lines (synth.c, gen_scene). */
typedef struct {
    WordPair noun;
    const char *prep; /* the preposition this animal's places take */
} SceneAnimal;
enum { SCENE_MOOD_VERBS = 3, SCENE_PLACE_NOUNS = 6 };
typedef struct {
    const char *adj;
    const char *verbs[SCENE_MOOD_VERBS]; /* what an animal in this mood did */
} SceneMood;
typedef struct {
    const char *verb;
    const char *particle; /* "sat" -> "down" */
} SceneVerb;
typedef struct {
    const char *prep;
    const char *places[SCENE_PLACE_NOUNS];
} ScenePlace;
extern const SceneAnimal SCENE_ANIMALS[12];
extern const SceneMood SCENE_MOODS[4];
extern const SceneVerb SCENE_VERBS[17];
extern const ScenePlace SCENE_PLACES[6];
/* The adverbs a scene may put between its verb and the verb's particle ("The
 * cat sat slowly down."), so that on tokens the particle's verb is two back. */
extern const char *const SCENE_ADVS[2];

/* Pronoun lines (synth.c, gen_pronoun): nouns of one class, the words that
 * follow "it" for that class (with their leading space or apostrophe; two
 * forms, equal when the class has one) and the properties that come next. */
enum { PRONOUN_NOUNS = 7, PRONOUN_PROPS = 6 };
typedef struct {
    const char *nouns[PRONOUN_NOUNS];
    const char *after_it[2];
    const char *props[PRONOUN_PROPS];
} PronounClass;
extern const PronounClass PRONOUN_CLASSES[3];
extern const char *const PRONOUN_VERBS[7];
extern const char *const PRONOUN_OBJECT_ADJS[10];
extern const char *const PRONOUN_CONJS[3];
extern const char *const PRONOUN_PEOPLE[10];
extern const char *const PRONOUN_PERSON_DETS[8];

/* The SYNTH_* classes of the lowercase word[0..len) among the hand-written
 * lists above (synth_word_classes adds the lexicon's words), or 0. */
unsigned synth_hand_classes(const char *word, size_t len);

/* Calls fn once for every word of the hand-written lists and each of its
 * classes (a word in two lists is met twice). */
void synth_hand_each(void (*fn)(const char *word, unsigned cls, void *ctx), void *ctx);

#endif
