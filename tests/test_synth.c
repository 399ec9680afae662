/* Tests for data/synth: determinism, the prefix property, the byte set, and that
 * every planted relation is really in the text. The checks parse the generated
 * text themselves, using only the lexicon lookup (synth_word_classes), so a
 * generator that planted a relation wrongly would fail them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "data/synth.h"
#include "data/synth_lexicon.h"
#include "data/synth_words.h"


static char *generate(size_t n, uint64_t seed)
{
    char *buf = malloc(n + 1);
    cr_assert_not_null(buf);
    synth_generate(buf, n, seed);
    buf[n] = '\0';
    return buf;
}

static int is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

/* The corpus's words, made once for the whole test process: the lookups are
 * many (every word of a megabyte), and synth_word_classes makes them anew on
 * every call. */
static const SynthWords *words(void)
{
    static SynthWords w;
    static int made;
    if (!made)
        synth_words_init(&w);
    made = 1;
    return &w;
}

/* Lexicon classes of a word as written, with a capital first letter lowered
 * and an "'s" ending ("it's") dropped. */
static unsigned classes_of(const char *w, size_t len)
{
    char low[32];
    if (len >= 2 && w[len - 2] == '\'' && w[len - 1] == 's')
        len -= 2;
    if (len >= sizeof low)
        return 0;
    memcpy(low, w, len);
    if (is_upper(low[0]))
        low[0] = (char)(low[0] - 'A' + 'a');
    return words_classes(words(), low, len);
}

/* A byte inside a word: a letter, a digit, or a hyphen or apostrophe between
 * two of them ("well-fed", "it's"). */
static int in_word(const char *line, size_t len, size_t i)
{
    char c = line[i];
    if (is_letter(c) || (c >= '0' && c <= '9'))
        return 1;
    return (c == '-' || c == '\'') && i > 0 && i + 1 < len && is_letter(line[i - 1]) &&
           is_letter(line[i + 1]);
}

/* The words of one line, as (start, length) pairs. */
typedef struct {
    size_t start[64];
    size_t len[64];
    size_t n;
} Words;

static void split_words(const char *line, size_t len, Words *w)
{
    w->n = 0;
    for (size_t i = 0; i < len;) {
        if (!in_word(line, len, i)) {
            i++;
            continue;
        }
        size_t s = i;
        while (i < len && in_word(line, len, i))
            i++;
        cr_assert_lt(w->n, 64u);
        w->start[w->n] = s;
        w->len[w->n] = i - s;
        w->n++;
    }
}

/* A sound: a lowercase word of 3 or more repeats of one two-letter syllable. */
static int is_sound(const char *w, size_t len)
{
    if (len < 6 || len % 2 != 0 || is_upper(w[0]) || w[0] == w[1])
        return 0;
    for (size_t i = 2; i < len; i++)
        if (w[i] != w[i - 2])
            return 0;
    return 1;
}

/* A chant: six or more two-letter lowercase words in a row, two syllables in
 * turn. */
static int is_chant(const char *line, const Words *w)
{
    size_t run = 0;
    for (size_t i = 0; i < w->n; i++) {
        const char *x = line + w->start[i];
        int syl = w->len[i] == 2 && !is_upper(x[0]);
        if (syl && run >= 2) {
            const char *y = line + w->start[i - 2], *z = line + w->start[i - 1];
            syl = memcmp(x, y, 2) == 0 && memcmp(x, z, 2) != 0;
        }
        run = syl ? run + 1 : (w->len[i] == 2 && !is_upper(x[0]));
        if (run >= 6)
            return 1;
    }
    return 0;
}

static int word_is(const char *line, const Words *w, size_t i, const char *word)
{
    return i < w->n && w->len[i] == strlen(word) && memcmp(line + w->start[i], word, w->len[i]) == 0;
}

/* A scene, read from its surface (docs/corpus.md): at most 10 words, no comma,
 * a determiner, maybe a mood, a scene animal, a scene verb (the mood's when
 * there is one), then the verb's particle (maybe after "slowly" or "quietly"),
 * the animal's preposition with one of its places, or both. */
static int is_scene(const char *line, size_t len, const Words *w)
{
    if (memchr(line, ',', len) || w->n > 10 || w->n < 3)
        return 0;
    size_t i = 1;
    const SceneMood *mood = NULL;
    for (size_t m = 0; m < sizeof SCENE_MOODS / sizeof SCENE_MOODS[0]; m++)
        if (word_is(line, w, i, SCENE_MOODS[m].adj))
            mood = &SCENE_MOODS[m];
    i += mood != NULL;
    const SceneAnimal *an = NULL;
    for (size_t a = 0; a < sizeof SCENE_ANIMALS / sizeof SCENE_ANIMALS[0]; a++)
        if (word_is(line, w, i, SCENE_ANIMALS[a].noun.sg) ||
            word_is(line, w, i, SCENE_ANIMALS[a].noun.pl))
            an = &SCENE_ANIMALS[a];
    if (!an)
        return 0;
    i++;
    const SceneVerb *verb = NULL;
    for (size_t v = 0; v < sizeof SCENE_VERBS / sizeof SCENE_VERBS[0]; v++)
        if (word_is(line, w, i, SCENE_VERBS[v].verb))
            verb = &SCENE_VERBS[v];
    if (!verb)
        return 0;
    if (mood) {
        int ok = 0;
        for (int k = 0; k < SCENE_MOOD_VERBS; k++)
            ok |= strcmp(mood->verbs[k], verb->verb) == 0;
        if (!ok)
            return 0;
    }
    i++;
    int adv = word_is(line, w, i, SCENE_ADVS[0]) || word_is(line, w, i, SCENE_ADVS[1]);
    if (word_is(line, w, i + adv, verb->particle))
        i += 1 + adv;
    else if (adv)
        return 0;
    if (i == w->n)
        return 1;
    if (!word_is(line, w, i, an->prep) || !word_is(line, w, i + 1, "the"))
        return 0;
    const char *last_word = line + w->start[w->n - 1];
    for (size_t p = 0; p < sizeof SCENE_PLACES / sizeof SCENE_PLACES[0]; p++)
        if (strcmp(SCENE_PLACES[p].prep, an->prep) == 0)
            for (int k = 0; k < SCENE_PLACE_NOUNS; k++)
                if (strlen(SCENE_PLACES[p].places[k]) == w->len[w->n - 1] &&
                    memcmp(SCENE_PLACES[p].places[k], last_word, w->len[w->n - 1]) == 0)
                    return w->n - i <= 4;
    return 0;
}

/* The kind of a line, read from its surface: a chant, else a sound word, else brackets or
 * quotes, else the pronoun "it" (coreference with a comma, a pronoun line
 * without), else a scene, else a word outside the lexicon (a name), else a
 * present-tense verb, else plain. */
static int classify(const char *line, size_t len)
{
    Words w;
    split_words(line, len, &w);
    if (is_chant(line, &w))
        return SYNTH_LINE_CHANT;
    for (size_t i = 0; i < w.n; i++)
        if (is_sound(line + w.start[i], w.len[i]))
            return SYNTH_LINE_SOUND;
    if (memchr(line, '(', len) || memchr(line, '"', len))
        return SYNTH_LINE_BRACKET;
    for (size_t i = 0; i < w.n; i++)
        if ((w.len[i] == 2 && memcmp(line + w.start[i], "it", 2) == 0) ||
            (w.len[i] == 4 && memcmp(line + w.start[i], "it's", 4) == 0))
            return memchr(line, ',', len) ? SYNTH_LINE_COREF : SYNTH_LINE_PRONOUN;
    if (is_scene(line, len, &w))
        return SYNTH_LINE_SCENE;
    int present = 0;
    for (size_t i = 0; i < w.n; i++) {
        unsigned c = classes_of(line + w.start[i], w.len[i]);
        if (c == 0)
            return SYNTH_LINE_COPY;
        if (c & (SYNTH_VERB_SG | SYNTH_VERB_PL))
            present = 1;
    }
    return present ? SYNTH_LINE_AGREE : SYNTH_LINE_PLAIN;
}

/* Calls fn on each complete sentence of text: a line (without its '\n') or,
 * where a line holds two, each of them (split after a '.', '!' or '?' that a
 * space follows). */
typedef void (*LineFn)(const char *line, size_t len, void *ctx);

static void each_line(const char *text, size_t n, LineFn fn, void *ctx)
{
    size_t s = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '\n') {
            fn(text + s, i - s, ctx);
            s = i + 1;
        } else if ((text[i] == '.' || text[i] == '!' || text[i] == '?') && i + 1 < n &&
                   text[i + 1] == ' ') {
            fn(text + s, i + 1 - s, ctx);
            s = i + 2;
        }
    }
}

