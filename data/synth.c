/* synth: the built-in corpus generator (see synth.h and docs/corpus.md).
 *
 * Text is made one line at a time in a small Line buffer, which also collects the
 * line's planted relations relative to its start; the driver copies lines into the
 * caller's buffer until it is full. Because a line never depends on how many bytes
 * were asked for, a shorter request is always a prefix of a longer one. A line
 * that breaks a length or distance limit is drawn again from the same stream, so
 * the output stays a pure function of the seed. The words are data/synth_lexicon.c's.
 * This file knows nothing of tokens, batches or files. */
#include "data/synth.h"

#include <stdio.h>
#include <string.h>

#include "data/synth_lexicon.h"
#include "util/rng.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define PICK(r, a) ((a)[rng_below((r), COUNT(a))])

/* ---- One line and its relations ------------------------------------------- */

enum { LINE_CAP = 192, LINE_REL_CAP = 48 };

typedef struct {
    char text[LINE_CAP];
    size_t len;
    int glue; /* the next word follows an opener directly, with no space */
    int bad;  /* a limit was broken: the line is drawn again */
    SynthRelation rel[LINE_REL_CAP]; /* positions relative to the line's start */
    size_t nrel;
} Line;

static void line_reset(Line *l)
{
    l->len = 0;
    l->glue = 0;
    l->bad = 0;
    l->nrel = 0;
}

static void line_char(Line *l, char c)
{
    if (l->len + 1 >= LINE_CAP) {
        l->bad = 1;
        return;
    }
    l->text[l->len++] = c;
}

/* Appends a word, after a space unless it starts the line or follows an opener;
 * returns the position of its first byte. */
static size_t line_word(Line *l, const char *w)
{
    if (l->len > 0 && !l->glue)
        line_char(l, ' ');
    l->glue = 0;
    size_t start = l->len;
    for (; *w; w++)
        line_char(l, *w);
    return start;
}

/* Plants a relation; form/form_len/alt0/alt1 give its minimal pair (synth.h;
 * NULL alternatives: none). */
