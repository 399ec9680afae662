/* matmul_tile512: the AVX-512 register tile and B-panel packing, included by
 * matmul_tile.h in place of its AVX2 tile when the compiler targets AVX-512F and VL
 * (MATMUL_AVX512, matmul_kernels.h); internal to model/. The same interface and the
 * same float operations as the AVX2 tile: each element of C is one chain
 * s = fma(a_ik, b_kj, s) over k in order, so the two tiles give the same bits. A
 * vector holds 16 columns, a tile up to 6 rows x 32 columns (12 accumulators, as the
 * AVX2 tile's 6 x 16), and B's panels are 32 columns wide. Partial vectors use the
 * AVX-512 lane masks: masked-off lanes are neither loaded nor stored. */
#ifndef HEADCOUNT_MATMUL_TILE512_H
#define HEADCOUNT_MATMUL_TILE512_H

#include <stdint.h>

/* k in blocks of KC: a KC x 32 panel of B (32 KiB) in L1 while a tile sweeps it. */
enum { KC = 256, PANEL = 32 };

/* The live lanes of a panel's last 16-lane vector. */
typedef __mmask16 PanelMask;

static inline PanelMask mask_first16(int n)
{
    return (PanelMask)((1u << n) - 1u);
}

static inline PanelMask panel_mask(int nc)
{
    return mask_first16(nc > 16 ? nc - 16 : nc);
}

ALWAYS_INLINE __m512 load16(const float *p, int masked, PanelMask mask)
{
    return masked ? _mm512_maskz_loadu_ps(mask, p) : _mm512_loadu_ps(p);
}

ALWAYS_INLINE void store16(float *p, __m512 v, int masked, PanelMask mask)
{
    if (masked)
        _mm512_mask_storeu_ps(p, mask, v);
    else
        _mm512_storeu_ps(p, v);
}

/* store16 for a matrix that is written now and read much later (the GELU forward's
 * gelu', read by the backward): a full, line-aligned vector goes straight to memory
 * (a non-temporal store), without first reading the line into the cache for
 * ownership. That read doubled the traffic of NANO's fused fc forward, which wrote
 * 24 MiB of gelu' per layer; it ran ~20 % below the plain forward, ~10 % with this.
 * Other vectors are stored as usual; the values are the same either way. Whoever
 * streams calls _mm_sfence before the product returns. */
ALWAYS_INLINE void stream16(float *p, __m512 v, int masked, PanelMask mask)
{
    if (!masked && ((uintptr_t)p & 63) == 0)
        _mm512_stream_ps(p, v);
    else
        store16(p, v, masked, mask);
}

/* The epilogue of one 16-lane vector o of finished chains (see EPI_* in
 * matmul_tile.h) at C + at, aux + at: the element-wise vmath on 16 lanes, whose bits
 * equal the 8-lane functions' lane by lane. */
ALWAYS_INLINE __m512 epi_apply16(__m512 o, int epi, Epi e, size_t at, int mk, PanelMask mask)
{
    if (epi == EPI_SCALE)
        o = _mm512_mul_ps(o, load16(e.aux + at, mk, mask));
    if (epi == EPI_GELU) {
        v16f x = (v16f)o, s = v16_gelu_gate(x);
        stream16(e.aux + at, (__m512)v16_gelu_grad_gated(x, s), mk, mask);
        o = (__m512)(x * s);
    }
    return o;
}

/* One tile of C: R rows (R = 1..6, a constant at each call) x 16*nv columns (nv = 1 or
 * 2); `masked` means C's last vector of columns is partial (lanes in mask).
 *   a -> A element (i0, k0); (r, k) at a + r*rsa + k*csa
 *   b -> B panel: packed, row k at b + 32*k (zero past the live columns), or not
 *        packed: B itself, row k at b + ldp*k (masked loads past the live columns)
 *   c -> C[i0][j0], row r at c + r*ldc
 * load_c: start each chain from C (accumulating or a later k block), else from 0. */
