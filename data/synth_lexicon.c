/* synth_lexicon: the built-in corpus's words (see synth_lexicon.h) and
 * synth_word_classes, which names a word's grammatical classes from them. */
#include "data/synth_lexicon.h"

#include <string.h>

#include "data/synth.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Nouns that can act: they are the subjects of verbs. */
const WordPair ANIMATE[] = {
    {"dog", "dogs"}, {"cat", "cats"}, {"bird", "birds"}, {"horse", "horses"},
    {"cow", "cows"}, {"fox", "foxes"}, {"wolf", "wolves"}, {"mouse", "mice"},
    {"duck", "ducks"}, {"frog", "frogs"}, {"goat", "goats"}, {"pig", "pigs"},
    {"pony", "ponies"}, {"man", "men"}, {"woman", "women"}, {"child", "children"},
    {"baby", "babies"}, {"farmer", "farmers"}, {"baker", "bakers"}, {"king", "kings"},
    {"queen", "queens"}, {"girl", "girls"}, {"boy", "boys"}, {"teacher", "teachers"},
    {"doctor", "doctors"}, {"sailor", "sailors"}, {"friend", "friends"},
    {"student", "students"}, {"singer", "singers"}, {"painter", "painters"},
    {"guard", "guards"},
};

/* Places and things: objects and the nouns of prepositional phrases. */
const WordPair THINGS[] = {
    {"river", "rivers"}, {"tree", "trees"}, {"hill", "hills"}, {"house", "houses"},
    {"barn", "barns"}, {"boat", "boats"}, {"road", "roads"}, {"field", "fields"},
    {"garden", "gardens"}, {"window", "windows"}, {"door", "doors"}, {"box", "boxes"},
    {"church", "churches"}, {"bridge", "bridges"}, {"lake", "lakes"},
    {"forest", "forests"}, {"town", "towns"}, {"city", "cities"}, {"song", "songs"},
    {"letter", "letters"}, {"book", "books"}, {"cup", "cups"}, {"apple", "apples"},
    {"stone", "stones"}, {"coin", "coins"}, {"key", "keys"}, {"lamp", "lamps"},
    {"wall", "walls"}, {"ship", "ships"}, {"cart", "carts"}, {"bell", "bells"},
    {"star", "stars"}, {"cloud", "clouds"}, {"flower", "flowers"}, {"bench", "benches"},
    {"fence", "fences"}, {"tower", "towers"}, {"shop", "shops"}, {"table", "tables"},
    {"chair", "chairs"}, {"glass", "glasses"}, {"dish", "dishes"}, {"hat", "hats"},
    {"coat", "coats"}, {"ball", "balls"}, {"map", "maps"}, {"gate", "gates"},
};


/* Present tense, {third person singular, plural}. */
const WordPair VERBS_INTRANS[] = {
    {"runs", "run"}, {"sleeps", "sleep"}, {"sings", "sing"}, {"waits", "wait"},
    {"walks", "walk"}, {"swims", "swim"}, {"laughs", "laugh"}, {"smiles", "smile"},
    {"rests", "rest"}, {"works", "work"}, {"dances", "dance"}, {"jumps", "jump"},
    {"flies", "fly"}, {"cries", "cry"}, {"goes", "go"}, {"stays", "stay"},
    {"shouts", "shout"}, {"hides", "hide"}, {"falls", "fall"}, {"sits", "sit"},
};

const WordPair VERBS_TRANS[] = {
    {"sees", "see"}, {"likes", "like"}, {"wants", "want"}, {"follows", "follow"},
    {"chases", "chase"}, {"helps", "help"}, {"carries", "carry"}, {"finds", "find"},
    {"keeps", "keep"}, {"needs", "need"}, {"holds", "hold"}, {"watches", "watch"},
    {"loves", "love"}, {"visits", "visit"}, {"opens", "open"}, {"pulls", "pull"},
    {"pushes", "push"}, {"misses", "miss"}, {"fixes", "fix"}, {"reaches", "reach"},
    {"has", "have"}, {"paints", "paint"}, {"catches", "catch"},
};

const WordPair COPULA = {"is", "are"};
/* The negated copula and "do" of agreement lines: "The dog isn't calm.", "The
 * dogs don't run." */
const WordPair COPULA_NOT = {"isn't", "aren't"};
const WordPair DO_NOT = {"doesn't", "don't"};

const char *const PAST_INTRANS[] = {
    "slept", "ran", "sang", "waited", "walked", "swam", "laughed", "smiled", "rested",
    "worked", "danced", "jumped", "left", "fell", "sat", "stood", "hid", "stayed",
    "cried", "went",
};