static void line_rel(Line *l, SynthRelKind kind, size_t query, size_t key, size_t form,
                     size_t form_len, const char *alt0, const char *alt1)
{
    if (l->nrel >= LINE_REL_CAP) {
        l->bad = 1;
        return;
    }
    SynthRelation *r = &l->rel[l->nrel++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->query = query;
    r->key = key;
    r->form = form;
    r->form_len = form_len;
    const char *alt[SYNTH_ALTS] = {alt0, alt1};
    for (int c = 0; c < SYNTH_ALTS; c++)
        if (alt[c])
            snprintf(r->alt[c], SYNTH_ALT_CAP, "%s", alt[c]);
}

/* An opening '(' or '"': spaced like a word, glued to what follows. */
static size_t line_open(Line *l, char c)
{
    if (l->len > 0 && !l->glue)
        line_char(l, ' ');
    size_t pos = l->len;
    line_char(l, c);
    l->glue = 1;
    return pos;
}

/* A closing ')' or '"', glued to the word before; planted as a bracket relation. */
static void line_close(Line *l, char c, size_t opener)
{
    line_rel(l, SYNTH_REL_BRACKET, l->len - 1, opener, l->len, 1, c == ')' ? "\"" : ")", NULL);
    line_char(l, c);
}

/* ---- Phrases ---------------------------------------------------------------- */

static int is_vowel(char c)
{
    return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
}

/* How many leading bytes a word's singular and plural forms share: the relations
 * that decide number are planted on the last of them (dog/dogs 3, mouse/mice 1,
 * runs/run 3, is/are 0). */
static size_t pair_shared(const WordPair *pair)
{
    size_t shared = 0;
    while (pair->sg[shared] && pair->sg[shared] == pair->pl[shared])
        shared++;
    return shared;
}

/* Appends "det [adj [adj]] noun" of the given number, the noun animate when it
 * is to be a subject and from the whole lexicon otherwise; a determiner other
 * than "the" plants the determiner relation. Returns the noun's last byte. */
static size_t put_np(Line *l, Rng *r, int plural, int animate)
{
    const char *det = "the";
    if (rng_below(r, 5) >= 3)
        det = plural ? PICK(r, DETS_PL) : PICK(r, DETS_SG);
    uint64_t nadj = rng_below(r, 10);
    nadj = nadj < 6 ? 0 : nadj < 9 ? 1 : 2;
    const char *adj[SYNTH_ADJ_MAX] = {NULL, NULL};
    for (uint64_t k = 0; k < nadj; k++)
        do
            adj[k] = PICK(r, ADJS);
        while (k > 0 && adj[k] == adj[0]);
    size_t i = (size_t)rng_below(r, animate ? COUNT(ANIMATE) : COUNT(ANIMATE) + COUNT(THINGS));
    const WordPair *pair = i < COUNT(ANIMATE) ? &ANIMATE[i] : &THINGS[i - COUNT(ANIMATE)];
    const char *noun = plural ? pair->pl : pair->sg;
    if (strcmp(det, "a") == 0 && is_vowel(adj[0] ? adj[0][0] : noun[0]))
        det = "an";
    size_t det_end = line_word(l, det) + strlen(det) - 1;
    for (uint64_t k = 0; k < nadj; k++)
        line_word(l, adj[k]);
    size_t start = line_word(l, noun);
    if (strcmp(det, "the") != 0)
        line_rel(l, SYNTH_REL_DET, start + pair_shared(pair) - 1, det_end, start, strlen(noun),
                 plural ? pair->sg : pair->pl, NULL);
    return start + strlen(noun) - 1;
}

/* A noun phrase of random number: put_animate for subjects (and listeners),
 * put_np_any for objects and places. */
static void put_np_any(Line *l, Rng *r)
{
    put_np(l, r, (int)rng_below(r, 2), 0);
}

static void put_animate(Line *l, Rng *r)
{
    put_np(l, r, (int)rng_below(r, 2), 1);
}

/* A prepositional phrase of place, which may follow a noun or a verb. */
static void put_pp(Line *l, Rng *r)
{
    line_word(l, PICK(r, PREPS_PLACE));
    put_np_any(l, r);
}

/* A prepositional phrase after a verb: of place or of path. */
static void put_verb_pp(Line *l, Rng *r)
{
    size_t i = (size_t)rng_below(r, COUNT(PREPS_PLACE) + COUNT(PREPS_PATH));
    line_word(l, i < COUNT(PREPS_PLACE) ? PREPS_PLACE[i] : PREPS_PATH[i - COUNT(PREPS_PLACE)]);
    put_np_any(l, r);
}

/* Appends the present-tense form agreeing with the subject whose noun ends at
 * subject_end, and plants the agreement relation at the first byte where the
 * singular and plural forms part. */
static void put_verb(Line *l, const WordPair *verb, int plural, size_t subject_end)
{
    const char *form = plural ? verb->pl : verb->sg;
    size_t start = line_word(l, form);
    line_rel(l, SYNTH_REL_AGREE, start + pair_shared(verb) - 1, subject_end, start, strlen(form),
             plural ? verb->sg : verb->pl, NULL);
}

/* ---- Line kinds ------------------------------------------------------------- */

/* Past tense carries no number, so these lines exercise spelling and word order only. */
static void gen_plain(Line *l, Rng *r)
{
    switch (rng_below(r, 4)) {
    case 0:
        put_animate(l, r);
        line_word(l, PICK(r, PAST_TRANS));
        put_np_any(l, r);
        if (rng_below(r, 2))
            put_verb_pp(l, r);
        break;
    case 1:
        put_animate(l, r);
        line_word(l, PICK(r, PAST_INTRANS));
        if (rng_below(r, 2))
            put_verb_pp(l, r);
        if (rng_below(r, 2))
            line_word(l, PICK(r, ADVS_END));
        break;
    case 2:
        put_pp(l, r);
        line_char(l, ',');
        put_animate(l, r);
        line_word(l, PICK(r, PAST_INTRANS));
        break;
    default:
        put_animate(l, r);
        line_word(l, PICK(r, PAST_INTRANS));
        line_char(l, ',');
        line_word(l, PICK(r, CONJS));
        put_animate(l, r);
        line_word(l, PICK(r, PAST_TRANS));
        put_np_any(l, r);
        break;
    }
}

/* Subject, 0..8 intervening words, then a present-tense verb that agrees with it
 * (and, in a relative clause, a second one). Nouns in between have a random
 * number, so the nearest noun is no guide. */
static void gen_agree(Line *l, Rng *r)
{
    int plural = (int)rng_below(r, 2);
    size_t subject = put_np(l, r, plural, 1);
    /* In twentieths: nothing 4, an adverb 3, one place 6, two places 3, a relative clause 4. */
    uint64_t middle = rng_below(r, 20);
    if (middle >= 4 && middle < 7) {
        line_word(l, PICK(r, ADVS_MID));
    } else if (middle >= 7 && middle < 13) {
        put_pp(l, r);
    } else if (middle >= 13 && middle < 16) {
        put_pp(l, r);
        put_pp(l, r);
    } else if (middle >= 16) {
        line_word(l, "that");
        put_verb(l, &PICK(r, VERBS_TRANS), plural, subject);
        put_np_any(l, r);
    }
    uint64_t predicate = rng_below(r, 20);
    if (predicate < 8) {
        put_verb(l, &PICK(r, VERBS_INTRANS), plural, subject);
        uint64_t tail = rng_below(r, 4);
        if (tail < 2)
            put_verb_pp(l, r);
        else if (tail == 2)
            line_word(l, PICK(r, ADVS_END));
    } else if (predicate < 15) {
        put_verb(l, &PICK(r, VERBS_TRANS), plural, subject);
        put_np_any(l, r);
    } else {
        put_verb(l, &COPULA, plural, subject);
        line_word(l, PICK(r, ADJS));
    }
}

/* What goes between brackets: a noun phrase, maybe with a place, or a clause. */
static void put_inner(Line *l, Rng *r)
{
    switch (rng_below(r, 3)) {
    case 0:
        put_np_any(l, r);
        if (rng_below(r, 2))
            put_pp(l, r);
        break;
    case 1:
        put_animate(l, r);
        line_word(l, PICK(r, PAST_INTRANS));
        break;
    default:
        put_animate(l, r);
        line_word(l, PICK(r, PAST_TRANS));
        put_np_any(l, r);
        break;
    }
}

/* A speaker and a quoted clause, with a parenthesis inside the quote when nest is set. */
static void put_quote(Line *l, Rng *r, int nest)
{
    line_word(l, PICK(r, PAST_SPEECH));
    size_t q = line_open(l, '"');
    if (nest) {
        put_animate(l, r);
        size_t p = line_open(l, '(');
        put_inner(l, r);
        line_close(l, ')', p);
        line_word(l, PICK(r, PAST_INTRANS));
    } else {
        put_inner(l, r);
    }
    line_close(l, '"', q);
}

/* ( ... ) after a subject, or "..." after a speech verb, and in one line in five
 * one nested in the other, so the closer depends on which was opened last. */
static void gen_bracket(Line *l, Rng *r)
{
    uint64_t form = rng_below(r, 10);
    put_animate(l, r);
    if (form < 4 || form == 8) {
        size_t p = line_open(l, '(');
        if (form == 8) {
            line_word(l, "who");
            put_quote(l, r, 0);
        } else {
            put_inner(l, r);
        }
        line_close(l, ')', p);
        line_word(l, PICK(r, PAST_INTRANS));
        if (rng_below(r, 2))
            line_word(l, PICK(r, ADVS_END));
    } else {
        put_quote(l, r, form == 9);
        if (rng_below(r, 2)) {
            line_word(l, "to");
            put_animate(l, r);
        }
    }
}

typedef struct {
    char text[8];
    size_t first; /* where it first occurs in the line */
    int placed;
} Name;

/* A fresh name of 4-7 letters, consonants and vowels alternating so that it reads
 * as a name, never a lexicon word, never starting with the letter `avoid`. */
static void make_name(Name *nm, Rng *r, char avoid)
{
    static const char consonants[] = "bcdfghjklmnprstvwz";
    static const char vowels[] = "aeiou";
    size_t len;
    do {
        len = 4 + (size_t)rng_below(r, 4);
        int vowel = rng_below(r, 4) == 0;
        for (size_t i = 0; i < len; i++) {
            nm->text[i] = vowel ? vowels[rng_below(r, 5)] : consonants[rng_below(r, 18)];
            vowel = !vowel;
        }
        nm->text[len] = '\0';
    } while (nm->text[0] == avoid || synth_word_classes(nm->text, len) != 0);
    nm->text[0] = (char)(nm->text[0] - 'a' + 'A');
    nm->placed = 0;
}

/* Appends a name; a repeat plants one copy relation per letter but the last. */
static void put_name(Line *l, Name *nm)
{
    size_t start = line_word(l, nm->text);
    if (!nm->placed) {
        nm->placed = 1;
        nm->first = start;
        return;
    }
    if (start - nm->first > SYNTH_COPY_MAX_DISTANCE)
        l->bad = 1;
    size_t len = strlen(nm->text);
    for (size_t j = 0; j + 1 < len; j++)
        line_rel(l, SYNTH_REL_NAMES, start + j, nm->first + j + 1, 0, 0, NULL, NULL);
}

/* The first clause of a copy line: it introduces a, and sometimes b too. */
static void copy_intro(Line *l, Rng *r, Name *a, Name *b)
{
    switch (rng_below(r, 5)) {
    case 0:
        put_name(l, a);
        line_word(l, PICK(r, PAST_TRANS));
        put_np_any(l, r);
        break;
    case 1:
        put_animate(l, r);
        line_word(l, PICK(r, PAST_TRANS));
        put_name(l, a);
        break;
    case 2:
        put_name(l, a);
        line_word(l, PICK(r, PAST_INTRANS));
        put_verb_pp(l, r);
        break;
    case 3:
        put_name(l, a);
        line_word(l, "and");
        put_name(l, b);
        line_word(l, PICK(r, PAST_INTRANS));
        break;
    default:
        put_name(l, a);
        line_word(l, PICK(r, PAST_TRANS));
        put_name(l, b);
        break;
    }
}

/* The second clause: it repeats one introduced name, and with two names sometimes both. */
static void copy_repeat(Line *l, Rng *r, Name *a, Name *b)
{
    Name *x = (b->placed && rng_below(r, 2)) ? b : a;
    switch (rng_below(r, 4)) {
    case 0:
        put_name(l, x);
        line_word(l, PICK(r, PAST_INTRANS));
        if (rng_below(r, 2))
            line_word(l, PICK(r, ADVS_END));
        break;
    case 1:
        put_name(l, x);
        line_word(l, PICK(r, PAST_TRANS));
        put_np_any(l, r);
        break;
    case 2:
        put_animate(l, r);
        line_word(l, PICK(r, PAST_TRANS));
        put_name(l, x);
        break;
    default:
        put_name(l, x);
        line_word(l, PICK(r, PAST_TRANS));
        if (b->placed)
            put_name(l, x == a ? b : a);
        else
            put_np_any(l, r);
        break;
    }
}

/* A clause introducing one or two names, a conjunction, then a clause that
 * repeats one of them (and, with two names, sometimes both). */
static void gen_copy(Line *l, Rng *r)
{
    Name a, b;
    make_name(&a, r, '\0');
    make_name(&b, r, (char)(a.text[0] - 'A' + 'a'));
    copy_intro(l, r, &a, &b);
    line_char(l, ',');
    line_word(l, PICK(r, CONJS));
    copy_repeat(l, r, &a, &b);
}

/* A coreference line: an animal and a thing, in either order, "it", a property
 * that fits only one of them, then that one named again:
 *   "The dog was near the cup because it was hungry, so the dog slept."
 *   "A key lay by the goat and it was dusty, so the key fell."
 * Which noun is named again follows from the property alone: each order and each
 * property class is drawn with probability 1/2, so the nearer noun is the right
 * one half of the time. Plants the coreference relation on the second naming. */
static void gen_coref(Line *l, Rng *r)
{
    int thing_first = (int)rng_below(r, 2);
    int about_thing = (int)rng_below(r, 2);
    size_t ia = (size_t)rng_below(r, COUNT(COREF_ANIMALS));
    size_t it = (size_t)rng_below(r, COUNT(COREF_THINGS));
    const char *animal = COREF_ANIMALS[ia], *thing = COREF_THINGS[it];
    size_t at[2];
    for (int k = 0; k < 2; k++) {
        const char *noun = (k == 0) == thing_first ? thing : animal;
        const char *det = k == 0 && rng_below(r, 3) == 0 ? (is_vowel(noun[0]) ? "an" : "a")
                                                         : "the";
        line_word(l, det);
        at[k] = line_word(l, noun);
        if (k == 0)
            line_word(l, PICK(r, COREF_LINKS));
    }
    line_word(l, PICK(r, COREF_CONJS));
    line_word(l, "it");
    line_word(l, "was");
    line_word(l, about_thing ? PICK(r, PROPS_THING) : PICK(r, PROPS_ANIMAL));
    line_char(l, ',');
    line_word(l, "so");
    line_word(l, "the");
    size_t again = line_word(l, about_thing ? thing : animal);
    /* The same-class contrast: a classmate of the antecedent, never in the line
     * (the other noun is of the other class), picked by the line's length so that
     * every classmate serves, without a draw that would change the corpus. */
    const char *const *class = about_thing ? COREF_THINGS : COREF_ANIMALS;
    size_t nclass = about_thing ? COUNT(COREF_THINGS) : COUNT(COREF_ANIMALS);
    size_t self = about_thing ? it : ia;
    const char *mate = class[(self + 1 + again % (nclass - 1)) % nclass];
    line_rel(l, SYNTH_REL_COREF, again - 1, at[about_thing == thing_first ? 0 : 1], again,
             strlen(about_thing ? thing : animal), about_thing ? animal : thing, mate);
    line_word(l, about_thing ? PICK(r, AFTER_THING) : PICK(r, AFTER_ANIMAL));
}

/* A sound made of one random consonant-vowel syllable said 4-10 times
 * (SYNTH_SOUND_*: "babababa", "tititititi"): past its first two letters every
 * byte is the one two places back, the byte before the one being read, so a
 * previous-token head predicts it and nothing else in the line does. */
static void put_sound(Line *l, Rng *r, int quoted)
{
    static const char consonants[] = "bcdfghjklmnprstvwz";
    static const char vowels[] = "aeiou";
    char s[2 * SYNTH_SOUND_MAX_REPEATS + 1];
    size_t n = SYNTH_SOUND_MIN_REPEATS +
               (size_t)rng_below(r, SYNTH_SOUND_MAX_REPEATS - SYNTH_SOUND_MIN_REPEATS + 1);
    s[0] = consonants[rng_below(r, 18)];
    s[1] = vowels[rng_below(r, 5)];
    for (size_t i = 2; i < 2 * n; i++)
        s[i] = s[i - 2];
    s[2 * n] = '\0';
    if (quoted) {
        size_t q = line_open(l, '"');
        line_word(l, s);
        line_close(l, '"', q);
    } else {
        line_word(l, s);
    }
}

/* Past-tense verbs of the lexicon that can take a sound. */
static const char *const SOUND_VERBS[] = {
    "sang", "said", "cried", "whispered", "shouted", "laughed",
};

/* Someone makes a sound, quoted or not, sometimes to someone or twice. */
static void gen_sound(Line *l, Rng *r)
{
    put_animate(l, r);
    line_word(l, PICK(r, SOUND_VERBS));
    int quoted = (int)rng_below(r, 2);
    put_sound(l, r, quoted);
    switch (rng_below(r, 4)) {
    case 0:
        line_word(l, "to");
        put_animate(l, r);
        break;
    case 1:
        line_word(l, PICK(r, ADVS_END));
        break;
    case 2:
        line_word(l, "and");
        put_sound(l, r, quoted);
        break;
    default:
        break;
    }
}

/* ---- Driver ----------------------------------------------------------------- */

typedef enum { KIND_PLAIN, KIND_AGREE, KIND_BRACKET, KIND_COPY, KIND_COREF, KIND_SOUND } LineKind;

/* Draws a line kind by its share, then draws lines of that kind until one keeps
 * every limit; ends it with ".\n" and capitalises its first letter. */
static void line_generate(Line *l, Rng *r)
{
    uint64_t pick = rng_below(r, 100);
    LineKind kind = pick < SYNTH_PERCENT_PLAIN ? KIND_PLAIN
                  : pick < SYNTH_PERCENT_PLAIN + SYNTH_PERCENT_AGREE ? KIND_AGREE
                  : pick < SYNTH_PERCENT_PLAIN + SYNTH_PERCENT_AGREE + SYNTH_PERCENT_BRACKET
                      ? KIND_BRACKET
                  : pick < 100 - SYNTH_PERCENT_SOUND - SYNTH_PERCENT_COREF ? KIND_COPY
                  : pick < 100 - SYNTH_PERCENT_SOUND ? KIND_COREF
                  : KIND_SOUND;
    size_t max_len = kind == KIND_AGREE ? SYNTH_AGREE_MAX_LINE : SYNTH_OTHER_MAX_LINE;
    do {
        line_reset(l);
        if (kind == KIND_PLAIN)
            gen_plain(l, r);
        else if (kind == KIND_AGREE)
            gen_agree(l, r);
        else if (kind == KIND_BRACKET)
            gen_bracket(l, r);
        else if (kind == KIND_COPY)
            gen_copy(l, r);
        else if (kind == KIND_COREF)
            gen_coref(l, r);
        else
            gen_sound(l, r);
        line_char(l, '.');
        line_char(l, '\n');
    } while (l->bad || l->len > max_len);
    if (l->text[0] >= 'a' && l->text[0] <= 'z')
        l->text[0] = (char)(l->text[0] - 'a' + 'A');
}

/* The corpus line by line: each call of walk_next makes the next line, of
 * which the first `len` bytes lie inside the corpus's nbytes (all of it but
 * for the last, cut line), starting at corpus byte `pos`. */
typedef struct {
    Rng rng;
    Line line;
    size_t pos, len, nbytes;
} Walk;

static void walk_init(Walk *w, uint64_t seed, size_t nbytes)
{
    rng_init(&w->rng, seed, RNG_STREAM_CORPUS);
    w->pos = w->len = 0;
    w->nbytes = nbytes;
}

/* 0 when the corpus has no more lines. */
static int walk_next(Walk *w)
{
    w->pos += w->len;
    if (w->pos >= w->nbytes)
        return 0;
    line_generate(&w->line, &w->rng);
    w->len = w->line.len < w->nbytes - w->pos ? w->line.len : w->nbytes - w->pos;
    return 1;
}

size_t synth_generate_relations(char *buf, size_t nbytes, uint64_t seed,
                                SynthRelation *rels, size_t cap)
{
    Walk w;
    walk_init(&w, seed, nbytes);
    size_t total = 0;
    while (walk_next(&w)) {
        memcpy(buf + w.pos, w.line.text, w.len);
        for (size_t i = 0; i < w.line.nrel; i++) {
            if (w.line.rel[i].query + 1 >= w.len)
                continue;
            if (total < cap) {
                rels[total] = w.line.rel[i];
                rels[total].query += w.pos;
                rels[total].key += w.pos;
                rels[total].form += w.pos;
            }
            total++;
        }
    }
    return total;
}

void synth_generate(char *buf, size_t nbytes, uint64_t seed)
{
    synth_generate_relations(buf, nbytes, seed, NULL, 0);
}

/* Whether the lines from the walk's next one on hold text[0..n), the walk
 * being left wherever the comparison stopped. */
static int walk_matches(Walk *w, const char *text, size_t n)
{
    for (size_t off = 0; off < n;) {
        if (!walk_next(w))
            return 0;
        size_t m = w->len < n - off ? w->len : n - off;
        if (memcmp(w->line.text, text + off, m) != 0)
            return 0;
        off += m;
    }
    return 1;
}

int synth_locate(size_t *at, const char *text, size_t n, size_t nbytes, uint64_t seed)
{
    const char *nl = n ? memchr(text, '\n', n) : NULL;
    if (!nl || n > nbytes)
        return 0;
    size_t head = (size_t)(nl - text) + 1; /* the text's bytes up to its first newline */
    Walk w;
    walk_init(&w, seed, nbytes);
    while (walk_next(&w)) {
        /* Only a whole line ends in a newline, so the text's first one is the
         * end of a line, and the bytes before it are that line's last. */
        if (w.len != w.line.len || w.len < head ||
            memcmp(w.line.text + w.len - head, text, head) != 0)
            continue;
        size_t start = w.pos + w.len - head;
        if (start + n > nbytes)
            return 0;
        Walk saved = w;
        if (walk_matches(&w, text + head, n - head)) {
            *at = start;
            return 1;
        }
        w = saved;
    }
    return 0;
}

size_t synth_relations_in(SynthRelation *rels, size_t cap, size_t at, size_t n, uint64_t seed)
{
    Walk w;
    walk_init(&w, seed, at + n);
    size_t total = 0;
    while (walk_next(&w)) {
        if (w.pos + w.line.len <= at)
            continue;
        for (size_t i = 0; i < w.line.nrel; i++) {
            size_t query = w.line.rel[i].query + w.pos, key = w.line.rel[i].key + w.pos;
            if (key < at || query + 1 >= at + n)
                continue;
            if (total < cap) {
                rels[total] = w.line.rel[i];
                rels[total].query = query;
                rels[total].key = key;
                rels[total].form += w.pos;
            }
            total++;
        }
    }
    return total;
}
