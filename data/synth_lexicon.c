/* synth_lexicon: the built-in corpus's hand-written words (see
 * synth_lexicon.h) and synth_hand_classes, which names a word's grammatical
 * classes among them (synth_word_classes adds the lexicon's, data/synth_words.c). */
#include "data/synth_lexicon.h"

#include <string.h>

#include "data/synth.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The hand-written open-class words, in the lexicon's shape (data/lexicon.h):
 * nouns {singular, plural}, verbs {base, third person singular, past}, and
 * adjectives, with the tags that place them in the generator's roles
 * (data/synth_words.c). The corpus draws them beside the lexicon's words
 * wherever the lexicon lacks them (WordNet files "book" and "table" under
 * abstract senses, "baker" is under its frequency floor): they are common
 * words a user's sentence will hold. A word the lexicon has is its. They
 * count HAND_FREQ uses per 10^9 words. */
const LexEntry HAND_ENTRIES[] = {
    {"dog", "dogs", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"cat", "cats", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"bird", "birds", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"horse", "horses", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"cow", "cows", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"fox", "foxes", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"wolf", "wolves", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"mouse", "mice", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"duck", "ducks", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"frog", "frogs", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"goat", "goats", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"pig", "pigs", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"pony", "ponies", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"man", "men", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"woman", "women", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"child", "children", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"baby", "babies", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"farmer", "farmers", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"baker", "bakers", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"king", "kings", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"queen", "queens", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"girl", "girls", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"boy", "boys", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"teacher", "teachers", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"doctor", "doctors", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"sailor", "sailors", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"friend", "friends", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"student", "students", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"singer", "singers", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"painter", "painters", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"guard", "guards", NULL, LEX_TAG(ANIMATE), HAND_FREQ},
    {"river", "rivers", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"tree", "trees", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"hill", "hills", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"house", "houses", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"barn", "barns", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"boat", "boats", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"road", "roads", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"field", "fields", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"garden", "gardens", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"window", "windows", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"door", "doors", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"box", "boxes", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"church", "churches", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"bridge", "bridges", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"lake", "lakes", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"forest", "forests", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"town", "towns", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"city", "cities", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"song", "songs", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"letter", "letters", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"book", "books", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"cup", "cups", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"apple", "apples", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"stone", "stones", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"coin", "coins", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"key", "keys", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"lamp", "lamps", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"wall", "walls", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"ship", "ships", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"cart", "carts", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"bell", "bells", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"star", "stars", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"cloud", "clouds", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"flower", "flowers", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"bench", "benches", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"fence", "fences", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"tower", "towers", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"shop", "shops", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"table", "tables", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"chair", "chairs", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"glass", "glasses", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"dish", "dishes", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"hat", "hats", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"coat", "coats", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"ball", "balls", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"map", "maps", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"gate", "gates", NULL, LEX_TAG(INANIMATE), HAND_FREQ},
    {"run", "runs", "ran", LEX_TAG(INTRANS), HAND_FREQ},
    {"sleep", "sleeps", "slept", LEX_TAG(INTRANS), HAND_FREQ},
    {"sing", "sings", "sang", LEX_TAG(INTRANS), HAND_FREQ},
    {"wait", "waits", "waited", LEX_TAG(INTRANS), HAND_FREQ},
    {"walk", "walks", "walked", LEX_TAG(INTRANS), HAND_FREQ},
    {"swim", "swims", "swam", LEX_TAG(INTRANS), HAND_FREQ},
    {"laugh", "laughs", "laughed", LEX_TAG(INTRANS), HAND_FREQ},
    {"smile", "smiles", "smiled", LEX_TAG(INTRANS), HAND_FREQ},
    {"rest", "rests", "rested", LEX_TAG(INTRANS), HAND_FREQ},
    {"work", "works", "worked", LEX_TAG(INTRANS), HAND_FREQ},
    {"dance", "dances", "danced", LEX_TAG(INTRANS), HAND_FREQ},
    {"jump", "jumps", "jumped", LEX_TAG(INTRANS), HAND_FREQ},
    {"fly", "flies", "flew", LEX_TAG(INTRANS), HAND_FREQ},
    {"cry", "cries", "cried", LEX_TAG(INTRANS), HAND_FREQ},
    {"go", "goes", "went", LEX_TAG(INTRANS), HAND_FREQ},
    {"stay", "stays", "stayed", LEX_TAG(INTRANS), HAND_FREQ},
    {"shout", "shouts", "shouted", LEX_TAG(INTRANS) | LEX_TAG(SPEECH), HAND_FREQ},
    {"hide", "hides", "hid", LEX_TAG(INTRANS), HAND_FREQ},
    {"fall", "falls", "fell", LEX_TAG(INTRANS), HAND_FREQ},
    {"sit", "sits", "sat", LEX_TAG(INTRANS), HAND_FREQ},
    {"see", "sees", "saw", LEX_TAG(TRANS), HAND_FREQ},
    {"like", "likes", "liked", LEX_TAG(TRANS), HAND_FREQ},
    {"want", "wants", "wanted", LEX_TAG(TRANS), HAND_FREQ},
    {"follow", "follows", "followed", LEX_TAG(TRANS), HAND_FREQ},
    {"chase", "chases", "chased", LEX_TAG(TRANS), HAND_FREQ},
    {"help", "helps", "helped", LEX_TAG(TRANS), HAND_FREQ},
    {"carry", "carries", "carried", LEX_TAG(TRANS), HAND_FREQ},
    {"find", "finds", "found", LEX_TAG(TRANS), HAND_FREQ},
    {"keep", "keeps", "kept", LEX_TAG(TRANS), HAND_FREQ},
    {"need", "needs", "needed", LEX_TAG(TRANS), HAND_FREQ},
    {"hold", "holds", "held", LEX_TAG(TRANS), HAND_FREQ},
    {"watch", "watches", "watched", LEX_TAG(TRANS), HAND_FREQ},
    {"love", "loves", "loved", LEX_TAG(TRANS), HAND_FREQ},
    {"visit", "visits", "visited", LEX_TAG(TRANS), HAND_FREQ},
    {"open", "opens", "opened", LEX_TAG(TRANS), HAND_FREQ},
    {"pull", "pulls", "pulled", LEX_TAG(TRANS), HAND_FREQ},
    {"push", "pushes", "pushed", LEX_TAG(TRANS), HAND_FREQ},
    {"miss", "misses", "missed", LEX_TAG(TRANS), HAND_FREQ},
    {"fix", "fixes", "fixed", LEX_TAG(TRANS), HAND_FREQ},
    {"reach", "reaches", "reached", LEX_TAG(TRANS), HAND_FREQ},
    {"have", "has", "had", LEX_TAG(TRANS), HAND_FREQ},
    {"paint", "paints", "painted", LEX_TAG(TRANS), HAND_FREQ},
    {"catch", "catches", "caught", LEX_TAG(TRANS), HAND_FREQ},
    {"leave", "leaves", "left", LEX_TAG(INTRANS), HAND_FREQ},
    {"stand", "stands", "stood", LEX_TAG(INTRANS), HAND_FREQ},
    {"take", "takes", "took", LEX_TAG(TRANS), HAND_FREQ},
    {"meet", "meets", "met", LEX_TAG(TRANS), HAND_FREQ},
    {"sell", "sells", "sold", LEX_TAG(TRANS), HAND_FREQ},
    {"buy", "buys", "bought", LEX_TAG(TRANS), HAND_FREQ},
    {"say", "says", "said", LEX_TAG(TRANS) | LEX_TAG(SPEECH), HAND_FREQ},
    {"write", "writes", "wrote", LEX_TAG(TRANS) | LEX_TAG(SPEECH), HAND_FREQ},
    {"whisper", "whispers", "whispered", LEX_TAG(TRANS) | LEX_TAG(SPEECH), HAND_FREQ},
    {"old", NULL, NULL, 0, HAND_FREQ},
    {"young", NULL, NULL, 0, HAND_FREQ},
    {"red", NULL, NULL, 0, HAND_FREQ},
    {"big", NULL, NULL, 0, HAND_FREQ},
    {"small", NULL, NULL, 0, HAND_FREQ},
    {"tall", NULL, NULL, 0, HAND_FREQ},
    {"quiet", NULL, NULL, 0, HAND_FREQ},
    {"happy", NULL, NULL, 0, HAND_FREQ},
    {"dark", NULL, NULL, 0, HAND_FREQ},
    {"green", NULL, NULL, 0, HAND_FREQ},
    {"cold", NULL, NULL, 0, HAND_FREQ},
    {"warm", NULL, NULL, 0, HAND_FREQ},
    {"little", NULL, NULL, 0, HAND_FREQ},
    {"brave", NULL, NULL, 0, HAND_FREQ},
    {"tired", NULL, NULL, 0, HAND_FREQ},
    {"clever", NULL, NULL, 0, HAND_FREQ},
    {"bright", NULL, NULL, 0, HAND_FREQ},
    {"heavy", NULL, NULL, 0, HAND_FREQ},
    {"slow", NULL, NULL, 0, HAND_FREQ},
    {"quick", NULL, NULL, 0, HAND_FREQ},
    {"white", NULL, NULL, 0, HAND_FREQ},
    {"black", NULL, NULL, 0, HAND_FREQ},
    {"gentle", NULL, NULL, 0, HAND_FREQ},
    {"busy", NULL, NULL, 0, HAND_FREQ},
    {"sad", NULL, NULL, 0, HAND_FREQ},
    {"kind", NULL, NULL, 0, HAND_FREQ},
    {"proud", NULL, NULL, 0, HAND_FREQ},
    {"lazy", NULL, NULL, 0, HAND_FREQ},
    {"empty", NULL, NULL, 0, HAND_FREQ},
    {"angry", NULL, NULL, 0, HAND_FREQ},
    {"strong", NULL, NULL, 0, HAND_FREQ},
    {"wet", NULL, NULL, 0, HAND_FREQ},
    {"dry", NULL, NULL, 0, HAND_FREQ},
    {"new", NULL, NULL, 0, HAND_FREQ},
    {"shy", NULL, NULL, 0, HAND_FREQ},
    {"loud", NULL, NULL, 0, HAND_FREQ},
    {"calm", NULL, NULL, 0, HAND_FREQ},
    {"wild", NULL, NULL, 0, HAND_FREQ},
    {"blue", NULL, NULL, 0, HAND_FREQ},
    {"yellow", NULL, NULL, 0, HAND_FREQ},
    {"soft", NULL, NULL, 0, HAND_FREQ},
    {"round", NULL, NULL, 0, HAND_FREQ},
    {"well-fed", NULL, NULL, 0, HAND_FREQ},
    {"half-asleep", NULL, NULL, 0, HAND_FREQ},
};
const size_t HAND_CLASS_START[HAND_CLASSES + 1] = {0, 78, 130, 174};


