/* lexicon: the word table derived from WordNet 3.0 and wordfreq's frequencies
 * (data/lexicon.tsv, written by scripts/lexicon/derive.py; docs/corpus.md, "Where
 * the words come from"), as constant arrays. The build checks the table and turns
 * it into C (scripts/lexicon/lexicon_gen.c writes $(BUILD)/gen/lexicon_table.c,
 * which defines every symbol declared here) before it builds the library; no other
 * file defines them. Drawing words from the table is left to the corpus generator
 * (data/synth.c), which does not use it yet.
 *
 * One entry per (class, word), sorted by class in LEX_CLASSES order, then by
 * frequency falling, then by word; so class c is the slice
 * LEX_ENTRIES[LEX_CLASS_START[c] .. LEX_CLASS_START[c + 1]), its most common word
 * first. Every word is lowercase a-z. Within the open classes (noun, verb, adj)
 * a written form belongs to one entry only, and no open-class form is a
 * closed-class word: a form names its word and class. Closed-class words may
 * stand in two closed classes ("in": prep and particle; "her": det and pron). */
#ifndef HEADCOUNT_LEXICON_H
#define HEADCOUNT_LEXICON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The classes: id, the name in the table's first column. */
#define LEX_CLASSES(X) \
    X(NOUN, "noun") X(VERB, "verb") X(ADJ, "adj") X(DET, "det") X(PRON, "pron") \
    X(PREP, "prep") X(PARTICLE, "particle") X(CONJ, "conj")

typedef enum {
#define LEX_X_CLASS(id, name) LEX_##id,
    LEX_CLASSES(LEX_X_CLASS)
#undef LEX_X_CLASS
    LEX_CLASS_COUNT
} LexClass;

/* The tags of the table's fifth column: id, name, the classes that may carry it
 * (a bit per LexClass). What each means, and how derive.py decides it:
 *   noun: ANIMATE (most frequent sense in noun.person or noun.animal) with PERSON
 *     or ANIMAL; else INANIMATE with the lexicographer file of that sense:
 *     ARTIFACT, FOOD, OBJECT (natural objects), PLANT, SUBSTANCE, LOCATION.
 *     MASS: the plural is under 1/50 as frequent as the singular ("water").
 *   verb (from the generic frames of its common senses): INTRANS ("Somebody
 *     ----s"), TRANS (a direct object), OBJ_THING / OBJ_ANIMATE (what the object
 *     is), SUBJ_ANIMATE (no frame has a "Something" subject), SPEECH (first sense
 *     a verb of communication taking "that CLAUSE": say, tell, shout).
 *   adj: FITS_ANIMATE / FITS_THING (rough: the nouns in WordNet's examples, and
 *     links to feelings; see docs/corpus.md), ATTR_ONLY ("former": before a noun
 *     only), PRED_ONLY ("afraid": after "is" only).
 *   det: SG, PL (the numbers of noun it takes). pron: SUBJ, OBJ, SG, PL, FIRST,
 *     SECOND, THIRD, ANIMATE, INANIMATE. prep: PLACE (after any noun), PATH
 *     (after a verb of motion). conj: COORD, SUBORD. particle: none. */