const char *const PAST_TRANS[] = {
    "saw", "found", "took", "carried", "followed", "helped", "liked", "opened",
    "pulled", "watched", "kept", "held", "met", "visited", "painted", "sold",
    "bought", "fixed", "chased", "missed", "reached", "caught", "loved", "pushed",
};

const char *const PAST_SPEECH[] = {"said", "wrote", "whispered", "shouted"};

const char *const ADJS[] = {
    "old", "young", "red", "big", "small", "tall", "quiet", "happy", "dark", "green",
    "cold", "warm", "little", "brave", "tired", "clever", "bright", "heavy", "slow",
    "quick", "white", "black", "gentle", "busy", "sad", "kind", "proud", "lazy",
    "empty", "angry", "strong", "wet", "dry", "new", "shy", "loud", "calm", "wild",
    "blue", "yellow", "soft", "round", "well-fed", "half-asleep",
};

/* "a" becomes "an" before a vowel; "the" is chosen separately, more often. */
const char *const DETS_SG[] = {"a", "this", "every", "one", "each"};
const char *const DETS_PL[] = {"these", "those", "some", "many", "two", "three", "all",
                               "2", "3", "5", "12"};
static const char *const DETS_OTHER[] = {"the", "an"};
/* Possessive determiners: like "the", they say nothing of the noun's number. */
const char *const DETS_POSS[] = {"my", "his", "her", "our", "their", "your"};

/* Prepositions of place can follow any noun; those of path only follow a verb. */
const char *const PREPS_PLACE[] = {
    "near", "by", "behind", "under", "beside", "with", "above", "around", "beyond",
    "inside", "at", "on", "in", "from", "over",
};
const char *const PREPS_PATH[] = {"to", "into", "past", "across", "toward"};

/* Adverbs that sit between a subject and its verb. */
const char *const ADVS_MID[] = {
    "often", "never", "always", "still", "rarely", "sometimes", "usually", "also",
};

/* Adverbs that end a clause. */
const char *const ADVS_END[] = {
    "slowly", "quietly", "again", "today", "here", "there", "home", "loudly", "early",
    "twice", "once",
};

const char *const CONJS[] = {"and", "but", "then", "so"};

const char *const COREF_ANIMALS[] = {
    "dog", "cat", "bird", "horse", "cow", "fox", "mouse", "duck", "goat", "pig",
};
const char *const COREF_THINGS[] = {
    "cup", "apple", "stone", "coin", "key", "lamp", "bell", "box", "hat", "ball", "dish", "book",
};
const char *const PROPS_ANIMAL[] = {"hungry", "sleepy", "scared", "thirsty", "sick"};
const char *const PROPS_THING[] = {"broken", "cracked", "dusty", "shiny", "cheap"};
const char *const AFTER_ANIMAL[] = {"slept", "ran", "hid", "waited", "rested"};
const char *const AFTER_THING[] = {"fell", "broke", "rolled", "stayed"};
/* How the two nouns stand: "the dog was near the cup". */
const char *const COREF_LINKS[] = {"was near", "was beside", "was behind", "lay by", "sat by"};
const char *const COREF_CONJS[] = {"because", "and", "but"};

/* Scene lines (synth.c, gen_scene), the documents' "The cat sat on the mat.":
 * each animal has its own preposition, so the word after the verb follows from
 * the subject; each mood has its own verbs; each verb its own particle; each
 * preposition its own places. */
const SceneAnimal SCENE_ANIMALS[] = {
    {{"cat", "cats"}, "on"},     {{"dog", "dogs"}, "by"},       {{"bird", "birds"}, "in"},
    {{"mouse", "mice"}, "under"}, {{"fox", "foxes"}, "near"},  {{"owl", "owls"}, "behind"},
    {{"child", "children"}, "in"}, {{"boy", "boys"}, "on"},    {{"girl", "girls"}, "by"},
    {{"rabbit", "rabbits"}, "under"}, {{"duck", "ducks"}, "near"}, {{"horse", "horses"}, "behind"},
};
const SceneMood SCENE_MOODS[] = {
    {"tired", {"slept", "rested", "yawned"}},
    {"hungry", {"ate", "begged", "waited"}},
    {"scared", {"hid", "shook", "froze"}},
    {"happy", {"sang", "played", "purred"}},
};
const SceneVerb SCENE_VERBS[] = {
    {"sat", "down"},  {"lay", "down"},    {"stood", "up"},   {"woke", "up"},
    {"ran", "away"},  {"hid", "away"},    {"slept", "in"},   {"rested", "back"},
    {"yawned", "off"}, {"ate", "out"},    {"begged", "on"},  {"waited", "around"},
    {"shook", "off"}, {"froze", "up"},    {"sang", "along"}, {"played", "around"},
    {"purred", "away"},
};
const ScenePlace SCENE_PLACES[] = {
    {"on", {"mat", "rug", "sofa", "roof", "grass", "step"}},
    {"by", {"door", "fire", "gate", "stove", "window", "road"}},
    {"in", {"nest", "box", "basket", "tree", "park", "garden"}},
    {"under", {"bed", "table", "bench", "stairs", "bridge", "chair"}},
    {"near", {"pond", "wall", "fence", "well", "river", "lake"}},
    {"behind", {"shed", "barn", "hedge", "curtain", "house", "hill"}},
};
const char *const SCENE_ADVS[] = {"slowly", "quietly"};

