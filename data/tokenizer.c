/* tokenizer: byte alphabet, merges, encoding and decoding (see tokenizer.h). */
#include "data/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/errbuf.h"
#include "util/utf8.h"

void tok_free(Tokenizer *tok)
{
    free(tok->merges);
    bpe_encoder_free(tok->enc);
    free(tok->piece_at);
    free(tok->piece);
    free(tok->last_byte);
    tok->merges = NULL;
    tok->enc = NULL;
    tok->piece_at = NULL;
    tok->piece = NULL;
    tok->last_byte = NULL;
    tok->nmerges = 0;
    tok->V = tok->nbytes;
}

/* The piece table of the alphabet and tok->merges: each merged token's bytes
 * are its left token's then its right token's. Lengths are summed in 64 bits
 * and capped by TOK_PIECES_MAX before anything is allocated for them. */
static int build_pieces(Tokenizer *tok, char *err, size_t errlen)
{
    int V = tok->V;
    tok->piece_at = malloc(((size_t)V + 1) * sizeof(size_t));
    tok->last_byte = malloc(V ? (size_t)V : 1);
    if (!tok->piece_at || !tok->last_byte)
        return err_set(err, errlen, "out of memory for the vocabulary's %d tokens", V);
    uint64_t total = 0;
    tok->piece_at[0] = 0;
    for (int i = 0; i < V; i++) {
        uint64_t len = 1;
        if (i >= tok->nbytes) {
            const BpeMerge *m = &tok->merges[i - tok->nbytes];
            len = (uint64_t)(tok->piece_at[m->left + 1] - tok->piece_at[m->left]) +
                  (tok->piece_at[m->right + 1] - tok->piece_at[m->right]);
        }
        total += len;
        if (total > TOK_PIECES_MAX)
            return err_set(err, errlen, "the tokens up to %d stand for more than %zu bytes "
                           "together: the merges build pieces too long to keep", i,
                           TOK_PIECES_MAX);
        tok->piece_at[i + 1] = (size_t)total;
    }
    tok->piece = malloc(total ? (size_t)total : 1);
    if (!tok->piece)
        return err_set(err, errlen, "out of memory for the tokens' %llu bytes",
                       (unsigned long long)total);
    for (int i = 0; i < V; i++) {
        unsigned char *p = tok->piece + tok->piece_at[i];
        if (i < tok->nbytes) {
            p[0] = tok->bytes[i];
        } else {
            const BpeMerge *m = &tok->merges[i - tok->nbytes];
            size_t nl = tok->piece_at[m->left + 1] - tok->piece_at[m->left];
            size_t nr = tok->piece_at[m->right + 1] - tok->piece_at[m->right];
            memcpy(p, tok->piece + tok->piece_at[m->left], nl);
            memcpy(p + nl, tok->piece + tok->piece_at[m->right], nr);
        }
        tok->last_byte[i] = tok->piece[tok->piece_at[i + 1] - 1];
    }
    return 0;
}

/* The alphabet's byte -> id index. */
static void index_bytes(Tokenizer *tok)
{
    for (int b = 0; b < 256; b++)
        tok->id[b] = -1;
    for (int i = 0; i < tok->nbytes; i++)
        tok->id[tok->bytes[i]] = (int16_t)i;
}

int tok_build(Tokenizer *tok, const unsigned char *bytes, size_t n, char *err, size_t errlen)
{
    unsigned char seen[256] = {0};
    for (size_t i = 0; i < n; i++)
        seen[bytes[i]] = 1;
    memset(tok, 0, sizeof *tok);
    for (int b = 0; b < 256; b++)
        if (seen[b])
            tok->bytes[tok->nbytes++] = (unsigned char)b;
    tok->V = tok->nbytes;
    index_bytes(tok);
    if (build_pieces(tok, err, errlen)) {
        tok_free(tok);
        return -1;
    }
    return 0;
}

int tok_build_all_bytes(Tokenizer *tok, char *err, size_t errlen)
{
    unsigned char all[256];
    for (int b = 0; b < 256; b++)
        all[b] = (unsigned char)b;
    return tok_build(tok, all, sizeof all, err, errlen);
}

/* Installs merges (owned from now on) on a tokenizer with only its alphabet set:
 * the encoder and the piece table. On error frees everything but the alphabet. */
