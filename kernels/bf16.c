/* bf16: see bf16.h. The rounding, the one-step reference (bf16_fma), the register
 * tile (native: VDPBF16PS on AVX-512 registers; emulated step by step: bf16_fma on an
 * array of accumulators) and the OpenMP layer on top, which hands the emulated
 * products to kernels/bf16_emul.c first. Each output is one chain over the pairs of k
 * in order, computed by one call of one tile whatever the split, so the thread count
 * changes no bit; the GELU epilogue is vmath.h's, lane by lane as in matmul.c. */
#include "kernels/bf16.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "kernels/bf16_emul.h"
#include "kernels/bf16_rows.h"
#include "kernels/matmul.h"
#include "kernels/vmath.h"
#include "util/scratch.h"

#if BF16_NATIVE
#include <immintrin.h>
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline uint32_t round_bits(uint32_t u)
{
    return bf16_round_bits(u);
}

Bf16 bf16_from_float(float x)
{
    return (Bf16)round_bits(bits_of(x));
}

float bf16_to_float(Bf16 h)
{
    return float_of((uint32_t)h << 16);
}

/* A float with a denormal read as a zero of its sign (the instruction's DAZ). */
static inline float daz(float x)
{
    uint32_t u = bits_of(x);
    return (u & 0x7f800000u) == 0 ? float_of(u & 0x80000000u) : x;
}

/* The rare results of one step that fma alone does not settle: |r| in (0, 2^-126].
 * A denormal is flushed to a zero of its sign. r = ±2^-126 can be the fma's rounding
 * of an exact sum a bit below 2^-126 that the instruction (tininess after rounding
 * to 24 bits, unbounded exponent) calls tiny and flushes: the same sum scaled by 2^24
 * (exact: a*b has 16 significant bits and lands far above the denormals) rounds as
 * the instruction does; below 2^-102 there means tiny. a, b, acc are DAZ'd. */
static float step_tiny(float r, float a, float b, float acc)
{
    uint32_t t = bits_of(r) & 0x7fffffffu;
    if (t < 0x00800000u)
        return float_of(bits_of(r) & 0x80000000u);
    float s = fmaf(a * 0x1p24f, b, acc * 0x1p24f);
    if (fabsf(s) < 0x1p-102f)
        return float_of(bits_of(s) & 0x80000000u);
    return r;
}

/* One step with inputs already widened and DAZ'd. */
static inline float fma_step(float acc, float a, float b)
{
    float r = fmaf(a, b, acc);
    uint32_t t = bits_of(r) & 0x7fffffffu;
    if (t - 1u < 0x00800000u)                    /* 0 < |r| <= 2^-126 */
        return step_tiny(r, a, b, acc);
    return r;
}

float bf16_fma(float acc, Bf16 a, Bf16 b)
{
    return fma_step(daz(acc), daz(bf16_to_float(a)), daz(bf16_to_float(b)));
}

static uint32_t pair_of(const float *x, int k, int K)
{
    uint32_t lo = k < K ? bf16_from_float(x[k]) : 0;
    uint32_t hi = k + 1 < K ? bf16_from_float(x[k + 1]) : 0;
    return lo | hi << 16;
}

/* Pairs of two rows' elements: out[c] = round(x0[c]) | round(x1[c]) << 16. */
static void pair_rows(uint32_t *out, const float *x0, const float *x1, int n)
{
    for (int c = 0; c < n; c++) {
        uint32_t u0, u1;
        memcpy(&u0, x0 + c, sizeof u0);
        memcpy(&u1, x1 + c, sizeof u1);
        out[c] = round_bits(u0) | round_bits(u1) << 16;
    }
}

/* The roundings and the product below are worksharing loops without a region of
 * their own (nowait), so that a layer runs its roundings and products in one parallel
 * region: on a loaded host every region's start and end waits for the slowest thread.
 * Called outside a region, each runs whole on the calling thread. */
void bf16_round_row(uint32_t *dst, const float *row, int K)
{
    for (int p = 0; p < K / 2; p++) {   /* a pair is two neighbours: low k first */
        uint32_t u0, u1;
        memcpy(&u0, row + 2 * p, sizeof u0);
        memcpy(&u1, row + 2 * p + 1, sizeof u1);
        dst[p] = round_bits(u0) | round_bits(u1) << 16;
    }
    if (K % 2)
        dst[K / 2] = pair_of(row, K - 1, K);
}

