/* fuzz_bpe: a libFuzzer target for the byte-pair tokenizer (data/bpe.c).
 *
 * An input is a 4-byte header, then a training part and a text part:
 *   byte 0: mode (bit 0) and the number of merges to ask for (bits 1..7, times 4);
 *   bytes 1-2: the training part's length (little-endian, cut to what is there);
 *   byte 3: unused, kept so seeds can carry a marker.
 * The alphabet is the training part's bytes. Mode 0 learns the merges from the
 * training part; mode 1 reads them from it instead (pairs of bytes taken modulo
 * the ids defined so far, so most lists are valid, and repeats are kept so the
 * refusal runs too). The text part, each byte mapped into the alphabet, is then
 * encoded into a buffer of exactly n ids, so AddressSanitizer catches a write
 * past n, and decoded by expanding the merges. The target traps when learning
 * fails, when learned merges are refused, when a refusal has no message, when
 * an id is out of range, or when decoding does not give back the text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bpe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_bpe: " __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                               \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* Appends token t's bytes to out[*len..cap); returns -1 when they would pass cap. */
static int expand(int t, int nbase, const BpeMerge *m, const unsigned char *byte_of,
                  unsigned char *out, size_t *len, size_t cap)
{
    while (t >= nbase) { /* the left part recursively, the right part by iteration */
        if (expand(m[t - nbase].left, nbase, m, byte_of, out, len, cap))
            return -1;
        t = m[t - nbase].right;
    }
    if (*len >= cap)
        return -1;
    out[(*len)++] = byte_of[t];
    return 0;
}

/* Encodes x[0..n) and checks the ids and the round trip. */
static void round_trip(const BpeEncoder *e, const unsigned char *x, size_t n, int nbase,
                       const BpeMerge *m, int nm, const unsigned char *byte_of)
{
    TokenId *ids = malloc(n * sizeof *ids + (n == 0)); /* exactly n ids */
    unsigned char *back = malloc(n + 1);
    CHECK(ids && back, "out of memory");
    size_t nids = bpe_encode(e, x, n, ids);
    CHECK(nids <= n, "%zu ids for %zu bytes", nids, n);
    size_t len = 0;
    for (size_t i = 0; i < nids; i++) {
        CHECK(ids[i] < nbase + nm, "id %d at %zu, vocabulary %d", ids[i], i, nbase + nm);
        CHECK(expand(ids[i], nbase, m, byte_of, back, &len, n) == 0,
              "decoding passes the %zu bytes encoded", n);
    }
    CHECK(len == n && memcmp(back, x, n) == 0, "decode(encode(x)) != x (%zu bytes, %zu back)",
          n, len);
    free(ids);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int mode = data[0] & 1, want = (data[0] >> 1) * 4;
    size_t ntrain = (size_t)data[1] | (size_t)data[2] << 8;
    const unsigned char *train = data + 4;
    size_t rest = size - 4;
    if (ntrain > rest)
        ntrain = rest;
    const unsigned char *text = train + ntrain;
    size_t ntext = rest - ntrain;

    int16_t byte_id[256];
    unsigned char byte_of[256];
    int nbase = 0, seen[256] = {0};
    for (size_t i = 0; i < ntrain; i++)
        seen[train[i]] = 1;
    for (int b = 0; b < 256; b++) {
        byte_id[b] = seen[b] ? (int16_t)nbase : -1;
        if (seen[b])
            byte_of[nbase++] = (unsigned char)b;
    }
    if (nbase == 0)
        return 0;

    BpeMerge m[512];
    int nm = 0;
    char err[256] = "";
    BpeEncoder *e;
    if (mode == 0) {
        CHECK(bpe_learn(train, ntrain, byte_id, nbase, want, m, &nm, err, sizeof err) == 0,
              "learning failed: %s", err);
        CHECK(nm >= 0 && nm <= want, "%d merges for %d asked", nm, want);
        for (int k = 0; k < nm; k++)
            CHECK(m[k].left < nbase + k && m[k].right < nbase + k,
                  "learned merge %d names an undefined id", k);
        e = bpe_encoder_new(byte_id, nbase, m, nm, err, sizeof err);
        CHECK(e, "learned merges refused: %s", err);
        round_trip(e, train, ntrain, nbase, m, nm, byte_of);
    } else {
        for (size_t i = 0; i + 1 < ntrain && nm < want; i += 2, nm++)
            m[nm] = (BpeMerge){(TokenId)(train[i] % (nbase + nm)),
                               (TokenId)(train[i + 1] % (nbase + nm))};
        e = bpe_encoder_new(byte_id, nbase, m, nm, err, sizeof err);
        if (!e) {
            CHECK(err[0] != '\0', "refusal without a message");
            return 0;
        }
    }
    unsigned char *x = malloc(ntext + 1);
    CHECK(x, "out of memory");
    for (size_t i = 0; i < ntext; i++)
        x[i] = byte_of[text[i] % nbase];
    round_trip(e, x, ntext, nbase, m, nm, byte_of);
    free(x);
    bpe_encoder_free(e);
    return 0;
}