static int attach_merges(Tokenizer *tok, BpeMerge *merges, int nmerges, char *err,
                         size_t errlen)
{
    tok->merges = merges;
    tok->nmerges = nmerges;
    tok->V = tok->nbytes + nmerges;
    if (nmerges > 0) {
        char why[300];
        tok->enc = bpe_encoder_new(tok->id, tok->nbytes, merges, nmerges, why, sizeof why);
        if (!tok->enc) {
            tok_free(tok);
            return err_set(err, errlen, "%s", why);
        }
    }
    if (build_pieces(tok, err, errlen)) {
        tok_free(tok);
        return -1;
    }
    return 0;
}

int tok_learn(Tokenizer *tok, const unsigned char *text, size_t n, int V, char *err,
              size_t errlen)
{
    return tok_learn_until(tok, text, n, V, NULL, err, errlen);
}

int tok_learn_until(Tokenizer *tok, const unsigned char *text, size_t n, int V,
                    const volatile int *stop, char *err, size_t errlen)
{
    if (V < tok->nbytes || V > TOK_VOCAB_MAX)
        return err_set(err, errlen, "vocabulary size %d is not in [%d, %d] (the %d bytes of "
                       "the alphabet, up to the limit)", V, tok->nbytes, TOK_VOCAB_MAX,
                       tok->nbytes);
    for (size_t i = 0; i < n; i++)
        if (tok->id[text[i]] < 0) {
            char b[ERR_BYTE_LEN];
            return err_set(err, errlen, "byte %s at offset %zu of the training text is not in "
                           "the alphabet", err_byte(text[i], b), i);
        }
    int want = V - tok->nbytes, got = 0;
    BpeMerge *merges = malloc((size_t)(want ? want : 1) * sizeof *merges);
    if (!merges)
        return err_set(err, errlen, "out of memory for %d merges", want);
    int rc = bpe_learn_until(text, n, tok->id, tok->nbytes, want, merges, &got, stop, err,
                             errlen);
    if (rc) {
        free(merges);
        return rc;
    }
    if (got == 0) {
        free(merges);
        return 0;
    }
    Tokenizer fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.nbytes = tok->nbytes;
    memcpy(fresh.bytes, tok->bytes, sizeof fresh.bytes);
    index_bytes(&fresh);
    if (attach_merges(&fresh, merges, got, err, errlen))
        return -1;
    tok_free(tok);
    *tok = fresh;
    return 0;
}

int tok_from_parts(Tokenizer *tok, const unsigned char *bytes, int nbytes,
                   const BpeMerge *merges, int nmerges, char *err, size_t errlen)
{
    memset(tok, 0, sizeof *tok);
    if (nbytes < 1 || nbytes > 256)
        return err_set(err, errlen, "byte alphabet size %d is not in [1, 256]", nbytes);
    if (nmerges < 0 || nmerges > TOK_VOCAB_MAX - nbytes)
        return err_set(err, errlen, "%d merges on %d bytes: the vocabulary would exceed %d",
                       nmerges, nbytes, TOK_VOCAB_MAX);
    for (int i = 1; i < nbytes; i++)
        if (bytes[i] <= bytes[i - 1])
            return err_set(err, errlen,
                           "byte alphabet is not strictly ascending at entry %d (0x%02x after "
                           "0x%02x)", i, bytes[i], bytes[i - 1]);
    for (int k = 0; k < nmerges; k++)
        if (merges[k].left >= nbytes + k || merges[k].right >= nbytes + k)
            return err_set(err, errlen, "merge %d joins tokens %u and %u, but only tokens below "
                           "%d exist before it", k, merges[k].left, merges[k].right,
                           nbytes + k);
    tok->nbytes = nbytes;
    memcpy(tok->bytes, bytes, (size_t)nbytes);
    index_bytes(tok);
    BpeMerge *own = NULL;
    if (nmerges > 0) {
        own = malloc((size_t)nmerges * sizeof *own);
        if (!own)
            return err_set(err, errlen, "out of memory for %d merges", nmerges);
        memcpy(own, merges, (size_t)nmerges * sizeof *own);
    }
    return attach_merges(tok, own, nmerges, err, errlen);
}

int tok_copy(Tokenizer *dst, const Tokenizer *src, char *err, size_t errlen)
{
    return tok_from_parts(dst, src->bytes, src->nbytes, src->merges, src->nmerges, err, errlen);
}

