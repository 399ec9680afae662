/* tokenizer: the byte vocabulary.
 *
 * Tokens are bytes; the vocabulary is the sorted set of distinct byte values of
 * the training file, and token i stands for byte vocab[i]. A byte outside the
 * vocabulary cannot be encoded and is reported by value and position. */
#ifndef HEADCOUNT_TOKENIZER_H
#define HEADCOUNT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int V;
    unsigned char vocab[256];
    int16_t id[256];   /* byte -> token, -1 when absent */
} Tokenizer;

/* The vocabulary of n bytes (n may be 0: V = 0). */
void tok_build(Tokenizer *tok, const unsigned char *bytes, size_t n);
/* From a stored vocabulary: V in [1, 256], strictly ascending, else -1. */
int tok_from_vocab(Tokenizer *tok, const unsigned char *vocab, int V, char *err, size_t errlen);
/* bytes -> token ids; `what` names the source in the message (a path, "the prompt"). */
int tok_encode(const Tokenizer *tok, const unsigned char *bytes, size_t n, uint8_t *ids,
               const char *what, char *err, size_t errlen);
/* The vocabulary written readably, e.g. "\n !&',-.3:;?ABC...xyz" with escapes. */
void tok_describe(const Tokenizer *tok, char *buf, size_t len);

#endif
