/* bpe: byte-pair encoding over a byte alphabet, learned from a text.
 *
 * Symbols. The text's bytes are first mapped to base ids by byte_id[256]
 * (the byte vocabulary of data/tokenizer.h: ids 0 .. nbase-1, -1 for a byte the
 * alphabet lacks). Merge k (0-based) joins the adjacent pair (left, right) into
 * the new id nbase + k; left and right are ids below nbase + k.
 *
 * Pre-tokenisation. The text is cut into chunks and a merge never crosses a
 * chunk boundary, so tokens stay inside words. Each byte has a class: letter
 * (A-Z, a-z and every byte >= 0x80, so UTF-8 letters stay whole), digit (0-9),
 * space (' ' only), other whitespace (\n \r \t \v \f) or punctuation (every
 * other byte). A chunk is, scanning left to right:
 *   - a maximal run of letters, of digits or of punctuation, optionally
 *     preceded by one ' ' (GPT-2's " word");
 *   - otherwise a maximal run of whitespace (spaces and other whitespace
 *     mixed), except that a final ' ' directly followed by a letter, digit or
 *     punctuation byte leaves the run and starts the next chunk.
 * So "The cat  sat.\n" is "The" " cat" " " " sat" "." "\n".
 *
 * A chunk longer than BPE_CHUNK_MAX bytes (a text with no whitespace or
 * punctuation for pages) is cut into pieces of BPE_CHUNK_MAX bytes, the last
 * shorter, and merges never cross a piece boundary either.
 *
 * Learning. Pair counts are over adjacent positions inside chunks (in "aaa" the
 * pair (a,a) counts 2), and only over each chunk's first piece: the learner
 * holds every distinct piece it counts, tens of bytes of memory per byte, and
 * the pieces of a chunk that never ends are mostly distinct. Each step merges the pair with the highest count; among
 * equal counts, the smallest left id, then the smallest right id. A merge
 * replaces occurrences left to right without overlap ("aaa" -> "Aa"). Learning
 * stops early when no pair occurs at least twice. The result depends only on
 * the text, byte_id and the number of merges asked for: any machine, any thread
 * count gives the same merges.
 *
 * Encoding applies the merges to each piece in the order they were learned
 * (equivalently: repeatedly merge the pair of lowest merge index present), so
 * encoding the training text reproduces the learned segmentation of every piece
 * learning counted exactly, and decoding (concatenating each token's bytes)
 * gives back the input bytes. */
#ifndef HEADCOUNT_BPE_H
#define HEADCOUNT_BPE_H

#include <stddef.h>
#include <stdint.h>

/* Length of the chunk that starts at text[0] (n >= 1), by the rule above; the
 * encoder and the learner cut text with it. */
size_t bpe_chunk_len(const unsigned char *text, size_t n);

/* The longest piece of a chunk that is encoded as one, and the most bytes of a
 * chunk that learning counts; docs/tokenizer.md says what it does to merges. */
#define BPE_CHUNK_MAX 4096

/* How many bytes of text[0..n) merge learning leaves uncounted: those of each
 * chunk past its first piece. */
size_t bpe_uncounted(const unsigned char *text, size_t n);

/* A token id. Wide enough for every vocabulary up to TOK_VOCAB_MAX. */
typedef uint16_t TokenId;
#define TOK_VOCAB_MAX 32768
/* The smallest byte-pair vocabulary ./train --vocab builds: the 256 byte
 * values every such vocabulary starts from, and one merge. */
#define TOK_BPE_VOCAB_MIN 257

typedef struct {
    TokenId left, right;
} BpeMerge;

/* Learns up to want merges from text[0..n) over base ids byte_id (nbase of
 * them; every byte of text must have byte_id >= 0). Writes them to
 * merges[0..*got) (merges has room for want) and returns 0; -1 with a message
 * when nbase + want > TOK_VOCAB_MAX or memory runs out. */
int bpe_learn(const unsigned char *text, size_t n, const int16_t byte_id[256], int nbase,
              int want, BpeMerge *merges, int *got, char *err, size_t errlen);
/* The same, checking *stop (when not NULL) as it goes, at least once per merge
 * and per megabyte of text read: once it is non-zero, returns 1 with no merges
 * (*got = 0), so a program can honour a signal within a fraction of a second. */
int bpe_learn_until(const unsigned char *text, size_t n, const int16_t byte_id[256], int nbase,
                    int want, BpeMerge *merges, int *got, const volatile int *stop, char *err,
                    size_t errlen);

/* An encoder for one merge list: lookup tables built once, read-only after, so
 * several threads may encode with one encoder at the same time. */
typedef struct BpeEncoder BpeEncoder;

/* NULL when memory runs out or the merges are invalid (a merge naming an id not
 * yet defined, or repeating an earlier merge's pair); err says which. */
BpeEncoder *bpe_encoder_new(const int16_t byte_id[256], int nbase, const BpeMerge *merges,
                            int nmerges, char *err, size_t errlen);
void bpe_encoder_free(BpeEncoder *e);

/* Encodes text[0..n) into ids (room for n ids always suffices) and returns the
 * number of ids written. Every byte must have byte_id >= 0 (the caller checks,
 * so that it can report the offending byte); behaviour is otherwise undefined. */
size_t bpe_encode(const BpeEncoder *e, const unsigned char *text, size_t n, TokenId *ids);

#endif
