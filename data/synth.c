/* synth: the built-in corpus generator (see synth.h and docs/corpus.md).
 *
 * Text is made one line at a time in a small Line buffer, which also collects the
 * line's planted relations relative to its start; the driver copies lines into the
 * caller's buffer until it is full. Because a line never depends on how many bytes
 * were asked for, a shorter request is always a prefix of a longer one. A line
 * that breaks a length or distance limit is drawn again from the same stream, so
 * the output stays a pure function of the seed. The words are the lexicon's
 * (data/synth_words.c: nouns, verbs and adjectives by role and frequency) and
 * data/synth_lexicon.c's (closed classes, and the roles that carry a relation).
 * This file knows nothing of tokens, batches or files. */
#include "data/synth.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "data/synth_lexicon.h"
#include "data/synth_words.h"
#include "util/rng.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define PICK(r, a) ((a)[draw((r), COUNT(a))])

/* ---- Where the choices come from ------------------------------------------- */

/* Every choice the grammar makes goes through a Src. Generating, it draws from
 * the corpus's random stream. Parsing (synth_parse), it replays a list of
 * choices and extends it one choice at a time, and every byte the line gets is
 * compared with the sentence being parsed: the first byte that differs abandons
 * the attempt (longjmp to the parser), so the parser walks the generator's own
 * choices depth first and the grammar is written once, here. */
enum { PARSE_DEPTH = 96 };

typedef struct {
    Rng *rng;            /* generating: the stream; NULL when parsing */
    const SynthWords *words; /* the lexicon's words by role */
    const char *target;  /* parsing: the sentence, ending in '\n' */
    size_t target_len;
    int ante, ante_plural; /* parsing: the scene animal of the sentence before (below) */
    uint32_t choice[PARSE_DEPTH], bound[PARSE_DEPTH];
    size_t depth;        /* choices fixed for this attempt */
    size_t used;         /* choices consumed so far in it */
    jmp_buf fail;
    /* Explaining (synth_why): where the attempts stopped furthest, the kind of
     * the first attempt that stopped there, and what the grammar would have
     * written there (why: NULL when not explaining). */
    int kind;
    SynthWhy *why;
    size_t far; /* 1 + the start of the furthest word no attempt placed; 0: none */
    int common; /* generating: draw each pool's WORDS_COMMON most frequent words only */
} Src;

/* A parse attempt that cannot produce the sentence ends here. */
static void src_fail(Src *s)
{
    longjmp(s->fail, 1);
}

/* A uniform choice in [0, n). */
static uint64_t draw(Src *s, uint64_t n)
{
    if (s->rng)
        return rng_below(s->rng, n);
    if (s->used == s->depth) {
        if (s->depth == PARSE_DEPTH)
            src_fail(s);
        s->choice[s->depth] = 0;
        s->bound[s->depth++] = (uint32_t)n;
    }
    return s->choice[s->used++];
}

/* A choice of outcome k in [0, n) with weight w[k] (in any units): one draw
 * below their sum when generating, one choice per outcome when parsing. */
static size_t draw_weighted(Src *s, const unsigned *w, size_t n)
{
    if (!s->rng)
        return (size_t)draw(s, n);
    unsigned total = 0;
    for (size_t k = 0; k < n; k++)
        total += w[k];
    uint64_t x = rng_below(s->rng, total);
    size_t k = 0;
    while (x >= w[k])
        x -= w[k++];
    return k;
}

/* A uniform choice in [0, n) that, parsing, can only be v: the caller knows
 * from the sentence that any other value writes a byte that differs, so the
 * parser takes v at once instead of trying them all (v >= n: none fits). */
static uint64_t draw_as(Src *s, uint64_t n, uint64_t v)
{
    if (s->rng || s->used < s->depth)
        return draw(s, n);
    if (v >= n || s->depth == PARSE_DEPTH)
        src_fail(s);
    s->choice[s->depth] = (uint32_t)v;
    s->bound[s->depth++] = (uint32_t)v + 1;
    s->used++;
    return v;
}

/* 1 with probability num / den: one draw below den generating, the two
 * outcomes parsing. */
static int chance(Src *s, unsigned num, unsigned den)
{
    const unsigned w[2] = {den - num, num};
    return (int)draw_weighted(s, w, 2);
}

/* Drawing again because a draw broke a rule: allowed when generating (the
 * loop draws again); when parsing, the attempt is abandoned instead, since
 * the choices that follow are enumerated anyway. Returns 1. */
static int redraw(Src *s)
{
    if (!s->rng)
        src_fail(s);
    return 1;
}

/* Length of the sentence's word at pos, parsing (letters and digits, with a
 * hyphen between two of them); 0 past its end. */
static size_t target_word_len(const Src *s, size_t pos)
{
    size_t n = 0;
    while (pos + n < s->target_len) {
        char c = s->target[pos + n];
        int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!letter && !(c == '-' && n > 0 && pos + n + 1 < s->target_len))
            break;
        n++;
    }
    return n;
}

