/* synth: the built-in training corpus, generated rather than downloaded.
 *
 * Writes a deterministic, printable-ASCII, English-like text from the lexicon
 * (data/lexicon.h: WordNet 3.0 words, drawn by frequency) and hand lists,
 * one sentence per line, with ordinary typography (it's, 2 cats, '?', '!', ':',
 * ';', well-fed), in which relations that attention heads are known to learn are
 * planted on purpose: local spelling and word order, a determiner and its noun,
 * subject-verb agreement across a varying distance, brackets and quotes that must
 * be closed, made-up names that are repeated later in the same line (copy /
 * induction), a noun named again that only a property picks (coreference), the
 * documents' scenes ("The tired cat slept on the warm mat.": subject and verb,
 * mood and verb, verb and particle, preposition and place) and pronouns ("Apple
 * released a new phone because it is tasty."), and sounds that repeat one random
 * syllable ("kokoko"), in which every byte past the second is the one two back:
 * only a previous-token head predicts them. synth_parse runs the same grammar
 * backwards on a user's sentence.
 * docs/corpus.md describes every line kind with examples, proportions and
 * distances. The generator can also report, for each planted relation, which
 * earlier byte a head tracking that relation should attend to; reading files,
 * tokenising and batching are left to data/corpus, data/tokenizer and data/batch. */
#ifndef HEADCOUNT_SYNTH_H
#define HEADCOUNT_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "data/synth_relations.h"

/* The default size of the built-in corpus, in bytes. */
#define SYNTH_DEFAULT_BYTES 1000000

/* The sentence kinds, one row each: X(KIND, share), the share in percent of
 * sentences (they sum to 100). Copy sentences are the largest share because
 * copying a made-up name needs an induction circuit, which at 13 % had not
 * formed well enough by the recipe's 4,000 steps (docs/heads.md, "What was
 * tried"). The generator draws a kind by these shares; tests/test_synth.c reads
 * a line's kind from its text and checks them. */
#define SYNTH_LINE_KINDS(X)                                                                        \
    X(PLAIN, 2)    /* past-tense sentences: local spelling and word order */                       \
    X(AGREE, 18)   /* present tense: the verb agrees with a distant subject */                     \
    X(BRACKET, 5)  /* a ( ... ) or "..." span, sometimes one nested in the other */                \
    X(COPY, 30)    /* a made-up name introduced and repeated in the line */                        \
    X(COREF, 15)   /* an animal, a thing, "it", a property, then one of them again */              \
    X(SOUND, 6)    /* a sound: one random syllable said 4-10 times ("kokoko") */                   \
    X(SCENE, 13)   /* "The tired cat slept on the warm mat.", "The cat sat down." */               \
    X(PRONOUN, 9)  /* "Apple released a new phone because it is tasty." */                         \
    X(CHANT, 2)    /* two random syllables said in turn as words ("ko la ko la") */

/* SYNTH_LINE_<KIND>, one per row of SYNTH_LINE_KINDS; SYNTH_LINE_COUNT counts them. */
#define SYNTH_LINE_OF_ROW(KIND, PERCENT) SYNTH_LINE_##KIND,
typedef enum {
    SYNTH_LINE_KINDS(SYNTH_LINE_OF_ROW)
    SYNTH_LINE_COUNT
} SynthLineKind;
#undef SYNTH_LINE_OF_ROW
/* SYNTH_PERCENT_<KIND>, each row's share. */
#define SYNTH_PERCENT_OF_ROW(KIND, PERCENT) SYNTH_PERCENT_##KIND = PERCENT,
enum { SYNTH_LINE_KINDS(SYNTH_PERCENT_OF_ROW) };
#undef SYNTH_PERCENT_OF_ROW
/* The shares in kind order, for an array: {SYNTH_LINE_KINDS(SYNTH_LINE_SHARE)}. */
#define SYNTH_LINE_SHARE(KIND, PERCENT) SYNTH_PERCENT_##KIND,

/* Percent of lines that hold a second sentence after the first, on the same
 * line after a space, as in a paragraph: after a scene, SYNTH_FOLLOW_PERCENT of
 * the time a second scene, in which "the" names the first one's animal again
 * ("A cat sat down. The tired cat slept on the mat."); otherwise (every other first
 * sentence, and a scene without that second scene) SYNTH_JOIN_PERCENT of the
 * time a sentence of any kind. */
#define SYNTH_FOLLOW_PERCENT 50
#define SYNTH_JOIN_PERCENT 25

