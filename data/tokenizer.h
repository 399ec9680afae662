/* tokenizer: the vocabulary, bytes and byte-pair merges (data/bpe.h).
 *
 * The byte alphabet is an ascending set of byte values: token i < nbytes stands
 * for byte bytes[i]. A byte-level model's alphabet is the distinct bytes of its
 * training file (tok_build); a byte-pair vocabulary starts from all 256 byte
 * values (tok_build_all_bytes), so that it encodes any text. Checkpoints written
 * before that hold byte-pair vocabularies over their file's bytes, and these
 * load and encode as they always did. With merges, token
 * nbytes + k stands for the bytes of merges[k].left followed by those of
 * merges[k].right (its piece). Without merges (nmerges = 0) the tokenizer is
 * byte-level: one token per byte, exactly as the format-1 checkpoints store it.
 * Encoding checks every byte first: a byte outside the alphabet cannot be
 * encoded and is reported by value and position. Decoding concatenates pieces.
 *
 * A Tokenizer owns its merges, its encoder and its piece table: whoever builds
 * one (tok_build, tok_from_parts) calls tok_free, which is safe on a zeroed or
 * half-built struct. On error the builders leave nothing to free. */
#ifndef HEADCOUNT_TOKENIZER_H
#define HEADCOUNT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "data/bpe.h"

/* The pieces of all tokens together may take at most this many bytes (a
 * stored merge list whose pieces double in length is refused by it). */
#define TOK_PIECES_MAX ((size_t)1 << 28)

typedef struct {
    int V;                      /* tokens: nbytes + nmerges */
    int nbytes;                 /* the byte alphabet's size */
    unsigned char bytes[256];   /* token i < nbytes stands for byte bytes[i], ascending */
    int16_t id[256];            /* byte -> its token, -1 when absent */
    int nmerges;
    BpeMerge *merges;           /* [nmerges]; NULL when nmerges = 0 */
    BpeEncoder *enc;            /* NULL when nmerges = 0 */
    size_t *piece_at;           /* [V + 1]: token i is piece[piece_at[i] .. piece_at[i + 1]) */
    unsigned char *piece;       /* [piece_at[V]] every token's bytes */
    unsigned char *last_byte;   /* [V] the last byte of each token's piece */
} Tokenizer;

/* The byte-level tokenizer of n bytes (n may be 0: V = 0). -1 when memory runs out. */
int tok_build(Tokenizer *tok, const unsigned char *bytes, size_t n, char *err, size_t errlen);
/* The byte-level tokenizer of all 256 byte values (token i stands for byte i),
 * the base every ./train --vocab vocabulary learns its merges on. -1 when
 * memory runs out. */
int tok_build_all_bytes(Tokenizer *tok, char *err, size_t errlen);
/* Adds to a byte-level tokenizer up to V - nbytes merges learned from text[0..n)
 * (bpe_learn; fewer when no pair occurs twice). Every byte of text must be in
 * the alphabet. -1 with a message when V < nbytes, V > TOK_VOCAB_MAX, a byte of
 * text is outside the alphabet, or memory runs out; the tokenizer is then
 * unchanged. */
int tok_learn(Tokenizer *tok, const unsigned char *text, size_t n, int V, char *err,
              size_t errlen);
/* The same, stopping when *stop (when not NULL) turns non-zero: returns 1 with
 * the tokenizer unchanged (bpe_learn_until). */
int tok_learn_until(Tokenizer *tok, const unsigned char *text, size_t n, int V,
                    const volatile int *stop, char *err, size_t errlen);
/* From stored parts: nbytes in [1, 256] bytes strictly ascending, then nmerges
 * merges (0 .. TOK_VOCAB_MAX - nbytes), merge k naming ids below nbytes + k. */
int tok_from_parts(Tokenizer *tok, const unsigned char *bytes, int nbytes,
                   const BpeMerge *merges, int nmerges, char *err, size_t errlen);
/* dst = a copy of src (built anew). */
int tok_copy(Tokenizer *dst, const Tokenizer *src, char *err, size_t errlen);
void tok_free(Tokenizer *tok);

/* 0 when every byte of bytes[0..n) is in the alphabet, else -1 with
 * tok_encode's message. */
int tok_check(const Tokenizer *tok, const unsigned char *bytes, size_t n, const char *what,
              char *err, size_t errlen);
/* bytes -> token ids (ids has room for n); returns the number of ids, or -1
 * with a message naming the first byte outside the alphabet and its offset.
 * `what` names the source in the message (a path, "the prompt"). */
long tok_encode(const Tokenizer *tok, const unsigned char *bytes, size_t n, TokenId *ids,
                const char *what, char *err, size_t errlen);
/* Token id's bytes: *len of them at the returned pointer (id < V). */
const unsigned char *tok_piece(const Tokenizer *tok, int id, size_t *len);
/* The number of bytes ids[0..n) stand for. */
size_t tok_count_bytes(const Tokenizer *tok, const TokenId *ids, size_t n);
/* ids[0..n) -> their bytes in out (room for tok_count_bytes); returns the count. */
size_t tok_decode(const Tokenizer *tok, const TokenId *ids, size_t n, unsigned char *out);
/* Bytes p[0..n) as text for people, the way the heads report and the explorer
 * label a token (docs/heads.md, "How tokens are shown"): a space is U+2423 (so
 * " cat" reads as the open box then "cat"), a newline U+21B5, a tab U+21E5, a
 * backslash two backslashes; printable ASCII and well-formed UTF-8 characters
 * from U+00A0 up stand for themselves, except the three symbols just named,
 * which are escaped so that a label means one thing; every other byte
 * (controls, DEL, stray or malformed UTF-8) is a backslash, 'x' and two
 * lowercase hex digits. The label is always valid UTF-8 without control
 * characters. Writes the whole symbols that fit in len - 1 bytes and a NUL
 * (len > 0; a cut label stays valid UTF-8) and returns the
 * whole label's length, as snprintf does. */
size_t tok_label_bytes(const unsigned char *p, size_t n, char *buf, size_t len);
/* Token id's piece as tok_label_bytes writes it. */
size_t tok_label(const Tokenizer *tok, int id, char *buf, size_t len);
/* The byte alphabet written readably, e.g. "\n !&',-.3:;?ABC...xyz" with escapes. */
void tok_describe(const Tokenizer *tok, char *buf, size_t len);

#endif