static char fold(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether the sentence holds the word (or words) w at pos, followed by no
 * more of a word; any letter may be a capital ("The Cat", "MY SISTER"). */
static int target_word_is(const Src *s, size_t pos, const char *w)
{
    size_t n = strlen(w);
    if (n == 0 || pos + n > s->target_len)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (fold(s->target[pos + i]) != w[i])
            return 0;
    return target_word_len(s, pos + n - 1) == 1; /* the word ends with w */
}

/* Whether byte i of the sentence is in a word: a letter or digit, or an
 * apostrophe or hyphen between two ("cat's", "well-fed"). */
static int word_byte(const Src *s, size_t i)
{
    if (i >= s->target_len)
        return 0;
    if (target_word_len(s, i) > 0)
        return 1;
    char c = s->target[i];
    return (c == '\'' || c == '-') && i > 0 && target_word_len(s, i - 1) > 0 &&
           target_word_len(s, i + 1) > 0;
}

/* Explaining: an attempt stopped at byte pos, where the grammar wanted a word
 * of list[0..n) for the role `role` (its first three words are named with it)
 * or the word want (list NULL). The furthest such place is kept, measured by
 * the start of the sentence's word there, with the first roles and words
 * wanted there. */
static void src_note(Src *s, size_t pos, const char *role, const char *const *list, size_t n,
                     const char *want)
{
    SynthWhy *y = s->why;
    if (!y)
        return;
    size_t p = pos < s->target_len ? pos : s->target_len - 1, at = p;
    while (at > 0 && word_byte(s, at - 1) && word_byte(s, at))
        at--;
    if (at + 1 < s->far)
        return;
    if (at + 1 > s->far) {
        s->far = at + 1;
        y->at = at;
        y->len = 0;
        while (word_byte(s, at + y->len))
            y->len++;
        if (y->len == 0 && s->target[at] != '\n')
            y->len = 1;
        y->kind = s->kind;
        y->role[0] = '\0';
        y->nrole = 0;
        y->nwant = 0;
    }
    if (role && list) {
        if (strstr(y->role, role) || y->nrole == 3)
            return;
        y->nrole++;
        size_t used = strlen(y->role);
        used += (size_t)snprintf(y->role + used, sizeof y->role - used, "%s%s (",
                                 used ? " or " : "", role);
        for (size_t i = 0; i < n && i < 3 && used < sizeof y->role; i++)
            used += (size_t)snprintf(y->role + used, sizeof y->role - used, "%s`%s`",
                                     i ? ", " : "", list[i]);
        if (used < sizeof y->role)
            snprintf(y->role + used, sizeof y->role - used, "%s)", n > 3 ? " ..." : "");
        return;
    }
    if (!want || !want[0] || want[0] == ' ' || y->nwant == SYNTH_WHY_WANTS)
        return;
    for (size_t k = 0; k < y->nwant; k++)
        if (strcmp(y->want[k], want) == 0)
            return;
    snprintf(y->want[y->nwant++], SYNTH_ALT_CAP, "%s", want);
}

/* What a word of each list is, for a sentence that is not understood. */
/* ---- One line and its relations ------------------------------------------- */

enum { LINE_CAP = 192, LINE_REL_CAP = 64 };

typedef struct {
    char text[LINE_CAP];
    size_t len;
    int glue; /* the next word follows an opener directly, with no space */
    int bad;  /* a limit was broken: the line is drawn again */
    SynthRelation rel[LINE_REL_CAP]; /* positions relative to the line's start */
    size_t nrel;
    char end; /* the sentence's last mark: '.', '!' or '?' */
    size_t start; /* where the sentence being written starts in the line */
    /* The scene animal (an index into SCENE_ANIMALS, -1: none) and its number:
     * `scene` of the sentence just written when it is a scene; `ante` of the
     * sentence before the one being written, which a scene's "the" names again
     * (gen_scene). */
    int scene, scene_plural, ante, ante_plural;
    Src *src; /* where its choices come from; parsing, each byte is checked */
    const char *writing; /* the word line_word is writing (explaining), or NULL */
} Line;

static void line_reset(Line *l)
{
    l->len = 0;
    l->glue = 0;
    l->bad = 0;
    l->nrel = 0;
    l->end = '.';
    l->start = 0;
    l->scene = l->ante = -1;
    l->scene_plural = l->ante_plural = 0;
    l->writing = NULL;
}

static void line_char(Line *l, char c)
{
    if (l->len + 1 >= LINE_CAP) {
        l->bad = 1;
        return;
    }
    Src *s = l->src;
    if (!s->rng) {
        /* Parsing: any letter may be a capital where the grammar wrote a
         * small one, or the other way round (line_generate capitalises the
         * first one last; names are capitalised). */
        char t = l->len < s->target_len ? s->target[l->len] : '\0';
        if (fold(t) != fold(c)) {
            char one[2] = {c, '\0'};
            src_note(s, l->len, NULL, NULL, 0, l->writing && l->writing[0] ? l->writing : one);
            src_fail(s);
        }
        c = s->target[l->len];
    }
    l->text[l->len++] = c;
}

/* Appends a word, after a space unless it starts the line or follows an opener;
 * returns the position of its first byte. */
static size_t line_word(Line *l, const char *w)
{
    l->writing = w;
    if (l->len > 0 && !l->glue)
        line_char(l, ' ');
    l->glue = 0;
    size_t start = l->len;
    for (; *w; w++)
        line_char(l, *w);
    l->writing = NULL;
    return start;
}

/* Where the line's next word will start. */
static size_t next_word_pos(const Line *l)
{
    return l->len + (l->len > 0 && !l->glue);
}

/* Past-tense verbs of the lexicon that can take a sound (sound and chant lines). */
static const char *const SOUND_VERBS[] = {
    "sang", "said", "cried", "whispered", "shouted", "laughed",
};

static const struct {
    const char *const *list;
    const char *role;
} ROLES[] = {
    {ADJS_HYPHEN, "an adjective"},
    {SOUND_VERBS, "a verb of sound"},
    {PREPS_PLACE, "a preposition"},
    {ADVS_MID, "an adverb (often, never ...)"},
    {ADVS_END, "an adverb (slowly, again ...)"},
    {SCENE_ADVS, "an adverb (slowly, quietly)"},
    {CONJS, "a conjunction"},
    {COREF_LINKS, "a link (was near, lay by ...)"},
    {COREF_CONJS, "a conjunction"},
    {DETS_SG, "a determiner"},
    {DETS_PL, "a determiner"},
    {DETS_POSS, "a possessive (my, his ...)"},
    {PRONOUN_VERBS, "a verb of owning (bought, sold ...)"},
    {PRONOUN_CONJS, "a conjunction"},
    {PRONOUN_PEOPLE, "a person (sister, friend ...)"},
    {PRONOUN_PERSON_DETS, "a determiner"},
    {PRONOUN_OBJECT_ADJS, "an adjective"},
};

static const char *role_of(const char *const *list)
{
    for (size_t i = 0; i < COUNT(ROLES); i++)
        if (ROLES[i].list == list)
            return ROLES[i].role;
    return NULL;
}

/* An index into list[0..n) for a word that will be written at pos: uniform
 * generating; parsing, the one whose word the sentence holds there (draw_as). */
static size_t pick_index(Src *r, const char *const *list, size_t n, size_t pos)
{
    if (r->rng)
        return (size_t)draw(r, n);
    size_t v = 0;
    while (v < n && !target_word_is(r, pos, list[v]))
        v++;
    if (v == n)
        src_note(r, pos, role_of(list), list, n, NULL);
    return (size_t)draw_as(r, n, v);
}

#define PICK_AT(r, a, pos) ((a)[pick_index((r), (a), COUNT(a), (pos))])

/* What a word of each of the lexicon's pools is (synth_words.h). */
static const char *const POOL_ROLES[WORDS_POOLS] = {
    [WORDS_ANIMATE] = "a noun for someone",
    [WORDS_NOUN] = "a noun",
    [WORDS_ADJ] = "an adjective",
    [WORDS_ADJ_PRED] = "an adjective",
    [WORDS_INTRANS] = "a verb with no object",
    [WORDS_TRANS] = "a verb with an object",
    [WORDS_SPEECH] = "a verb of saying",
};

/* A word of the lexicon's pool p, whose form `form` will be written at pos:
 * drawn by frequency generating; parsing, the one the sentence holds there
 * (no choice: a form names one word), or the attempt fails. */
static const LexEntry *pick_word(Src *r, WordsPool p, int form, size_t pos)
{
    if (r->rng && r->common && r->words->common[p])
        return words_draw(r->words, p, draw(r, r->words->common[p]));
    if (r->rng)
        return words_draw_drawn(r->words, p, draw(r, r->words->drawn[p]));
    const LexEntry *e = words_find(r->words, p, form, r->target + pos, target_word_len(r, pos));
    if (!e) {
        const char *want[3];
        for (int k = 0; k < 3; k++)
            want[k] = words_form(words_nth(r->words, p, (size_t)k), form);
        src_note(r, pos, POOL_ROLES[p], want, 3, NULL);
        src_fail(r);
    }
    return e;
}

/* An adjective before a noun, to be written at pos: one in SYNTH_HYPHEN_ONE_IN
 * has a hyphen (ADJS_HYPHEN), the others are the lexicon's, by frequency.
 * Parsing, a hyphen in the sentence's word there decides. */
enum { SYNTH_HYPHEN_ONE_IN = 40 };
static const char *pick_adj(Src *r, size_t pos)
{
    int hyphen = r->rng ? chance(r, 1, SYNTH_HYPHEN_ONE_IN)
                        : memchr(r->target + pos, '-', target_word_len(r, pos)) != NULL;
    return hyphen ? PICK_AT(r, ADJS_HYPHEN, pos)
                  : words_form(pick_word(r, WORDS_ADJ, FORM_WORD, pos), FORM_WORD);
}

/* A word of pool p written where the line stands, in form `form`. */
static const char *put_word(Line *l, Src *r, WordsPool p, int form)
{
    const char *w = words_form(pick_word(r, p, form, next_word_pos(l)), form);
    line_word(l, w);
    return w;
}

/* Appends a word drawn from a list. */
#define PUT_PICK(l, r, a) line_word((l), PICK_AT((r), (a), next_word_pos(l)))

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

/* Whether w[0..len) is a word of the corpus (hand lists or lexicon). */
static int is_word(const Src *r, const char *w, size_t len)
{
    return words_classes(r->words, w, len) != 0;
}

static int is_vowel(char c)
{
    return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
}

static int in_list(const char *w, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], w) == 0)
            return 1;
    return 0;
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

/* Shares of a noun phrase's determiner, in twentieths: "the" 10, one that
 * says the number 8, a possessive ("my", "his" ...) 1, and "the" with an
 * owner ("the cat's") 1; a scene's subject takes the first three. Of its
 * number of adjectives (none, one, two), in tenths. And of the determiner of
 * a scene after a scene: "the" (naming the animal again) or one that says the
 * number, in fifths. */
enum { DET_THE, DET_NUMBER, DET_POSS, DET_OWNER };
static const unsigned DET_SHARES[] = {10, 8, 1, 1};
static const unsigned NADJ_SHARES[] = {6, 3, 1};
static const unsigned AGAIN_SHARES[] = {3, 2};

/* Whether the determiner of a scene after a scene is "the" (three times in
 * five); generating only. */