/* A sound is one consonant-vowel syllable said this many times. */
#define SYNTH_SOUND_MIN_REPEATS 4
#define SYNTH_SOUND_MAX_REPEATS 10

/* A chant is two one-syllable words said in turn, each this many times. */
#define SYNTH_CHANT_MIN_REPEATS 3
#define SYNTH_CHANT_MAX_REPEATS 5

/* A noun phrase has no adjective, one or two, in tenths: 6, 3 and 1. */
#define SYNTH_ADJ_MAX 2

/* Longest line of each kind, in bytes including the '\n'. Agreement lines fit in a
 * 64-byte context whole; a repeated name starts at most SYNTH_COPY_MAX_DISTANCE
 * bytes after its first occurrence. */
#define SYNTH_AGREE_MAX_LINE 64
#define SYNTH_OTHER_MAX_LINE 72
#define SYNTH_COPY_MAX_DISTANCE 50

/* Fills buf with exactly nbytes of generated text (no NUL terminator added).
 * Deterministic in seed: the same (seed, nbytes) always gives the same bytes, and
 * a shorter nbytes gives a prefix of a longer one. */
void synth_generate(char *buf, size_t nbytes, uint64_t seed);

/* The planted relations, for probing heads, one SYNTH_REL_<KIND> per row of
 * SYNTH_RELATIONS (data/synth_relations.h, which says where each one's query
 * and key lie), in its order; SYNTH_REL_KINDS counts them. */
#define SYNTH_KIND_OF_PLANTED(KIND, ...) SYNTH_REL_##KIND,
#define SYNTH_KIND_OF_TEXT(KIND) SYNTH_REL_##KIND,
typedef enum {
    SYNTH_RELATIONS(SYNTH_KIND_OF_PLANTED, SYNTH_KIND_OF_TEXT)
    SYNTH_REL_KINDS
} SynthRelKind;
#undef SYNTH_KIND_OF_PLANTED
#undef SYNTH_KIND_OF_TEXT

/* Each relation but names carries its minimal pair (docs/heads.md, "Minimal
 * pairs"): the text's own form at bytes [form, form + form_len) and what the
 * corpus's grammar puts there with the relation broken, alt[0], and for
 * coreference a second contrast, alt[1]:
 *   agreement:   the verb of the other number ("runs" for "run");
 *   determiner:  the noun of the other number ("dog" for "dogs"); where "the"
 *                names the animal of the sentence before again, another
 *                animal of the same number ("dog" for "cat");
 *   bracket:     the other closer ('"' for ')');
 *   coreference: alt[0] the line's other noun (does the property beat
 *                proximity?), alt[1] another noun of the antecedent's class
 *                that is not in the line (is the referent retrieved, or only
 *                its class?);
 *   subject-verb: another of the scenes' prepositions (only where a place
 *                follows the verb);
 *   mood:        a verb of another mood;
 *   modifier:    another verb's particle;
 *   place:       a place of another preposition;
 *   pronoun:     the word the object's class takes after "it" (after a
 *                person, whom "it" never is: another class's word);
 *   determiner:  none after any other "the", a possessive (my, his ...) or an
 *                owner ("the cat's"), which say no number;
 *   names:       none ("" in both): the name's continuation is scored against
 *                the model's most likely other token.
 * An unused alt is "". */
#define SYNTH_ALTS 2
#define SYNTH_ALT_CAP 16

typedef struct {
    SynthRelKind kind;
    size_t query;
    size_t key;
    size_t form, form_len;
    char alt[SYNTH_ALTS][SYNTH_ALT_CAP];
} SynthRelation;

/* Does exactly what synth_generate does (same bytes), and also lists the planted
 * relations whose query + 1 lies inside buf, in order of query. Writes the first
 * min(total, cap) of them to rels (which may be NULL when cap is 0) and returns
 * the total, so a caller can call once to count and again to fill. */
size_t synth_generate_relations(char *buf, size_t nbytes, uint64_t seed,
                                SynthRelation *rels, size_t cap);

/* Where text[0..n) lies in the corpus synth_generate(buf, nbytes, seed) writes,
 * found by walking the generator line by line, never holding the corpus: a line
 * ends at its only newline, so the text's first newline is the end of some
 * line, and only the lines whose last bytes are the text's bytes up to that
 * newline are compared further. Any piece that holds a newline (from a line's
 * start, or from inside a line, as --dump-val's split does) is found; a text
 * with no newline never is. Returns 1 and the first such position in *at, or 0. */