Test(synth, same_seed_gives_same_bytes)
{
    char *a = generate(SYNTH_DEFAULT_BYTES, 7);
    char *b = generate(SYNTH_DEFAULT_BYTES, 7);
    cr_assert_eq(memcmp(a, b, SYNTH_DEFAULT_BYTES), 0);
    free(a);
    free(b);
}

Test(synth, different_seeds_give_different_text)
{
    char *a = generate(4096, 1);
    char *b = generate(4096, 2);
    size_t same = 0;
    for (size_t i = 0; i < 4096; i++)
        same += a[i] == b[i];
    /* Unrelated English-like texts agree on some bytes (spaces, common letters), not most. */
    cr_assert_lt(same, 2048u, "seeds 1 and 2 agree on %zu of 4096 bytes", same);
    free(a);
    free(b);
}

Test(synth, shorter_request_is_a_prefix_and_nothing_past_it_is_written)
{
    const size_t full_n = 70000;
    char *full = generate(full_n, 3);
    const size_t sizes[] = {0, 1, 2, 37, 1000, 4097, 65536, full_n - 1};
    char *buf = malloc(full_n + 16);
    cr_assert_not_null(buf);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        memset(buf, 0x7f, full_n + 16);
        synth_generate(buf, n, 3);
        cr_assert_eq(memcmp(buf, full, n), 0, "%zu bytes are not a prefix", n);
        for (size_t i = n; i < n + 16; i++)
            cr_assert_eq(buf[i], 0x7f, "byte %zu written for a request of %zu", i, n);
    }
    free(buf);
    free(full);
}

static void check_line_shape(const char *line, size_t len, void *ctx)
{
    (void)ctx;
    cr_assert_geq(len, 2u);
    cr_assert(is_upper(line[0]) || (line[0] >= '0' && line[0] <= '9'),
              "line does not start with a capital or a digit: %.*s", (int)len, line);
    cr_assert(line[len - 1] == '.' || line[len - 1] == '!' || line[len - 1] == '?',
              "line does not end with '.', '!' or '?': %.*s", (int)len, line);
    cr_assert_leq(len + 1, (size_t)SYNTH_OTHER_MAX_LINE, "line too long: %.*s", (int)len, line);
    for (size_t i = 1; i < len; i++)
        cr_assert(line[i] != ' ' || line[i - 1] != ' ', "double space: %.*s", (int)len, line);
}

Test(synth, text_is_printable_ascii_lines_ending_in_a_mark)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    size_t bad = 0;
    while (bad < SYNTH_DEFAULT_BYTES && ((t[bad] >= 32 && t[bad] <= 126) || t[bad] == '\n'))
        bad++;
    cr_assert_eq(bad, (size_t)SYNTH_DEFAULT_BYTES, "byte %zu is 0x%02x", bad,
                 (unsigned)(unsigned char)t[bad]);
    cr_assert_eq(t[0] != ' ' && t[0] != '\n', 1);
    each_line(t, SYNTH_DEFAULT_BYTES, check_line_shape, NULL);
    free(t);
}

/* No word follows itself after a space: a scene whose particle is its animal's
 * preposition ("slept in", a bird) takes no place after it ("in in the nest"). */
Test(synth, no_word_follows_itself)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    Words w;
    size_t s = 0;
    for (size_t i = 0; i < SYNTH_DEFAULT_BYTES; i++) {
        if (t[i] != '\n')
            continue;
        split_words(t + s, i - s, &w);
        for (size_t k = 1; k < w.n; k++)
            cr_assert(w.start[k] != w.start[k - 1] + w.len[k - 1] + 1 ||
                          w.len[k] != w.len[k - 1] ||
                          memcmp(t + s + w.start[k], t + s + w.start[k - 1], w.len[k]) != 0,
                      "a word twice in a row: %.*s", (int)(i - s), t + s);
        s = i + 1;
    }
    free(t);
}

/* SYNTH_JOIN_PERCENT of the lines that do not start with a scene hold a second
 * sentence after a space; those that do, SYNTH_FOLLOW_PERCENT and a quarter of
 * the rest. */
Test(synth, a_quarter_of_lines_run_on_into_a_second_sentence)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    size_t lines[2] = {0}, joined[2] = {0}, marks = 0, start = 0, first_end = 0;
    for (size_t i = 0; i < SYNTH_DEFAULT_BYTES; i++) {
        if (t[i] == '\n') {
            int scene = classify(t + start, (marks ? first_end : i) - start) == SYNTH_LINE_SCENE;
            lines[scene]++;
            joined[scene] += marks > 0;
            cr_assert_leq(marks, 1u, "three sentences on one line before byte %zu", i);
            marks = 0;
            start = i + 1;
        } else if ((t[i] == '.' || t[i] == '!' || t[i] == '?') && t[i + 1] == ' ') {
            marks++;
            first_end = i + 1;
            cr_assert(is_upper(t[i + 2]) || (t[i + 2] >= '0' && t[i + 2] <= '9'),
                      "the second sentence at byte %zu does not start with a capital", i + 2);
        }
    }
    double share = 100.0 * (double)joined[0] / (double)lines[0];
    /* ~14k lines: one standard deviation of the share is about 0.4 points. */
    cr_assert(share > SYNTH_JOIN_PERCENT - 2.0 && share < SYNTH_JOIN_PERCENT + 2.0,
              "%.2f%% of lines hold two sentences", share);
    /* ~2,100 lines: about 1 point. */
    double after_scene = SYNTH_FOLLOW_PERCENT + (100 - SYNTH_FOLLOW_PERCENT) * SYNTH_JOIN_PERCENT / 100.0;
    share = 100.0 * (double)joined[1] / (double)lines[1];
    cr_assert(share > after_scene - 4.0 && share < after_scene + 4.0,
              "%.2f%% of lines that start with a scene hold two sentences", share);
    free(t);
}

Test(synth, byte_vocabulary_is_small_but_covers_the_alphabet)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    int seen[256] = {0};
    for (size_t i = 0; i < SYNTH_DEFAULT_BYTES; i++)
        seen[(unsigned char)t[i]] = 1;
    int distinct = 0;
    for (int c = 0; c < 256; c++)
        distinct += seen[c];
    for (int c = 'a'; c <= 'z'; c++)
        cr_assert(seen[c], "letter %c never occurs", c);
    /* Every capital: names start with any letter. */
    for (int c = 'A'; c <= 'Z'; c++)
        cr_assert(seen[c], "capital %c never occurs", c);
    /* Ordinary English typography (issue: a user's own sentence is never refused
     * by a model of the built-in corpus for its punctuation). */
    for (const char *p = "()\",.;:-'!?\n0123456789"; *p; p++)
        if (*p != '0' && *p != '4' && *p != '6' && *p != '7' && *p != '8' && *p != '9')
            cr_assert(seen[(unsigned char)*p], "byte '%c' never occurs", *p);
    /* docs/corpus.md gives the count for seed 1. */
    cr_assert(distinct >= 62 && distinct <= 80, "%d distinct bytes", distinct);
    free(t);
}

typedef struct {
    const char *text;      /* the corpus each_line walks */
    size_t count[SYNTH_LINE_COUNT]; /* sentences of each kind but the scenes that follow one */
    size_t lines;          /* those sentences */
    size_t scene_first;    /* scenes that start a line */
    size_t follow;         /* scenes right after a scene on the same line */
    int prev;              /* the kind of the sentence before */
} KindCount;

static void count_kind(const char *line, size_t len, void *ctx)
{
    KindCount *k = ctx;
    int kind = classify(line, len);
    int second = line > k->text && line[-1] == ' ';
    if (kind == SYNTH_LINE_SCENE && second && k->prev == SYNTH_LINE_SCENE) {
        k->follow++;
    } else {
        k->count[kind]++;
        k->lines++;
    }
    k->scene_first += kind == SYNTH_LINE_SCENE && !second;
    k->prev = kind;
    Words w;
    split_words(line, len, &w);
    for (size_t i = 0; i < w.n; i++) {
        unsigned c = classes_of(line + w.start[i], w.len[i]);
        cr_assert(!((c & (SYNTH_NOUN_SG | SYNTH_NOUN_PL)) &&
                    (c & (SYNTH_VERB_SG | SYNTH_VERB_PL))),
                  "%.*s is both noun and present verb", (int)w.len[i], line + w.start[i]);
        if (kind != SYNTH_LINE_COPY &&
            !(kind == SYNTH_LINE_SOUND && is_sound(line + w.start[i], w.len[i])) &&
            !(kind == SYNTH_LINE_CHANT && w.len[i] == 2))
            cr_assert_neq(c, 0u, "%.*s is not in the lexicon", (int)w.len[i], line + w.start[i]);
        /* Pronoun lines say "it is" of food. */
        if (kind != SYNTH_LINE_AGREE && kind != SYNTH_LINE_PRONOUN)
            cr_assert_eq(c & (SYNTH_VERB_SG | SYNTH_VERB_PL), 0u,
                         "present verb outside an agreement line: %.*s", (int)len, line);
    }
}