const WordPair COPULA = {"is", "are"};
/* The negated copula and "do" of agreement lines: "The dog isn't calm.", "The
 * dogs don't run." */
const WordPair COPULA_NOT = {"isn't", "aren't"};
const WordPair DO_NOT = {"doesn't", "don't"};

/* Adjectives with a hyphen, which the lexicon (a-z only) has none of: one
 * adjective in SYNTH_HYPHEN_ONE_IN is one of these, so the corpus holds '-'. */
const char *const ADJS_HYPHEN[] = {"well-fed", "half-asleep", "old-fashioned", "brand-new"};

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

/* What the lists are walked for: the classes of one word (fn NULL), or every
 * word with its class (fn). */
typedef struct {
    const char *word;
    size_t len;
    void (*fn)(const char *word, unsigned cls, void *ctx);
    void *ctx;
} Visit;

static unsigned visit(const Visit *v, const char *lexicon_word, unsigned cls)
{
    if (v->fn) {
        v->fn(lexicon_word, cls, v->ctx);
        return 0;
    }
    return strncmp(lexicon_word, v->word, v->len) == 0 && lexicon_word[v->len] == '\0' ? cls : 0;
}

static unsigned list_classes(const char *const *list, size_t n, unsigned cls, const Visit *v)
{
    unsigned c = 0;
    for (size_t i = 0; i < n; i++)
        c |= visit(v, list[i], cls);
    return c;
}

