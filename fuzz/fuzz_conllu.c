/* fuzz_conllu: a libFuzzer target for the CoNLL-U reader (data/conllu.c).
 *
 * An input is a file's bytes. The reader must accept it or refuse it with one
 * line that names the file; an accepted file must hold what data/conllu.h
 * promises: the text no longer than the file plus one byte, every sentence's
 * text inside it and followed by a newline, every word's span inside its
 * sentence's text and after the previous word's start, every HEAD naming a word
 * of its sentence or the root, following heads from any word reaches the root,
 * and every relation index names a relation. The target traps otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/conllu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_conllu: " __VA_ARGS__);                                     \
            fputc('\n', stderr);                                                               \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

static void check_sentence(const Conllu *c, const ConlluSentence *s)
{
    CHECK(s->start <= s->end && s->end < c->ntext, "sentence text [%zu, %zu) of %zu", s->start,
          s->end, c->ntext);
    CHECK(c->text[s->end] == '\n', "sentence not followed by a newline");
    CHECK(s->nwords >= 1 && s->word0 + s->nwords <= c->nword, "sentence words out of range");
    size_t prev = s->start;
    for (uint32_t i = 0; i < s->nwords; i++) {
        const ConlluWord *w = &c->word[s->word0 + i];
        CHECK(w->start >= prev && w->start <= w->end && w->end <= s->end,
              "word %u span [%zu, %zu) in sentence [%zu, %zu)", i + 1, w->start, w->end,
              s->start, s->end);
        prev = w->start;
        CHECK(w->head <= s->nwords, "HEAD %u of %u words", w->head, s->nwords);
        CHECK(w->rel < c->nrel, "relation %u of %zu", w->rel, c->nrel);
        uint32_t j = i + 1, steps = 0;
        while (j != 0 && steps++ <= s->nwords)
            j = c->word[s->word0 + j - 1].head;
        CHECK(j == 0, "word %u never reaches the root", i + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Conllu c;
    char err[1500] = "";
    if (conllu_parse(&c, data, size, "f.conllu", err, sizeof err)) {
        CHECK(strncmp(err, "f.conllu", 8) == 0 && !strchr(err, '\n'), "bad refusal: %s", err);
        CHECK(c.text == NULL && c.word == NULL && c.sent == NULL, "refused but not freed");
        return 0;
    }
    CHECK(c.nsent >= 1 && c.ntext <= size + 1, "%zu sentences, text %zu of %zu bytes", c.nsent,
          c.ntext, size);
    for (size_t s = 0; s < c.nsent; s++)
        check_sentence(&c, &c.sent[s]);
    conllu_free(&c);
    return 0;
}