static void round_rows_for(uint32_t *xr, const float *x, int N, int K)
{
    int P = bf16_pairs(K);
    #pragma omp for schedule(static) nowait
    for (int n = 0; n < N; n++)
        bf16_round_row(xr + (size_t)n * P, x + (size_t)n * K, K);
}

/* Whether a conversion of n elements is worth a parallel region of its own. */
static int parallel_rounding(double n)
{
    return n >= 65536.0;
}

void bf16_round_rows(uint32_t *xr, const float *x, int N, int K)
{
    #pragma omp parallel if (parallel_rounding((double)N * K))
    round_rows_for(xr, x, N, K);
}

size_t bf16_packed_size(int OC, int IC)
{
    return (size_t)(OC + BF16_PANEL - 1) / BF16_PANEL * (size_t)bf16_pairs(IC) * BF16_PANEL;
}

static void pack_weights_for(uint32_t *wp, const float *W, int OC, int IC)
{
    int P = bf16_pairs(IC), nq = (OC + BF16_PANEL - 1) / BF16_PANEL;
    #pragma omp for schedule(static) nowait
    for (int q = 0; q < nq; q++)
        for (int j = 0; j < BF16_PANEL; j++) {
            int o = q * BF16_PANEL + j;
            uint32_t *dst = wp + (size_t)q * P * BF16_PANEL + j;
            for (int p = 0; p < P; p++)
                dst[(size_t)p * BF16_PANEL] = o < OC ? pair_of(W + (size_t)o * IC, 2 * p, IC) : 0;
        }
}

void bf16_pack_weights(uint32_t *wp, const float *W, int OC, int IC)
{
    #pragma omp parallel if (parallel_rounding((double)OC * IC))
    pack_weights_for(wp, W, OC, IC);
}

static void pack_cols_for(uint32_t *wp, const float *X, int R, int Cc)
{
    int P = bf16_pairs(R), nq = (Cc + BF16_PANEL - 1) / BF16_PANEL;
    #pragma omp for schedule(static) nowait
    for (int q = 0; q < nq; q++)
        for (int p = 0; p < P; p++) {
            static const float zeros[BF16_PANEL];
            const float *x0 = X + (size_t)2 * p * Cc + q * BF16_PANEL;
            uint32_t *dst = wp + ((size_t)q * P + p) * BF16_PANEL;
            int nc = Cc - q * BF16_PANEL < BF16_PANEL ? Cc - q * BF16_PANEL : BF16_PANEL;
            pair_rows(dst, x0, 2 * p + 1 < R ? x0 + Cc : zeros, nc);
            for (int j = nc; j < BF16_PANEL; j++)
                dst[j] = 0;
        }
}

void bf16_pack_cols(uint32_t *wp, const float *X, int R, int Cc)
{
    #pragma omp parallel if (parallel_rounding((double)R * Cc))
    pack_cols_for(wp, X, R, Cc);
}

static void round_cols_for(uint32_t *xr, const float *X, int R, int Cc)
{
    /* 16 pairs of rows x 64 columns at a time: each pair of rows rounded along the
     * rows (vectorised) into t, then each column's 16 pairs written as one line of xr
     * (rows of xr are P words apart: writing a word at a time to 64 of them, often a
     * multiple of 4 KiB apart, thrashed one L1 set). */
    enum { CB = 64, PB = 16 };
    int P = bf16_pairs(R), ncb = (Cc + CB - 1) / CB;
    #pragma omp for schedule(static) nowait
    for (int cb = 0; cb < ncb; cb++) {
        int c0 = cb * CB, nc = Cc - c0 < CB ? Cc - c0 : CB;
        float zeros[CB] = {0};
        uint32_t t[PB][CB];
        for (int p0 = 0; p0 < P; p0 += PB) {
            int np = P - p0 < PB ? P - p0 : PB;
            for (int i = 0; i < np; i++) {
                const float *x0 = X + (size_t)2 * (p0 + i) * Cc + c0;
                pair_rows(t[i], x0, 2 * (p0 + i) + 1 < R ? x0 + Cc : zeros, nc);
            }
            for (int c = 0; c < nc; c++)
                for (int i = 0; i < np; i++)
                    xr[(size_t)(c0 + c) * P + p0 + i] = t[i][c];
        }
    }
}

