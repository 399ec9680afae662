/* data/lexicon: the word table compiled from data/lexicon.tsv, through its C
 * arrays: forms WordNet's exception lists give (irregular plurals and pasts), the
 * animacy of nouns and the frames of verbs, the class slices and their order, the
 * minimum sizes, and that every open-class form names one word. (The build step's
 * refusals of damaged tables are tests/lexicon_check.sh's.) */
#include <criterion/criterion.h>
#include <string.h>

#include "data/lexicon.h"

static const LexEntry *must_find(LexClass c, const char *word)
{
    const LexEntry *e = lex_find(c, word);
    cr_assert_not_null(e, "no %s '%s' in the table", LEX_CLASS_NAMES[c], word);
    return e;
}

static void noun_is(const char *sg, const char *pl, uint64_t tags)
{
    const LexEntry *e = must_find(LEX_NOUN, sg);
    cr_expect_str_eq(e->form1, pl, "plural of %s", sg);
    cr_expect_null(e->form2);
    cr_expect_eq(e->tags & tags, tags, "%s: tags %llx, expected %llx among them", sg,
                 (unsigned long long)e->tags, (unsigned long long)tags);
}

static void verb_is(const char *base, const char *third, const char *past)
{
    const LexEntry *e = must_find(LEX_VERB, base);
    cr_expect_str_eq(e->form1, third, "third person singular of %s", base);
    cr_expect_str_eq(e->form2, past, "past of %s", base);
}

Test(lexicon, irregular_plurals_come_from_wordnet_and_regular_ones_from_the_rules)
{
    noun_is("child", "children", LEX_TAG(ANIMATE) | LEX_TAG(PERSON));
    noun_is("woman", "women", LEX_TAG(ANIMATE) | LEX_TAG(PERSON));
    noun_is("mouse", "mice", LEX_TAG(ANIMATE) | LEX_TAG(ANIMAL));
    noun_is("sheep", "sheep", LEX_TAG(ANIMATE) | LEX_TAG(ANIMAL));
    noun_is("box", "boxes", LEX_TAG(INANIMATE) | LEX_TAG(ARTIFACT));
    noun_is("city", "cities", LEX_TAG(INANIMATE) | LEX_TAG(LOCATION));
}

Test(lexicon, nouns_are_animate_by_their_most_frequent_sense)
{
    noun_is("sister", "sisters", LEX_TAG(ANIMATE) | LEX_TAG(PERSON));
    noun_is("dog", "dogs", LEX_TAG(ANIMATE) | LEX_TAG(ANIMAL));
    noun_is("car", "cars", LEX_TAG(INANIMATE) | LEX_TAG(ARTIFACT));
    noun_is("apple", "apples", LEX_TAG(INANIMATE) | LEX_TAG(FOOD));
    cr_expect_eq(must_find(LEX_NOUN, "car")->tags & LEX_TAG(ANIMATE), 0);
    cr_expect_eq(must_find(LEX_NOUN, "sister")->tags & LEX_TAG(INANIMATE), 0);
    /* Abstract nouns are no noun here: neither animate nor a thing. */
    cr_expect_null(lex_find(LEX_NOUN, "idea"));
}

Test(lexicon, verbs_have_their_present_and_past_forms)
{
    verb_is("run", "runs", "ran");
    verb_is("see", "sees", "saw");
    verb_is("go", "goes", "went");
    verb_is("carry", "carries", "carried");
    verb_is("watch", "watches", "watched");
    verb_is("stop", "stops", "stopped");
    verb_is("begin", "begins", "began");
    verb_is("cut", "cuts", "cut");
    verb_is("hop", "hops", "hopped");
}

Test(lexicon, verb_frames_say_transitive_intransitive_and_speech)
{
    cr_expect(must_find(LEX_VERB, "sleep")->tags & LEX_TAG(INTRANS));
    cr_expect_eq(must_find(LEX_VERB, "sleep")->tags & LEX_TAG(TRANS), 0);
    cr_expect(must_find(LEX_VERB, "want")->tags & LEX_TAG(TRANS));
    cr_expect_eq(must_find(LEX_VERB, "want")->tags & LEX_TAG(INTRANS), 0);
    cr_expect(must_find(LEX_VERB, "say")->tags & LEX_TAG(SPEECH));
    cr_expect_eq(must_find(LEX_VERB, "run")->tags & LEX_TAG(SPEECH), 0);
    /* Auxiliaries and modals are the corpus's own, not the table's. */
    cr_expect_null(lex_find(LEX_VERB, "be"));
    cr_expect_null(lex_find(LEX_VERB, "can"));
}

