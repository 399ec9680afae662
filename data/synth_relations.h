/* synth_relations: the built-in corpus's planted relations, declared once.
 *
 * SYNTH_RELATIONS is one row per relation the generator (data/synth.c) plants,
 * in the order of SynthRelKind. Expanding it makes the generator's kinds
 * (SYNTH_REL_<KIND>, data/synth.h) and, for the relations measured as planted,
 * the heads' kinds (HEADS_REL_<KIND>, analysis/heads.h) and their rows of
 * heads_rel_table (analysis/heads_relations.c); so a new planted relation is
 * one row here, the generator's lines that plant it and their test, with its
 * name in docs/heads.md's glossary and docs/corpus.md's table
 * (docs/architecture.md, "Where a new thing goes").
 *
 * A row is one of
 *   PLANTED(KIND, fields...): known only in text the corpus's grammar writes;
 *     the fields are the named fields of its heads_rel_table row (HeadsRelRow)
 *     that differ from relation to relation: .name, .about, and where they are
 *     not 0 or NULL .repeat, .against and .named_by_key. The rest of the row
 *     (the bar, planted, the key rule, the planted kind) is the same for every
 *     planted relation and filled in by heads_relations.c.
 *   TEXT(KIND): found in any text by a key rule of its own, so its row in
 *     heads_rel_table is one of the text relations' (heads_relations.c); only
 *     its minimal pairs come from the generator.
 * A caller passes two macros, and a row it does not want expands to nothing.
 *
 * The comment above each row says what the generator lists for it (a
 * SynthRelation, data/synth.h): the model, reading the byte at `query` and
 * predicting the byte at query + 1, needs the byte at `key` (key < query), and a
 * head that has learnt the relation attends there. The scene and pronoun lines'
 * relations are described in docs/corpus.md, "The documents' sentences". */
#ifndef HEADCOUNT_SYNTH_RELATIONS_H
#define HEADCOUNT_SYNTH_RELATIONS_H

#define SYNTH_RELATIONS(PLANTED, TEXT)                                                             \
    /* agreement: query is the last byte the singular and plural verb forms share (the 'n' of      \
     * run/runs, the space before is/are), key is the last byte of the subject noun. */            \
    PLANTED(AGREE, .name = "agreement", .named_by_key = 1,                                         \
            .about = "Query: the verb, just before the part that says singular or plural "         \
                     "(run|s). Key: the end of its subject noun, which decides it.")               \
    /* bracket: query is the byte before a closing ')' or '"', key is the byte that opened it.     \
     * Measured by its own rule in any text (heads_keys_bracket). */                               \
    TEXT(BRACKET)                                                                                  \
    /* names: query is a letter of a repeated made-up name (all but its last), key is the byte     \
     * after that letter in the name's first occurrence, so text[key - 1] == text[query] and       \
     * text[key] == text[query + 1] (an induction head's target). */                               \
    PLANTED(NAMES, .name = "names", .repeat = 1, .against = "the most likely other token",         \
            .about = "Query: a piece of a made-up name used again. Key: the piece that "           \
                     "followed it at the name's first use, which comes next again.")               \
    /* determiner: query is the last byte a noun's singular and plural forms share (the 'g'        \
     * of dog/dogs, the 'm' of mouse/mice), key is the last byte of its determiner (every          \
     * determiner, "the" included; only one that says the number, a, these, two..., has a          \
     * minimal pair), in every line kind but coreference and pronoun lines; but where "the"        \
     * names the scene animal of the sentence before again ("A cat sat down. The tired cat         \
     * slept on the mat."), "the" decides the noun itself: query is the space before the           \
     * noun, and the minimal pair is another animal. */                                            \
    PLANTED(DET, .name = "determiner", .named_by_key = 1,                                          \
            .about = "Query: the token before the part of a noun that its determiner decides: "    \
                     "the number (dog|s), or, where \"the\" names the animal of the scene "        \
                     "before again (The cat sat on the mat. The tired| cat slept ...), the "       \
                     "noun itself. Key: the determiner (The, a, these, two...); only one that "    \
                     "says the number, or such a \"the\", has a minimal pair.")                    \
    /* coreference: query is the space before the noun a coreference line names again ("so         \
     * the| dog"), key is the first byte of the same noun where it was first named, the one of     \
     * the two nouns that the property after "it" fits; text[key - 1] == text[query] (a space)     \
     * and text[key] == text[query + 1]. */                                                        \
    PLANTED(COREF, .name = "coreference", .named_by_key = 1,                                       \
            .against = "the line's other noun",                                                    \
            .about = "Query: the token before the noun named again after \"so the\" (the "         \
                     "re-mention form). Key: that noun where it was first named, the one the "     \
                     "property after \"it\" fits.")                                                \
    /* subject-verb: query is the last byte of a scene's verb ("sat"), key the last byte of its    \
     * subject ("cat"); the preposition after the verb is the subject animal's own. */             \
    PLANTED(SUBJECT, .name = "subject-verb",                                                       \
            .about = "Query: a scene's verb (sat). Key: its subject (cat), whose own "             \
                     "preposition (on) comes next.")                                               \
    /* adjective-verb: query is the last byte of the subject noun, key the last byte of the        \
     * mood adjective before it ("tired"); the verb that follows is one of the mood's              \
     * ("slept"). */                                                                               \
    PLANTED(MOOD, .name = "adjective-verb", .named_by_key = 1,                                     \
            .about = "Query: the subject noun (cat). Key: the mood before it (tired), which "      \
                     "picks the verb that comes next (slept).")                                    \
    /* verb-modifier: query is the space before the particle that ends a scene's verb phrase       \
     * ("sat| down", "sat slowly| down"), key the verb's last byte; the particle is the            \
     * verb's own. */                                                                              \
    PLANTED(MODIFIER, .name = "verb-modifier", .named_by_key = 1,                                  \
            .about = "Query: the token before a scene's particle, an adverb after the verb "       \
                     "(sat slowly). Key: that verb, whose own particle (down) comes next; "        \
                     "right after its verb (sat down) the verb itself predicts it, and no "        \
                     "head is needed.")                                                            \
    /* place: query is the space before a scene's place ("mat"), key the last byte of its          \
     * preposition ("on"); the place is one of the preposition's. */                               \
    PLANTED(PLACE, .name = "place", .named_by_key = 1,                                             \
            .about = "Query: the token before a place (the, warm). Key: the preposition "          \
                     "(on), which says which places can come (mat, rug...).")                      \
    /* pronoun: query is the last byte of "it" in a pronoun line, key the last byte of its         \
     * antecedent: the line's subject, or, after a person (never "it"), its object; the word    \
     * after "it" says the antecedent's class. */                                                 \
    PLANTED(PRONOUN, .name = "pronoun",                                                            \
            .about = "Query: \"it\". Key: its antecedent, the line's subject (Apple), or "         \
                     "the object after a person (My sister bought a car), whose class says "     \
                     "the word after \"it\" (is tasty, was broken).")

#endif