Test(synth, line_kinds_occur_in_their_documented_shares)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    KindCount k = {.text = t};
    each_line(t, SYNTH_DEFAULT_BYTES, count_kind, &k);
    const int share[SYNTH_LINE_COUNT] = {SYNTH_LINE_KINDS(SYNTH_LINE_SHARE)};
    int sum = 0;
    for (int i = 0; i < SYNTH_LINE_COUNT; i++)
        sum += share[i];
    cr_assert_eq(sum, 100);
    cr_assert_gt(k.lines, 15000u);
    for (int i = 0; i < SYNTH_LINE_COUNT; i++) {
        double got = 100.0 * (double)k.count[i] / (double)k.lines;
        /* ~20k lines: one standard deviation of a share is under 0.35 points. */
        cr_assert(got > share[i] - 2.0 && got < share[i] + 2.0,
                  "kind %d: %.2f%% of lines, documented %d%%", i, got, share[i]);
    }
    /* A scene that starts a line is followed by a second one SYNTH_FOLLOW_PERCENT
     * of the time, and by a sentence of any kind, a scene one time in about 8,
     * a quarter of the rest: about 1.6 points more. ~2,600 scenes: one standard
     * deviation is about 1 point. */
    double follow = 100.0 * (double)k.follow / (double)k.scene_first;
    cr_assert(follow > SYNTH_FOLLOW_PERCENT - 2.0 && follow < SYNTH_FOLLOW_PERCENT + 5.0,
              "%.2f%% of scenes followed by a scene", follow);
    free(t);
}

typedef struct {
    size_t paren, quote, nested;
} BracketCount;

static void check_brackets(const char *line, size_t len, void *ctx)
{
    BracketCount *b = ctx;
    char stack[8];
    size_t depth = 0;
    size_t max_depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = line[i];
        if (c == ')') {
            cr_assert(depth > 0 && stack[depth - 1] == '(', "stray ')': %.*s", (int)len, line);
            depth--;
        } else if (c == '"' && depth > 0 && stack[depth - 1] == '"') {
            depth--;
        } else if (c == '(' || c == '"') {
            cr_assert_lt(depth, 8u);
            stack[depth++] = c;
            b->paren += c == '(';
            b->quote += c == '"';
            max_depth = depth > max_depth ? depth : max_depth;
        }
    }
    cr_assert_eq(depth, 0u, "unclosed bracket or quote: %.*s", (int)len, line);
    cr_assert_leq(max_depth, 2u, "nested more than one level: %.*s", (int)len, line);
    b->nested += max_depth == 2;
}

Test(synth, brackets_and_quotes_close_within_each_line)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    BracketCount b = {0, 0, 0};
    each_line(t, SYNTH_DEFAULT_BYTES, check_brackets, &b);
    /* Seed 1 has 597 parentheses, 1,306 quotes and 149 nestings (bracket
     * sentences are 5 %; quoted sounds add quotes). */
    cr_assert_gt(b.paren, 400u);
    cr_assert_gt(b.quote, 1000u);
    cr_assert_gt(b.nested, 100u);
    free(t);
}

enum { MAX_NAMES = 20000 };

typedef struct {
    size_t lines;
    size_t names; /* distinct names per line, summed over lines */
    char (*name)[8];
} CopyCount;

static void check_copy(const char *line, size_t len, void *ctx)
{
    if (classify(line, len) != SYNTH_LINE_COPY)
        return;
    CopyCount *cc = ctx;
    Words w;
    split_words(line, len, &w);
    int repeated = 0;
    for (size_t i = 0; i < w.n; i++) {
        const char *wi = line + w.start[i];
        if (classes_of(wi, w.len[i]) != 0)
            continue;
        cr_assert(is_upper(wi[0]) && w.len[i] >= 4 && w.len[i] <= 7,
                  "bad name %.*s", (int)w.len[i], wi);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            if (w.len[j] == w.len[i] && memcmp(line + w.start[j], wi, w.len[i]) == 0) {
                cr_assert_leq(w.start[i] - w.start[j], (size_t)SYNTH_COPY_MAX_DISTANCE,
                              "name repeated too far away: %.*s", (int)len, line);
                seen = 1;
            }
        }
        repeated |= seen;
        if (!seen && cc->names < MAX_NAMES) {
            memcpy(cc->name[cc->names], wi, w.len[i]);
            cc->name[cc->names][w.len[i]] = '\0';
            cc->names++;
        }
    }
    cr_assert(repeated, "no name is repeated: %.*s", (int)len, line);
    cc->lines++;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

typedef struct {
    size_t lines, quoted, sounds, syllables[26][26];
} SoundCount;

/* Every non-lexicon word of a sound line is a sound; counts the syllables. */
static void check_sound(const char *line, size_t len, void *ctx)
{
    if (classify(line, len) != SYNTH_LINE_SOUND)
        return;
    SoundCount *sc = ctx;
    Words w;
    split_words(line, len, &w);
    for (size_t i = 0; i < w.n; i++) {
        const char *wi = line + w.start[i];
        if (classes_of(wi, w.len[i]) != 0)
            continue;
        cr_assert(is_sound(wi, w.len[i]), "not a sound: %.*s", (int)len, line);
        cr_assert(w.len[i] >= 2 * SYNTH_SOUND_MIN_REPEATS &&
                  w.len[i] <= 2 * SYNTH_SOUND_MAX_REPEATS,
                  "sound of %zu letters: %.*s", w.len[i], (int)len, line);
        sc->sounds++;
        sc->syllables[wi[0] - 'a'][wi[1] - 'a']++;
    }
    sc->quoted += memchr(line, '"', len) != NULL;
    sc->lines++;
}

Test(synth, sound_lines_repeat_a_random_syllable)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    SoundCount *sc = calloc(1, sizeof *sc);
    cr_assert_not_null(sc);
    each_line(t, SYNTH_DEFAULT_BYTES, check_sound, sc);
    cr_assert_gt(sc->lines, 1000u);
    /* Half the sounds are quoted; 18 consonants x 5 vowels give 90 syllables, so
     * the byte after a syllable can only be told from the byte before it. */
    cr_assert(sc->quoted > sc->lines * 2 / 5 && sc->quoted < sc->lines * 3 / 5, "%zu of %zu",
              sc->quoted, sc->lines);
    int kinds = 0;
    for (int a = 0; a < 26; a++)
        for (int b = 0; b < 26; b++)
            kinds += sc->syllables[a][b] > 0;
    cr_assert_eq(kinds, 90, "%d distinct syllables", kinds);
    free(sc);
    free(t);
}

Test(synth, copy_lines_repeat_a_fresh_name_within_50_bytes)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    CopyCount cc = {0, 0, malloc(MAX_NAMES * sizeof(char[8]))};
    cr_assert_not_null(cc.name);
    each_line(t, SYNTH_DEFAULT_BYTES, check_copy, &cc);
    cr_assert_gt(cc.lines, 2300u);
    cr_assert_lt(cc.names, (size_t)MAX_NAMES);
    /* Names are drawn fresh, so across lines they almost never recur (only short
     * ones collide by chance): the second occurrence must be copied, not recalled. */
    qsort(cc.name, cc.names, sizeof cc.name[0], compare_names);
    size_t distinct = cc.names > 0;
    for (size_t i = 1; i < cc.names; i++)
        distinct += strcmp(cc.name[i - 1], cc.name[i]) != 0;
    cr_assert_gt(distinct, cc.names * 9 / 10, "%zu distinct of %zu names", distinct, cc.names);
    free(cc.name);
    free(t);
}

typedef struct {
    size_t lines, plural, attracted, far, max_distance;
} AgreeCount;