void bf16_round_cols(uint32_t *xr, const float *X, int R, int Cc)
{
    #pragma omp parallel if (parallel_rounding((double)R * Cc))
    round_cols_for(xr, X, R, Cc);
}

/* Pairs per k block: a block of a panel is 16 KiB, inside L1 while the rows sweep it. */
enum { KCP = 128 };

#if BF16_NATIVE

static inline __mmask16 lanes(int n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* R rows (1..6, constant per call) x 32 columns: pairs p0..p1-1 of the chains, from C
 * (load_c) or from +0; on the last block the epilogue, then out. */
ALWAYS_INLINE void tile_native(int R, int p0, int p1, const uint32_t *a, size_t lda,
                               const uint32_t *wp, float *c, size_t ldc, int n, int load_c,
                               int last, const Bf16Epilogue *e)
{
    __mmask16 m[2] = { lanes(n), lanes(n - 16) };
    __m512 acc[6][2];
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++)
            acc[r][v] = load_c ? _mm512_maskz_loadu_ps(m[v], c + r * ldc + 16 * v)
                               : _mm512_setzero_ps();
    _Pragma("GCC unroll 2") for (int p = p0; p < p1; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(wp + (size_t)BF16_PANEL * p);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(wp + (size_t)BF16_PANEL * p + 16);
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[r * lda + p]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
        }
    }
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++) {
            __m512 o = acc[r][v];
            size_t at = (size_t)r * ldc + 16 * v;
            if (last && e->bias)
                o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m[v], e->bias + 16 * v));
            if (last && e->scale)
                o = _mm512_mul_ps(o, _mm512_maskz_loadu_ps(m[v], e->scale + at));
            if (last && e->dgelu) {
                v16f x = (v16f)o, s = v16_gelu_gate(x);
                _mm512_mask_storeu_ps(e->dgelu + at, m[v], (__m512)v16_gelu_grad_gated(x, s));
                o = (__m512)(x * s);
            }
            _mm512_mask_storeu_ps(c + at, m[v], o);
        }
}

static void tile_rows_native(int R, int p0, int p1, const uint32_t *a, size_t lda,
                             const uint32_t *wp, float *c, size_t ldc, int n, int load_c, int last,
                             const Bf16Epilogue *e)
{
    switch (R) {
    case 6: tile_native(6, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e); break;
    case 5: tile_native(5, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e); break;
    case 4: tile_native(4, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e); break;
    case 3: tile_native(3, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e); break;
    case 2: tile_native(2, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e); break;
    default: tile_native(1, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e); break;
    }
}

#endif

/* The emulation step by step: the same chains with bf16_fma's steps, on R x 32
 * accumulators (an old value loaded from c is DAZ'd, as the instruction reads it); the
 * epilogue runs vmath's 8-lane functions, whose lanes equal the 16-lane ones. */
static void tile_emulated(int R, int p0, int p1, const uint32_t *a, size_t lda,
                          const uint32_t *wp, float *c, size_t ldc, int n, int load_c, int last,
                          const Bf16Epilogue *e)
{
    float acc[6][BF16_PANEL];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < BF16_PANEL; j++)
            acc[r][j] = load_c && j < n ? daz(c[r * ldc + j]) : 0.0f;
    for (int p = p0; p < p1; p++) {
        float b0[BF16_PANEL], b1[BF16_PANEL];
        for (int j = 0; j < BF16_PANEL; j++) {
            uint32_t w = wp[(size_t)BF16_PANEL * p + j];
            b0[j] = daz(float_of(w << 16));
            b1[j] = daz(float_of(w & 0xffff0000u));
        }
        for (int r = 0; r < R; r++) {
            uint32_t av = a[r * lda + p];
            float a0 = daz(float_of(av << 16)), a1 = daz(float_of(av & 0xffff0000u));
            for (int j = 0; j < BF16_PANEL; j++)
                acc[r][j] = fma_step(fma_step(acc[r][j], a1, b1[j]), a0, b0[j]);
        }
    }
    for (int r = 0; r < R; r++) {
        if (last && e->bias)
            for (int j = 0; j < n; j++)
                acc[r][j] = acc[r][j] + e->bias[j];
        if (last && e->scale)
            for (int j = 0; j < n; j++)
                acc[r][j] = acc[r][j] * e->scale[r * ldc + j];
        if (last && e->dgelu)
            for (int j = 0; j < BF16_PANEL; j += 8) {
                v8f x = v8_load(acc[r] + j), s = v8_gelu_gate(x);
                float d[8];
                v8_store(d, v8_gelu_grad_gated(x, s));
                v8_store(acc[r] + j, x * s);
                for (int t = 0; t < 8 && j + t < n; t++)
                    e->dgelu[r * ldc + j + t] = d[t];
            }
        memcpy(c + r * ldc, acc[r], (size_t)n * sizeof(float));
    }
}

