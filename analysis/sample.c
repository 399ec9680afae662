/* sample: the cached decoder, its sliding window, and logits -> token (see
 * sample.h). The cached step reuses the layer kernels with one row, and the
 * matmul determinism contract (matmul.h) makes a one-row product give the same
 * bits as the same row of a T-row product; so the cached logits match the full
 * forward's, bit for bit in practice. */
#include "analysis/sample.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/attention.h"
#include "model/gates.h"
#include "util/errbuf.h"
#include "model/layers.h"
#include "model/route.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"

/* The weights of the cached step's products, in Sampler.wt: per layer 0 qkv, 1 proj,
 * 2 fc, 3 fcproj, then 4 the logits' wte (once, after the last layer). Part `which`
 * maps IC inputs to OC outputs and takes part_size floats: W^T ([IC][OC], read by
 * matmul_forward_t) in fp32, the packed bf16 panels of bf16_pack_weights in bf16. */
static void part_dims(const Model *m, int which, int *IC, int *OC)
{
    int C = m->cfg.C, A = m->cfg.H * m->cfg.D;
    const int dims[5][2] = { { C, 3 * A }, { A, C }, { C, 4 * C }, { 4 * C, C }, { C, m->cfg.V } };
    *IC = dims[which][0];
    *OC = dims[which][1];
}

static size_t part_size(const Model *m, int which)
{
    int IC, OC;
    part_dims(m, which, &IC, &OC);
    return m->precision == PRECISION_BF16 ? bf16_packed_size(OC, IC) : (size_t)IC * OC;
}

static size_t wt_layer_size(const Model *m)
{
    return part_size(m, 0) + part_size(m, 1) + part_size(m, 2) + part_size(m, 3);
}

/* dst[cols][rows] = src[rows][cols]^T; returns the end of dst. */
static float *transpose_into(float *dst, const float *src, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[c * rows + r] = src[r * cols + c];
    return dst + rows * cols;
}

/* Part `which` of the cached step's weights from W[OC][IC] into p; returns its end. */
static float *store_part(const Model *m, float *p, int which, const float *W)
{
    int IC, OC;
    part_dims(m, which, &IC, &OC);
    if (m->precision == PRECISION_BF16)
        bf16_pack_weights((uint32_t *)p, W, OC, IC);
    else
        transpose_into(p, W, (size_t)OC, (size_t)IC);
    return p + part_size(m, which);
}

int sampler_init(Sampler *s, const Model *m, const unsigned char *head_on, int use_cache,
                 char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    const Config *c = &m->cfg;
    s->m = m;
    s->head_on = head_on;
    s->use_cache = use_cache;
    s->T = c->T;
    s->A = c->H * c->D;
    if (acts_init(&s->acts, c, 1, c->T, 0, err, errlen))
        return -1;
    s->window = malloc((size_t)c->T * sizeof(int));
    if (!s->window) {
        sampler_free(s);
        return err_set(err, errlen, "sampler: out of memory for a %d-token window", c->T);
    }
    size_t C = c->C, A = s->A, T = c->T, L = c->L, H = c->H, V = c->V;
    struct { float **p; size_t n; } parts[] = {
        {&s->kv, use_cache ? L * T * 2 * A : 0},
        {&s->wt, use_cache ? L * wt_layer_size(m) + part_size(m, 4) : 0},
        {&s->x, C}, {&s->ln, C}, {&s->branch, C}, {&s->qkv, 3 * A}, {&s->atty, A},
        {&s->scores, H * T}, {&s->fch, 4 * C}, {&s->fch_gelu, 4 * C}, {&s->logits, V},
        {&s->route_prob, c->route_k ? H : 0}, {&s->route_on, c->route_k ? H : 0},
        {&s->route_weight, c->route_k ? H : 0},
    };
    size_t nparts = sizeof parts / sizeof parts[0], total = 0;
    for (size_t i = 0; i < nparts; i++)
        total += parts[i].n;
    s->buf = calloc(total, sizeof(float));
    if (!s->buf) {
        sampler_free(s);
        return err_set(err, errlen, "sampler: out of memory allocating %zu floats", total);
    }
    size_t off = 0;
    for (size_t i = 0; i < nparts; i++) {
        *parts[i].p = parts[i].n ? s->buf + off : NULL;
        off += parts[i].n;
    }
    if (use_cache) {
        float *p = s->wt;
        for (int l = 0; l < c->L; l++) {
            const LayerWeights *lw = &m->w.layer[l];
            const float *W[4] = { lw->qkvw, lw->projw, lw->fcw, lw->fcprojw };
            for (int which = 0; which < 4; which++)
                p = store_part(m, p, which, W[which]);
        }
        store_part(m, p, 4, m->w.wte);
    }
    return 0;
}