static void check_agree(const char *line, size_t len, void *ctx)
{
    if (classify(line, len) != SYNTH_LINE_AGREE)
        return;
    AgreeCount *a = ctx;
    Words w;
    split_words(line, len, &w);
    size_t subject = w.n;
    /* The first noun but an owner ("the man's frogs"). */
    for (size_t i = 0; i < w.n && subject == w.n; i++) {
        const char *x = line + w.start[i];
        int owner = w.len[i] > 2 && x[w.len[i] - 2] == '\'' && x[w.len[i] - 1] == 's';
        if (!owner && (classes_of(x, w.len[i]) & (SYNTH_NOUN_SG | SYNTH_NOUN_PL)))
            subject = i;
    }
    cr_assert_lt(subject, w.n, "no subject: %.*s", (int)len, line);
    int plural = (classes_of(line + w.start[subject], w.len[subject]) & SYNTH_NOUN_PL) != 0;
    size_t subject_end = w.start[subject] + w.len[subject];
    int first_verb = 1;
    int attracted = 0;
    for (size_t i = subject + 1; i < w.n; i++) {
        unsigned c = classes_of(line + w.start[i], w.len[i]);
        if (first_verb && (c & (SYNTH_NOUN_SG | SYNTH_NOUN_PL)))
            attracted |= ((c & SYNTH_NOUN_PL) != 0) != plural;
        /* The bare verb after "doesn't" or "don't", which agree themselves. */
        if (i > 0 && (word_is(line, &w, i - 1, "doesn't") || word_is(line, &w, i - 1, "don't")))
            continue;
        if (!(c & (SYNTH_VERB_SG | SYNTH_VERB_PL)))
            continue;
        cr_assert(c & (plural ? SYNTH_VERB_PL : SYNTH_VERB_SG),
                  "verb %.*s does not agree with its subject: %.*s", (int)w.len[i],
                  line + w.start[i], (int)len, line);
        if (first_verb) {
            size_t d = w.start[i] - subject_end;
            a->max_distance = d > a->max_distance ? d : a->max_distance;
            a->far += d >= 25;
        }
        first_verb = 0;
    }
    cr_assert(!first_verb, "no present-tense verb: %.*s", (int)len, line);
    cr_assert_leq(len + 1, (size_t)SYNTH_AGREE_MAX_LINE);
    a->lines++;
    a->plural += plural;
    a->attracted += attracted;
}

Test(synth, agreement_verbs_match_the_subject_not_the_nearest_noun)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    AgreeCount a = {0, 0, 0, 0, 0};
    each_line(t, SYNTH_DEFAULT_BYTES, check_agree, &a);
    /* 14 % (SYNTH_PERCENT_AGREE) of about 20,000 lines. */
    cr_assert_gt(a.lines, 2400u);
    cr_assert(a.plural > a.lines / 3 && a.plural < 2 * a.lines / 3, "%zu plural of %zu",
              a.plural, a.lines);
    /* Lines with a noun of the other number between subject and verb: the ones a
     * "nearest noun" guess gets wrong. */
    cr_assert_gt(a.attracted, a.lines / 10);
    cr_assert_gt(a.far, a.lines / 20, "too few long-distance agreements");
    cr_assert_leq(a.max_distance, 60u);
    free(t);
}

/* Whether the noun ending at key (inclusive) and the verb around query agree. */
static void check_agree_relation(const char *t, const SynthRelation *r)
{
    size_t ns = r->key;
    while (ns > 0 && is_letter(t[ns - 1]))
        ns--;
    cr_assert(!is_letter(t[r->key + 1]), "agreement key is not the end of a word");
    unsigned noun = classes_of(t + ns, r->key + 1 - ns);
    cr_assert(noun & (SYNTH_NOUN_SG | SYNTH_NOUN_PL), "agreement key is not a noun");
    size_t vs = t[r->query] == ' ' ? r->query + 1 : r->query;
    while (is_letter(t[vs - 1]))
        vs--;
    size_t ve = vs;
    while (is_letter(t[ve]) || (t[ve] == '\'' && is_letter(t[ve + 1]))) /* isn't, don't */
        ve++;
    unsigned verb = classes_of(t + vs, ve - vs);
    cr_assert(verb & ((noun & SYNTH_NOUN_PL) ? SYNTH_VERB_PL : SYNTH_VERB_SG),
              "%.*s does not agree with %.*s", (int)(ve - vs), t + vs,
              (int)(r->key + 1 - ns), t + ns);
    cr_assert_leq(r->query - r->key, 60u);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int in_list(const char *w, size_t len, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && strncmp(list[i], w, len) == 0)
            return 1;
    return 0;
}

/* The word holding byte pos in t, as (start, length). */
static size_t word_at(const char *t, size_t pos, size_t *len)
{
    size_t s = pos, e = pos;
    while (s > 0 && (is_letter(t[s - 1]) || (t[s - 1] >= '0' && t[s - 1] <= '9')))
        s--;
    while (is_letter(t[e]) || (t[e] >= '0' && t[e] <= '9'))
        e++;
    *len = e - s;
    return s;
}

/* The determiner ending at key fixes the number of the noun around query: a
 * singular determiner before a singular noun, a plural one before a plural, at
 * most SYNTH_ADJ_MAX adjectives between them, and the query on the last byte the
 * noun's two forms share. */
static void check_det_relation(const char *t, const SynthRelation *r)
{
    size_t dl, nl;
    size_t ds = word_at(t, r->key, &dl), ns = word_at(t, r->query, &nl);
    cr_assert_eq(ds + dl, r->key + 1, "determiner key is not the end of a word");
    unsigned det = classes_of(t + ds, dl), noun = classes_of(t + ns, nl);
    cr_assert(det & SYNTH_DET, "%.*s is not a determiner", (int)dl, t + ds);
    if (dl == 3 && strncasecmp(t + ds, "the", 3) == 0 && t[r->query] == ' ') {
        /* "the" naming the animal of the sentence before again: the query is
         * the space before that noun, which the sentence before holds, and the
         * broken form another animal of the same number. */
        size_t fl;
        size_t fs = word_at(t, r->query + 1, &fl), prev = ds;
        cr_assert_eq(fs, r->query + 1);
        cr_assert(ds > 2 && (t[ds - 2] == '.' || t[ds - 2] == '!' || t[ds - 2] == '?'),
                  "definite \"the\" does not start the second sentence");
        while (prev > 0 && t[prev - 1] != '\n')
            prev--;
        int found = 0;
        for (size_t i = prev; i + fl < ds && !found; i++)
            found = (i == prev || t[i - 1] == ' ') && strncmp(t + i, t + fs, fl) == 0 &&
                    t[i + fl] == ' ';
        cr_assert(found, "%.*s is not named in the sentence before", (int)fl, t + fs);
        unsigned f = classes_of(t + fs, fl), a = classes_of(r->alt[0], strlen(r->alt[0]));
        cr_assert(strncmp(r->alt[0], t + fs, fl) != 0 &&
                      (f & (SYNTH_NOUN_SG | SYNTH_NOUN_PL)) == (a & (SYNTH_NOUN_SG | SYNTH_NOUN_PL)),
                  "%.*s / %s", (int)fl, t + fs, r->alt[0]);
        return;
    }
    cr_assert(noun & (SYNTH_NOUN_SG | SYNTH_NOUN_PL), "%.*s is not a noun", (int)nl, t + ns);
    static const char *const no_number[] = {"the", "my", "his", "her", "our", "their", "your"};
    char det_low[8] = {0};
    for (size_t i = 0; i < dl && i < sizeof det_low - 1; i++)
        det_low[i] = (char)(t[ds + i] | 0x20);
    if (in_list(det_low, dl, no_number, NELEM(no_number))) {
        cr_assert(!r->alt[0][0], "%s fixes no number, so it has no broken form", det_low);
        return;
    }
    static const char *const singular[] = {"a", "an", "this", "one", "each", "every"};
    char low[8] = {0};
    cr_assert_lt(dl, sizeof low);
    memcpy(low, t + ds, dl);
    low[0] = (char)(low[0] | 0x20);
    int plural_det = !in_list(low, dl, singular, 6);
    cr_assert_eq((noun & SYNTH_NOUN_PL) != 0, plural_det, "%.*s ... %.*s", (int)dl, t + ds,
                 (int)nl, t + ns);
    size_t words = 0;
    for (size_t i = ds + dl; i < ns; i++)
        words += t[i] == ' ';
    cr_assert_leq(words, (size_t)SYNTH_ADJ_MAX + 1, "too far from its determiner");
    /* Some form of the noun parts right after the query (or the query ends it). */
    cr_assert(r->query + 1 <= ns + nl);
}

