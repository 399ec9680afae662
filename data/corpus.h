/* corpus: loading a text file (or the built-in corpus), validating it, and
 * turning it into token ids split into train and val.
 *
 * The split is by position: the first (1 - val_frac) of the tokens are train,
 * the rest val. Both must hold at least one window of T + 1 tokens (val only
 * when val_frac > 0). Files are refused with a reason when missing, unreadable,
 * a directory, empty, larger than CORPUS_MAX_BYTES, or binary (NUL bytes) unless
 * allow_binary is set. */
#ifndef HEADCOUNT_CORPUS_H
#define HEADCOUNT_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer.h"

#define CORPUS_MAX_BYTES ((size_t)1 << 30)
#define CORPUS_BUILTIN_NAME "<built-in corpus>"
/* The built-in corpus always uses this seed, so every user gets the same text. */
#define CORPUS_BUILTIN_SEED 20261122u

typedef struct {
    unsigned char *bytes;
    size_t n;
    uint64_t hash;      /* FNV-1a 64 of the bytes */
    char name[512];     /* the path as given, or CORPUS_BUILTIN_NAME */
} TextFile;

int textfile_read(TextFile *f, const char *path, int allow_binary, char *err, size_t errlen);
/* The built-in generated corpus (data/synth.h), nbytes long. */
int textfile_builtin(TextFile *f, size_t nbytes, char *err, size_t errlen);
void textfile_free(TextFile *f);

typedef struct {
    Tokenizer tok;
    uint8_t *ids;
    size_t n, ntrain, nval;
} Corpus;

/* Tokenizes f with vocab (NULL: build the vocabulary from f) and splits it. */
int corpus_prepare(Corpus *c, const TextFile *f, const Tokenizer *vocab, double val_frac, int T,
                   char *err, size_t errlen);
void corpus_free(Corpus *c);

#endif
