/* synth_words: the lexicon's open-class words in the built-in corpus's roles
 * (see synth_words.h). */
#include "data/synth_words.h"

#include <string.h>

#include "data/synth.h"
#include "data/synth_lexicon.h"
#include "util/hash.h"

const char *words_form(const LexEntry *e, int form)
{
    return form == FORM_WORD ? e->word : form == FORM_1 ? e->form1 : e->form2;
}

/* Entries are numbered across two tables: the lexicon's open classes, then the
 * hand-written entries (synth_lexicon.h). */
static size_t lex_open(void)
{
    return LEX_CLASS_START[LEX_ADJ + 1];
}

static const LexEntry *entry_at(size_t i)
{
    return i < lex_open() ? &LEX_ENTRIES[i] : &HAND_ENTRIES[i - lex_open()];
}

/* The entry's class. */
static LexClass entry_class(size_t i)
{
    if (i >= lex_open()) {
        i -= lex_open();
        return i < HAND_CLASS_START[1] ? LEX_NOUN : i < HAND_CLASS_START[2] ? LEX_VERB : LEX_ADJ;
    }
    int c = 0;
    while (c + 1 < LEX_CLASS_COUNT && i >= LEX_CLASS_START[c + 1])
        c++;
    return (LexClass)c;
}

/* The SYNTH_* class of an entry's form. */
static unsigned form_class(LexClass c, int form)
{
    if (c == LEX_NOUN)
        return form == FORM_WORD ? SYNTH_NOUN_SG : SYNTH_NOUN_PL;
    if (c == LEX_VERB)
        return form == FORM_WORD ? SYNTH_VERB_PL : form == FORM_1 ? SYNTH_VERB_SG : SYNTH_VERB_PAST;
    return SYNTH_ADJ;
}

/* The pools an entry of class c belongs to, by its tags (before collisions
 * with the hand lists are ruled out). Nouns need two forms that differ (the
 * determiner relation's minimal pair is the other number), so mass nouns and
 * "sheep" stay out. */
static unsigned entry_pools(LexClass c, const LexEntry *e)
{
    unsigned p = 0;
    if (c == LEX_NOUN) {
        if ((e->tags & LEX_TAG(MASS)) || strcmp(e->word, e->form1) == 0)
            return 0;
        p |= 1u << WORDS_NOUN;
        if (e->tags & LEX_TAG(ANIMATE))
            p |= 1u << WORDS_ANIMATE;
    } else if (c == LEX_VERB) {
        /* A past that is also a present ("set", "read") would let a past
         * tense line read as an agreement line. */
        if (strcmp(e->form2, e->word) == 0 || strcmp(e->form2, e->form1) == 0)
            return 0;
        if (e->tags & LEX_TAG(INTRANS))
            p |= 1u << WORDS_INTRANS;
        if (e->tags & LEX_TAG(TRANS))
            p |= 1u << WORDS_TRANS;
        if (e->tags & LEX_TAG(SPEECH))
            p |= 1u << WORDS_SPEECH;
    } else if (c == LEX_ADJ) {
        if (!(e->tags & LEX_TAG(PRED_ONLY)))
            p |= 1u << WORDS_ADJ;
        if (!(e->tags & LEX_TAG(ATTR_ONLY)))
            p |= 1u << WORDS_ADJ_PRED;
    }
    return p;
}

static size_t slot_of(const char *s, size_t len)
{
    return (size_t)(hash_fnv1a(1469598103934665603ULL, s, len) % WORDS_SLOTS);
}

/* The slot holding the form s[0..len), or the empty slot where it would go. */
static size_t find_slot(const SynthWords *w, const char *s, size_t len)
{
    size_t k = slot_of(s, len);
    while (w->key[k] && !(strncmp(w->key[k], s, len) == 0 && w->key[k][len] == '\0'))
        k = (k + 1) % WORDS_SLOTS;
    return k;
}

/* The family of classes an entry of class c writes. */
static unsigned family(LexClass c)
{
    return c == LEX_NOUN   ? SYNTH_NOUN_SG | SYNTH_NOUN_PL
           : c == LEX_VERB ? SYNTH_VERB_SG | SYNTH_VERB_PL | SYNTH_VERB_PAST
                           : SYNTH_ADJ;
}

static int nforms(LexClass c)
{
    return c == LEX_NOUN ? 2 : c == LEX_VERB ? 3 : 1;
}

static void add_hand(const char *word, unsigned cls, void *ctx)
{
    SynthWords *w = ctx;
    size_t k = find_slot(w, word, strlen(word));
    w->key[k] = word;
    w->hand[k] |= (uint16_t)cls;
}

/* Adds entry i to the pools p; returns the pools it is in now (a full pool,
 * past WORDS_POOL_CAP, takes no more). */
static unsigned add_to_pools(SynthWords *w, size_t i, unsigned p)
{
    for (int k = 0; k < WORDS_POOLS; k++) {
        if (!(p & (1u << k)))
            continue;
        if (w->n[k] == WORDS_POOL_CAP) {
            p &= ~(1u << k);
            continue;
        }
        w->total[k] += entry_at(i)->freq;
        w->entry[k][w->n[k]] = (uint16_t)i;
        w->cum[k][w->n[k]++] = (uint32_t)w->total[k];
    }
    w->pools[i] |= (uint8_t)p;
    return w->pools[i];
}