/* The word holding byte pos, copied into w (lower case), or "". */
static const char *word_text(const char *t, size_t pos, char w[32])
{
    size_t len, s = word_at(t, pos, &len);
    snprintf(w, 32, "%.*s", (int)(len < 31 ? len : 31), t + s);
    w[0] = (char)(w[0] | 0x20);
    return w;
}

/* The sentence holding byte pos of a generated text t[0..n), as [*ls, *le): from
 * after a newline or after a mark and its space, to its mark (or the text's end,
 * where the last line is cut). */
static void sentence_span(const char *t, size_t n, size_t pos, size_t *ls, size_t *le)
{
    size_t s = pos, e = pos;
    while (s > 0 && t[s - 1] != '\n' &&
           !(s > 1 && t[s - 1] == ' ' && (t[s - 2] == '.' || t[s - 2] == '!' || t[s - 2] == '?')))
        s--;
    while (e < n && t[e] != '\n' &&
           !((t[e] == '.' || t[e] == '!' || t[e] == '?') && e + 1 < n && t[e + 1] == ' '))
        e++;
    *ls = s;
    *le = e;
}

static const SceneAnimal *scene_animal(const char *w)
{
    for (size_t a = 0; a < NELEM(SCENE_ANIMALS); a++)
        if (strcmp(w, SCENE_ANIMALS[a].noun.sg) == 0 || strcmp(w, SCENE_ANIMALS[a].noun.pl) == 0)
            return &SCENE_ANIMALS[a];
    return NULL;
}

static const SceneVerb *scene_verb(const char *w)
{
    for (size_t v = 0; v < NELEM(SCENE_VERBS); v++)
        if (strcmp(w, SCENE_VERBS[v].verb) == 0)
            return &SCENE_VERBS[v];
    return NULL;
}

static const SceneMood *mood_of_verb(const char *w)
{
    for (size_t m = 0; m < NELEM(SCENE_MOODS); m++)
        for (int k = 0; k < SCENE_MOOD_VERBS; k++)
            if (strcmp(w, SCENE_MOODS[m].verbs[k]) == 0)
                return &SCENE_MOODS[m];
    return NULL;
}

static const ScenePlace *place_of(const char *w)
{
    for (size_t p = 0; p < NELEM(SCENE_PLACES); p++)
        for (int k = 0; k < SCENE_PLACE_NOUNS; k++)
            if (strcmp(w, SCENE_PLACES[p].places[k]) == 0)
                return &SCENE_PLACES[p];
    return NULL;
}

static int pronoun_class(const char *w)
{
    for (size_t c = 0; c < NELEM(PRONOUN_CLASSES); c++)
        for (int k = 0; k < PRONOUN_NOUNS; k++)
            if (strcmp(w, PRONOUN_CLASSES[c].nouns[k]) == 0)
                return (int)c;
    return -1;
}

/* The scene and pronoun relations, checked against the lexicon (synth.h):
 * each key and query is the word it claims, the form is what the key makes
 * the text say, and the broken form is what another key would. */
static void check_scene_relation(const char *t, size_t n, const SynthRelation *r)
{
    char kw[32], qw[32], form[SYNTH_ALT_CAP] = {0};
    word_text(t, r->key, kw);
    word_text(t, r->query, qw);
    memcpy(form, t + r->form, r->form_len < SYNTH_ALT_CAP ? r->form_len : SYNTH_ALT_CAP - 1);
    switch (r->kind) {
    case SYNTH_REL_SUBJECT: {
        const SceneAnimal *an = scene_animal(kw);
        cr_assert(an && scene_verb(qw), "subject-verb: %s ... %s", kw, qw);
        if (r->form_len) {
            cr_assert_str_eq(form, an->prep);
            cr_assert(strcmp(r->alt[0], an->prep) != 0);
            int other = 0;
            for (size_t a = 0; a < NELEM(SCENE_ANIMALS); a++)
                other |= strcmp(r->alt[0], SCENE_ANIMALS[a].prep) == 0;
            cr_assert(other, "%s is no animal's preposition", r->alt[0]);
        }
        break;
    }
    case SYNTH_REL_MOOD: {
        const SceneMood *m = mood_of_verb(form), *o = mood_of_verb(r->alt[0]);
        cr_assert(scene_animal(qw) && m && strcmp(m->adj, kw) == 0, "mood: %s %s %s", kw, qw, form);
        cr_assert(o && o != m, "mood's broken form %s", r->alt[0]);
        break;
    }
    case SYNTH_REL_MODIFIER: {
        /* The query is the space before the particle, after the verb or a
         * scene adverb. */
        const SceneVerb *v = scene_verb(kw);
        char before[32];
        word_text(t, r->query - 1, before);
        cr_assert(t[r->query] == ' ' && r->form == r->query + 1, "modifier's query");
        cr_assert(v && strcmp(v->particle, form) == 0, "modifier: %s %s", kw, form);
        cr_assert(strcmp(before, kw) == 0 || in_list(before, strlen(before), SCENE_ADVS, 2),
                  "modifier: %s before %s", before, form);
        cr_assert(r->alt[0][0] && strcmp(r->alt[0], form) != 0);
        break;
    }
    case SYNTH_REL_PLACE: {
        const ScenePlace *p = place_of(form), *o = place_of(r->alt[0]);
        cr_assert(t[r->query] == ' ' && p && strcmp(p->prep, kw) == 0, "place: %s ... %s", kw,
                  form);
        cr_assert(o && o != p, "place's broken form %s", r->alt[0]);
        break;
    }
    default: { /* pronoun */
        int c = pronoun_class(kw);
        cr_assert(c >= 0 && strcmp(qw, "it") == 0 && t[r->query] == 't', "pronoun: %s %s", kw, qw);
        const PronounClass *pc = &PRONOUN_CLASSES[c];
        cr_assert(strcmp(form, pc->after_it[0]) == 0 || strcmp(form, pc->after_it[1]) == 0,
                  "after \"it\" about %s: %s", kw, form);
        int other = -1;
        for (size_t k = 0; k < NELEM(PRONOUN_CLASSES); k++)
            if (strcmp(r->alt[0], PRONOUN_CLASSES[k].after_it[0]) == 0)
                other = (int)k;
        cr_assert(other >= 0 && other != c, "pronoun's broken form %s", r->alt[0]);
        /* The antecedent is the line's subject, keyed on its last byte: nothing
         * but a determiner before it; or, when the subject is a person (never
         * "it"), the object, the word before the conjunction. */
        size_t ls, le, klen, ks = word_at(t, r->key, &klen);
        sentence_span(t, n, r->key, &ls, &le);
        cr_assert_eq(ks + klen, r->key + 1, "pronoun key is not the end of a word");
        char first[32], second[32];
        word_text(t, ls, first);
        size_t fl;
        word_at(t, ls, &fl);
        word_text(t, ls + fl + 1, second);
        int person = in_list(first, strlen(first), PRONOUN_PEOPLE, NELEM(PRONOUN_PEOPLE)) ||
                     in_list(second, strlen(second), PRONOUN_PEOPLE, NELEM(PRONOUN_PEOPLE));
        if (person) {
            char conj[32];
            word_text(t, r->key + 2, conj);
            cr_assert(in_list(conj, strlen(conj), PRONOUN_CONJS, NELEM(PRONOUN_CONJS)),
                      "after a person the key is the object, before the conjunction: %s", conj);
        } else {
            cr_assert_leq(ks - ls, 4u);
        }
        break;
    }
    }
}