/* Pronoun lines (synth.c, gen_pronoun), the documents' "Apple released a new
 * phone because it is tasty.": "it" is the line's subject, and what follows
 * "it" says the subject's class; or, after a person, who is never "it" ("My
 * sister bought a red car because it was cheap."), the object's class. */
const PronounClass PRONOUN_CLASSES[] = {
    {{"apple", "pear", "cake", "bread", "cheese", "plum", "soup"}, {" is", "'s"},
     {"tasty", "ripe", "sweet", "fresh", "sour", "salty"}},
    {{"phone", "radio", "clock", "camera", "laptop", "kettle", "car"}, {" was", " was"},
     {"broken", "loud", "charged", "faulty", "slow", "cheap"}},
    {{"cat", "dog", "bird", "horse", "goat", "duck", "pony"}, {" seemed", " seemed"},
     {"hungry", "sleepy", "scared", "sick", "bored", "lonely"}},
};
const char *const PRONOUN_VERBS[] = {"released", "bought", "sold", "found", "dropped", "liked",
                                     "made"};
const char *const PRONOUN_OBJECT_ADJS[] = {"new", "old", "small", "big", "cheap",
                                           "red", "blue", "green", "black", "white"};
const char *const PRONOUN_CONJS[] = {"because", "so", "and"};
/* The people who may own a pronoun line's object, and their determiners. */
const char *const PRONOUN_PEOPLE[] = {"sister", "brother", "mother", "father", "friend",
                                      "teacher", "uncle", "aunt", "neighbour", "cousin"};
const char *const PRONOUN_PERSON_DETS[] = {"my", "the", "a", "his", "her", "our", "their",
                                           "your"};

static const char *const COREF_WORDS[] = {"it", "because"};
static const char *const COREF_PAST[] = {"was", "lay", "seemed"};
static const char *const FUNCTION_WORDS[] = {"that", "who"};

static int words_equal(const char *lexicon_word, const char *word, size_t len)
{
    return strncmp(lexicon_word, word, len) == 0 && lexicon_word[len] == '\0';
}

static unsigned list_classes(const char *const *list, size_t n, unsigned cls,
                             const char *word, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (words_equal(list[i], word, len))
            return cls;
    return 0;
}

static unsigned pair_classes(const WordPair *list, size_t n, unsigned sg_cls,
                             unsigned pl_cls, const char *word, size_t len)
{
    unsigned cls = 0;
    for (size_t i = 0; i < n; i++) {
        if (words_equal(list[i].sg, word, len))
            cls |= sg_cls;
        if (words_equal(list[i].pl, word, len))
            cls |= pl_cls;
    }
    return cls;
}