static int pick_the(Src *r)
{
    return draw_weighted(r, AGAIN_SHARES, 2) == 0;
}

/* Which determiner form (DET_*) stands at pos; owner: whether "the cat's"
 * may. Parsing, the sentence's word there decides, but for "the", which may
 * start either of two forms. */
static int pick_det_form(Src *r, size_t pos, int owner)
{
    if (r->rng)
        return (int)draw_weighted(r, DET_SHARES, owner ? 4 : 3);
    if (target_word_is(r, pos, "the"))
        return owner && draw(r, 2) ? DET_OWNER : DET_THE;
    for (size_t i = 0; i < COUNT(DETS_POSS); i++)
        if (target_word_is(r, pos, DETS_POSS[i]))
            return DET_POSS;
    return DET_NUMBER;
}

/* Draws a determiner that says the number, to be written at pos, for a noun of
 * the given number; "a" is left for the caller to turn into "an". Parsing, the
 * sentence's word there decides. */
static const char *pick_number_det(Src *r, int plural, size_t pos)
{
    const char *const *list = plural ? DETS_PL : DETS_SG;
    size_t n = plural ? COUNT(DETS_PL) : COUNT(DETS_SG);
    if (!r->rng && !plural && target_word_is(r, pos, "an"))
        return list[draw_as(r, n, 0)]; /* "a", which becomes "an" */
    return list[pick_index(r, list, n, pos)];
}

/* The determiner of form `form` (not DET_OWNER), to be written at pos, for
 * a noun of the given number. */
static const char *pick_det(Src *r, int form, int plural, size_t pos)
{
    return form == DET_THE    ? "the"
           : form == DET_POSS ? PICK_AT(r, DETS_POSS, pos)
                              : pick_number_det(r, plural, pos);
}

/* A noun's forms, drawn from the lexicon's nouns for someone, or from all its
 * nouns, for a noun of the given number to be written at pos (parsing, the
 * sentence's word there decides the draw). */
static WordPair pick_noun(Src *r, int animate, int plural, size_t pos)
{
    const LexEntry *e =
        pick_word(r, animate ? WORDS_ANIMATE : WORDS_NOUN, plural ? FORM_1 : FORM_WORD, pos);
    return (WordPair){e->word, e->form1};
}

/* Plants the determiner relation of a noun whose forms are *pair, written at
 * `start` after a determiner ending at det_end: on the last byte its two forms
 * share, with the other number as the broken form when the determiner says the
 * number ("the" and the possessives say none: no minimal pair). */
static void plant_det(Line *l, int form, size_t det_end, const WordPair *pair, int plural,
                      size_t start)
{
    const char *noun = plural ? pair->pl : pair->sg;
    line_rel(l, SYNTH_REL_DET, start + pair_shared(pair) - 1, det_end, start, strlen(noun),
             form != DET_NUMBER ? NULL : plural ? pair->sg : pair->pl, NULL);
}

/* Appends "det [adj [adj]] noun" of the given number, the noun animate when it
 * is to be a subject and from the whole lexicon otherwise, and plants the
 * determiner relation; the determiner may be "the" and an owner ("the cat's
 * [adj [adj]] noun"), whose own determiner relation is planted instead (the
 * owner says nothing of the noun's number). Returns the noun's last byte.
 * Each word is drawn just before it is written (the first one after the
 * determiner just before it, for "a" or "an"), so that parsing abandons a
 * wrong draw at once. */
static size_t put_np(Line *l, Src *r, int plural, int animate)
{
    size_t p0 = next_word_pos(l);
    int form = pick_det_form(r, p0, 1);
    const char *det = "the";
    if (form == DET_OWNER) {
        size_t the_end = line_word(l, "the") + 2;
        WordPair owner = pick_noun(r, 1, 0, next_word_pos(l));
        plant_det(l, DET_THE, the_end, &owner, 0, line_word(l, owner.sg));
        line_char(l, '\'');
        line_char(l, 's');
    } else {
        det = pick_det(r, form, plural, p0);
    }
    /* Parsing: where the word after the determiner starts. */
    size_t p1 = r->rng ? 0 : form == DET_OWNER ? next_word_pos(l) : p0 + target_word_len(r, p0) + 1;
    size_t nadj = draw_weighted(r, NADJ_SHARES, 3);
    const char *adj0 = nadj ? pick_adj(r, p1) : NULL;
    WordPair pair = {NULL, NULL};
    if (!adj0)
        pair = pick_noun(r, animate, plural, p1);
    const char *next = adj0 ? adj0 : plural ? pair.pl : pair.sg;
    if (strcmp(det, "a") == 0 && is_vowel(next[0]))
        det = "an";
    size_t det_end = form == DET_OWNER ? 0 : line_word(l, det) + strlen(det) - 1;
    if (adj0) {
        line_word(l, adj0);
        if (nadj == 2) {
            const char *adj1;
            do
                adj1 = pick_adj(r, next_word_pos(l));
            while (adj1 == adj0 && redraw(r));
            line_word(l, adj1);
        }
        pair = pick_noun(r, animate, plural, next_word_pos(l));
    }
    const char *noun = plural ? pair.pl : pair.sg;
    size_t start = line_word(l, noun);
    if (form != DET_OWNER)
        plant_det(l, form, det_end, &pair, plural, start);
    return start + strlen(noun) - 1;
}

/* A noun phrase of random number: put_animate for subjects (and listeners),
 * put_np_any for objects and places. */
static void put_np_any(Line *l, Src *r)
{
    put_np(l, r, (int)draw(r, 2), 0);
}

static void put_animate(Line *l, Src *r)
{
    put_np(l, r, (int)draw(r, 2), 1);
}

/* A prepositional phrase of place, which may follow a noun or a verb. */
static void put_pp(Line *l, Src *r)
{
    PUT_PICK(l, r, PREPS_PLACE);
    put_np_any(l, r);
}

/* A prepositional phrase after a verb: of place or of path. */
static void put_verb_pp(Line *l, Src *r)
{
    size_t i = (size_t)draw(r, COUNT(PREPS_PLACE) + COUNT(PREPS_PATH));
    line_word(l, i < COUNT(PREPS_PLACE) ? PREPS_PLACE[i] : PREPS_PATH[i - COUNT(PREPS_PLACE)]);
    put_np_any(l, r);
}

/* A verb of pool p, {third person singular, plural} present, whose form for
 * a subject of the given number will be written next. */