Test(synth, planted_relations_point_at_what_they_claim)
{
    const size_t n = 200000;
    char *t = generate(n, 5);
    char *u = malloc(n);
    cr_assert_not_null(u);
    size_t total = synth_generate_relations(u, n, 5, NULL, 0);
    cr_assert_eq(memcmp(t, u, n), 0, "annotated generation gives other bytes");
    SynthRelation *rel = malloc((total + 1) * sizeof *rel);
    cr_assert_not_null(rel);
    cr_assert_eq(synth_generate_relations(u, n, 5, rel, total), total);
    size_t per_kind[SYNTH_REL_KINDS] = {0};
    for (size_t i = 0; i < total; i++) {
        const SynthRelation *r = &rel[i];
        cr_assert(r->key < r->query && r->query + 1 < n, "relation %zu out of order", i);
        cr_assert(i == 0 || rel[i - 1].query <= r->query, "relations not sorted at %zu", i);
        cr_assert_lt((int)r->kind, SYNTH_REL_KINDS);
        per_kind[r->kind]++;
        if (r->kind == SYNTH_REL_NAMES) {
            cr_assert(is_letter(t[r->query]) && t[r->key - 1] == t[r->query] &&
                      t[r->key] == t[r->query + 1], "copy relation %zu", i);
            cr_assert_leq(r->query - r->key, (size_t)SYNTH_COPY_MAX_DISTANCE);
        } else if (r->kind == SYNTH_REL_DET) {
            check_det_relation(t, r);
        } else if (r->kind == SYNTH_REL_COREF) {
            cr_assert(t[r->query] == ' ' && t[r->key - 1] == ' ' &&
                      t[r->key] == t[r->query + 1], "coreference relation %zu", i);
        } else if (r->kind == SYNTH_REL_BRACKET) {
            char open = t[r->key];
            cr_assert((open == '(' && t[r->query + 1] == ')') ||
                      (open == '"' && t[r->query + 1] == '"'), "bracket relation %zu", i);
        } else if (r->kind == SYNTH_REL_AGREE) {
            check_agree_relation(t, r);
        } else {
            check_scene_relation(t, n, r);
        }
    }
    for (int k = 0; k < SYNTH_REL_KINDS; k++)
        cr_assert_gt(per_kind[k], 200u, "relation kind %d: %zu", k, per_kind[k]);
    free(rel);
    free(u);
    free(t);
}

Test(synth, relation_total_does_not_depend_on_cap_and_cap_is_respected)
{
    const size_t n = 20000;
    char *buf = malloc(n);
    cr_assert_not_null(buf);
    size_t total = synth_generate_relations(buf, n, 9, NULL, 0);
    cr_assert_gt(total, 20u);
    SynthRelation rel[11];
    memset(rel, 0xab, sizeof rel);
    SynthRelation untouched = rel[10];
    cr_assert_eq(synth_generate_relations(buf, n, 9, rel, 10), total);
    cr_assert_eq(memcmp(&rel[10], &untouched, sizeof untouched), 0, "wrote past cap");
    cr_assert_lt(rel[9].query, n);
    free(buf);
}

typedef struct {
    size_t lines, nearest, thing_prop;
} CorefCount;


/* A coreference line has two nouns before "it", one from each group; the property
 * after "it was" fits one group, and the noun named after "so the" is that
 * group's. Counts the lines where that noun is the nearer of the two. */
static void check_coref(const char *line, size_t len, void *ctx)
{
    static const char *const animal_props[] = {"hungry", "sleepy", "scared", "thirsty", "sick"};
    static const char *const thing_props[] = {"broken", "cracked", "dusty", "shiny", "cheap"};
    static const char *const animals[] = {"dog", "cat", "bird", "horse", "cow",
                                          "fox", "mouse", "duck", "goat", "pig"};
    if (classify(line, len) != SYNTH_LINE_COREF)
        return;
    CorefCount *c = ctx;
    Words w;
    split_words(line, len, &w);
    size_t nouns[2], nn = 0, it = w.n;
    for (size_t i = 0; i < w.n && it == w.n; i++) {
        const char *wi = line + w.start[i];
        if (w.len[i] == 2 && memcmp(wi, "it", 2) == 0)
            it = i;
        else if (classes_of(wi, w.len[i]) & SYNTH_NOUN_SG) {
            cr_assert_lt(nn, 2u, "more than two nouns before it: %.*s", (int)len, line);
            nouns[nn++] = i;
        }
    }
    cr_assert(nn == 2 && it + 5 < w.n, "shape: %.*s", (int)len, line);
    const char *prop = line + w.start[it + 2];
    size_t plen = w.len[it + 2];
    int thing = in_list(prop, plen, thing_props, 5);
    cr_assert(thing || in_list(prop, plen, animal_props, 5), "property: %.*s", (int)len, line);
    int first_animal = in_list(line + w.start[nouns[0]], w.len[nouns[0]], animals, 10);
    int second_animal = in_list(line + w.start[nouns[1]], w.len[nouns[1]], animals, 10);
    cr_assert_neq(first_animal, second_animal, "not one animal and one thing: %.*s", (int)len,
                  line);
    size_t ante = nouns[(thing == first_animal) ? 1 : 0];
    size_t again = it + 5; /* it was PROP so the NOUN */
    cr_assert(w.len[again] == w.len[ante] &&
                  memcmp(line + w.start[again], line + w.start[ante], w.len[ante]) == 0,
              "the noun named again is not the one the property fits: %.*s", (int)len, line);
    c->lines++;
    c->nearest += ante == nouns[1];
    c->thing_prop += thing;
}

Test(synth, coreference_follows_the_property_and_the_nearer_noun_is_right_half_the_time)
{
    char *t = generate(SYNTH_DEFAULT_BYTES, 1);
    CorefCount c = {0, 0, 0};
    each_line(t, SYNTH_DEFAULT_BYTES, check_coref, &c);
    /* 14 % (SYNTH_PERCENT_COREF) of about 20,000 lines. */
    cr_assert_gt(c.lines, 2400u);
    cr_assert(c.nearest > c.lines * 45 / 100 && c.nearest < c.lines * 55 / 100,
              "the nearer noun is the antecedent in %zu of %zu lines", c.nearest, c.lines);
    cr_assert(c.thing_prop > c.lines * 45 / 100 && c.thing_prop < c.lines * 55 / 100);
    free(t);
}

Test(synth, coreference_relation_marks_the_antecedent_of_a_known_line)
{
    /* The first coreference relation of seed 1: its query is the space after
     * "so the" and its key the first letter of the same noun earlier in the line. */
    const size_t n = 20000;
    char *t = malloc(n);
    cr_assert_not_null(t);
    size_t total = synth_generate_relations(t, n, 1, NULL, 0);
    SynthRelation *rel = malloc(total * sizeof *rel);
    cr_assert_not_null(rel);
    synth_generate_relations(t, n, 1, rel, total);
    size_t k = 0;
    while (k < total && rel[k].kind != SYNTH_REL_COREF)
        k++;
    cr_assert_lt(k, total);
    cr_assert_eq(strncmp(t + rel[k].query - 6, "so the ", 7), 0);
    size_t la, lb;
    size_t a = word_at(t, rel[k].query + 1, &la), b = word_at(t, rel[k].key, &lb);
    cr_assert_eq(b, rel[k].key);
    cr_assert(la == lb && memcmp(t + a, t + b, la) == 0);
    free(rel);
    free(t);
}

/* The first position of text[0..n) in buf[0..N), found byte by byte. */
static size_t first_at(const char *buf, size_t N, const char *text, size_t n)
{
    for (size_t at = 0; at + n <= N; at++)
        if (memcmp(buf + at, text, n) == 0)
            return at;
    return (size_t)-1;
}

Test(synth, locate_finds_every_piece_that_holds_a_newline_where_a_search_does)
{
    const size_t N = 100000;
    char *buf = generate(N, 31);
    /* From a line's start, from inside a line, up to the cut last line, one
     * line alone, and one newline alone (the first line's end). */
    size_t line = (size_t)((char *)memchr(buf + 40000, '\n', 1000) - buf) + 1;
    size_t starts[] = {0, line, line + 7, 65432, N - 3000, line, line - 1};
    size_t lens[] = {5000, 20000, 20000, 777, 3000, 0, 1};
    lens[5] = (size_t)((char *)memchr(buf + line, '\n', 1000) - buf) + 1 - line;
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        size_t at = 12345, want = first_at(buf, N, buf + starts[k], lens[k]);
        cr_assert_eq(synth_locate(&at, buf + starts[k], lens[k], N, 31), 1, "piece %zu", k);
        cr_assert_eq(at, want, "piece %zu at %zu: found %zu, the first is %zu", k, starts[k],
                     at, want);
    }
    free(buf);
}

Test(synth, locate_refuses_an_edited_piece_a_piece_without_newline_and_one_past_the_end)
{
    const size_t N = 50000;
    char *buf = generate(N, 31);
    char *copy = malloc(N);
    cr_assert_not_null(copy);
    memcpy(copy, buf, N);
    size_t at = 7;
    copy[30000] = copy[30000] == 'e' ? 'a' : 'e';
    cr_assert_eq(synth_locate(&at, copy + 20000, 20000, N, 31), 0, "an edited piece");
    cr_assert_eq(synth_locate(&at, buf + 20000, 20000, N, 32), 0, "another seed's corpus");
    size_t nl = (size_t)((char *)memchr(buf + 100, '\n', 200) - buf);
    cr_assert_eq(synth_locate(&at, buf + nl + 1, 10, N, 31), 0, "no newline");
    /* The corpus of N bytes is a prefix of a longer one; its last bytes and one
     * more are not inside it. */
    char *longer = generate(N + 100, 31);
    cr_assert_eq(synth_locate(&at, longer + N - 2000, 2001, N, 31), 0, "past the end");
    cr_assert_eq(at, 7u, "not changed on failure");
    cr_assert_eq(synth_locate(&at, longer + N - 2000, 2001, N + 100, 31), 1);
    cr_assert_eq(at, first_at(longer, N + 100, longer + N - 2000, 2001));
    free(longer);
    free(copy);
    free(buf);
}