int synth_locate(size_t *at, const char *text, size_t n, size_t nbytes, uint64_t seed);

/* The planted relations (as synth_generate_relations lists them, in corpus
 * positions and order of query) whose key and query + 1 both lie in the bytes
 * [at, at + n) of the corpus made from seed; generates only up to at + n.
 * Writes the first min(total, cap) to rels and returns the total. */
size_t synth_relations_in(SynthRelation *rels, size_t cap, size_t at, size_t n, uint64_t seed);

/* The sentences of text[0..n) that the corpus's grammar writes, and their
 * planted relations (docs/corpus.md, "Parsing a user's sentence"). A sentence
 * ends at a newline, or at '.', '!' or '?' followed by a space, a newline or
 * the text's end; the spaces between sentences belong to none. Each one is
 * parsed by running the generator itself with its choices enumerated depth
 * first, every byte it writes compared with the sentence's, so a sentence is
 * understood exactly when some line of the corpus's grammar (any line kind,
 * with the generator's lexicon, without its length limits) reads the same;
 * the relations are the ones that line plants. Writes the first min(total,
 * cap) sentences to sent and relations (text positions, in order of query) to
 * rels, and returns the number of relations; *nsent gets the sentence count. */
typedef struct {
    size_t start, end; /* bytes [start, end) of the text, the mark included */
    int understood;
} SynthSentence;

size_t synth_parse(const char *text, size_t n, SynthSentence *sent, size_t sent_cap,
                   size_t *nsent, SynthRelation *rels, size_t cap);

/* Why a sentence is not understood (docs/corpus.md, "When a sentence is not
 * understood"): the first word of the sentence that no line of the grammar
 * places (the furthest any attempt got), what the grammar would put there (the
 * role, when a list of the lexicon names it, and some of its words), and the
 * line kind (pattern) of the first attempt that got that far, with an example
 * sentence of that kind. */
enum { SYNTH_WHY_WANTS = 6, SYNTH_WHY_EXAMPLE = 80 };

typedef struct {
    size_t at, len; /* the word: bytes [at, at + len) of the sentence; len 0: its end */
    char role[256]; /* the lexicon's lists that fit there, each with its first
                     * words: "a past-tense verb (`slept`, `ran`, `sang` ...)",
                     * joined by " or "; "" if none */
    size_t nrole;   /* the lists named in role, at most 3 */
    char want[SYNTH_WHY_WANTS][SYNTH_ALT_CAP]; /* other words the grammar could write there */
    size_t nwant;
    int kind;                     /* the nearest pattern's line kind; -1: none */
    char pattern[16];             /* its name: "scene", "pronoun", ... ("" if none) */
    char example[SYNTH_WHY_EXAMPLE]; /* a sentence of that pattern */
} SynthWhy;

/* Parses the one sentence sentence[0..n) (as synth_parse splits them, the
 * mark included): 1 when it is understood (why zeroed, kind -1), else 0 with
 * *why saying why. */
int synth_why(const char *sentence, size_t n, SynthWhy *why);

/* *why as one line for a reader, into buf (NUL-terminated when cap > 0):
 * "`fridge`: not a word the corpus knows; here the corpus puts an adjective
 * (`old`, `young`, `red` ...) or `mat`, `rug`, ...; nearest pattern: scene, e.g.
 * \"...\"". Returns the length the whole
 * line needs, as snprintf does. */
size_t synth_why_text(const SynthWhy *why, const char *sentence, char *buf, size_t cap);

/* Word classes of the lexicon, as bits: a word may belong to more than one. */
enum {
    SYNTH_NOUN_SG = 1 << 0,
    SYNTH_NOUN_PL = 1 << 1,
    SYNTH_VERB_SG = 1 << 2, /* present tense, third person singular: runs, is */
    SYNTH_VERB_PL = 1 << 3, /* present tense, plural: run, are */
    SYNTH_VERB_PAST = 1 << 4,
    SYNTH_ADJ = 1 << 5,
    SYNTH_DET = 1 << 6,
    SYNTH_PREP = 1 << 7,
    SYNTH_OTHER = 1 << 8 /* adverbs and conjunctions */
};

/* The classes of the lowercase word word[0..len) in the generator's lexicon, or 0
 * if it is not a lexicon word (the made-up names never are). */
unsigned synth_word_classes(const char *word, size_t len);

#endif