static WordPair pick_present(Line *l, Src *r, WordsPool p, int plural)
{
    const LexEntry *e = pick_word(r, p, plural ? FORM_WORD : FORM_1, next_word_pos(l));
    return (WordPair){e->form1, e->word};
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
static void gen_plain(Line *l, Src *r)
{
    switch (draw(r, 4)) {
    case 0:
        put_animate(l, r);
        put_word(l, r, WORDS_TRANS, FORM_2);
        put_np_any(l, r);
        if (draw(r, 2))
            put_verb_pp(l, r);
        break;
    case 1:
        put_animate(l, r);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        if (draw(r, 2))
            put_verb_pp(l, r);
        if (draw(r, 2))
            PUT_PICK(l, r, ADVS_END);
        break;
    case 2:
        put_pp(l, r);
        line_char(l, ',');
        put_animate(l, r);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        break;
    default:
        put_animate(l, r);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        /* Two clauses joined by a comma and a conjunction, or by a semicolon. */
        if (chance(r, 2, 3)) {
            line_char(l, ',');
            PUT_PICK(l, r, CONJS);
        } else {
            line_char(l, ';');
        }
        put_animate(l, r);
        put_word(l, r, WORDS_TRANS, FORM_2);
        put_np_any(l, r);
        break;
    }
}

/* Subject, 0..8 intervening words, then a present-tense verb that agrees with it
 * (and, in a relative clause, a second one). Nouns in between have a random
 * number, so the nearest noun is no guide. */
static void gen_agree(Line *l, Src *r)
{
    r->common = 1;
    int plural = (int)draw(r, 2);
    size_t subject = put_np(l, r, plural, 1);
    /* In twentieths: nothing 4, an adverb 3, one place 6, two places 3, a relative clause 4. */
    static const unsigned middle_shares[] = {4, 3, 6, 3, 4};
    size_t middle = draw_weighted(r, middle_shares, 5);
    if (middle == 1) {
        PUT_PICK(l, r, ADVS_MID);
    } else if (middle == 2) {
        put_pp(l, r);
    } else if (middle == 3) {
        put_pp(l, r);
        put_pp(l, r);
    } else if (middle == 4) {
        line_word(l, "that");
        WordPair verb = pick_present(l, r, WORDS_TRANS, plural);
        put_verb(l, &verb, plural, subject);
        put_np_any(l, r);
    }
    /* In twentieths: intransitive 8, transitive 7, "is" and an adjective 5; an
     * intransitive verb ends with a place 2, an adverb 1 or nothing 1 in four. */
    static const unsigned predicate_shares[] = {8, 7, 5}, tail_shares[] = {2, 1, 1};
    size_t predicate = draw_weighted(r, predicate_shares, 3);
    if (predicate == 0) {
        /* One in five: "doesn't" or "don't", which agree, and the bare verb. */
        if (chance(r, 1, 5)) {
            put_verb(l, &DO_NOT, plural, subject);
            put_word(l, r, WORDS_INTRANS, FORM_WORD);
        } else {
            WordPair verb = pick_present(l, r, WORDS_INTRANS, plural);
            put_verb(l, &verb, plural, subject);
        }
        size_t tail = draw_weighted(r, tail_shares, 3);
        if (tail == 0)
            put_verb_pp(l, r);
        else if (tail == 1)
            PUT_PICK(l, r, ADVS_END);
    } else if (predicate == 1) {
        WordPair verb = pick_present(l, r, WORDS_TRANS, plural);
        put_verb(l, &verb, plural, subject);
        put_np_any(l, r);
    } else {
        put_verb(l, chance(r, 1, 4) ? &COPULA_NOT : &COPULA, plural, subject);
        put_word(l, r, WORDS_ADJ_PRED, FORM_WORD);
    }
    r->common = 0;
}

/* What goes between brackets: a noun phrase, maybe with a place, or a clause. */
static void put_inner(Line *l, Src *r)
{
    switch (draw(r, 3)) {
    case 0:
        put_np_any(l, r);
        if (draw(r, 2))
            put_pp(l, r);
        break;
    case 1:
        put_animate(l, r);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        break;
    default:
        put_animate(l, r);
        put_word(l, r, WORDS_TRANS, FORM_2);
        put_np_any(l, r);
        break;
    }
}

/* A speaker and a quoted clause, with a parenthesis inside the quote when nest is set. */
static void put_quote(Line *l, Src *r, int nest)
{
    put_word(l, r, WORDS_SPEECH, FORM_2);
    if (chance(r, 1, 4))
        line_char(l, ':');
    size_t q = line_open(l, '"');
    if (nest) {
        put_animate(l, r);
        size_t p = line_open(l, '(');
        put_inner(l, r);
        line_close(l, ')', p);
        put_word(l, r, WORDS_INTRANS, FORM_2);
    } else {
        put_inner(l, r);
    }
    line_close(l, '"', q);
}

/* ( ... ) after a subject, or "..." after a speech verb, and in one line in five
 * one nested in the other, so the closer depends on which was opened last. */
static void gen_bracket(Line *l, Src *r)
{
    /* In tenths: a parenthesis 4, one with a quote inside 1, a quote 4, a quote
     * with a parenthesis inside 1. */
    static const unsigned form_shares[] = {4, 1, 4, 1};
    size_t form = draw_weighted(r, form_shares, 4);
    put_animate(l, r);
    if (form <= 1) {
        size_t p = line_open(l, '(');
        if (form == 1) {
            line_word(l, "who");
            put_quote(l, r, 0);
        } else {
            put_inner(l, r);
        }
        line_close(l, ')', p);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        if (draw(r, 2))
            PUT_PICK(l, r, ADVS_END);
    } else {
        put_quote(l, r, form == 3);
        if (draw(r, 2)) {
            line_word(l, "to");
            put_animate(l, r);
        }
    }
}

typedef struct {
    char text[8];
    size_t first; /* where it first occurs in the line */
    int placed;
    char avoid;   /* the small letter it must not start with */
} Name;

static const char NAME_CONSONANTS[] = "bcdfghjklmnpqrstvwxyz";
static const char NAME_VOWELS[] = "aeiou";

/* Writes a fresh name of 4-7 letters where the line stands, letter by letter
 * as they are drawn, consonants and vowels alternating so that it reads as a
 * name: never a lexicon word, never starting with nm->avoid. */
static void new_name(Line *l, Src *r, Name *nm)
{
    size_t mark = l->len;
    int glue = l->glue;
    for (;;) {
        l->len = mark;
        l->glue = glue;
        size_t start = line_word(l, "");
        /* Parsing, the sentence's word here decides every draw. */
        const char *t = r->rng ? NULL : r->target + start;
        size_t tlen = 0;
        while (t && start + tlen < r->target_len &&
               ((t[tlen] >= 'a' && t[tlen] <= 'z') || (t[tlen] >= 'A' && t[tlen] <= 'Z')))
            tlen++;
        size_t len = 4 + (size_t)draw_as(r, 4, tlen - 4);
        int vowel = t ? (int)draw_as(r, 2, strchr(NAME_VOWELS, t[0] | 0x20) != NULL)
                      : chance(r, 1, 4);
        for (size_t i = 0; i < len; i++) {
            const char *set = vowel ? NAME_VOWELS : NAME_CONSONANTS;
            size_t n = vowel ? sizeof NAME_VOWELS - 1 : sizeof NAME_CONSONANTS - 1;
            const char *at = t ? strchr(set, t[i] | 0x20) : NULL;
            char c = set[t ? draw_as(r, n, at ? (uint64_t)(at - set) : n) : draw(r, n)];
            nm->text[i] = c;
            line_char(l, i == 0 ? (char)(c - 'a' + 'A') : c);
            vowel = !vowel;
        }
        nm->text[len] = '\0';
        if (nm->text[0] == nm->avoid || is_word(r, nm->text, len)) {
            redraw(r);
            continue;
        }
        nm->text[0] = (char)(nm->text[0] - 'a' + 'A');
        nm->first = start;
        nm->placed = 1;
        return;
    }
}

/* Appends a name: a new one the first time, else a repeat, which plants one
 * copy relation per letter but the last. */
static void put_name(Line *l, Src *r, Name *nm)
{
    if (!nm->placed) {
        new_name(l, r, nm);
        return;
    }
    size_t start = line_word(l, nm->text);
    if (start - nm->first > SYNTH_COPY_MAX_DISTANCE)
        l->bad = 1;
    size_t len = strlen(nm->text);
    for (size_t j = 0; j + 1 < len; j++)
        line_rel(l, SYNTH_REL_NAMES, start + j, nm->first + j + 1, 0, 0, NULL, NULL);
}

/* The first clause of a copy line: it introduces a, and sometimes b too. */
static void copy_intro(Line *l, Src *r, Name *a, Name *b)
{
    switch (draw(r, 5)) {
    case 0:
        put_name(l, r, a);
        put_word(l, r, WORDS_TRANS, FORM_2);
        put_np_any(l, r);
        break;
    case 1:
        put_animate(l, r);
        put_word(l, r, WORDS_TRANS, FORM_2);
        put_name(l, r, a);
        break;
    case 2:
        put_name(l, r, a);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        put_verb_pp(l, r);
        break;
    case 3:
        put_name(l, r, a);
        line_word(l, "and");
        b->avoid = (char)(a->text[0] - 'A' + 'a');
        put_name(l, r, b);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        break;
    default:
        put_name(l, r, a);
        put_word(l, r, WORDS_TRANS, FORM_2);
        b->avoid = (char)(a->text[0] - 'A' + 'a');
        put_name(l, r, b);
        break;
    }
}

/* The second clause: it repeats one introduced name, and with two names sometimes both. */
static void copy_repeat(Line *l, Src *r, Name *a, Name *b)
{
    Name *x = (b->placed && draw(r, 2)) ? b : a;
    switch (draw(r, 4)) {
    case 0:
        put_name(l, r, x);
        put_word(l, r, WORDS_INTRANS, FORM_2);
        if (draw(r, 2))
            PUT_PICK(l, r, ADVS_END);
        break;
    case 1:
        put_name(l, r, x);
        put_word(l, r, WORDS_TRANS, FORM_2);
        put_np_any(l, r);
        break;
    case 2:
        put_animate(l, r);
        put_word(l, r, WORDS_TRANS, FORM_2);
        put_name(l, r, x);
        break;
    default:
        put_name(l, r, x);
        put_word(l, r, WORDS_TRANS, FORM_2);
        if (b->placed)
            put_name(l, r, x == a ? b : a);
        else
            put_np_any(l, r);
        break;
    }
}

/* A clause introducing one or two names, a conjunction, then a clause that
 * repeats one of them (and, with two names, sometimes both). */
static void gen_copy(Line *l, Src *r)
{
    Name a = {.avoid = '\0'}, b = {.avoid = '\0'};
    copy_intro(l, r, &a, &b);
    line_char(l, ',');
    PUT_PICK(l, r, CONJS);
    copy_repeat(l, r, &a, &b);
}

/* A coreference line: an animal and a thing, in either order, "it", a property
 * that fits only one of them, then that one named again:
 *   "The dog was near the cup because it was hungry, so the dog slept."
 *   "A key lay by the goat and it was dusty, so the key fell."
 * Which noun is named again follows from the property alone: each order and each
 * property class is drawn with probability 1/2, so the nearer noun is the right
 * one half of the time. Plants the coreference relation on the second naming. */
static void gen_coref(Line *l, Src *r)
{
    int thing_first = (int)draw(r, 2);
    int about_thing = (int)draw(r, 2);
    size_t ia = (size_t)draw(r, COUNT(COREF_ANIMALS));
    size_t it = (size_t)draw(r, COUNT(COREF_THINGS));
    const char *animal = COREF_ANIMALS[ia], *thing = COREF_THINGS[it];
    size_t at[2];
    for (int k = 0; k < 2; k++) {
        const char *noun = (k == 0) == thing_first ? thing : animal;
        const char *det = k == 0 && chance(r, 1, 3) ? (is_vowel(noun[0]) ? "an" : "a")
                                                         : "the";
        line_word(l, det);
        at[k] = line_word(l, noun);
        if (k == 0)
            PUT_PICK(l, r, COREF_LINKS);
    }
    PUT_PICK(l, r, COREF_CONJS);
    line_word(l, "it");
    line_word(l, "was");
    line_word(l, about_thing ? PICK(r, PROPS_THING) : PICK(r, PROPS_ANIMAL));
    line_char(l, ',');
    line_word(l, "so");
    line_word(l, "the");
    size_t again = line_word(l, about_thing ? thing : animal);
    /* The same-class contrast: a classmate of the antecedent, never in the
     * sentence (the other noun is of the other class), picked by where the noun
     * stands in its sentence so that every classmate serves, without a draw
     * (the parser would have to try every classmate). */
    const char *const *class = about_thing ? COREF_THINGS : COREF_ANIMALS;
    size_t nclass = about_thing ? COUNT(COREF_THINGS) : COUNT(COREF_ANIMALS);
    size_t self = about_thing ? it : ia;
    const char *mate = class[(self + 1 + (again - l->start) % (nclass - 1)) % nclass];
    line_rel(l, SYNTH_REL_COREF, again - 1, at[about_thing == thing_first ? 0 : 1], again,
             strlen(about_thing ? thing : animal), about_thing ? animal : thing, mate);
    line_word(l, about_thing ? PICK(r, AFTER_THING) : PICK(r, AFTER_ANIMAL));
}

/* A sound made of one random consonant-vowel syllable said 4-10 times
 * (SYNTH_SOUND_*: "babababa", "tititititi"): past its first two letters every
 * byte is the one two places back, the byte before the one being read, so a
 * previous-token head predicts it and nothing else in the line does. The
 * syllable's letters are written as they are drawn, then repeated. */
static void put_sound(Line *l, Src *r, int quoted)
{
    static const char consonants[] = "bcdfghjklmnprstvwz";
    static const char vowels[] = "aeiou";
    size_t q = quoted ? line_open(l, '"') : 0;
    size_t start = line_word(l, "");
    line_char(l, consonants[draw(r, sizeof consonants - 1)]);
    line_char(l, vowels[draw(r, sizeof vowels - 1)]);
    size_t n = SYNTH_SOUND_MIN_REPEATS +
               (size_t)draw(r, SYNTH_SOUND_MAX_REPEATS - SYNTH_SOUND_MIN_REPEATS + 1);
    for (size_t i = 2; i < 2 * n; i++)
        line_char(l, l->text[start + i - 2]);
    if (quoted)
        line_close(l, '"', q);
}

/* Someone makes a sound, quoted or not, sometimes to someone or twice. */
static void gen_sound(Line *l, Src *r)
{
    put_animate(l, r);
    PUT_PICK(l, r, SOUND_VERBS);
    int quoted = (int)draw(r, 2);
    put_sound(l, r, quoted);
    switch (draw(r, 4)) {
    case 0:
        line_word(l, "to");
        put_animate(l, r);
        break;
    case 1:
        PUT_PICK(l, r, ADVS_END);
        break;
    case 2:
        line_word(l, "and");
        put_sound(l, r, quoted);
        break;
    default:
        break;
    }
    if (r->rng && draw(r, 2))
        l->end = '!';
}

/* A chant: two different consonant-vowel syllables, each a word, said in turn
 * SYNTH_CHANT_MIN_REPEATS to SYNTH_CHANT_MAX_REPEATS times ("ko la ko la ko
 * la"). Past its first two words every word is the one two back, the word
 * before the one being read: on tokens a previous-token head predicts it and
 * nothing else in the line does, as the sounds' letters are on bytes. A
 * syllable that is a lexicon word ("so", "to") is drawn again. */
static void put_chant(Line *l, Src *r)
{
    static const char consonants[] = "bcdfghjklmnprstvwz";
    static const char vowels[] = "aeiou";
    char syl[2][3];
    size_t at[2];
    for (int k = 0; k < 2; k++) {
        at[k] = line_word(l, "");
        line_char(l, consonants[draw(r, sizeof consonants - 1)]);
        line_char(l, vowels[draw(r, sizeof vowels - 1)]);
        memcpy(syl[k], l->text + at[k], 2);
        syl[k][2] = '\0';
        if (is_word(r, syl[k], 2) || (k == 1 && strcmp(syl[0], syl[1]) == 0)) {
            redraw(r);
            l->bad = 1;
            return;
        }
    }
    size_t n = SYNTH_CHANT_MIN_REPEATS +
               (size_t)draw(r, SYNTH_CHANT_MAX_REPEATS - SYNTH_CHANT_MIN_REPEATS + 1);
    for (size_t i = 2; i < 2 * n; i++)
        line_word(l, syl[i % 2]);
}

/* Someone chants, sometimes to someone: "The cat sang ko la ko la ko la." */
static void gen_chant(Line *l, Src *r)
{
    put_animate(l, r);
    PUT_PICK(l, r, SOUND_VERBS);
    put_chant(l, r);
    if (l->bad)
        return;
    if (draw(r, 4) == 0) {
        line_word(l, "to");
        put_animate(l, r);
    }
    if (r->rng && draw(r, 2))
        l->end = '!';
}

/* ---- Scenes and pronouns: the documents' sentences ----------------------------- */

/* Shares of a scene's ending: a particle ("sat down"), a place ("sat on the
 * mat"), or both; and of its last mark: '.', '!', '?'. In tenths. */
static const unsigned SCENE_END_SHARES[] = {3, 6, 1};
static const unsigned SCENE_MARK_SHARES[] = {8, 1, 1};

/* The verb's index in SCENE_VERBS. */
static size_t scene_verb_index(const char *verb)
{
    for (size_t i = 0; i < COUNT(SCENE_VERBS); i++)
        if (strcmp(SCENE_VERBS[i].verb, verb) == 0)
            return i;
    return 0;
}

/* A place after a scene's verb: the animal's preposition, "the", maybe an
 * adjective, and one of that preposition's places, with the place relation
 * on the byte before the place (its broken form: a place of another
 * preposition). Returns nothing; the preposition is the caller's. */
static void put_scene_place(Line *l, Src *r, size_t prep_index)
{
    const ScenePlace *pl = &SCENE_PLACES[prep_index];
    size_t prep = line_word(l, pl->prep);
    line_word(l, "the");
    if (chance(r, 1, 3))
        line_word(l, pick_adj(r, next_word_pos(l)));
    const char *place = pl->places[draw(r, SCENE_PLACE_NOUNS)];
    size_t at = line_word(l, place);
    size_t pick = at - l->start; /* a stand-in for a draw (see gen_coref) */
    const ScenePlace *other = &SCENE_PLACES[(prep_index + 1 + pick % (COUNT(SCENE_PLACES) - 1)) %
                                            COUNT(SCENE_PLACES)];
    line_rel(l, SYNTH_REL_PLACE, at - 1, prep + strlen(pl->prep) - 1, at, strlen(place),
             other->places[pick % SCENE_PLACE_NOUNS], NULL);
}

/* The documents' scene: "The cat sat on the mat.", "The tired cat slept on the
 * warm mat.", "The cat sat down.": an animal, maybe in a mood, a verb (one of
 * the mood's when there is one), then its particle (after "slowly" or
 * "quietly" half the time: "The cat sat slowly down."), the animal's place,
 * or both. After a scene on the same line (l->ante), "the" names that scene's
 * animal again ("The cat sat on the mat. The tired cat slept ..."). Plants the
 * determiner (on the noun itself after such a "the"); the mood on the noun
 * (the verb follows from the adjective before it); subject-verb on the verb
 * (the preposition after it follows from the subject); verb-modifier on the
 * space before the particle (it follows from the verb); place on the byte
 * before the place (it follows from the preposition). */
static void gen_scene(Line *l, Src *r)
{
    size_t ia;
    int plural;
    const char *det;
    size_t nanimals = COUNT(SCENE_ANIMALS);
    if (l->ante >= 0 && r->rng) {
        /* After a scene, "the" names its animal again; any other determiner
         * brings in another animal ("A cat sat down. The tired cat slept on
         * the mat.", "A cat sat down. Two dogs ran away."). Parsing takes the
         * branch below, which reads both and any other scene as well. */
        if (pick_the(r)) {
            ia = (size_t)l->ante;
            plural = l->ante_plural;
            det = "the";
        } else {
            ia = ((size_t)l->ante + 1 + (size_t)draw(r, nanimals - 1)) % nanimals;
            plural = (int)draw(r, 2);
            det = pick_number_det(r, plural, next_word_pos(l));
        }
    } else {
        ia = (size_t)draw(r, nanimals);
        plural = (int)draw(r, 2);
        det = pick_det(r, pick_det_form(r, next_word_pos(l), 0), plural, next_word_pos(l));
    }
    const SceneAnimal *an = &SCENE_ANIMALS[ia];
    l->scene = (int)ia;
    l->scene_plural = plural;
    int mood = draw(r, 2) ? (int)draw(r, COUNT(SCENE_MOODS)) : -1;
    if (strcmp(det, "a") == 0 && is_vowel(mood >= 0 ? SCENE_MOODS[mood].adj[0] : an->noun.sg[0]))
        det = "an";
    size_t det_end = line_word(l, det) + strlen(det) - 1;
    size_t adj_end = 0;
    if (mood >= 0)
        adj_end = line_word(l, SCENE_MOODS[mood].adj) + strlen(SCENE_MOODS[mood].adj) - 1;
    const char *noun = plural ? an->noun.pl : an->noun.sg;
    size_t start = line_word(l, noun), noun_end = start + strlen(noun) - 1;
    if (strcmp(det, "the") == 0 && l->ante == (int)ia && l->ante_plural == plural) {
        /* Definite reference: "the" decides which animal, the one named in the
         * sentence before, so the relation is on the byte before the noun, and
         * the broken form is another animal of the same number. */
        const SceneAnimal *other =
            &SCENE_ANIMALS[(ia + 1 + (start - l->start) % (nanimals - 1)) % nanimals];
        line_rel(l, SYNTH_REL_DET, start - 1, det_end, start, strlen(noun),
                 plural ? other->noun.pl : other->noun.sg, NULL);
    } else {
        int says = strcmp(det, "the") != 0 && !in_list(det, DETS_POSS, COUNT(DETS_POSS));
        plant_det(l, says ? DET_NUMBER : DET_THE, det_end, &an->noun, plural, start);
    }
    const char *verb = mood >= 0 ? SCENE_MOODS[mood].verbs[draw(r, SCENE_MOOD_VERBS)]
                                 : SCENE_VERBS[draw(r, COUNT(SCENE_VERBS))].verb;
    size_t v = line_word(l, verb), verb_end = v + strlen(verb) - 1;
    size_t pick = v - l->start; /* a stand-in for a draw (see gen_coref) */
    if (mood >= 0) {
        const SceneMood *other = &SCENE_MOODS[(mood + 1 + pick % (COUNT(SCENE_MOODS) - 1)) %
                                              COUNT(SCENE_MOODS)];
        line_rel(l, SYNTH_REL_MOOD, noun_end, adj_end, v, strlen(verb),
                 other->verbs[pick % SCENE_MOOD_VERBS], NULL);
    }
    size_t ending = draw_weighted(r, SCENE_END_SHARES, 3);
    size_t prep_index = 0;
    while (strcmp(SCENE_PLACES[prep_index].prep, an->prep) != 0)
        prep_index++;
    /* The broken form: another preposition of scenes (subjects share them). */
    const char *other_prep =
        SCENE_PLACES[(prep_index + 1 + pick % (COUNT(SCENE_PLACES) - 1)) % COUNT(SCENE_PLACES)]
            .prep;
    if (ending == 1) {
        /* The word after the verb is the animal's preposition. */
        line_rel(l, SYNTH_REL_SUBJECT, verb_end, noun_end, verb_end + 2, strlen(an->prep),
                 other_prep, NULL);
    } else {
        line_rel(l, SYNTH_REL_SUBJECT, verb_end, noun_end, 0, 0, NULL, NULL);
        const char *particle = SCENE_VERBS[scene_verb_index(verb)].particle;
        /* A particle that is also the animal's preposition, with a place after
         * it, would read "slept in in the nest": drawn again. */
        if (ending == 2 && strcmp(particle, an->prep) == 0 && redraw(r)) {
            l->bad = 1;
            return;
        }
        if (chance(r, 1, 2))
            PUT_PICK(l, r, SCENE_ADVS);
        size_t p = line_word(l, particle);
        /* The broken form: the next verb's particle that differs. */
        size_t vi = scene_verb_index(verb);
        const char *other_particle = particle;
        for (size_t k = 1; strcmp(other_particle, particle) == 0; k++)
            other_particle = SCENE_VERBS[(vi + k) % COUNT(SCENE_VERBS)].particle;
        line_rel(l, SYNTH_REL_MODIFIER, p - 1, verb_end, p, strlen(particle), other_particle,
                 NULL);
    }
    if (ending >= 1)
        put_scene_place(l, r, prep_index);
    static const char marks[] = ".!?";
    if (r->rng)
        l->end = marks[draw_weighted(r, SCENE_MARK_SHARES, 3)];
}

/* Shares of a pronoun line's subject determiner: "the", "a"/"an", none ("Apple
 * released ..."), in fifths. */
static const unsigned PRONOUN_DET_SHARES[] = {2, 2, 1};

/* "a" or "an" before w. */
static const char *a_or_an(const char *w)
{
    return is_vowel(w[0]) ? "an" : "a";
}

/* The documents' "Apple released a new phone because it is tasty.": a subject
 * and an object of two different classes (food, devices, animals), a
 * conjunction, "it", then the word that the subject's class takes after "it"
 * ("is" or "'s" for food, "was" for devices, "seemed" for animals) and one of
 * its properties. "it" is the subject, and the cue (the subject's place) comes
 * before it, so the pronoun itself is the query: the word after it follows
 * from the antecedent. One line in three has a person for its subject ("My
 * sister bought a red car because it was cheap."): a person is never "it", so
 * "it" is the object, and the word after "it" and the property are the
 * object's class's. Plants the pronoun relation on "it"'s last byte, keyed on
 * the antecedent's last byte; its broken form is the word another class
 * takes after "it": the object's class, or, after a person, one of the two
 * other classes. */
static void gen_pronoun(Line *l, Src *r)
{
    const size_t nclass = COUNT(PRONOUN_CLASSES);
    int person = chance(r, 1, 3);
    size_t cs = person ? 0 : (size_t)draw(r, nclass);
    size_t co = person ? (size_t)draw(r, nclass) : (cs + 1 + (size_t)draw(r, nclass - 1)) % nclass;
    const PronounClass *subj = &PRONOUN_CLASSES[cs], *obj = &PRONOUN_CLASSES[co];
    size_t key;
    if (person) {
        size_t pos = next_word_pos(l);
        /* Parsing, "an" is "a" (index 2) before a vowel. */
        const char *det = !r->rng && target_word_is(r, pos, "an")
                              ? PRONOUN_PERSON_DETS[draw_as(r, COUNT(PRONOUN_PERSON_DETS), 2)]
                              : PICK_AT(r, PRONOUN_PERSON_DETS, pos);
        size_t p1 = r->rng ? 0 : pos + target_word_len(r, pos) + 1;
        const char *noun = PICK_AT(r, PRONOUN_PEOPLE, p1);
        line_word(l, strcmp(det, "a") == 0 ? a_or_an(noun) : det);
        key = line_word(l, noun) + strlen(noun) - 1;
    } else {
        const char *noun = subj->nouns[draw(r, PRONOUN_NOUNS)];
        size_t det = draw_weighted(r, PRONOUN_DET_SHARES, 3);
        if (det == 0)
            line_word(l, "the");
        else if (det == 1)
            line_word(l, a_or_an(noun));
        key = line_word(l, noun) + strlen(noun) - 1;
    }
    PUT_PICK(l, r, PRONOUN_VERBS);
    const char *odet = draw(r, 2) ? "the" : "a";
    const char *oadj = draw(r, 2) ? PICK(r, PRONOUN_OBJECT_ADJS) : NULL;
    const char *onoun = obj->nouns[draw(r, PRONOUN_NOUNS)];
    if (strcmp(odet, "a") == 0)
        odet = a_or_an(oadj ? oadj : onoun);
    line_word(l, odet);
    if (oadj)
        line_word(l, oadj);
    size_t okey = line_word(l, onoun) + strlen(onoun) - 1;
    PUT_PICK(l, r, PRONOUN_CONJS);
    size_t it = line_word(l, "it");
    /* After a person, "it" is the object: its class speaks, and the broken
     * form is another class's word, picked by where "it" stands (a stand-in
     * for a draw, see gen_coref). */
    const PronounClass *ante = person ? obj : subj;
    const char *alt =
        person ? PRONOUN_CLASSES[(co + 1 + (it - l->start) % (nclass - 1)) % nclass].after_it[0]
               : obj->after_it[0];
    /* A class with one word after "it" draws nothing: parsing, a draw between
     * two equal words would find every sentence twice. */
    int two = strcmp(ante->after_it[0], ante->after_it[1]) != 0;
    const char *after = ante->after_it[two ? draw(r, 2) : 0];
    line_rel(l, SYNTH_REL_PRONOUN, it + 1, person ? okey : key, it + 2, strlen(after), alt, NULL);
    for (const char *c = after; *c; c++)
        line_char(l, *c);
    line_word(l, ante->props[draw(r, PRONOUN_PROPS)]);
}

/* ---- Driver ----------------------------------------------------------------- */

static const unsigned KIND_SHARES[SYNTH_LINE_COUNT] = {SYNTH_LINE_KINDS(SYNTH_LINE_SHARE)};

static void (*const GEN[SYNTH_LINE_COUNT])(Line *, Src *) = {
    [SYNTH_LINE_PLAIN] = gen_plain,     [SYNTH_LINE_AGREE] = gen_agree,
    [SYNTH_LINE_BRACKET] = gen_bracket, [SYNTH_LINE_COPY] = gen_copy,
    [SYNTH_LINE_COREF] = gen_coref,     [SYNTH_LINE_SOUND] = gen_sound,
    [SYNTH_LINE_SCENE] = gen_scene,     [SYNTH_LINE_PRONOUN] = gen_pronoun,
    [SYNTH_LINE_CHANT] = gen_chant,
};

/* Draws a sentence kind by its share (or takes `kind`, unless it is
 * SYNTH_LINE_COUNT), then draws sentences of that kind until
 * one keeps every limit, written after what the line holds already (after a
 * space: line_word spaces a word that does not start the line); ends it with
 * its mark and capitalises its first letter. Parsing, a sentence is drawn once
 * and the limits do not apply: a sentence the grammar writes is understood
 * however long it is. */
static void sentence_generate(Line *l, Src *r, SynthLineKind kind)
{
    if (kind == SYNTH_LINE_COUNT)
        kind = (SynthLineKind)draw_weighted(r, KIND_SHARES, SYNTH_LINE_COUNT);
    r->kind = (int)kind;
    size_t max_len = kind == SYNTH_LINE_AGREE ? SYNTH_AGREE_MAX_LINE : SYNTH_OTHER_MAX_LINE;
    size_t mark = l->len, nrel = l->nrel, first = mark + (mark > 0);
    int ante = l->scene, ante_plural = l->scene_plural;
    l->start = first;
    do {
        l->len = mark;
        l->nrel = nrel;
        l->glue = 0;
        l->bad = 0;
        l->end = '.';
        l->ante = ante;
        l->ante_plural = ante_plural;
        l->scene = -1;
        GEN[kind](l, r);
        /* Parsing, any sentence may end with '.', '!' or '?'. */
        if (!r->rng && l->len < r->target_len && strchr(".!?", r->target[l->len]))
            l->end = r->target[l->len];
        line_char(l, l->end);
    } while (r->rng && (l->bad || l->len - first + 1 > max_len));
    if (l->text[first] >= 'a' && l->text[first] <= 'z')
        l->text[first] = (char)(l->text[first] - 'a' + 'A');
}

/* A line: one sentence, and sometimes a second one after a space, as a
 * paragraph runs on: after a scene, SYNTH_FOLLOW_PERCENT of the time a second
 * scene ("The cat sat down. The cat slept in."); otherwise SYNTH_JOIN_PERCENT of
 * the time a sentence of any kind ("The cat sat down. A dog ran."); then '\n'.
 * Parsing, a line is one sentence (synth_parse splits the text into them),
 * and r->ante is the scene animal of the sentence before it. */
static void line_generate(Line *l, Src *r)
{
    l->src = r;
    line_reset(l);
    if (!r->rng) {
        l->scene = r->ante;
        l->scene_plural = r->ante_plural;
    }
    sentence_generate(l, r, SYNTH_LINE_COUNT);
    if (r->rng && l->scene >= 0 && chance(r, SYNTH_FOLLOW_PERCENT, 100))
        sentence_generate(l, r, SYNTH_LINE_SCENE);
    else if (r->rng && chance(r, SYNTH_JOIN_PERCENT, 100))
        sentence_generate(l, r, SYNTH_LINE_COUNT);
    line_char(l, '\n');
}

/* The corpus line by line: each call of walk_next makes the next line, of
 * which the first `len` bytes lie inside the corpus's nbytes (all of it but
 * for the last, cut line), starting at corpus byte `pos`. */
typedef struct {
    Rng rng;
    Src src;
    Line line;
    size_t pos, len, nbytes;
} Walk;

static void walk_init(Walk *w, uint64_t seed, size_t nbytes, const SynthWords *words)
{
    rng_init(&w->rng, seed, RNG_STREAM_CORPUS);
    memset(&w->src, 0, sizeof w->src);
    w->src.rng = &w->rng;
    w->src.words = words;
    w->pos = w->len = 0;
    w->nbytes = nbytes;
}

/* 0 when the corpus has no more lines. */
static int walk_next(Walk *w)
{
    w->pos += w->len;
    if (w->pos >= w->nbytes)
        return 0;
    line_generate(&w->line, &w->src);
    w->len = w->line.len < w->nbytes - w->pos ? w->line.len : w->nbytes - w->pos;
    return 1;
}

size_t synth_generate_relations(char *buf, size_t nbytes, uint64_t seed,
                                SynthRelation *rels, size_t cap)
{
    SynthWords words;
    synth_words_init(&words);
    Walk w;
    walk_init(&w, seed, nbytes, &words);
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
    SynthWords words;
    synth_words_init(&words);
    Walk w;
    walk_init(&w, seed, nbytes, &words);
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
    SynthWords words;
    synth_words_init(&words);
    Walk w;
    walk_init(&w, seed, at + n, &words);
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

/* ---- Parsing a sentence ------------------------------------------------------ */

/* The most attempts one sentence may take: each is one run of the generator
 * up to the first byte that differs. A sentence of the grammar takes some
 * thousands; the bound only stops a pathological one. */
enum { PARSE_MAX_ATTEMPTS = 2000000 };

/* Parses one sentence s[0..n) ending in '\n': 1 and the line in *l when the
 * grammar writes it. A sentence that several lines of the grammar read the
 * same (a scene that is also a plain line) takes the one that plants the most
 * relations, the first such in the order of the choices. */
static int parse_line(Line *l, Src *src, const SynthWords *words, const char *s, size_t n,
                      int ante, int ante_plural, SynthWhy *why)
{
    Line got;
    /* Both live across setjmp, so volatile: a longjmp must not lose them. */
    volatile int found = 0;
    volatile long attempt;
    memset(src, 0, sizeof *src);
    src->why = why;
    src->words = words;
    src->target = s;
    src->target_len = n;
    src->ante = ante;
    src->ante_plural = ante_plural;
    for (attempt = 0; attempt < PARSE_MAX_ATTEMPTS; attempt++) {
        src->used = 0;
        if (setjmp(src->fail) == 0) {
            line_generate(&got, src);
            if (got.len == n && (!found || got.nrel > l->nrel)) {
                *l = got;
                found = 1;
            }
        }
        /* The next attempt: the last choice this one made that has another
         * value left gets it, and the choices after it are dropped. */
        size_t k = src->used;
        while (k > 0 && src->choice[k - 1] + 1 >= src->bound[k - 1])
            k--;
        if (k == 0)
            break;
        src->choice[k - 1]++;
        src->depth = k;
    }
    return found;
}

/* The end of the sentence starting at text[i] (exclusive, after its mark or
 * newline), or n. */
static size_t sentence_end(const char *text, size_t i, size_t n)
{
    for (; i < n; i++) {
        if (text[i] == '\n')
            return i;
        if ((text[i] == '.' || text[i] == '!' || text[i] == '?') &&
            (i + 1 == n || text[i + 1] == ' ' || text[i + 1] == '\n'))
            return i + 1;
    }
    return n;
}

size_t synth_parse(const char *text, size_t n, SynthSentence *sent, size_t sent_cap,
                   size_t *nsent, SynthRelation *rels, size_t cap)
{
    size_t total = 0, ns = 0;
    Src src;
    Line line;
    char buf[LINE_CAP];
    SynthWords words;
    synth_words_init(&words);
    /* The scene animal of the sentence before, on the same line (-1: none). */
    int ante = -1, ante_plural = 0;
    for (size_t i = 0; i < n;) {
        if (text[i] == ' ' || text[i] == '\n') {
            if (text[i] == '\n')
                ante = -1;
            i++;
            continue;
        }
        size_t e = sentence_end(text, i, n), len = e - i;
        int understood = 0;
        if (len + 1 < LINE_CAP) {
            memcpy(buf, text + i, len);
            buf[len] = '\n';
            understood = parse_line(&line, &src, &words, buf, len + 1, ante, ante_plural, NULL);
        }
        ante = understood ? line.scene : -1;
        ante_plural = understood ? line.scene_plural : 0;
        if (ns < sent_cap)
            sent[ns] = (SynthSentence){i, e, understood};
        ns++;
        for (size_t k = 0; understood && k < line.nrel; k++) {
            if (line.rel[k].query + 1 >= len)
                continue;
            if (total < cap) {
                rels[total] = line.rel[k];
                rels[total].query += i;
                rels[total].key += i;
                rels[total].form += i;
            }
            total++;
        }
        i = e;
    }
    *nsent = ns;
    return total;
}

/* ---- Why a sentence is not understood ------------------------------------- */

/* Each kind's name in docs/corpus.md's sections. */
static const char *const KIND_NAMES[SYNTH_LINE_COUNT] = {
    [SYNTH_LINE_PLAIN] = "plain",     [SYNTH_LINE_AGREE] = "agreement",
    [SYNTH_LINE_BRACKET] = "bracket", [SYNTH_LINE_COPY] = "copy",
    [SYNTH_LINE_COREF] = "coreference", [SYNTH_LINE_SOUND] = "sound",
    [SYNTH_LINE_SCENE] = "scene",     [SYNTH_LINE_PRONOUN] = "pronoun",
    [SYNTH_LINE_CHANT] = "chant",
};

/* A sentence of the given kind, the first the generator writes from a fixed
 * seed: the example of a pattern. */
static void example_sentence(SynthLineKind kind, const SynthWords *words, char *out, size_t cap)
{
    Rng rng;
    rng_init(&rng, 1, RNG_STREAM_CORPUS);
    Src src;
    memset(&src, 0, sizeof src);
    src.rng = &rng;
    src.words = words;
    Line line;
    line.src = &src;
    line_reset(&line);
    sentence_generate(&line, &src, kind);
    snprintf(out, cap, "%.*s", (int)line.len, line.text);
}

int synth_why(const char *sentence, size_t n, SynthWhy *why)
{
    memset(why, 0, sizeof *why);
    why->kind = -1;
    char buf[LINE_CAP];
    if (n + 1 >= LINE_CAP) {
        why->at = 0;
        why->len = n;
        snprintf(why->role, sizeof why->role, "a sentence of at most %d bytes", LINE_CAP - 2);
        return 0;
    }
    memcpy(buf, sentence, n);
    buf[n] = '\n';
    Src src;
    Line line;
    SynthWords words;
    synth_words_init(&words);
    if (parse_line(&line, &src, &words, buf, n + 1, -1, 0, why)) {
        memset(why, 0, sizeof *why);
        why->kind = -1;
        return 1;
    }
    if (why->kind >= 0 && why->kind < SYNTH_LINE_COUNT) {
        snprintf(why->pattern, sizeof why->pattern, "%s", KIND_NAMES[why->kind]);
        example_sentence((SynthLineKind)why->kind, &words, why->example, sizeof why->example);
    }
    return 0;
}

size_t synth_why_text(const SynthWhy *why, const char *sentence, char *buf, size_t cap)
{
    size_t used = 0;
#define SAY(...)                                                                              \
    do {                                                                                      \
        int k_ = snprintf(buf + (used < cap ? used : cap), used < cap ? cap - used : 0,       \
                          __VA_ARGS__);                                                       \
        used += k_ > 0 ? (size_t)k_ : 0;                                                      \
    } while (0)
    char word[SYNTH_ALT_CAP * 2];
    size_t wl = why->len < sizeof word - 1 ? why->len : sizeof word - 1;
    for (size_t i = 0; i < wl; i++)
        word[i] = fold(sentence[why->at + i]);
    word[wl] = '\0';
    /* An owner ("cat's") is known when its noun is. */
    size_t stem = wl > 2 && word[wl - 2] == '\'' && word[wl - 1] == 's' ? wl - 2 : wl;
    if (wl == 0)
        SAY("the sentence stops too soon");
    else if (synth_word_classes(word, stem) == 0 && wl > 1)
        SAY("`%.*s`: not a word the corpus knows", (int)why->len, sentence + why->at);
    else
        SAY("`%.*s`: the corpus does not put it here", (int)why->len, sentence + why->at);
    SAY("; here the corpus puts ");
    if (why->role[0])
        SAY("%s%s", why->role, why->nwant ? " or " : "");
    for (size_t i = 0; i < why->nwant; i++)
        SAY("%s`%s`", i ? ", " : "", why->want[i]);
    if (why->nwant == SYNTH_WHY_WANTS)
        SAY(" ...");
    if (why->pattern[0])
        SAY("; nearest pattern: %s, e.g. \"%s\"", why->pattern, why->example);
#undef SAY
    return used;
}
