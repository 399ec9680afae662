/* tokenizer: byte vocabulary (see tokenizer.h). */
#include "data/tokenizer.h"

#include <stdio.h>
#include <string.h>

#include "util/errbuf.h"

static void index_vocab(Tokenizer *tok)
{
    for (int b = 0; b < 256; b++)
        tok->id[b] = -1;
    for (int i = 0; i < tok->V; i++)
        tok->id[tok->vocab[i]] = (int16_t)i;
}

void tok_build(Tokenizer *tok, const unsigned char *bytes, size_t n)
{
    unsigned char seen[256] = {0};
    for (size_t i = 0; i < n; i++)
        seen[bytes[i]] = 1;
    memset(tok->vocab, 0, sizeof tok->vocab);
    tok->V = 0;
    for (int b = 0; b < 256; b++)
        if (seen[b])
            tok->vocab[tok->V++] = (unsigned char)b;
    index_vocab(tok);
}

int tok_from_vocab(Tokenizer *tok, const unsigned char *vocab, int V, char *err, size_t errlen)
{
    if (V < 1 || V > 256)
        return err_set(err, errlen, "vocabulary size %d is not in [1, 256]", V);
    for (int i = 1; i < V; i++)
        if (vocab[i] <= vocab[i - 1])
            return err_set(err, errlen,
                           "vocabulary is not strictly ascending at entry %d (0x%02x after 0x%02x)",
                           i, vocab[i], vocab[i - 1]);
    memset(tok->vocab, 0, sizeof tok->vocab);
    memcpy(tok->vocab, vocab, (size_t)V);
    tok->V = V;
    index_vocab(tok);
    return 0;
}

int tok_encode(const Tokenizer *tok, const unsigned char *bytes, size_t n, uint8_t *ids,
               const char *what, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        int id = tok->id[bytes[i]];
        if (id < 0) {
            char b[ERR_BYTE_LEN], voc[1100];
            tok_describe(tok, voc, sizeof voc);
            return err_set(err, errlen,
                           "%s: byte %s at offset %zu is not in the model's vocabulary: it "
                           "knows only the %d bytes of the text it was trained on, \"%s\"",
                           what, err_byte(bytes[i], b), i, tok->V, voc);
        }
        ids[i] = (uint8_t)id;
    }
    return 0;
}

void tok_describe(const Tokenizer *tok, char *buf, size_t len)
{
    size_t pos = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < tok->V && pos + 5 < len; i++) {
        unsigned char c = tok->vocab[i];
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