/* out[OC] = in[IC] . W^T + bias for part `which` of layer l (part_dims; the logits:
 * l = L, which = 4), the same bits as row n of the model's forward: fp32 through
 * W^T, bf16 through the packed panels. */
static void row_forward(const Sampler *s, float *out, const float *in, int l, int which,
                        const float *bias)
{
    const Model *m = s->m;
    const float *p = s->wt + (size_t)l * wt_layer_size(m);
    for (int k = 0; k < which && which < 4; k++)
        p += part_size(m, k);
    int IC, OC;
    part_dims(m, which, &IC, &OC);
    if (m->precision == PRECISION_BF16)
        bf16_forward_packed(out, NULL, in, (const uint32_t *)p, bias, 1, IC, OC, m->bf16_path);
    else
        matmul_forward_t(out, in, p, bias, 1, IC, OC);
}

void sampler_free(Sampler *s)
{
    acts_free(&s->acts);
    free(s->window);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

/* One full forward over the window; copies the last row's logits out and,
 * with the cache, every position's keys and values into it. */
static const float *forward_window(Sampler *s)
{
    const Config *c = &s->m->cfg;
    PassOptions po = {.head_on = s->head_on};
    gpt_forward(s->m, &s->acts, s->window, NULL, 1, s->n, &po);
    memcpy(s->logits, s->acts.logits + (size_t)(s->n - 1) * c->V, (size_t)c->V * sizeof(float));
    if (s->use_cache) {
        size_t A = (size_t)s->A;
        for (int l = 0; l < c->L; l++) {
            const float *qkv_l = s->acts.qkv + (size_t)l * s->acts.N * 3 * A;
            float *kv_l = s->kv + (size_t)l * s->T * 2 * A;
            for (int t = 0; t < s->n; t++)
                memcpy(kv_l + (size_t)t * 2 * A, qkv_l + (size_t)t * 3 * A + A,
                       2 * A * sizeof(float));
        }
    }
    return s->logits;
}

const float *sampler_start(Sampler *s, const int *ids, int n)
{
    assert(n >= 1);
    int keep = n < s->T ? n : s->T;
    memcpy(s->window, ids + (n - keep), (size_t)keep * sizeof(int));
    s->n = keep;
    s->slides = 0;
    return forward_window(s);
}

/* Attention of the query in s->qkv over positions 0..t of layer l's cache
 * (position t already stored), into s->atty; in a routed model times the head's
 * route weight (0 for a head the router did not choose: s->route_on, route_weight),
 * then in a model with gates times the head's evaluation gate, the products in
 * gpt_forward's order; silenced heads output zeros.
 * Heads are independent, one thread each; below ~64k multiply-adds a parallel
 * region costs more than it saves, so small ones run on the calling thread. */
static void attend_cached(Sampler *s, int l, int t)
{
    const Config *c = &s->m->cfg;
    int H = c->H, D = c->D, A = s->A, n = t + 1;
    const float *kv_l = s->kv + (size_t)l * s->T * 2 * A;
    float scale = 1.0f / sqrtf((float)D);
    #pragma omp parallel for schedule(static) if ((long)H * n * D >= 65536)
    for (int h = 0; h < H; h++) {
        float *y = s->atty + (size_t)h * D;
        if (s->head_on && !s->head_on[l * H + h]) {
            memset(y, 0, (size_t)D * sizeof(float));
            continue;
        }
        float *sc = s->scores + (size_t)h * s->T;
        const float *k = kv_l + (size_t)h * D, *v = k + A;
        matmul_nt(1, n, D, s->qkv + (size_t)h * D, 3 * A, k, 2 * A, sc, s->T, 0);
        attention_softmax_row(sc, n, scale);
        matmul_nn(1, D, n, sc, s->T, v, 2 * A, y, A, 0);
        if (c->route_k) {
            float g = s->route_weight[h];
            for (int d = 0; d < D; d++)
                y[d] = s->route_on[h] != 0.0f ? g * y[d] : 0.0f;
        }
        if (s->m->w.log_alpha) {
            float z = gate_eval(s->m->w.log_alpha[l * H + h], NULL);
            for (int d = 0; d < D; d++)
                y[d] = z * y[d];
        }
    }
}

/* The forward of gpt_forward for the one token at position t = s->n - 1, every
 * earlier position being in the cache. Layer calls in the same order, N = 1. */
static const float *step_cached(Sampler *s, int token)
{
    const Config *c = &s->m->cfg;
    const Weights *w = &s->m->w;
    int C = c->C, A = s->A, t = s->n - 1;
    float mean, rstd;
    encoder_forward(s->x, &token, w->wte, w->wpe + (size_t)t * C, 1, 1, C);
    for (int l = 0; l < c->L; l++) {
        const LayerWeights *lw = &w->layer[l];
        layernorm_forward(s->ln, &mean, &rstd, s->x, lw->ln1w, lw->ln1b, 1, C);
        row_forward(s, s->qkv, s->ln, l, 0, lw->qkvb);
        memcpy(s->kv + ((size_t)l * s->T + t) * 2 * A, s->qkv + A, 2 * (size_t)A * sizeof(float));
        if (c->route_k) /* this token's heads and weights, from ln1's output */
            route_scores_forward(s->route_prob, s->route_on, s->route_weight, s->ln,
                                 w->router_w + (size_t)l * c->H * C, w->router_b + (size_t)l * c->H,
                                 1, C, c->H, c->route_k);
        attend_cached(s, l, t);
        row_forward(s, s->branch, s->atty, l, 1, lw->projb);
        residual_forward(s->x, s->x, s->branch, (size_t)C);

        layernorm_forward(s->ln, &mean, &rstd, s->x, lw->ln2w, lw->ln2b, 1, C);
        row_forward(s, s->fch, s->ln, l, 2, lw->fcb);
        gelu_forward(s->fch_gelu, s->fch, 4 * (size_t)C);
        row_forward(s, s->branch, s->fch_gelu, l, 3, lw->fcprojb);
        residual_forward(s->x, s->x, s->branch, (size_t)C);
    }
    layernorm_forward(s->ln, &mean, &rstd, s->x, w->lnfw, w->lnfb, 1, C);
    row_forward(s, s->logits, s->ln, c->L, 4, NULL);
    return s->logits;
}

const float *sampler_step(Sampler *s, int token)
{
    assert(s->n >= 1 && token >= 0 && token < s->m->cfg.V);
    if (s->n == s->T) {
        /* Slide: keep the newest SAMPLER_KEEP(T) - 1 tokens, then the new one,
         * re-encoded at positions 0.. by a full forward. */
        int keep = SAMPLER_KEEP(s->T);
        memmove(s->window, s->window + (s->T - keep + 1), (size_t)(keep - 1) * sizeof(int));
        s->window[keep - 1] = token;
        s->n = keep;
        s->slides++;
        return forward_window(s);
    }
    s->window[s->n++] = token;
    return s->use_cache ? step_cached(s, token) : forward_window(s);
}

void sample_softmax(float *probs, const float *logits, int V, double temperature)
{
    /* (z - max) / temperature: the division is in double, so a tiny temperature
     * gives 0 for the maximum and -inf (exp clamps it) for the rest, never a NaN;
     * at temperature 1 these are the bits crossentropy_forward feeds its exp, and
     * softmax_row is its softmax. */
    float mx = logits[0];
    for (int v = 1; v < V; v++)
        mx = logits[v] > mx ? logits[v] : mx;
    for (int v = 0; v < V; v++)
        probs[v] = (float)((double)(logits[v] - mx) / temperature);
    softmax_row(probs, probs, 0.0f, V);
}

int sample_argmax(const float *logits, int V)
{
    int best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best])
            best = v;
    return best;
}

