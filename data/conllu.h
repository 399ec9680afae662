/* conllu: reading a Universal Dependencies treebank (CoNLL-U,
 * https://universaldependencies.org/format.html) into the text a model trains
 * on and the gold trees --heads scores against.
 *
 * The text is the sentences one a line: a sentence's `# text =` line where it
 * has one, else its tokens joined by single spaces, none after a token whose
 * MISC says SpaceAfter=No. Every word keeps the bytes of that text it stands for
 * (its span); the words of a multiword token (`1-2 don't` over `1 do`, `2 n't`)
 * split the token's span where their forms spell it exactly, else the first
 * word holds the whole span and the others an empty one at its end. Empty nodes
 * (`8.1`, enhanced dependencies only) are checked and counted, and are in no
 * tree. Anything else the format forbids or this reader cannot place is refused
 * with one line naming the file, the line number and what was wrong: a line
 * that is not ten tab-separated fields, a bad or out-of-order ID, a HEAD that is
 * not a number or names no word of its sentence, a tree with a cycle, a FORM the
 * `# text` line does not hold where it should, a NUL byte, mixed line endings
 * (a file is all LF or all CRLF). Nothing is dropped silently: the reader drops
 * nothing. Deciding what to do with a sentence (a context too short for it) is
 * the caller's. Memory is linear in the file. Never prints or exits. */
#ifndef HEADCOUNT_CONLLU_H
#define HEADCOUNT_CONLLU_H

#include <stddef.h>
#include <stdint.h>

/* One syntactic word (an integer ID). */
typedef struct {
    size_t start, end; /* its bytes in Conllu.text: [start, end); empty inside a
                          multiword token whose words do not spell it */
    uint32_t head;     /* 0: the root; else its head's word number in the sentence (1-based) */
    uint32_t rel;      /* DEPREL with any subtype (nmod:poss), an index into Conllu.rel_name */
    uint32_t line;     /* its line in the file, 1-based */
} ConlluWord;

typedef struct {
    size_t start, end; /* its text in Conllu.text, the newline after it not included */
    size_t word0;      /* its first word in Conllu.word */
    uint32_t nwords;
    uint32_t line;     /* its first line in the file */
} ConlluSentence;

typedef struct {
    char *text;            /* [ntext]: the sentences, each followed by '\n' */
    size_t ntext;
    ConlluSentence *sent;  /* [nsent] */
    size_t nsent;
    ConlluWord *word;      /* [nword], sentence after sentence */
    size_t nword;
    char **rel_name;       /* [nrel] the DEPRELs in order of first use */
    size_t nrel;
    size_t multiword;      /* multiword-token lines */
    size_t multiword_unsplit; /* of those, the ones whose words do not spell them */
    size_t empty;          /* empty-node lines */
    size_t joined;         /* sentences without a `# text =` line, their tokens joined */
} Conllu;

/* The largest word number a sentence may have. */
#define CONLLU_MAX_WORDS 100000

/* 1 when path names a CoNLL-U file: it ends in ".conllu". */
int conllu_is_path(const char *path);

/* Parses bytes[0..n) of the file called name (for messages). 0, or -1 with the
 * one-line message (nothing to free). */
int conllu_parse(Conllu *c, const unsigned char *bytes, size_t n, const char *name, char *err,
                 size_t errlen);
/* Reads the file at path and parses it: conllu_parse's result, or -1 with a
 * message (missing, unreadable, not a regular file, over 1 GiB, not CoNLL-U). */
int conllu_read(Conllu *c, const char *path, char *err, size_t errlen);
void conllu_free(Conllu *c);

/* One line for a reader: "2001 sentences, 25150 words (4 multiword tokens, ...)". */
void conllu_describe(const Conllu *c, char *buf, size_t len);

#endif