Test(lexicon, closed_classes_are_in_the_table)
{
    cr_expect(must_find(LEX_DET, "these")->tags & LEX_TAG(PL));
    cr_expect_eq(must_find(LEX_DET, "these")->tags & LEX_TAG(SG), 0);
    cr_expect(must_find(LEX_PRON, "it")->tags & LEX_TAG(INANIMATE));
    cr_expect(must_find(LEX_PREP, "into")->tags & LEX_TAG(PATH));
    cr_expect(must_find(LEX_CONJ, "because")->tags & LEX_TAG(SUBORD));
    must_find(LEX_PARTICLE, "down");
    must_find(LEX_ADJ, "happy");
}

Test(lexicon, classes_are_slices_sorted_by_frequency_and_at_least_the_minimum)
{
    cr_assert_eq(LEX_CLASS_START[0], 0);
    cr_assert_eq(LEX_CLASS_START[LEX_CLASS_COUNT], LEX_ENTRY_COUNT);
    size_t animate = 0, inanimate = 0, intrans = 0, trans = 0;
    for (int c = 0; c < LEX_CLASS_COUNT; c++) {
        size_t n;
        const LexEntry *e = lex_class_entries((LexClass)c, &n);
        cr_assert_gt(n, 0, "class %s is empty", LEX_CLASS_NAMES[c]);
        for (size_t i = 0; i < n; i++) {
            cr_assert_geq(e[i].freq, 1);
            if (i > 0) {
                cr_assert(e[i - 1].freq > e[i].freq ||
                              (e[i - 1].freq == e[i].freq &&
                               strcmp(e[i - 1].word, e[i].word) < 0),
                          "%s: '%s' (%u) before '%s' (%u)", LEX_CLASS_NAMES[c], e[i - 1].word,
                          e[i - 1].freq, e[i].word, e[i].freq);
            }
            animate += c == LEX_NOUN && (e[i].tags & LEX_TAG(ANIMATE));
            inanimate += c == LEX_NOUN && (e[i].tags & LEX_TAG(INANIMATE));
            intrans += (e[i].tags & LEX_TAG(INTRANS)) != 0;
            trans += (e[i].tags & LEX_TAG(TRANS)) != 0;
        }
    }
    size_t nouns, verbs, adjs;
    lex_class_entries(LEX_NOUN, &nouns);
    lex_class_entries(LEX_VERB, &verbs);
    lex_class_entries(LEX_ADJ, &adjs);
    cr_expect_geq(nouns, LEX_MIN_NOUNS);
    cr_expect_geq(animate, LEX_MIN_ANIMATE);
    cr_expect_geq(inanimate, LEX_MIN_INANIMATE);
    cr_expect_eq(animate + inanimate, nouns);
    cr_expect_geq(verbs, LEX_MIN_VERBS);
    cr_expect_geq(intrans, LEX_MIN_INTRANS);
    cr_expect_geq(trans, LEX_MIN_TRANS);
    cr_expect_geq(adjs, LEX_MIN_ADJS);
    /* Drawing by weight favours the common: "man" outweighs "sister". */
    cr_expect_gt(must_find(LEX_NOUN, "man")->freq, must_find(LEX_NOUN, "sister")->freq);
}

static int is_open(int c)
{
    return c == LEX_NOUN || c == LEX_VERB || c == LEX_ADJ;
}

/* Which entry (other than self) has form f, and is open or in self's class; -1 if none. */
static long other_owner(const char *f, size_t self, int self_cls)
{
    for (int c = 0; c < LEX_CLASS_COUNT; c++)
        for (size_t i = LEX_CLASS_START[c]; i < LEX_CLASS_START[c + 1]; i++) {
            const LexEntry *e = &LEX_ENTRIES[i];
            if (i == self || (!is_open(c) && !is_open(self_cls) && c != self_cls))
                continue;
            if (strcmp(e->word, f) == 0 || (e->form1 && strcmp(e->form1, f) == 0) ||
                (e->form2 && strcmp(e->form2, f) == 0))
                return (long)i;
        }
    return -1;
}

Test(lexicon, every_open_class_form_names_one_word)
{
    for (int c = LEX_NOUN; c <= LEX_ADJ; c++) {
        for (size_t i = LEX_CLASS_START[c]; i < LEX_CLASS_START[c + 1]; i++) {
            const LexEntry *e = &LEX_ENTRIES[i];
            const char *forms[3] = {e->word, e->form1, e->form2};
            for (int f = 0; f < 3; f++) {
                if (!forms[f])
                    continue;
                long o = other_owner(forms[f], i, c);
                cr_assert_eq(o, -1, "'%s' of %s '%s' is also a form of '%s'", forms[f],
                             LEX_CLASS_NAMES[c], e->word, o >= 0 ? LEX_ENTRIES[o].word : "");
            }
        }
    }
}

Test(lexicon, tag_names_follow_the_bits)
{
    cr_expect_str_eq(LEX_TAG_NAMES[LEX_BIT_ANIMATE], "animate");
    cr_expect_str_eq(LEX_TAG_NAMES[LEX_BIT_SUBORD], "subord");
    cr_expect_str_eq(LEX_CLASS_NAMES[LEX_PARTICLE], "particle");
}