static void tile_rows(int emulate, int R, int p0, int p1, const uint32_t *a, size_t lda,
                      const uint32_t *wp, float *c, size_t ldc, int n, int load_c, int last,
                      const Bf16Epilogue *e)
{
#if BF16_NATIVE
    if (!emulate) {
        tile_rows_native(R, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e);
        return;
    }
#endif
    tile_emulated(R, p0, p1, a, lda, wp, c, ldc, n, load_c, last, e);
}

static void kernel_nt(int emulate, int M, int n, int P, const uint32_t *ar, size_t lda,
                      const uint32_t *wp, float *out, size_t ldc, const Bf16Epilogue *e)
{
    int p0 = 0;
    do {                                         /* P = 0 (K = 0): one empty block */
        int p1 = p0 + KCP < P ? p0 + KCP : P;
        for (int i = 0; i < M; i += 6) {
            size_t at = (size_t)i * ldc;
            Bf16Epilogue ei = { e->accumulate, e->bias, e->scale ? e->scale + at : NULL,
                                e->dgelu ? e->dgelu + at : NULL };
            tile_rows(emulate, M - i < 6 ? M - i : 6, p0, p1, ar + (size_t)i * lda, lda, wp,
                      out + at, ldc, n, p0 > 0 || e->accumulate, p1 == P, &ei);
        }
        p0 = p1;
    } while (p0 < P);
}

void bf16_kernel_nt(int M, int n, int P, const uint32_t *ar, size_t lda, const uint32_t *wp,
                    float *out, size_t ldc, const Bf16Epilogue *e, Bf16Path path)
{
    kernel_nt(bf16_emulated(path), M, n, P, ar, lda, wp, out, ldc, e);
}

/* Tiles of a product: ROWS rows x up to PANELS panels; each tile keeps its block of
 * rounded rows in L2 while it walks its panels. */
enum { ROWS = 96, PANELS = 8 };
_Static_assert(ROWS % BF16_COL_ROWS == 0, "a band of rows holds whole blocks of columns");

/* out[M][ncols] (rows ldc apart) = the chains of ar's M rows (lda pairs apart) with
 * the ncols columns of the packed panels wp (P pairs each), finished by e (whose
 * pointers are at out[0][0]): independent tiles, shared among the region's threads.
 * rout (started on out, or NULL): each tile's outputs rounded into it while they are
 * in cache; a thread then takes a band of rows whole, so that it alone gathers their
 * exponents, and where rout holds out's columns (ldc its k) it rounds the band's
 * columns once the band is done. rcols (started on out by bf16_rows_start_in_cols, or
 * NULL): out's columns in the layout the dW product reads for its `in`, a band's
 * blocks rounded the same way once the band is done. */