void synth_words_init(SynthWords *w)
{
    memset(w, 0, sizeof *w);
    synth_hand_each(add_hand, w);
    static const size_t drawn[WORDS_POOLS] = WORDS_DRAWN;
    const unsigned open = SYNTH_NOUN_SG | SYNTH_NOUN_PL | SYNTH_VERB_SG | SYNTH_VERB_PL |
                          SYNTH_VERB_PAST | SYNTH_ADJ;
    size_t n = lex_open() + HAND_CLASS_START[HAND_CLASSES];
    for (size_t i = 0; i < n && i < WORDS_MAX_ENTRIES; i++) {
        if (i == lex_open())
            for (int k = 0; k < WORDS_POOLS; k++)
                w->tail[k] = w->n[k];
        LexClass c = entry_class(i);
        const LexEntry *e = entry_at(i);
        unsigned p = entry_pools(c, e);
        /* A lexicon form the hand lists hold in another class rules the word
         * out; a hand entry the lexicon has already is the lexicon's, which
         * joins the hand entry's roles ("write" a verb of saying). */
        for (int f = 0; p && f < nforms(c); f++) {
            const char *form = words_form(e, f);
            size_t k = find_slot(w, form, strlen(form));
            if (i < lex_open() ? w->key[k] && (w->hand[k] & open & ~family(c)) : w->lex[k] != 0) {
                size_t j = (w->lex[k] & 0xffff) - 1;
                if (i >= lex_open() && f == 0 && w->lex[k] && w->pools[j] &&
                    entry_class(j) == c)
                    add_to_pools(w, j, p & ~w->pools[j]);
                p = 0;
            }
        }
        if (!p)
            continue;
        if (!add_to_pools(w, i, p))
            continue;
        for (int f = 0; f < nforms(c); f++) {
            const char *form = words_form(e, f);
            size_t k = find_slot(w, form, strlen(form));
            w->key[k] = form;
            if (!w->lex[k])
                w->lex[k] = (uint32_t)(i + 1) | ((uint32_t)f << 16);
        }
    }
    /* The lexicon's words come first in each pool, most frequent first; the
     * hand entries (and the lexicon's words that join a hand entry's role)
     * after them, from w->tail[k]. */
    for (int k = 0; k < WORDS_POOLS; k++) {
        size_t m = drawn[k] < w->tail[k] ? drawn[k] : w->tail[k];
        uint64_t before = w->tail[k] ? w->cum[k][w->tail[k] - 1] : 0;
        w->head[k] = m ? w->cum[k][m - 1] : 0;
        w->drawn[k] = w->head[k] + (w->total[k] - before);
        size_t c = WORDS_COMMON < w->tail[k] ? WORDS_COMMON : w->tail[k];
        w->common[k] = c ? w->cum[k][c - 1] : 0;
    }
}

const LexEntry *words_draw(const SynthWords *w, WordsPool p, uint64_t x)
{
    /* The first word whose running sum passes x. */
    size_t lo = 0, hi = w->n[p] - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->cum[p][mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return entry_at(w->entry[p][lo]);
}

const LexEntry *words_draw_drawn(const SynthWords *w, WordsPool p, uint64_t x)
{
    if (x >= w->head[p])
        x += (w->tail[p] ? w->cum[p][w->tail[p] - 1] : 0) - w->head[p];
    return words_draw(w, p, x);
}

const LexEntry *words_nth(const SynthWords *w, WordsPool p, size_t k)
{
    return entry_at(w->entry[p][k]);
}

static int form_is(const LexEntry *e, int form, const char *s, size_t len)
{
    const char *f = words_form(e, form);
    return f && strncmp(f, s, len) == 0 && f[len] == '\0';
}

const LexEntry *words_find(const SynthWords *w, WordsPool p, int form, const char *s, size_t len)
{
    char low[LEX_MAX_WORD + 1];
    if (len == 0 || len > LEX_MAX_WORD)
        return NULL;
    for (size_t i = 0; i < len; i++)
        low[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
    uint32_t v = w->lex[find_slot(w, low, len)];
    if (!v)
        return NULL;
    size_t i = (v & 0xffff) - 1;
    const LexEntry *e = entry_at(i);
    return (w->pools[i] & (1u << p)) && form_is(e, form, low, len) ? e : NULL;
}

unsigned words_classes(const SynthWords *w, const char *s, size_t len)
{
    if (len == 0)
        return 0;
    size_t k = find_slot(w, s, len);
    if (!w->key[k])
        return 0;
    unsigned cls = w->hand[k];
    if (w->lex[k]) {
        size_t i = (w->lex[k] & 0xffff) - 1;
        LexClass c = entry_class(i);
        for (int f = 0; f < nforms(c); f++)
            if (form_is(entry_at(i), f, s, len))
                cls |= form_class(c, f);
    }
    return cls;
}

unsigned synth_word_classes(const char *word, size_t len)
{
    SynthWords w;
    synth_words_init(&w);
    return words_classes(&w, word, len);
}