#define LEX_IN(c) (1u << LEX_##c)
#define LEX_TAGS(X) \
    X(ANIMATE, "animate", LEX_IN(NOUN) | LEX_IN(PRON)) \
    X(INANIMATE, "inanimate", LEX_IN(NOUN) | LEX_IN(PRON)) \
    X(PERSON, "person", LEX_IN(NOUN)) \
    X(ANIMAL, "animal", LEX_IN(NOUN)) \
    X(ARTIFACT, "artifact", LEX_IN(NOUN)) \
    X(FOOD, "food", LEX_IN(NOUN)) \
    X(OBJECT, "object", LEX_IN(NOUN)) \
    X(PLANT, "plant", LEX_IN(NOUN)) \
    X(SUBSTANCE, "substance", LEX_IN(NOUN)) \
    X(LOCATION, "location", LEX_IN(NOUN)) \
    X(MASS, "mass", LEX_IN(NOUN)) \
    X(INTRANS, "intrans", LEX_IN(VERB)) \
    X(TRANS, "trans", LEX_IN(VERB)) \
    X(OBJ_THING, "obj_thing", LEX_IN(VERB)) \
    X(OBJ_ANIMATE, "obj_animate", LEX_IN(VERB)) \
    X(SUBJ_ANIMATE, "subj_animate", LEX_IN(VERB)) \
    X(SPEECH, "speech", LEX_IN(VERB)) \
    X(FITS_ANIMATE, "fits_animate", LEX_IN(ADJ)) \
    X(FITS_THING, "fits_thing", LEX_IN(ADJ)) \
    X(ATTR_ONLY, "attr_only", LEX_IN(ADJ)) \
    X(PRED_ONLY, "pred_only", LEX_IN(ADJ)) \
    X(SG, "sg", LEX_IN(DET) | LEX_IN(PRON)) \
    X(PL, "pl", LEX_IN(DET) | LEX_IN(PRON)) \
    X(SUBJ, "subj", LEX_IN(PRON)) \
    X(OBJ, "obj", LEX_IN(PRON)) \
    X(FIRST, "first", LEX_IN(PRON)) \
    X(SECOND, "second", LEX_IN(PRON)) \
    X(THIRD, "third", LEX_IN(PRON)) \
    X(PLACE, "place", LEX_IN(PREP)) \
    X(PATH, "path", LEX_IN(PREP)) \
    X(COORD, "coord", LEX_IN(CONJ)) \
    X(SUBORD, "subord", LEX_IN(CONJ))

enum {
#define LEX_X_BIT(id, name, classes) LEX_BIT_##id,
    LEX_TAGS(LEX_X_BIT)
#undef LEX_X_BIT
    LEX_TAG_COUNT
};
/* A tag's bit in LexEntry.tags: entry->tags & LEX_TAG(ANIMATE). */
#define LEX_TAG(id) (UINT64_C(1) << LEX_BIT_##id)

/* The least the build accepts: a table below one of these fails it. */
enum {
    LEX_MIN_NOUNS = 1000,
    LEX_MIN_ANIMATE = 200,
    LEX_MIN_INANIMATE = 500,
    LEX_MIN_VERBS = 300,
    LEX_MIN_INTRANS = 100,
    LEX_MIN_TRANS = 100,
    LEX_MIN_ADJS = 300,
    LEX_MIN_CLOSED = 4, /* each closed class */
    LEX_MAX_WORD = 31,  /* letters in a word or form */
};

typedef struct {
    const char *word;  /* noun: singular; verb: base, which is also the plural present */
    const char *form1; /* noun: plural; verb: third person singular present; else NULL */
    const char *form2; /* verb: past; else NULL */
    uint64_t tags;     /* LEX_TAG bits */
    uint32_t freq;     /* uses per 10^9 words of English (wordfreq), >= 1 */
} LexEntry;

extern const LexEntry LEX_ENTRIES[];
extern const size_t LEX_ENTRY_COUNT;
extern const size_t LEX_CLASS_START[LEX_CLASS_COUNT + 1];
extern const char *const LEX_CLASS_NAMES[LEX_CLASS_COUNT];
extern const char *const LEX_TAG_NAMES[LEX_TAG_COUNT];

/* Class c's entries, most frequent first; *n gets their count. */
static inline const LexEntry *lex_class_entries(LexClass c, size_t *n)
{
    *n = LEX_CLASS_START[c + 1] - LEX_CLASS_START[c];
    return LEX_ENTRIES + LEX_CLASS_START[c];
}

/* The entry of class c whose word (singular, base) is word, or NULL. */
static inline const LexEntry *lex_find(LexClass c, const char *word)
{
    size_t n;
    const LexEntry *e = lex_class_entries(c, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(e[i].word, word) == 0)
            return &e[i];
    return NULL;
}

#endif