Test(synth, relations_in_a_piece_are_those_of_the_whole_corpus_inside_it)
{
    const size_t N = 60000, at = 12345, n = 30000;
    char *buf = generate(N, 5);
    size_t total = synth_generate_relations(buf, N, 5, NULL, 0);
    SynthRelation *all = malloc(total * sizeof *all);
    cr_assert_not_null(all);
    synth_generate_relations(buf, N, 5, all, total);
    size_t count = synth_relations_in(NULL, 0, at, n, 5), want = 0;
    SynthRelation *in = malloc((count + 1) * sizeof *in);
    cr_assert_not_null(in);
    cr_assert_eq(synth_relations_in(in, count, at, n, 5), count);
    for (size_t r = 0; r < total; r++) {
        if (all[r].key < at || all[r].query + 1 >= at + n)
            continue;
        cr_assert_lt(want, count);
        cr_assert(in[want].kind == all[r].kind && in[want].query == all[r].query &&
                  in[want].key == all[r].key, "relation %zu differs", want);
        want++;
    }
    cr_assert_eq(count, want);
    cr_assert_gt(count, 100u);
    free(in);
    free(all);
    free(buf);
}

/* The classes of a NUL-terminated word (its first letter lowered). */
static unsigned alt_classes(const char *w)
{
    char low[SYNTH_ALT_CAP];
    snprintf(low, sizeof low, "%s", w);
    low[0] = (char)(low[0] | 0x20);
    return words_classes(words(), low, strlen(low));
}

/* Every relation but names carries its minimal pair: the form is the text's,
 * and the alternative is that form with the relation broken, as the lexicon
 * says (the other number, the other closer, the line's other noun, a noun of
 * the same class that the line does not hold). */
Test(synth, each_planted_relation_carries_its_broken_form)
{
    const size_t n = 200000;
    char *t = generate(n, 5);
    size_t total = synth_generate_relations(t, n, 5, NULL, 0);
    SynthRelation *rel = malloc((total + 1) * sizeof *rel);
    cr_assert_not_null(rel);
    synth_generate_relations(t, n, 5, rel, total);
    size_t seen[SYNTH_REL_KINDS] = {0};
    for (size_t i = 0; i < total; i++) {
        const SynthRelation *r = &rel[i];
        char form[SYNTH_ALT_CAP] = {0};
        if (r->kind == SYNTH_REL_NAMES) {
            cr_assert(!r->alt[0][0] && !r->alt[1][0], "names have no wrong form");
            continue;
        }
        if (!r->alt[0][0]) {
            /* No minimal pair: after "the", and a scene whose verb has no place. */
            cr_assert(r->kind == SYNTH_REL_DET || r->kind == SYNTH_REL_SUBJECT, "kind %d", r->kind);
            cr_assert(!r->alt[1][0]);
            continue;
        }
        if (r->form + r->form_len >= n)
            continue; /* the corpus's last line, cut after the query */
        seen[r->kind]++;
        cr_assert(r->form_len > 0 && r->form_len < SYNTH_ALT_CAP);
        memcpy(form, t + r->form, r->form_len);
        /* The form starts at most at the byte after the one the query predicts
         * (subject-verb and mood: the query ends the word before, then a space). */
        cr_assert(r->form <= r->query + 2 && r->query + 1 < r->form + r->form_len + 1,
                  "relation %zu: the query is not in or just before its form", i);
        cr_assert_str_neq(form, r->alt[0]);
        unsigned f = alt_classes(form), a = alt_classes(r->alt[0]);
        switch (r->kind) {
        case SYNTH_REL_AGREE:
            cr_assert((f & SYNTH_VERB_SG && a & SYNTH_VERB_PL) ||
                      (f & SYNTH_VERB_PL && a & SYNTH_VERB_SG), "%s / %s", form, r->alt[0]);
            cr_assert(!r->alt[1][0]);
            break;
        case SYNTH_REL_DET:
            /* The other number, or, where "the" names an animal again (the
             * query the space before it), another animal of its number. */
            if (t[r->query] == ' ') {
                cr_assert((f & SYNTH_NOUN_SG && a & SYNTH_NOUN_SG) ||
                          (f & SYNTH_NOUN_PL && a & SYNTH_NOUN_PL), "%s / %s", form, r->alt[0]);
            } else {
                cr_assert((f & SYNTH_NOUN_SG && a & SYNTH_NOUN_PL) ||
                          (f & SYNTH_NOUN_PL && a & SYNTH_NOUN_SG), "%s / %s", form, r->alt[0]);
            }
            cr_assert(!r->alt[1][0]);
            break;
        case SYNTH_REL_BRACKET:
            cr_assert((form[0] == ')' && strcmp(r->alt[0], "\"") == 0) ||
                      (form[0] == '"' && strcmp(r->alt[0], ")") == 0), "%s / %s", form,
                      r->alt[0]);
            break;
        case SYNTH_REL_SUBJECT:
        case SYNTH_REL_MOOD:
        case SYNTH_REL_MODIFIER:
        case SYNTH_REL_PLACE:
        case SYNTH_REL_PRONOUN:
            cr_assert(!r->alt[1][0]); /* checked word by word in the test above */
            break;
        default: { /* coreference: the other noun is in the sentence before, the classmate not */
            size_t ls, le;
            sentence_span(t, n, r->form, &ls, &le);
            char line[256] = {0};
            memcpy(line, t + ls, le - ls < 255 ? le - ls : 255);
            char want[SYNTH_ALT_CAP + 2];
            snprintf(want, sizeof want, " %s ", r->alt[0]);
            const char *other = strstr(line, want);
            cr_assert(other && other < line + (r->form - ls), "%s lacks %s before", line,
                      r->alt[0]);
            cr_assert(r->alt[1][0]);
            snprintf(want, sizeof want, " %s ", r->alt[1]);
            cr_assert_null(strstr(line, want), "%s holds its classmate %s", line, r->alt[1]);
            int animal = strncmp(t + r->key, form, r->form_len) == 0;
            cr_assert(animal, "the re-mention %s is not the antecedent", form);
            break;
        }
        }
    }
    for (int k = 0; k < SYNTH_REL_KINDS; k++)
        cr_assert(k == SYNTH_REL_NAMES || seen[k] > 100, "kind %d: %zu", k, seen[k]);
    free(rel);
    free(t);
}

/* ---- Parsing a user's sentence (synth_parse) ---------------------------------- */

/* Every line the generator writes is understood, and the parse plants exactly
 * the relations the generator planted: the parser is the generator run
 * backwards, so this is its defining property. */
Test(synth, every_generated_line_parses_to_the_relations_it_was_written_with)
{
    const size_t n = 200000;
    char *t = generate(n, 11);
    size_t total = synth_generate_relations(t, n, 11, NULL, 0);
    SynthRelation *rel = malloc((total + 1) * sizeof *rel);
    cr_assert_not_null(rel);
    synth_generate_relations(t, n, 11, rel, total);
    size_t lines = 0, ri = 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(t + i, '\n', n - i);
        if (!nl)
            break;
        size_t e = (size_t)(nl - t);
        SynthSentence s[3];
        SynthRelation got[64];
        size_t ns, k = synth_parse(t + i, e - i + 1, s, 3, &ns, got, 64);
        cr_assert(ns >= 1 && ns <= 2 && s[0].understood && s[ns - 1].understood,
                  "not understood: %.*s", (int)(e - i), t + i);
        cr_assert(s[0].start == 0 && s[ns - 1].end == e - i);
        while (ri < total && rel[ri].query < i)
            ri++;
        size_t m = 0;
        for (; ri + m < total && rel[ri + m].query < e; m++) {
            const SynthRelation *w = &rel[ri + m], *g = &got[m];
            cr_assert_lt(m, k, "%.*s: fewer relations parsed", (int)(e - i), t + i);
            cr_assert(g->kind == w->kind && g->query + i == w->query && g->key + i == w->key &&
                          (g->form_len == 0 || g->form + i == w->form) &&
                          g->form_len == w->form_len && strcmp(g->alt[0], w->alt[0]) == 0 &&
                          strcmp(g->alt[1], w->alt[1]) == 0,
                      "%.*s: relation %zu differs", (int)(e - i), t + i, m);
        }
        cr_assert_eq(m, k, "%.*s: %zu relations parsed, %zu planted", (int)(e - i), t + i, k, m);
        lines++;
        i = e + 1;
    }
    cr_assert_gt(lines, 3000u);
    free(rel);
    free(t);
}

