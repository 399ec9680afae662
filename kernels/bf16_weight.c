/* bf16_weight: see bf16_weight.h. Each row of W is rounded once, into both copies:
 * the forward's row (FLOATS: its pairs swapped; PANELS: column o of its panel, a word
 * every BF16_PANEL) and the backward's (FLOATS: row o ^ 1; PANELS: half o % 2 of
 * the words of pair o / 2). */
#include "kernels/bf16_weight.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16_emul.h"
#include "util/bigbuf.h"

Bf16CopyKind bf16_copy_kind(Bf16Path path)
{
    return bf16_emulated(path) && bf16_emulation_fast() ? BF16_COPY_FLOATS : BF16_COPY_PANELS;
}

/* Words of each copy. */
static size_t fwd_words(const Bf16Weight *c)
{
    return c->kind == BF16_COPY_FLOATS ? (size_t)c->OC * 2 * bf16_pairs(c->IC)
                                       : bf16_packed_size(c->OC, c->IC);
}

static size_t bwd_words(const Bf16Weight *c)
{
    return c->kind == BF16_COPY_FLOATS ? (size_t)2 * bf16_pairs(c->OC) * c->IC
                                       : bf16_packed_size(c->IC, c->OC);
}

int bf16_weight_init(Bf16Weight *c, const float *W, int OC, int IC, Bf16CopyKind kind)
{
    assert(W && OC > 0 && IC > 0);
    memset(c, 0, sizeof *c);
    c->OC = OC, c->IC = IC, c->kind = kind;
    c->fwd = (uint32_t *)bigbuf_alloc(fwd_words(c));   /* zeroed: the padding is +0 */
    c->bwd = (uint32_t *)bigbuf_alloc(bwd_words(c));
    int ok = c->fwd && c->bwd;
    if (ok && kind == BF16_COPY_FLOATS) {
        c->row_exp = malloc((size_t)OC);
        c->col_key = malloc((size_t)BF16_WEIGHT_PARTS * IC * sizeof(uint32_t));
        ok = c->row_exp && c->col_key;
    }
    if (!ok) {
        bf16_weight_free(c);
        return -1;
    }
    c->W = W;
    return 0;
}

void bf16_weight_free(Bf16Weight *c)
{
    bigbuf_free((float *)c->fwd);
    bigbuf_free((float *)c->bwd);
    free(c->row_exp);
    free(c->col_key);
    memset(c, 0, sizeof *c);
}

void bf16_weight_part(Bf16Weight *c, int part, int *o0, int *o1)
{
    assert(part >= 0 && part < BF16_WEIGHT_PARTS);
    *o0 = (int)((long)c->OC * part / BF16_WEIGHT_PARTS);
    *o1 = (int)((long)c->OC * (part + 1) / BF16_WEIGHT_PARTS);
    if (c->col_key)
        memset(c->col_key + (size_t)part * c->IC, 0xff, (size_t)c->IC * sizeof(uint32_t));
}

/* FLOATS: row o swapped into fwd, into row o ^ 1 of bwd, its keys into row_exp[o] and
 * the block's column minima ck; a pair of k at a time (a loop that vectorises, as
 * bf16_emul.c's roundings). */
