/* corpus: loading a text file (or the built-in corpus), validating it, and
 * turning it into token ids split into train and val.
 *
 * The split is by position in the bytes: the first (1 - val_frac) of the file's
 * bytes are train, the rest val, and each part is encoded on its own.
 * Byte-level (no vocabulary size) the alphabet is the whole file's bytes, one
 * token per byte. With a vocabulary size the alphabet is all 256 byte values
 * and the merges are learned from the train bytes only, so nothing of val
 * shapes the tokens and any text encodes. Both parts must hold at least one window of T + 1 tokens (val only
 * when val_frac > 0). Files are refused with a reason when missing, unreadable,
 * a directory, empty, larger than CORPUS_MAX_BYTES, or binary (NUL bytes) unless
 * allow_binary is set. A file whose name ends in ".conllu" is a treebank: its
 * bytes are its sentences' text, one a line (data/conllu.h), or a refusal
 * naming the line that is not CoNLL-U. */
#ifndef HEADCOUNT_CORPUS_H
#define HEADCOUNT_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "data/bpe.h"
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
    char note[1024];    /* what reading it did beyond reading bytes (a CoNLL-U file's
                           sentences, data/conllu.h); empty: nothing */
} TextFile;

/* Where a training text comes from, as a checkpoint records it (its data path):
 * a file the user named, the built-in text corpus (data/synth.h) or the
 * built-in induction corpus (data/induction.h). */
typedef enum {
    CORPUS_SOURCE_FILE,
    CORPUS_SOURCE_TEXT,
    CORPUS_SOURCE_INDUCTION,
    CORPUS_SOURCES
} CorpusSource;

/* One row per source: for a built-in corpus the name a checkpoint records as
 * its data path, the size ./train generates for a fresh run, and the generator
 * (the same text for the same size on every machine); a file has none of them. */
typedef struct {
    const char *name;
    size_t default_bytes;
    int (*generate)(TextFile *f, size_t nbytes, char *err, size_t errlen);
} CorpusSourceRow;
extern const CorpusSourceRow corpus_sources[CORPUS_SOURCES];

/* The source a data path names: a built-in corpus by its row's name, else a file. */
CorpusSource corpus_source_of(const char *data_path);

int textfile_read(TextFile *f, const char *path, int allow_binary, char *err, size_t errlen);
/* The built-in generated corpus (data/synth.h), nbytes long. */
int textfile_builtin(TextFile *f, size_t nbytes, char *err, size_t errlen);
void textfile_free(TextFile *f);

/* What textfile_reopen found. */
typedef enum {
    TEXTFILE_SAME,       /* f holds the text the checkpoint trained on */
    TEXTFILE_MISSING,    /* no file at the path (err: textfile_read's message) */
    TEXTFILE_UNREADABLE, /* it cannot be read or generated (err says why) */
    TEXTFILE_CHANGED,    /* f holds it, but its size or FNV-1a hash is not the recorded one */
} TextfileMatch;

/* Reads again the text a checkpoint trained on, which it records as data_path
 * (a file, or a built-in corpus by its name: corpus_source_of), size bytes and
 * their FNV-1a hash: the file (allow_binary as for textfile_read), or the
 * built-in corpus generated again at size bytes by its row's generator, and
 * compares it with the
 * record. After TEXTFILE_SAME and TEXTFILE_CHANGED f is the caller's to free;
 * after the others it holds nothing. */
TextfileMatch textfile_reopen(TextFile *f, const char *data_path, uint64_t size, uint64_t hash,
                              int allow_binary, char *err, size_t errlen);

typedef struct {
    Tokenizer tok;
    TokenId *ids;           /* [n]: the train tokens, then the val tokens */
    size_t n, ntrain, nval;
    size_t train_bytes, val_bytes; /* the byte split: train is the file's first train_bytes */
} Corpus;

/* Splits f and encodes it with a copy of tok, or, when tok is NULL, with a
 * tokenizer built from f: byte-level over f's bytes when vocab is 0, else the
 * 256 byte values with up to vocab - 256 merges learned from the train bytes.
 * Returns 0, -1 with a message, or CORPUS_VOCAB_TOO_SMALL (a message too) when
 * vocab is not 0 and below TOK_BPE_VOCAB_MIN. On error nothing needs freeing. */
#define CORPUS_VOCAB_TOO_SMALL (-2)
/* How many of n bytes are the train split: the first (1 - val_frac) of them. */
size_t corpus_train_bytes(size_t n, double val_frac);
int corpus_prepare(Corpus *c, const TextFile *f, const Tokenizer *tok, int vocab,
                   double val_frac, int T, char *err, size_t errlen);
/* The same, checking *stop (when not NULL) while it learns merges and encodes
 * (at least once per merge and per few megabytes): once it is non-zero, returns
 * CORPUS_STOPPED (nothing to free). */
#define CORPUS_STOPPED 1
int corpus_prepare_until(Corpus *c, const TextFile *f, const Tokenizer *tok, int vocab,
                         double val_frac, int T, const volatile int *stop, char *err,
                         size_t errlen);
void corpus_free(Corpus *c);

#endif