unsigned synth_word_classes(const char *word, size_t len)
{
    unsigned c = 0;
    c |= pair_classes(ANIMATE, COUNT(ANIMATE), SYNTH_NOUN_SG, SYNTH_NOUN_PL, word, len);
    c |= pair_classes(THINGS, COUNT(THINGS), SYNTH_NOUN_SG, SYNTH_NOUN_PL, word, len);
    c |= pair_classes(VERBS_INTRANS, COUNT(VERBS_INTRANS), SYNTH_VERB_SG, SYNTH_VERB_PL,
                      word, len);
    c |= pair_classes(VERBS_TRANS, COUNT(VERBS_TRANS), SYNTH_VERB_SG, SYNTH_VERB_PL,
                      word, len);
    c |= pair_classes(&COPULA, 1, SYNTH_VERB_SG, SYNTH_VERB_PL, word, len);
    c |= pair_classes(&COPULA_NOT, 1, SYNTH_VERB_SG, SYNTH_VERB_PL, word, len);
    c |= pair_classes(&DO_NOT, 1, SYNTH_VERB_SG, SYNTH_VERB_PL, word, len);
    c |= list_classes(DETS_POSS, COUNT(DETS_POSS), SYNTH_DET, word, len);
    c |= list_classes(PRONOUN_PEOPLE, COUNT(PRONOUN_PEOPLE), SYNTH_NOUN_SG, word, len);
    c |= list_classes(PRONOUN_OBJECT_ADJS, COUNT(PRONOUN_OBJECT_ADJS), SYNTH_ADJ, word, len);
    c |= list_classes(PAST_INTRANS, COUNT(PAST_INTRANS), SYNTH_VERB_PAST, word, len);
    c |= list_classes(PAST_TRANS, COUNT(PAST_TRANS), SYNTH_VERB_PAST, word, len);
    c |= list_classes(PAST_SPEECH, COUNT(PAST_SPEECH), SYNTH_VERB_PAST, word, len);
    c |= list_classes(ADJS, COUNT(ADJS), SYNTH_ADJ, word, len);
    c |= list_classes(DETS_SG, COUNT(DETS_SG), SYNTH_DET, word, len);
    c |= list_classes(DETS_PL, COUNT(DETS_PL), SYNTH_DET, word, len);
    c |= list_classes(DETS_OTHER, COUNT(DETS_OTHER), SYNTH_DET, word, len);
    c |= list_classes(PREPS_PLACE, COUNT(PREPS_PLACE), SYNTH_PREP, word, len);
    c |= list_classes(PREPS_PATH, COUNT(PREPS_PATH), SYNTH_PREP, word, len);
    c |= list_classes(ADVS_MID, COUNT(ADVS_MID), SYNTH_OTHER, word, len);
    c |= list_classes(ADVS_END, COUNT(ADVS_END), SYNTH_OTHER, word, len);
    c |= list_classes(CONJS, COUNT(CONJS), SYNTH_OTHER, word, len);
    c |= list_classes(FUNCTION_WORDS, COUNT(FUNCTION_WORDS), SYNTH_OTHER, word, len);
    c |= list_classes(PROPS_ANIMAL, COUNT(PROPS_ANIMAL), SYNTH_ADJ, word, len);
    c |= list_classes(PROPS_THING, COUNT(PROPS_THING), SYNTH_ADJ, word, len);
    c |= list_classes(AFTER_THING, COUNT(AFTER_THING), SYNTH_VERB_PAST, word, len);
    c |= list_classes(COREF_PAST, COUNT(COREF_PAST), SYNTH_VERB_PAST, word, len);
    c |= list_classes(COREF_WORDS, COUNT(COREF_WORDS), SYNTH_OTHER, word, len);
    c |= list_classes(PRONOUN_VERBS, COUNT(PRONOUN_VERBS), SYNTH_VERB_PAST, word, len);
    c |= list_classes(PRONOUN_CONJS, COUNT(PRONOUN_CONJS), SYNTH_OTHER, word, len);
    for (size_t i = 0; i < COUNT(SCENE_ANIMALS); i++) {
        c |= pair_classes(&SCENE_ANIMALS[i].noun, 1, SYNTH_NOUN_SG, SYNTH_NOUN_PL, word, len);
        c |= list_classes(&SCENE_ANIMALS[i].prep, 1, SYNTH_PREP, word, len);
    }
    for (size_t i = 0; i < COUNT(SCENE_MOODS); i++) {
        c |= list_classes(&SCENE_MOODS[i].adj, 1, SYNTH_ADJ, word, len);
        c |= list_classes(SCENE_MOODS[i].verbs, SCENE_MOOD_VERBS, SYNTH_VERB_PAST, word, len);
    }
    for (size_t i = 0; i < COUNT(SCENE_VERBS); i++) {
        c |= list_classes(&SCENE_VERBS[i].verb, 1, SYNTH_VERB_PAST, word, len);
        c |= list_classes(&SCENE_VERBS[i].particle, 1, SYNTH_OTHER, word, len);
    }
    for (size_t i = 0; i < COUNT(SCENE_PLACES); i++)
        c |= list_classes(SCENE_PLACES[i].places, SCENE_PLACE_NOUNS, SYNTH_NOUN_SG, word, len);
    for (size_t i = 0; i < COUNT(PRONOUN_CLASSES); i++) {
        c |= list_classes(PRONOUN_CLASSES[i].nouns, PRONOUN_NOUNS, SYNTH_NOUN_SG, word, len);
        c |= list_classes(PRONOUN_CLASSES[i].props, PRONOUN_PROPS, SYNTH_ADJ, word, len);
    }
    return c;
}