ALWAYS_INLINE void tile_bcast_b(int R, int nv, int masked, PanelMask mask, int K, const float *a,
                                size_t rsa, size_t csa, int packed, const float *b, size_t ldp,
                                float *c, size_t ldc, int load_c, int epi, Epi e)
{
    __m512 acc[6][2];
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)
            acc[r][v] = load_c ? load16(c + r * ldc + 16 * v, masked && v == nv - 1, mask)
                               : _mm512_setzero_ps();
    const float *ar[6];
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        ar[r] = a + (size_t)r * rsa;
    /* The rows this tile will store, asked for now (as in the AVX2 tile), and the
     * matrix EPI_SCALE reads, also when C was loaded (a later k block: K = 384 left
     * the backward through NANO's GELU without it). EPI_GELU's second matrix is
     * written with streaming stores (stream16): fetching it would cost the traffic
     * they avoid. */
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
        if (!load_c) {
            _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + r * ldc + 16 * nv - 1), _MM_HINT_T0);
        }
        if (epi == EPI_SCALE) {
            _mm_prefetch((const char *)(e.aux + r * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(e.aux + r * ldc + 16 * nv - 1), _MM_HINT_T0);
        }
    }
    /* Unrolled by 4: the loop's own add, compare and branch per 12 FMAs cost 0-8 %
     * (+3 % on average over NANO's and MID's layer products on one thread). */
    _Pragma("GCC unroll 4") for (int k = 0; k < K; k++) {
        __m512 b0, b1;
        if (packed) {
            b0 = _mm512_load_ps(b + PANEL * k);
            b1 = nv == 2 ? _mm512_load_ps(b + PANEL * k + 16) : b0;
        } else {
            b0 = load16(b + ldp * k, masked && nv == 1, mask);
            b1 = nv == 2 ? load16(b + ldp * k + 16, masked, mask) : b0;
        }
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
            __m512 av = _mm512_set1_ps(ar[r][(size_t)k * csa]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            if (nv == 2)
                acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    __m512 bv[2];
    int has_bias = (epi == EPI_BIAS || epi == EPI_GELU) && e.bias;
    if (has_bias)
        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)
            bv[v] = load16(e.bias + 16 * v, masked && v == nv - 1, mask);
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++) {
            int mk = masked && v == nv - 1;
            size_t at = (size_t)r * ldc + 16 * (size_t)v;
            __m512 o = has_bias ? _mm512_add_ps(acc[r][v], bv[v]) : acc[r][v];
            store16(c + at, epi_apply16(o, epi, e, at, mk, mask), mk, mask);
        }
}

/* tile_bcast_b for a panel of nc (1..32) live columns: the instantiation that fits. */
ALWAYS_INLINE void tile_nc(int R, int nc, PanelMask mask, int K, const float *a, size_t rsa,
                           size_t csa, int packed, const float *b, size_t ldp, float *c,
                           size_t ldc, int load_c, int epi, Epi e)
{
    if (nc == 32)
        tile_bcast_b(R, 2, 0, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
    else if (nc > 16)
        tile_bcast_b(R, 2, 1, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
    else if (nc == 16)
        tile_bcast_b(R, 1, 0, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
    else
        tile_bcast_b(R, 1, 1, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
}

/* Copies B[0..kc-1][0..nc-1] (row stride ldb) into a kc x 32 panel, zero-padded. */
static inline void pack_panel(float *bp, const float *b, size_t ldb, int kc, int nc)
{
    if (nc == 32) {
        for (int k = 0; k < kc; k++, b += ldb, bp += PANEL) {
            _mm512_store_ps(bp, _mm512_loadu_ps(b));
            _mm512_store_ps(bp + 16, _mm512_loadu_ps(b + 16));
        }
    } else {
        PanelMask m0 = mask_first16(imin(16, nc)), m1 = mask_first16(imax(0, nc - 16));
        for (int k = 0; k < kc; k++, b += ldb, bp += PANEL) {
            _mm512_store_ps(bp, _mm512_maskz_loadu_ps(m0, b));
            _mm512_store_ps(bp + 16, _mm512_maskz_loadu_ps(m1, b + 16));
        }
    }
}

/* The transposing twin of pack_panel for nt: B is [N][K], so panel row k gathers
 * B[0..nc-1][k] (b -> B[j0][k0]); eight k at a time through 8 x 8 transposes. */
static inline void pack_panel_t(float *bp, const float *b, size_t ldb, int kc, int nc)
{
    int k = 0;
    for (; k + 8 <= kc; k += 8)
        for (int g = 0; g < PANEL; g += 8) {
            __m256 r[8];
            if (g >= nc) {
                for (int t = 0; t < 8; t++)
                    _mm256_store_ps(bp + PANEL * (k + t) + g, _mm256_setzero_ps());
                continue;
            }
            for (int q = 0; q < 8; q++)
                r[q] = g + q < nc ? _mm256_loadu_ps(b + (size_t)(g + q) * ldb + k)
                                  : _mm256_setzero_ps();
            transpose8(r);
            for (int t = 0; t < 8; t++)
                _mm256_store_ps(bp + PANEL * (k + t) + g, r[t]);
        }
    for (; k < kc; k++)
        for (int j = 0; j < PANEL; j++)
            bp[PANEL * k + j] = j < nc ? b[(size_t)j * ldb + k] : 0.0f;
}

#endif
