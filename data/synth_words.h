/* synth_words: the open-class words the built-in corpus draws from the lexicon
 * (data/lexicon.h, WordNet 3.0 with wordfreq's frequencies): pools of nouns,
 * verbs and adjectives by role, drawn by frequency (a word twice as common in
 * English is drawn twice as often), and a hash of their written forms for the
 * parser, which must find the word a sentence holds without trying them all.
 * The roles whose words carry a relation's meaning (scenes, coreference and
 * pronoun lines) keep their hand-written lists (data/synth_lexicon.c). A
 * lexicon word whose form is a hand-list word of another class ("books": a
 * thing of the hand lists, a verb of the lexicon) is left out, so a written
 * form never names a noun and a verb at once. Internal to data/synth*.c. */
#ifndef HEADCOUNT_SYNTH_WORDS_H
#define HEADCOUNT_SYNTH_WORDS_H

#include <stddef.h>
#include <stdint.h>

#include "data/lexicon.h"

typedef enum {
    WORDS_ANIMATE,   /* nouns for someone: subjects, listeners */
    WORDS_NOUN,      /* any countable noun: objects, places */
    WORDS_ADJ,       /* adjectives before a noun */
    WORDS_ADJ_PRED,  /* adjectives after "is" */
    WORDS_INTRANS,   /* verbs with no object */
    WORDS_TRANS,     /* verbs with an object */
    WORDS_SPEECH,    /* verbs of saying, before a quotation */
    WORDS_POOLS
} WordsPool;

/* The forms of an entry: noun sg/pl, verb base (= plural present), third
 * person singular, past; adjective: its one form. */
enum { FORM_WORD, FORM_1, FORM_2 };

enum { WORDS_SLOTS = 16384, WORDS_MAX_ENTRIES = 8192, WORDS_POOL_CAP = 2048 };

/* The generator draws each pool's most frequent words only, this many (the
 * parser reads every word of a pool): a model of the corpus meets each word
 * often enough to learn its forms. With the whole lexicon drawn, agreement's
 * minimal pairs fell from 0.98 to 0.76 in `make check-heads`' first seed
 * (docs/corpus.md, "Where the words come from"). */
#define WORDS_DRAWN {[WORDS_ANIMATE] = 150, [WORDS_NOUN] = 400, [WORDS_ADJ] = 200, \
                     [WORDS_ADJ_PRED] = 150, [WORDS_INTRANS] = 100, [WORDS_TRANS] = 100, \
                     [WORDS_SPEECH] = 20}

/* Agreement lines draw each pool's WORDS_COMMON most frequent lexicon words
 * only: with the drawn words above, agreement's minimal pairs fell to 0.80 and
 * 0.89 in `make check-heads`' seeds 1 and 2 and the previous-token head to
 * 0.24 and 0.49 of its bar 0.5; with these 30 they were 0.98, 0.99 and 0.52,
 * 0.61 (with 15: 0.97, 0.99 and 0.54, 0.23). docs/corpus.md, "Words from the
 * lexicon". */
enum { WORDS_COMMON = 30 };

typedef struct {
    uint64_t common[WORDS_POOLS];       /* those of the first WORDS_COMMON lexicon words
                                         * (agreement lines draw only these) */
    uint64_t total[WORDS_POOLS];        /* the frequencies of each pool's words summed */
    uint64_t drawn[WORDS_POOLS];        /* those of the words the generator draws: the
                                         * first WORDS_DRAWN of the lexicon's and every
                                         * hand entry, which come after the lexicon's */
    uint64_t head[WORDS_POOLS];         /* those of the first WORDS_DRAWN only */
    size_t tail[WORDS_POOLS];           /* where the hand entries start in each pool */
    size_t n[WORDS_POOLS];              /* each pool's words, at most WORDS_POOL_CAP */
    uint16_t entry[WORDS_POOLS][WORDS_POOL_CAP]; /* LEX_ENTRIES indices, most frequent first */
    uint32_t cum[WORDS_POOLS][WORDS_POOL_CAP];   /* frequencies summed up to and with each */
    uint8_t pools[WORDS_MAX_ENTRIES];   /* per LEX_ENTRIES index: a bit per pool, 0: unused */
    /* Every written form of the lexicon's open classes and of the hand lists,
     * by open addressing on its hash: the form (NULL: empty slot), 1 + the
     * lexicon entry it is a form of with the form's number << 16 (0: none),
     * and its classes in the hand lists. */
    const char *key[WORDS_SLOTS];
    uint32_t lex[WORDS_SLOTS];
    uint16_t hand[WORDS_SLOTS];
} SynthWords;

/* Fills w from the lexicon (no allocation; about a tenth of a millisecond).
 * A pool past WORDS_POOL_CAP words keeps its most frequent ones. */
void synth_words_init(SynthWords *w);

/* The word of pool p that x (in [0, w->total[p]), or [0, w->drawn[p]) for
 * the generator's words) falls on, the pool's words laid end to end, most
 * frequent first, each as long as its frequency. */
const LexEntry *words_draw(const SynthWords *w, WordsPool p, uint64_t x);

/* The generator's word of pool p that x (in [0, w->drawn[p])) falls on. */
const LexEntry *words_draw_drawn(const SynthWords *w, WordsPool p, uint64_t x);

/* Pool p's k-th most frequent word (k < w->n[p]). */
const LexEntry *words_nth(const SynthWords *w, WordsPool p, size_t k);

/* The lexicon entry of pool p with form `form` equal to s[0..len) (lower
 * case), or NULL. */
const LexEntry *words_find(const SynthWords *w, WordsPool p, int form, const char *s, size_t len);

/* An entry's form. */
const char *words_form(const LexEntry *e, int form);

/* The SYNTH_* classes of the lowercase word s[0..len) among the hand lists
 * and the pools' words, or 0 (synth_word_classes, from w). */
unsigned words_classes(const SynthWords *w, const char *s, size_t len);

#endif