/* The relation of kind `kind` in rels[0..n) whose query lies in the word
 * `query_word` and whose key lies in `key_word` (first occurrences in s). */
static const SynthRelation *find_rel(const SynthRelation *rels, size_t n, SynthRelKind kind,
                                     const char *s, const char *query_word, const char *key_word)
{
    size_t q = (size_t)(strstr(s, query_word) - s), k = (size_t)(strstr(s, key_word) - s);
    for (size_t i = 0; i < n; i++)
        if (rels[i].kind == kind && rels[i].query >= q && rels[i].query <= q + strlen(query_word) &&
            rels[i].key >= k && rels[i].key < k + strlen(key_word))
            return &rels[i];
    return NULL;
}

/* The documents' sentences, with the relations docs/corpus.md says they carry. */
Test(synth, the_documents_sentences_parse_with_their_relations)
{
    SynthSentence s[4];
    SynthRelation r[16];
    size_t ns, k;
    const char *a = "The cat sat on the mat.";
    k = synth_parse(a, strlen(a), s, 4, &ns, r, 16);
    cr_assert(ns == 1 && s[0].understood && k == 3, "%zu relations", k);
    cr_assert_not_null(find_rel(r, k, SYNTH_REL_DET, a, "cat", "The"));
    const SynthRelation *sv = find_rel(r, k, SYNTH_REL_SUBJECT, a, "sat", "cat");
    cr_assert(sv && strcmp(sv->alt[0], "on") != 0 && sv->form_len == 2);
    const SynthRelation *pl = find_rel(r, k, SYNTH_REL_PLACE, a, " mat", "on");
    cr_assert(pl && a[pl->query] == ' ' && strncmp(a + pl->form, "mat", 3) == 0);

    const char *b = "The tired cat slept on the warm mat.";
    k = synth_parse(b, strlen(b), s, 4, &ns, r, 16);
    cr_assert(ns == 1 && s[0].understood && k == 4, "%zu relations", k);
    const SynthRelation *mood = find_rel(r, k, SYNTH_REL_MOOD, b, "cat", "tired");
    cr_assert(mood && strncmp(b + mood->form, "slept", 5) == 0);
    cr_assert_not_null(find_rel(r, k, SYNTH_REL_SUBJECT, b, "slept", "cat"));
    cr_assert_not_null(find_rel(r, k, SYNTH_REL_PLACE, b, " mat", "on"));

    const char *c = "The cat sat down.";
    k = synth_parse(c, strlen(c), s, 4, &ns, r, 16);
    cr_assert(ns == 1 && s[0].understood && k == 3, "%zu relations", k);
    const SynthRelation *mod = find_rel(r, k, SYNTH_REL_MODIFIER, c, " down", "sat");
    cr_assert(mod && c[mod->query] == ' ' && strcmp(mod->alt[0], "down") != 0);
    sv = find_rel(r, k, SYNTH_REL_SUBJECT, c, "sat", "cat");
    cr_assert(sv && sv->form_len == 0 && !sv->alt[0][0], "no place after the verb: no pair");

    const char *d = "Apple released a new phone because it is tasty.";
    k = synth_parse(d, strlen(d), s, 4, &ns, r, 16);
    cr_assert(ns == 1 && s[0].understood && k == 1, "%zu relations", k);
    const SynthRelation *it = find_rel(r, k, SYNTH_REL_PRONOUN, d, " it ", "Apple");
    cr_assert(it && it->key == 4 && d[it->query] == 't' && strcmp(it->alt[0], " was") == 0);
    cr_assert(strncmp(d + it->form, " is", 3) == 0 && it->form_len == 3);
}

/* The documents' scenes as one text: "The" of a scene after a scene that names
 * its animal names it again, so the determiner relation there decides the noun
 * itself (query the space before it, broken form another animal of its number);
 * a scene after a newline, or "The" before another animal, has no such pair. */
Test(synth, the_names_the_animal_of_the_scene_before_again)
{
    SynthSentence s[4];
    SynthRelation r[16];
    size_t ns, k;
    const char *a = "The cat sat on the mat. The tired cat slept on the warm mat. The cat sat down.";
    k = synth_parse(a, strlen(a), s, 4, &ns, r, 16);
    cr_assert(ns == 3 && s[0].understood && s[1].understood && s[2].understood);
    cr_assert_eq(k, 10u);
    size_t second = s[1].start, third = s[2].start, definite = 0;
    for (size_t i = 0; i < k; i++) {
        if (r[i].kind != SYNTH_REL_DET)
            continue;
        if (r[i].key < second) {
            cr_assert(a[r[i].query] == 't' && !r[i].alt[0][0], "the first scene's \"The\"");
            continue;
        }
        definite++;
        size_t cat = r[i].key < third ? second + 10 : third + 4;
        cr_assert(r[i].key == (r[i].key < third ? second : third) + 2 && r[i].query == cat - 1 &&
                      r[i].form == cat && r[i].form_len == 3,
                  "relation %zu: key %zu query %zu", i, r[i].key, r[i].query);
        cr_assert(strcmp(r[i].alt[0], "cat") != 0 &&
                      (synth_word_classes(r[i].alt[0], strlen(r[i].alt[0])) & SYNTH_NOUN_SG),
                  "broken form %s", r[i].alt[0]);
    }
    cr_assert_eq(definite, 2u);

    /* Each last sentence is a scene (its particle gives it a verb-modifier
     * relation), but names no animal of the scene just before it again. */
    const char *b[] = {"The cat sat down. The dog ran away.", "The cat sat down.\nThe cat ran away.",
                       "The cat sat down. The cats ran away.", "A bird sang along. Apple "
                       "released a new phone because it is tasty. The bird ran away."};
    for (size_t j = 0; j < NELEM(b); j++) {
        k = synth_parse(b[j], strlen(b[j]), s, 4, &ns, r, 16);
        for (size_t i = 0; i < ns; i++)
            cr_assert(s[i].understood, "%s: sentence %zu", b[j], i);
        int modifier = 0;
        for (size_t i = 0; i < k; i++) {
            cr_assert(r[i].kind != SYNTH_REL_DET || b[j][r[i].query] != ' ',
                      "%s: a definite relation", b[j]);
            modifier += r[i].kind == SYNTH_REL_MODIFIER && r[i].query > s[ns - 1].start;
        }
        cr_assert_eq(modifier, 1, "%s: the last sentence is no scene", b[j]);
    }
}

/* Several sentences in one text: each is parsed alone, its relations moved to
 * its place; what the grammar does not write is listed as not understood, with
 * no relations. */
Test(synth, sentences_are_split_and_only_the_grammars_are_understood)
{
    const char *t = "The cat sat down. Mat the on sat cat the.\nIt's 3 dogs! The dog ran.";
    SynthSentence s[8];
    SynthRelation r[32];
    size_t ns, k = synth_parse(t, strlen(t), s, 8, &ns, r, 32);
    cr_assert_eq(ns, 4u);
    const char *want[4] = {"The cat sat down.", "Mat the on sat cat the.", "It's 3 dogs!",
                           "The dog ran."};
    int understood[4] = {1, 0, 0, 1};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(s[i].end - s[i].start, strlen(want[i]));
        cr_assert_eq(strncmp(t + s[i].start, want[i], strlen(want[i])), 0, "sentence %d", i);
        cr_assert_eq(s[i].understood, understood[i], "sentence %d", i);
    }
    /* 3 relations in the first sentence and the determiner of the last. */
    cr_assert_eq(k, 4u);
    cr_assert(r[3].kind == SYNTH_REL_DET && r[3].query > s[3].start && r[3].key >= s[3].start);
    for (size_t i = 0; i < k; i++)
        cr_assert(r[i].query < s[0].end || r[i].query >= s[3].start);
    /* A sentence longer than a line the grammar could write is not understood. */
    char longer[400];
    memset(longer, 'a', sizeof longer - 2);
    longer[sizeof longer - 2] = '.';
    longer[sizeof longer - 1] = '\0';
    k = synth_parse(longer, strlen(longer), s, 8, &ns, r, 32);
    cr_assert(ns == 1 && !s[0].understood && k == 0);
}
