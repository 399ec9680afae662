/* matmul_tile: the register tile and the packing of B's panels, shared by
 * kernels/matmul.c (the dense products) and kernels/matmul_causal.c (attention's causal
 * products); internal to model/. All static inline, so each file gets its own
 * instantiations. The float operations are those stated at the top of matmul.c.
 *
 * Two tiles with one interface: the AVX2 + FMA tile here (up to 6 rows x 16 columns,
 * B's panels 16 columns wide) and, when the compiler targets AVX-512, the one in
 * matmul_tile512.h (6 rows x 32 columns, panels 32 wide). Both compute every element
 * of C as the same fused multiply-add chain over k, so they give the same bits; only
 * how many chains run side by side differs. The callers see PANEL (a panel's width in
 * floats), PanelMask / panel_mask (the live lanes of a panel's last vector), tile_nc,
 * tile_rows, pack_panel and pack_panel_t. The 8-lane helpers (mask_first, transpose8)
 * serve A's packing on both paths. */
#ifndef HEADCOUNT_MATMUL_TILE_H
#define HEADCOUNT_MATMUL_TILE_H

#include <stddef.h>

#include "kernels/matmul_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#define MATMUL_AVX2 1
#include <immintrin.h>
#else
#define MATMUL_AVX2 0
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

#if MATMUL_AVX2

#include "kernels/vmath.h"

/* Lane mask selecting the first n (0..8) lanes. */
static inline __m256i mask_first(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* In place 8 x 8 transpose: r[q][t] becomes r[t][q]. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm256_unpacklo_ps(r[q], r[q + 1]);
        t[q + 1] = _mm256_unpackhi_ps(r[q], r[q + 1]);
    }
    for (int q = 0; q < 8; q += 4) {
        u[q] = _mm256_shuffle_ps(t[q], t[q + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int q = 0; q < 4; q++) {
        r[q] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x20);
        r[q + 4] = _mm256_permute2f128_ps(u[q], u[q + 4], 0x31);
    }
}

/* What a tile does with its finished chains (only after the last k block; before it,
 * EPI_NONE): store them (EPI_NONE), add the bias (EPI_BIAS: C = chain + bias[j]), add
 * the bias x = chain + bias[j] and store C = gelu(x) and aux = gelu'(x) (EPI_GELU), or
 * scale by the matrix aux (EPI_SCALE: C = chain * aux; the backward through the GELU,
 * aux holding the gelu'(x) that the forward stored). aux has C's layout (row stride
 * ldc) and points at the same element as c. */
enum { EPI_NONE, EPI_BIAS, EPI_GELU, EPI_SCALE };

typedef struct {
    const float *bias; /* may be NULL */
    float *aux;
} Epi;

static inline Epi epi_at(Epi e, size_t row_off, int col)
{
    Epi r = { e.bias ? e.bias + col : NULL, e.aux ? e.aux + row_off + col : NULL };
    return r;
}

#if MATMUL_AVX512

#include "kernels/matmul_tile512.h"

#else /* the AVX2 tile */

/* k in blocks of KC: a KC x 16 panel of B (16 KiB) stays in L1 while a tile sweeps it. */
enum { KC = 256, PANEL = 16 };

typedef __m256i PanelMask;

ALWAYS_INLINE __m256 load8(const float *p, int masked, __m256i mask)
{
    return masked ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
}

ALWAYS_INLINE void store8(float *p, __m256 v, int masked, __m256i mask)
{
    if (masked)
        _mm256_maskstore_ps(p, mask, v);
    else
        _mm256_storeu_ps(p, v);
}

/* One tile of C: R rows (R = 1..6, a constant at each call) x 8*nv columns (nv = 1 or
 * 2); `masked` means C's last vector of columns is partial (lanes in mask).
 *   a -> A element (i0, k0); (r, k) at a + r*rsa + k*csa
 *   b -> B panel: packed, row k at b + 16*k (zero past the live columns), or not
 *        packed: B itself, row k at b + ldp*k (masked loads past the live columns)
 *   c -> C[i0][j0], row r at c + r*ldc
 * load_c: start each chain from C (accumulating or a later k block), else from 0.
 * The unroll pragmas keep acc in registers: without them gcc 12 -O3 left some
 * instantiations storing every accumulator to the stack once per k. */
ALWAYS_INLINE void tile_bcast_b(int R, int nv, int masked, __m256i mask, int K, const float *a,
                                size_t rsa, size_t csa, int packed, const float *b, size_t ldp,
                                float *c, size_t ldc, int load_c, int epi, Epi e)
{
    __m256 acc[6][2];
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)
            acc[r][v] = load_c ? load8(c + r * ldc + 8 * v, masked && v == nv - 1, mask)
                               : _mm256_setzero_ps();
    const float *ar[6];
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        ar[r] = a + (size_t)r * rsa;
    /* The rows this tile will store (and the GELU epilogues' aux rows) are usually
     * not in cache, 6 rows a stride apart: asked for now, they arrive while the k
     * loop runs. Prefetches change no value. */
    if (!load_c)
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
            _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + r * ldc + 8 * nv - 1), _MM_HINT_T0);
            if (epi == EPI_GELU || epi == EPI_SCALE) {
                _mm_prefetch((const char *)(e.aux + r * ldc), _MM_HINT_T0);
                _mm_prefetch((const char *)(e.aux + r * ldc + 8 * nv - 1), _MM_HINT_T0);
            }
        }
    for (int k = 0; k < K; k++) {
        __m256 b0, b1;
        if (packed) {
            b0 = _mm256_load_ps(b + 16 * k);
            b1 = nv == 2 ? _mm256_load_ps(b + 16 * k + 8) : b0;
        } else {
            b0 = load8(b + ldp * k, masked && nv == 1, mask);
            b1 = nv == 2 ? load8(b + ldp * k + 8, masked, mask) : b0;
        }
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {
            __m256 av = _mm256_broadcast_ss(ar[r] + (size_t)k * csa);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            if (nv == 2)
                acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    __m256 bv[2];
    int has_bias = (epi == EPI_BIAS || epi == EPI_GELU) && e.bias;
    if (has_bias)
        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)
            bv[v] = load8(e.bias + 8 * v, masked && v == nv - 1, mask);
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++) {
            int mk = masked && v == nv - 1;
            size_t at = (size_t)r * ldc + 8 * (size_t)v;
            __m256 o = has_bias ? _mm256_add_ps(acc[r][v], bv[v]) : acc[r][v];
            if (epi == EPI_SCALE)
                o = _mm256_mul_ps(o, load8(e.aux + at, mk, mask));
            if (epi == EPI_GELU) {
                v8f x = (v8f)o, s = v8_gelu_gate(x);
                store8(e.aux + at, (__m256)v8_gelu_grad_gated(x, s), mk, mask);
                o = (__m256)(x * s);
            }
            store8(c + at, o, mk, mask);
        }
}