int tok_check(const Tokenizer *tok, const unsigned char *bytes, size_t n, const char *what,
              char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (tok->id[bytes[i]] < 0) {
            char b[ERR_BYTE_LEN], voc[1100];
            tok_describe(tok, voc, sizeof voc);
            const char *hint = tok->nmerges
                ? "this byte-pair model was trained before vocabularies started from all 256 "
                  "byte values; one trained with --vocab N now accepts any text"
                : "a model trained with --vocab N knows all 256 byte values and accepts any "
                  "text";
            return err_set(err, errlen,
                           "%s: byte %s at offset %zu is not in the model's vocabulary: it "
                           "knows only the %d bytes of the text it was trained on, \"%s\"; "
                           "%s (docs/tokenizer.md)",
                           what, err_byte(bytes[i], b), i, tok->nbytes, voc, hint);
        }
    return 0;
}

long tok_encode(const Tokenizer *tok, const unsigned char *bytes, size_t n, TokenId *ids,
                const char *what, char *err, size_t errlen)
{
    if (tok_check(tok, bytes, n, what, err, errlen))
        return -1;
    if (tok->enc)
        return (long)bpe_encode(tok->enc, bytes, n, ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (TokenId)tok->id[bytes[i]];
    return (long)n;
}

const unsigned char *tok_piece(const Tokenizer *tok, int id, size_t *len)
{
    *len = tok->piece_at[id + 1] - tok->piece_at[id];
    return tok->piece + tok->piece_at[id];
}

size_t tok_count_bytes(const Tokenizer *tok, const TokenId *ids, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += tok->piece_at[ids[i] + 1] - tok->piece_at[ids[i]];
    return total;
}

size_t tok_decode(const Tokenizer *tok, const TokenId *ids, size_t n, unsigned char *out)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const unsigned char *p = tok_piece(tok, ids[i], &len);
        memcpy(out + at, p, len);
        at += len;
    }
    return at;
}

void tok_describe(const Tokenizer *tok, char *buf, size_t len)
{
    size_t pos = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < tok->nbytes && pos + 5 < len; i++) {
        unsigned char c = tok->bytes[i];
        int w;
        if (c == '\n')
            w = snprintf(buf + pos, len - pos, "\\n");
        else if (c == '\t')
            w = snprintf(buf + pos, len - pos, "\\t");
        else if (c == '\\' || c == '"')
            w = snprintf(buf + pos, len - pos, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            w = snprintf(buf + pos, len - pos, "%c", c);
        else
            w = snprintf(buf + pos, len - pos, "\\x%02x", c);
        pos += (size_t)w;
    }
}

size_t tok_label_bytes(const unsigned char *p, size_t n, char *buf, size_t len)
{
    size_t at = 0, kept = 0;   /* the label's length so far; how much of it is in buf */
    for (size_t i = 0; i < n;) {
        char piece[16];
        size_t w = 0, used = 1;
        uint32_t cp = 0;
        size_t u = utf8_char(p + i, n - i, &cp);
        if (p[i] == ' ')
            w = (size_t)snprintf(piece, sizeof piece, "\xe2\x90\xa3");
        else if (p[i] == '\n')
            w = (size_t)snprintf(piece, sizeof piece, "\xe2\x86\xb5");
        else if (p[i] == '\t')
            w = (size_t)snprintf(piece, sizeof piece, "\xe2\x87\xa5");
        else if (p[i] == '\\')
            w = (size_t)snprintf(piece, sizeof piece, "\\\\");
        else if (p[i] > 0x20 && p[i] < 0x7f)
            w = (size_t)snprintf(piece, sizeof piece, "%c", p[i]);
        /* A character from U+00A0 up: the C1 controls (U+0080 to U+009F), which
         * JSON keeps, are escaped here like the C0 ones. */
        else if (u && cp >= 0xa0 && cp != 0x2423 && cp != 0x21b5 && cp != 0x21e5) {
            memcpy(piece, p + i, u);
            w = used = u;
        } else
            w = (size_t)snprintf(piece, sizeof piece, "\\x%02x", p[i]);
        /* Only whole symbols, so a cut label is still valid UTF-8. */
        if (at == kept && at + w < len) {
            memcpy(buf + at, piece, w);
            kept += w;
        }
        at += w;
        i += used;
    }
    if (len > 0)
        buf[kept] = '\0';
    return at;
}

size_t tok_label(const Tokenizer *tok, int id, char *buf, size_t len)
{
    size_t n;
    const unsigned char *p = tok_piece(tok, id, &n);
    return tok_label_bytes(p, n, buf, len);
}