/* Probability order: higher first, ties to the lower id (a strict order, so
 * the ranking is unique whatever the sort). */
typedef struct {
    float p;
    int id;
} Ranked;

static int by_probability(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int sample_filter(float *probs, int V, int top_k, double top_p)
{
    int k = top_k > 0 && top_k < V ? top_k : V;
    if (k == V && top_p >= 1.0)
        return V;
    /* On the stack: 8 bytes a token, 256 KiB at the largest vocabulary. */
    Ranked ranked[V];
    for (int v = 0; v < V; v++)
        ranked[v] = (Ranked){probs[v], v};
    qsort(ranked, (size_t)V, sizeof *ranked, by_probability);
    int kept = k;
    if (top_p < 1.0) {
        double mass = 0.0, cum = 0.0;
        for (int i = 0; i < k; i++)
            mass += ranked[i].p;
        for (kept = 0; kept < k;) {
            cum += ranked[kept++].p;
            if (cum >= top_p * mass)
                break;
        }
    }
    for (int i = kept; i < V; i++)
        probs[ranked[i].id] = 0.0f;
    return kept;
}

int sample_draw(const float *probs, int V, double u)
{
    double total = 0.0;
    for (int v = 0; v < V; v++)
        total += probs[v];
    double target = u * total, cum = 0.0;
    int last = 0;
    for (int v = 0; v < V; v++) {
        if (probs[v] <= 0.0f)
            continue;
        cum += probs[v];
        last = v;
        if (cum > target)
            return v;
    }
    return last; /* only when rounding left u * total at the very top */
}

int sample_next(const float *logits, int V, const SampleSettings *st, float *scratch, Rng *rng)
{
    if (st->temperature <= 0.0)
        return sample_argmax(logits, V);
    sample_softmax(scratch, logits, V, st->temperature);
    sample_filter(scratch, V, st->top_k, st->top_p);
    return sample_draw(scratch, V, rng_uniform_double(rng));
}