static void tiles_for(int emulate, float *out, size_t ldc, const uint32_t *ar, size_t lda,
                      const uint32_t *wp, int M, int ncols, int P, const Bf16Epilogue *e,
                      Bf16Rows *rout, Bf16Rows *rcols)
{
    int nq = (ncols + BF16_PANEL - 1) / BF16_PANEL;
    int nrb = (M + ROWS - 1) / ROWS, ncb = (nq + PANELS - 1) / PANELS;
    int per = rout || rcols ? ncb : 1;           /* tiles per item */
    #pragma omp for schedule(dynamic, 1) nowait
    for (int item = 0; item < nrb * ncb / per; item++) {
        int i0 = item * per / ncb * ROWS;
        int m = M - i0 < ROWS ? M - i0 : ROWS;
        unsigned char emin[ROWS];
        memset(emin, 255, sizeof emin);
        for (int tile = item * per; tile < (item + 1) * per; tile++)
            for (int q = tile % ncb * PANELS; q < tile % ncb * PANELS + PANELS && q < nq; q++) {
                int j0 = q * BF16_PANEL, n = ncols - j0 < BF16_PANEL ? ncols - j0 : BF16_PANEL;
                size_t at = (size_t)i0 * ldc + j0;
                Bf16Epilogue et = { e->accumulate, e->bias ? e->bias + j0 : NULL,
                                    e->scale ? e->scale + at : NULL,
                                    e->dgelu ? e->dgelu + at : NULL };
                kernel_nt(emulate, m, n, P, ar + (size_t)i0 * lda, lda,
                          wp + (size_t)q * P * BF16_PANEL, out + at, ldc, &et);
                if (rout)        /* a panel starts at an even column: no pair is split */
                    bf16_rows_put_block(rout, i0, m, j0, n, out + at, ldc, emin);
            }
        if (rout)
            bf16_rows_put_exps(rout, i0, m, emin);
        if (rout && rout->has_cols) { /* the band's rows are final: its blocks' columns */
            assert(ldc == (size_t)rout->k);
            for (int b0 = i0; b0 < i0 + m; b0 += BF16_COL_ROWS)
                bf16_rows_put_cols(rout, b0, i0 + m - b0 < BF16_COL_ROWS ? i0 + m - b0
                                                                         : BF16_COL_ROWS,
                                   out + (size_t)b0 * ldc);
        }
        if (rcols) {                  /* the same for the columns of the dW's `in` */
            assert(ldc == (size_t)rcols->k);
            for (int b0 = i0; b0 < i0 + m; b0 += BF16_COL_ROWS)
                bf16_rows_put_cols(rcols, b0, i0 + m - b0 < BF16_COL_ROWS ? i0 + m - b0
                                                                          : BF16_COL_ROWS,
                                   out + (size_t)b0 * ldc);
        }
    }
}

/* Below this many flops a layer runs on the calling thread. */
#define PARALLEL_MIN_FLOPS ((double)(1 << 20))

/* The calling thread's scratch slots for the rounded operands (the kernels inside the
 * parallel loops use none). */
enum { SLOT_ROWS = 2, SLOT_PANELS = 3, SLOT_ROWS_T = 4, SLOT_PANELS_T = 5 };

static uint32_t *slot_words(int slot, size_t n)
{
    return (uint32_t *)scratch_floats(slot, n ? n : 1);
}

/* The forward in one region: W packed into pack (when W is not NULL; then wp is
 * pack), in rounded into rows (when in is not NULL; then xr is rows), then the product
 * of xr with wp, its rows rounded into rout and its columns into rcols (each or both
 * NULL) as its tiles finish. */
static void forward(int emulate, float *out, float *dgelu, Bf16Rows *rout, Bf16Rows *rcols,
                    const float *in,
                    uint32_t *rows, const uint32_t *xr, const float *W, uint32_t *pack,
                    const uint32_t *wp, const float *bias, int N, int IC, int OC)
{
    int P = bf16_pairs(IC);
    Bf16Epilogue e = { 0, bias, NULL, dgelu };
    #pragma omp parallel if (2.0 * N * IC * OC >= PARALLEL_MIN_FLOPS)
    {
        if (W)
            pack_weights_for(pack, W, OC, IC);
        if (in)
            round_rows_for(rows, in, N, IC);
        #pragma omp barrier
        tiles_for(emulate, out, (size_t)OC, xr, (size_t)P, wp, N, OC, P, &e, rout, rcols);
    }
}

void bf16_forward_packed(float *out, float *dgelu, const float *in, const uint32_t *wp,
                         const float *bias, int N, int IC, int OC, Bf16Path path)
{
    int emulate = bf16_emulated(path);
    if (emulate && !dgelu && bf16_emul_forward_packed(out, in, wp, bias, N, IC, OC))
        return;
    uint32_t *xr = slot_words(SLOT_ROWS, (size_t)N * bf16_pairs(IC));
    forward(emulate, out, dgelu, NULL, NULL, in, xr, xr, NULL, NULL, wp, bias, N, IC, OC);
}