/* tile_bcast_b for a panel of nc (1..16) live columns: the instantiation that fits
 * (mask: the live lanes of the last vector, mask_first). */
ALWAYS_INLINE void tile_nc(int R, int nc, __m256i mask, int K, const float *a, size_t rsa,
                           size_t csa, int packed, const float *b, size_t ldp, float *c,
                           size_t ldc, int load_c, int epi, Epi e)
{
    if (nc == 16)
        tile_bcast_b(R, 2, 0, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
    else if (nc > 8)
        tile_bcast_b(R, 2, 1, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
    else if (nc == 8)
        tile_bcast_b(R, 1, 0, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
    else
        tile_bcast_b(R, 1, 1, mask, K, a, rsa, csa, packed, b, ldp, c, ldc, load_c, epi, e);
}

static inline __m256i panel_mask(int nc)
{
    return mask_first(nc > 8 ? nc - 8 : nc);
}

/* Copies B[0..kc-1][0..nc-1] (row stride ldb) into a kc x 16 panel, zero-padded. */
static inline void pack_panel(float *bp, const float *b, size_t ldb, int kc, int nc)
{
    if (nc == 16) {
        for (int k = 0; k < kc; k++, b += ldb, bp += 16) {
            _mm256_store_ps(bp, _mm256_loadu_ps(b));
            _mm256_store_ps(bp + 8, _mm256_loadu_ps(b + 8));
        }
    } else if (nc > 8) {
        __m256i m = mask_first(nc - 8);
        for (int k = 0; k < kc; k++, b += ldb, bp += 16) {
            _mm256_store_ps(bp, _mm256_loadu_ps(b));
            _mm256_store_ps(bp + 8, _mm256_maskload_ps(b + 8, m));
        }
    } else {
        __m256i m = mask_first(nc);
        for (int k = 0; k < kc; k++, b += ldb, bp += 16) {
            _mm256_store_ps(bp, _mm256_maskload_ps(b, m));
            _mm256_store_ps(bp + 8, _mm256_setzero_ps());
        }
    }
}

/* The transposing twin of pack_panel for nt: B is [N][K], so panel row k gathers
 * B[0..nc-1][k] (b -> B[j0][k0]); eight k at a time through 8 x 8 transposes. */
static inline void pack_panel_t(float *bp, const float *b, size_t ldb, int kc, int nc)
{
    int k = 0;
    for (; k + 8 <= kc; k += 8)
        for (int g = 0; g < 16; g += 8) {
            __m256 r[8];
            for (int q = 0; q < 8; q++)
                r[q] = g + q < nc ? _mm256_loadu_ps(b + (size_t)(g + q) * ldb + k)
                                  : _mm256_setzero_ps();
            transpose8(r);
            for (int t = 0; t < 8; t++)
                _mm256_store_ps(bp + 16 * (k + t) + g, r[t]);
        }
    for (; k < kc; k++)
        for (int j = 0; j < 16; j++)
            bp[16 * k + j] = j < nc ? b[(size_t)j * ldb + k] : 0.0f;
}

#endif /* MATMUL_AVX512 */

/* One tile of R = 0..6 rows (R known only at run time) against a packed panel
 * (PANEL columns): each row count has its own instantiation, so row counts and offsets are
 * constants in the loop (a 1-row product, as in sampling, does not pay for 6 rows). */
ALWAYS_INLINE void tile_rows(int R, int nc, PanelMask mask, int K, const float *a, size_t rsa,
                             size_t csa, const float *bp, float *c, size_t ldc, int load_c,
                             int epi, Epi e)
{
    switch (R) {
    case 6:
        tile_nc(6, nc, mask, K, a, rsa, csa, 1, bp, PANEL, c, ldc, load_c, epi, e);
        break;
    case 5:
        tile_nc(5, nc, mask, K, a, rsa, csa, 1, bp, PANEL, c, ldc, load_c, epi, e);
        break;
    case 4:
        tile_nc(4, nc, mask, K, a, rsa, csa, 1, bp, PANEL, c, ldc, load_c, epi, e);
        break;
    case 3:
        tile_nc(3, nc, mask, K, a, rsa, csa, 1, bp, PANEL, c, ldc, load_c, epi, e);
        break;
    case 2:
        tile_nc(2, nc, mask, K, a, rsa, csa, 1, bp, PANEL, c, ldc, load_c, epi, e);
        break;
    case 1:
        tile_nc(1, nc, mask, K, a, rsa, csa, 1, bp, PANEL, c, ldc, load_c, epi, e);
        break;
    default:
        break;
    }
}

#endif /* MATMUL_AVX2 */

#endif