static unsigned pair_classes(const WordPair *list, size_t n, unsigned sg_cls,
                             unsigned pl_cls, const Visit *v)
{
    unsigned cls = 0;
    for (size_t i = 0; i < n; i++) {
        cls |= visit(v, list[i].sg, sg_cls);
        cls |= visit(v, list[i].pl, pl_cls);
    }
    return cls;
}

static unsigned hand_walk(const Visit *v)
{
    unsigned c = 0;
    for (size_t i = 0; i < HAND_CLASS_START[HAND_CLASSES]; i++) {
        const LexEntry *e = &HAND_ENTRIES[i];
        if (i < HAND_CLASS_START[1]) {
            c |= visit(v, e->word, SYNTH_NOUN_SG);
            c |= visit(v, e->form1, SYNTH_NOUN_PL);
        } else if (i < HAND_CLASS_START[2]) {
            c |= visit(v, e->word, SYNTH_VERB_PL);
            c |= visit(v, e->form1, SYNTH_VERB_SG);
            c |= visit(v, e->form2, SYNTH_VERB_PAST);
        } else {
            c |= visit(v, e->word, SYNTH_ADJ);
        }
    }
    c |= pair_classes(&COPULA, 1, SYNTH_VERB_SG, SYNTH_VERB_PL, v);
    c |= pair_classes(&COPULA_NOT, 1, SYNTH_VERB_SG, SYNTH_VERB_PL, v);
    c |= pair_classes(&DO_NOT, 1, SYNTH_VERB_SG, SYNTH_VERB_PL, v);
    c |= list_classes(DETS_POSS, COUNT(DETS_POSS), SYNTH_DET, v);
    c |= list_classes(PRONOUN_PEOPLE, COUNT(PRONOUN_PEOPLE), SYNTH_NOUN_SG, v);
    c |= list_classes(PRONOUN_OBJECT_ADJS, COUNT(PRONOUN_OBJECT_ADJS), SYNTH_ADJ, v);
    c |= list_classes(ADJS_HYPHEN, COUNT(ADJS_HYPHEN), SYNTH_ADJ, v);
    c |= list_classes(DETS_SG, COUNT(DETS_SG), SYNTH_DET, v);
    c |= list_classes(DETS_PL, COUNT(DETS_PL), SYNTH_DET, v);
    c |= list_classes(DETS_OTHER, COUNT(DETS_OTHER), SYNTH_DET, v);
    c |= list_classes(PREPS_PLACE, COUNT(PREPS_PLACE), SYNTH_PREP, v);
    c |= list_classes(PREPS_PATH, COUNT(PREPS_PATH), SYNTH_PREP, v);
    c |= list_classes(ADVS_MID, COUNT(ADVS_MID), SYNTH_OTHER, v);
    c |= list_classes(ADVS_END, COUNT(ADVS_END), SYNTH_OTHER, v);
    c |= list_classes(CONJS, COUNT(CONJS), SYNTH_OTHER, v);
    c |= list_classes(FUNCTION_WORDS, COUNT(FUNCTION_WORDS), SYNTH_OTHER, v);
    c |= list_classes(PROPS_ANIMAL, COUNT(PROPS_ANIMAL), SYNTH_ADJ, v);
    c |= list_classes(PROPS_THING, COUNT(PROPS_THING), SYNTH_ADJ, v);
    c |= list_classes(AFTER_THING, COUNT(AFTER_THING), SYNTH_VERB_PAST, v);
    c |= list_classes(COREF_PAST, COUNT(COREF_PAST), SYNTH_VERB_PAST, v);
    c |= list_classes(COREF_WORDS, COUNT(COREF_WORDS), SYNTH_OTHER, v);
    c |= list_classes(PRONOUN_VERBS, COUNT(PRONOUN_VERBS), SYNTH_VERB_PAST, v);
    c |= list_classes(PRONOUN_CONJS, COUNT(PRONOUN_CONJS), SYNTH_OTHER, v);
    for (size_t i = 0; i < COUNT(SCENE_ANIMALS); i++) {
        c |= pair_classes(&SCENE_ANIMALS[i].noun, 1, SYNTH_NOUN_SG, SYNTH_NOUN_PL, v);
        c |= list_classes(&SCENE_ANIMALS[i].prep, 1, SYNTH_PREP, v);
    }
    for (size_t i = 0; i < COUNT(SCENE_MOODS); i++) {
        c |= list_classes(&SCENE_MOODS[i].adj, 1, SYNTH_ADJ, v);
        c |= list_classes(SCENE_MOODS[i].verbs, SCENE_MOOD_VERBS, SYNTH_VERB_PAST, v);
    }
    for (size_t i = 0; i < COUNT(SCENE_VERBS); i++) {
        c |= list_classes(&SCENE_VERBS[i].verb, 1, SYNTH_VERB_PAST, v);
        c |= list_classes(&SCENE_VERBS[i].particle, 1, SYNTH_OTHER, v);
    }
    for (size_t i = 0; i < COUNT(SCENE_PLACES); i++)
        c |= list_classes(SCENE_PLACES[i].places, SCENE_PLACE_NOUNS, SYNTH_NOUN_SG, v);
    for (size_t i = 0; i < COUNT(PRONOUN_CLASSES); i++) {
        c |= list_classes(PRONOUN_CLASSES[i].nouns, PRONOUN_NOUNS, SYNTH_NOUN_SG, v);
        c |= list_classes(PRONOUN_CLASSES[i].props, PRONOUN_PROPS, SYNTH_ADJ, v);
    }
    return c;
}

unsigned synth_hand_classes(const char *word, size_t len)
{
    const Visit v = {word, len, NULL, NULL};
    return hand_walk(&v);
}

void synth_hand_each(void (*fn)(const char *word, unsigned cls, void *ctx), void *ctx)
{
    const Visit v = {NULL, 0, fn, ctx};
    hand_walk(&v);
}