/* wc, when it holds the panels. */
static const Bf16Weight *panels_of(const Bf16Weight *wc)
{
    return wc && wc->kind == BF16_COPY_PANELS ? wc : NULL;
}

/* r started on x[n][k] when it has room for it (else dropped: it must not keep
 * another step's copy of x), or NULL. */
static Bf16Rows *rows_start(Bf16Rows *r, const float *x, int n, int k)
{
    if (!r)
        return NULL;
    if (!x || !bf16_rows_fits(r, n, k)) {
        bf16_rows_drop(r);
        return NULL;
    }
    bf16_rows_start(r, x, n, k);
    return r;
}

void bf16_forward_rounding_cols(float *out, float *dgelu, Bf16Rows *rout, Bf16Rows *rcols,
                                const float *in, const Bf16Rows *rin, const float *W,
                                const Bf16Weight *wc, const float *bias, int N, int IC,
                                int OC, Bf16Path path)
{
    assert(!wc || (wc->W == W && wc->OC == OC && wc->IC == IC));
    assert(!rout || rout != rin);
    assert(!rcols || (rcols != rout && rcols != rin));
    rout = rows_start(rout, out, N, OC);
    if (rcols && !bf16_rows_start_in_cols(rcols, out, N, OC))
        rcols = NULL;
    int emulate = bf16_emulated(path);
    if (emulate && bf16_emul_forward(out, dgelu, rout, in,
                                     bf16_rows_of(rin, in, N, IC, BF16_COPY_FLOATS), W, wc,
                                     bias, N, IC, OC)) {
        /* a pass after the product would save nothing over dW's own: none */
        if (rcols)
            bf16_rows_drop(rcols);
        return;
    }
    const Bf16Rows *pairs = bf16_rows_of(rin, in, N, IC, BF16_COPY_PANELS);
    uint32_t *rows = pairs ? NULL : slot_words(SLOT_ROWS, (size_t)N * bf16_pairs(IC));
    const uint32_t *xr = pairs ? pairs->rows : rows;
    const float *round_in = pairs ? NULL : in;
    if (panels_of(wc)) {
        forward(emulate, out, dgelu, rout, rcols, round_in, rows, xr, NULL, NULL, wc->fwd,
                bias, N, IC, OC);
        return;
    }
    uint32_t *wp = slot_words(SLOT_PANELS, bf16_packed_size(OC, IC));
    forward(emulate, out, dgelu, rout, rcols, round_in, rows, xr, W, wp, wp, bias, N, IC, OC);
}

void bf16_forward_rounding(float *out, float *dgelu, Bf16Rows *rout, const float *in,
                           const Bf16Rows *rin, const float *W, const Bf16Weight *wc,
                           const float *bias, int N, int IC, int OC, Bf16Path path)
{
    bf16_forward_rounding_cols(out, dgelu, rout, NULL, in, rin, W, wc, bias, N, IC, OC, path);
}

void bf16_forward_with(float *out, float *dgelu, const float *in, const Bf16Rows *rin,
                       const float *W, const Bf16Weight *wc, const float *bias, int N, int IC,
                       int OC, Bf16Path path)
{
    bf16_forward_rounding(out, dgelu, NULL, in, rin, W, wc, bias, N, IC, OC, path);
}

void bf16_forward(float *out, float *dgelu, const float *in, const float *W, const float *bias,
                  int N, int IC, int OC, Bf16Path path)
{
    bf16_forward_with(out, dgelu, in, NULL, W, NULL, bias, N, IC, OC, path);
}

void bf16_backward(float *din, float *dW, float *dbias, const float *dout, const float *in,
                   const float *W, const float *dgelu, int N, int IC, int OC, Bf16Path path)
{
    bf16_backward_with(din, dW, dbias, dout, NULL, in, W, NULL, dgelu, N, IC, OC, path);
}

void bf16_backward_with(float *din, float *dW, float *dbias, const float *dout,
                        const Bf16Rows *rdout, const float *in, const float *W,
                        const Bf16Weight *wc, const float *dgelu, int N, int IC, int OC,
                        Bf16Path path)
{
    bf16_backward_rounding(din, NULL, dW, dbias, dout, rdout, in, NULL, W, wc, dgelu, N, IC,
                           OC, path);
}