static void row_floats(Bf16Weight *c, const float *restrict w, int o, uint32_t *restrict ck)
{
    int IC = c->IC, K2 = 2 * bf16_pairs(IC);
    uint32_t *restrict f = c->fwd + (size_t)o * K2;
    uint32_t *restrict b = c->bwd + (size_t)(o ^ 1) * IC;
    uint32_t kmin = UINT32_MAX;
    for (int p = 0; p < IC / 2; p++) {
        uint32_t u0, u1;
        memcpy(&u0, w + 2 * p, sizeof u0);
        memcpy(&u1, w + 2 * p + 1, sizeof u1);
        uint32_t h0 = bf16_round_bits(u0), h1 = bf16_round_bits(u1);
        f[2 * p] = h1 << 16;
        f[2 * p + 1] = h0 << 16;
        b[2 * p] = h0 << 16;
        b[2 * p + 1] = h1 << 16;
        uint32_t k0 = bf16_emul_key(h0), k1 = bf16_emul_key(h1);
        kmin = k0 < kmin ? k0 : kmin;
        kmin = k1 < kmin ? k1 : kmin;
        ck[2 * p] = k0 < ck[2 * p] ? k0 : ck[2 * p];
        ck[2 * p + 1] = k1 < ck[2 * p + 1] ? k1 : ck[2 * p + 1];
    }
    if (IC % 2) {                       /* the last k, after the padding +0 */
        uint32_t u;
        memcpy(&u, w + IC - 1, sizeof u);
        uint32_t h = bf16_round_bits(u), k = bf16_emul_key(h);
        f[IC] = h << 16;
        b[IC - 1] = h << 16;
        kmin = k < kmin ? k : kmin;
        ck[IC - 1] = k < ck[IC - 1] ? k : ck[IC - 1];
    }
    c->row_exp[o] = bf16_emul_exp(kmin);
}

/* PANELS: row o into column o % 32 of panel o / 32 (pairs along the row), and into
 * the halves o % 2 of pair o / 2 of every column panel. Halves are stored as 16-bit
 * words, so that rows o and o ^ 1 (maybe in different threads' blocks) never write
 * the same bytes. */
static void row_panels(Bf16Weight *c, const float *w, int o)
{
    int IC = c->IC, P = bf16_pairs(IC), Po = bf16_pairs(c->OC);
    uint32_t *f = c->fwd + (size_t)(o / BF16_PANEL) * P * BF16_PANEL + o % BF16_PANEL;
    for (int p = 0; p < P; p++) {
        uint32_t u0, u1 = 0;
        memcpy(&u0, w + 2 * p, sizeof u0);
        if (2 * p + 1 < IC)
            memcpy(&u1, w + 2 * p + 1, sizeof u1);
        uint32_t hi = 2 * p + 1 < IC ? bf16_round_bits(u1) : 0;
        f[(size_t)p * BF16_PANEL] = bf16_round_bits(u0) | hi << 16;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    int half = 1 - o % 2;
#else
    int half = o % 2;
#endif
    uint16_t *b = (uint16_t *)c->bwd;
    for (int i = 0; i < IC; i++) {
        uint32_t u;
        memcpy(&u, w + i, sizeof u);
        size_t word = ((size_t)(i / BF16_PANEL) * Po + o / 2) * BF16_PANEL + i % BF16_PANEL;
        b[2 * word + half] = (uint16_t)bf16_round_bits(u);
    }
}

void bf16_weight_row(Bf16Weight *c, int o, int part)
{
    const float *w = c->W + (size_t)o * c->IC;
    if (c->kind == BF16_COPY_FLOATS)
        row_floats(c, w, o, c->col_key + (size_t)part * c->IC);
    else
        row_panels(c, w, o);
}

void bf16_weight_write(Bf16Weight *c)
{
    #pragma omp parallel for schedule(static) if ((double)c->OC * c->IC >= 65536.0)
    for (int part = 0; part < BF16_WEIGHT_PARTS; part++) {
        int o0, o1;
        bf16_weight_part(c, part, &o0, &o1);
        for (int o = o0; o < o1; o++)
            bf16_weight_row(c, o, part);
    }
}

const Bf16Weight *bf16_weight_find(const Bf16WeightSet *s, const float *W, int OC, int IC)
{
    if (!s)
        return NULL;
    for (int k = 0; k < s->n; k++)
        if (s->w[k].W == W && s->w[k].OC == OC && s->w[k].IC == IC)
            return &s->w[k];
    return NULL;
}

void bf16_weights_free(Bf16WeightSet *s)
{
    for (int k = 0; k < s->n; k++)
        bf16_weight_free(&s->w[k]);
    free(s->w);
    memset(s, 0, sizeof *s);
}