void bf16_backward_rounding(float *din, Bf16Rows *rdin, float *dW, float *dbias,
                            const float *dout, const Bf16Rows *rdout, const float *in,
                            const Bf16Rows *rin, const float *W, const Bf16Weight *wc,
                            const float *dgelu, int N, int IC, int OC, Bf16Path path)
{
    assert(!wc || (wc->W == W && wc->OC == OC && wc->IC == IC));
    assert(!rdin || rdin != rdout);
    rdin = rows_start(rdin, din, N, IC);
    if (rdin)                     /* din's columns too, where rdin has room for them */
        bf16_rows_start_cols(rdin);
    int emulate = bf16_emulated(path);
    if (emulate) {                /* what the float32 kernels took is done */
        int done = bf16_emul_backward(din, rdin, dW, dout,
                                      bf16_rows_of(rdout, dout, N, OC, BF16_COPY_FLOATS), in,
                                      rin, W, wc, dgelu, N, IC, OC);
        if (done & BF16_EMUL_DIN)
            din = NULL;
        if (done & BF16_EMUL_DW)
            dW = NULL;
    }
    /* din[n][ic] = chain over o of dout[n][o] W[o][ic]: dout's rows in pairs of o, W's
     * columns packed with pairs of o. dW[o][ic] += chain over n of dout[n][o]
     * in[n][ic]: dout's columns in pairs of n, in's columns packed with pairs of n. */
    int Po = bf16_pairs(OC), Pn = bf16_pairs(N);
    uint32_t *dr = NULL, *wt = NULL, *dt = NULL, *xp = NULL;
    const uint32_t *wtp = NULL;          /* W's column panels: from wc, or packed into wt */
    const uint32_t *drp = NULL;          /* dout's rows: from rdout, or rounded into dr */
    if (din) {
        const Bf16Rows *pairs = bf16_rows_of(rdout, dout, N, OC, BF16_COPY_PANELS);
        if (pairs)
            drp = pairs->rows;
        else
            drp = dr = slot_words(SLOT_ROWS, (size_t)N * Po);
        if (panels_of(wc))
            wtp = wc->bwd;
        else
            wtp = wt = slot_words(SLOT_PANELS, bf16_packed_size(IC, OC));
    }
    const uint32_t *dtp = NULL;          /* dout's columns: from rdout, or rounded into dt */
    const uint32_t *xpp = NULL;          /* in's column panels: from rin, or packed into xp */
    if (dW) {
        const Bf16Rows *cols = bf16_cols_of(rdout, dout, N, OC, BF16_COPY_PANELS);
        if (cols)
            dtp = cols->cols;
        else
            dtp = dt = slot_words(SLOT_ROWS_T, (size_t)OC * Pn);
        const Bf16Rows *icols = bf16_in_cols_of(rin, in, N, IC, BF16_COPY_PANELS);
        if (icols)
            xpp = icols->cols;
        else
            xpp = xp = slot_words(SLOT_PANELS_T, bf16_packed_size(IC, N));
    }
    Bf16Epilogue ein = { 0, NULL, dgelu, NULL }, ew = { 1, NULL, NULL, NULL };
    double flops = 2.0 * N * IC * OC * ((din != NULL) + (dW != NULL));
    if (din || dW) {
        #pragma omp parallel if (flops >= PARALLEL_MIN_FLOPS)
        {
            if (din) {
                if (dr)
                    round_rows_for(dr, dout, N, OC);
                if (wt)
                    pack_cols_for(wt, W, OC, IC);
            }
            if (dW) {
                if (dt)
                    round_cols_for(dt, dout, N, OC);
                if (xp)
                    pack_cols_for(xp, in, N, IC);
            }
            #pragma omp barrier
            if (dW)             /* the larger tiles first; din's even out the end */
                tiles_for(emulate, dW, (size_t)IC, dtp, (size_t)Pn, xpp, OC, IC, Pn, &ew, NULL,
                          NULL);
            if (din)
                tiles_for(emulate, din, (size_t)IC, drp, (size_t)Po, wtp, N, IC, Po, &ein,
                          rdin, NULL);
        }
    }
    if (dbias)
        matmul_backward(NULL, NULL, dbias, dout, in, W, N, IC, OC);
}
