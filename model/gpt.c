/* gpt: model and activation lifetimes, and the whole-model forward and backward
 * as flat lists of layer calls (see gpt.h for the architecture). */
#include "model/gpt.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "model/attention.h"
#include "model/gates.h"
#include "model/route.h"
#include "util/bigbuf.h"
#include "util/errbuf.h"
#include "model/layers.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "util/rng.h"

int model_init(Model *m, const Config *cfg, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (config_validate(cfg, err, errlen))
        return -1;
    m->cfg = *cfg;
    params_table_init(&m->table, cfg);
    m->params = bigbuf_alloc(m->table.total);
    if (!m->params)
        return err_set(err, errlen, "out of memory allocating %zu parameters", m->table.total);
    params_view(&m->table, m->params, &m->w);
    return 0;
}

void model_free(Model *m)
{
    bigbuf_free(m->params);
    m->params = NULL;
}

int grads_init(Grads *g, const Model *m, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    g->data = bigbuf_alloc(m->table.total);
    if (!g->data)
        return err_set(err, errlen, "out of memory allocating %zu gradients", m->table.total);
    g->n = m->table.total;
    params_view(&m->table, g->data, &g->w);
    return 0;
}

void grads_zero(Grads *g)
{
    memset(g->data, 0, g->n * sizeof(float));
}

void grads_free(Grads *g)
{
    bigbuf_free(g->data);
    memset(g, 0, sizeof *g);
}

/* The activation buffer's parts for (cfg, B, T): pointers into a and sizes in
 * floats; returns the count. acts_init and acts_floats share it (and part_span), so
 * the memory estimate is the allocation. */
typedef struct {
    float **p;
    size_t n;
} ActsPart;

#define ACTS_MAX_PARTS 39 /* the entries of acts_parts' list */

static size_t acts_parts(ActsPart parts[ACTS_MAX_PARTS], Activations *a, const Config *cfg, int B, int T,
                         int with_dropout)
{
    size_t N = (size_t)B * T, C = cfg->C, A = (size_t)cfg->H * cfg->D, V = cfg->V;
    size_t L = cfg->L, H = cfg->H, TT = (size_t)B * H * T * T, G = cfg->gates ? 1 : 0;
    size_t R = cfg->route_k ? 1 : 0;
    ActsPart list[] = {
        {&a->encoded, N * C},
        {&a->ln1, L * N * C}, {&a->ln1_mean, L * N}, {&a->ln1_rstd, L * N},
        {&a->qkv, L * N * 3 * A}, {&a->atty, L * N * A},
        {&a->att, L * TT}, {&a->attd, with_dropout ? L * TT : 0},
        {&a->attproj, L * N * C}, {&a->res2, L * N * C},
        {&a->ln2, L * N * C}, {&a->ln2_mean, L * N}, {&a->ln2_rstd, L * N},
        {&a->fch_dgelu, L * N * 4 * C}, {&a->fch_gelu, L * N * 4 * C},
        {&a->fcproj, L * N * C}, {&a->res3, L * N * C},
        {&a->lnf, N * C}, {&a->lnf_mean, N}, {&a->lnf_rstd, N},
        {&a->logits, N * V}, {&a->probs, N * V}, {&a->losses, N},
        {&a->dres, N * C}, {&a->dbranch, N * C}, {&a->dln, N * 4 * C},
        {&a->dqkv, N * 3 * A}, {&a->datty, N * A}, {&a->datt, TT},
        {&a->dfch, N * 4 * C}, {&a->dlogits, N * V},
        {&a->atty_open, G * L * N * A}, {&a->gate, G * L * B * H}, {&a->dgate, G * L * B * H},
        {&a->atty_heads, R * L * N * A}, {&a->route_prob, R * L * N * H},
        {&a->route_on, R * L * N * H}, {&a->route_weight, R * L * N * H},
        {&a->droute, R * N * H},
    };
    size_t n = sizeof list / sizeof list[0];
    assert(n <= ACTS_MAX_PARTS);
    for (size_t i = 0; i < n; i++)
        parts[i] = list[i];
    return n;
}

/* The floats a part of n takes in the buffer: whole 64-byte lines, so that every part
 * starts on a line boundary (bigbuf's blocks do), as the matmul epilogue's streaming
 * stores require. */
static size_t part_span(size_t n)
{
    return (n + 15) / 16 * 16;
}

size_t acts_floats(const Config *cfg, int B, int T, int with_dropout)
{
    Activations scratch;
    ActsPart parts[ACTS_MAX_PARTS];
    size_t n = acts_parts(parts, &scratch, cfg, B, T, with_dropout), total = 0;
    for (size_t i = 0; i < n; i++)
        total += part_span(parts[i].n);
    return total;
}

int acts_init(Activations *a, const Config *cfg, int B, int T, int with_dropout,
              char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (B < 1 || T < 1 || T > cfg->T)
        return err_set(err, errlen, "activations: batch %d x %d does not fit block size %d",
                       B, T, cfg->T);
    a->B = B;
    a->T = T;
    a->dropout = with_dropout;
    size_t N = (size_t)B * T;
    a->N = N; a->C = cfg->C; a->A = (size_t)cfg->H * cfg->D; a->V = cfg->V;
    a->L = cfg->L; a->H = cfg->H;
    ActsPart parts[ACTS_MAX_PARTS];
    size_t nparts = acts_parts(parts, a, cfg, B, T, with_dropout), total = 0;
    for (size_t i = 0; i < nparts; i++)
        total += part_span(parts[i].n);
    a->buf = bigbuf_alloc(total);
    if (!a->buf)
        return err_set(err, errlen, "out of memory allocating %zu activation floats", total);
    size_t off = 0;
    for (size_t i = 0; i < nparts; i++) {
        *parts[i].p = parts[i].n ? a->buf + off : NULL;
        off += part_span(parts[i].n);
    }
    return 0;
}

int acts_bf16_init(Activations *a, Bf16CopyKind kind)
{
    acts_bf16_free(a);
    /* dlogits' rows, a LayerNorm's, attention's output (A) or dqkv's (3A) */
    int K = a->V > a->C ? (int)a->V : (int)a->C;
    K = 3 * (int)a->A > K ? 3 * (int)a->A : K;
    int rc = bf16_rows_init(&a->rows_bf16, (int)a->N, K, kind);
    /* the columns too, for the dW of proj and fcproj (the residual gradient, N x C), the
     * logits (dlogits, N x V) and qkv (dqkv, N x 3A); without them those products round
     * their dout's columns themselves */
    if (rc == 0 && bf16_rows_init_cols(&a->rows_bf16, (int)a->N, K))
        rc = -1;
    /* the emulation's products would round their output in a pass of their own, which
     * saves nothing over the next product's (kernels/bf16_emul.c): no copy for them */
    if (kind == BF16_COPY_PANELS && bf16_rows_init(&a->mlp_bf16, (int)a->N, 4 * (int)a->C, kind))
        rc = -1;
    /* and dfch's columns, for fc's dW */
    if (a->mlp_bf16.rows && bf16_rows_init_cols(&a->mlp_bf16, (int)a->N, 4 * (int)a->C))
        rc = -1;
    /* the columns of the dW products' inputs that the forward's producers round (ln1,
     * atty, ln2 of every layer, lnf), each kept from the forward to its dW product; one
     * without memory is left empty, and its product rounds them itself */
    size_t ncols = 3 * a->L + 1;
    a->in_cols = calloc(ncols, sizeof *a->in_cols);
    if (!a->in_cols)
        return -1;
    for (size_t i = 0; i < ncols; i++)
        if (bf16_rows_init_in_cols(&a->in_cols[i], (int)a->N,
                                   (int)(i % 3 == 1 ? a->A : a->C), kind))
            rc = -1;
    /* with the pairs, fch_gelu's columns for fcproj's dW, which fc's product rounds as
     * its bands finish (the emulation's would be a pass of its own: none) */
    if (kind != BF16_COPY_PANELS)
        return rc;
    a->gelu_cols = calloc(a->L, sizeof *a->gelu_cols);
    if (!a->gelu_cols)
        return -1;
    for (size_t l = 0; l < a->L; l++)
        if (bf16_rows_init_in_cols(&a->gelu_cols[l], (int)a->N, 4 * (int)a->C, kind))
            rc = -1;
    return rc;
}

void acts_bf16_free(Activations *a)
{
    bf16_rows_free(&a->rows_bf16);
    bf16_rows_free(&a->mlp_bf16);
    if (a->in_cols)
        for (size_t i = 0; i < 3 * a->L + 1; i++)
            bf16_rows_free(&a->in_cols[i]);
    free(a->in_cols);
    a->in_cols = NULL;
    if (a->gelu_cols)
        for (size_t l = 0; l < a->L; l++)
            bf16_rows_free(&a->gelu_cols[l]);
    free(a->gelu_cols);
    a->gelu_cols = NULL;
}

void acts_free(Activations *a)
{
    acts_bf16_free(a);
    bigbuf_free(a->buf);
    memset(a, 0, sizeof *a);
}

/* The dropout sites of a layer: each draws its masks from its own key, so adding a
 * site leaves the others' masks as they were. */
enum { SITE_ATT = 0, SITE_ATTN_RESID = 1, SITE_MLP_RESID = 2, SITE_HEAD = 3, SITE_GATE = 4 };

static uint64_t site_key(const PassOptions *opt, int l, int site)
{
    return rng_hash(opt->dropout_key, (uint64_t)l, (uint64_t)site);
}

/* Zeroes the slices [hD, (h+1)D) of x[N][A] for every silenced head of layer l,
 * or, in the forward (forward = 1) with opt->head_mean given, sets them to the
 * head's mean output; the backward always zeroes (the mean is a constant). */
static void silence_heads(float *x, const PassOptions *opt, int l, size_t N, int H, int D,
                          int forward)
{
    if (!opt || !opt->head_on)
        return;
    for (int h = 0; h < H; h++) {
        if (opt->head_on[l * H + h])
            continue;
        const float *mean = forward && opt->head_mean ? opt->head_mean + (size_t)(l * H + h) * D
                                                      : NULL;
        for (size_t n = 0; n < N; n++) {
            float *y = x + n * H * D + (size_t)h * D;
            if (mean)
                memcpy(y, mean, (size_t)D * sizeof(float));
            else
                memset(y, 0, (size_t)D * sizeof(float));
        }
    }
}

/* grad[h] += sum_n sum_d dy[n][hD+d] * y[n][hD+d]: the derivative of the loss
 * with respect to a scalar gate on head h's output, evaluated at gate 1. */
static void gate_gradient(double *grad, const float *dy, const float *y, size_t N, int H, int D)
{
    #pragma omp parallel for schedule(static)
    for (int h = 0; h < H; h++) {
        double s = 0.0;
        for (size_t n = 0; n < N; n++) {
            const float *a = dy + n * H * D + (size_t)h * D, *b = y + n * H * D + (size_t)h * D;
            for (int d = 0; d < D; d++)
                s += (double)a[d] * b[d];
        }
        grad[h] += s;
    }
}

/* A linear layer's forward in the model's precision: out = in . W^T + b, or with
 * dgelu the MLP's first layer (out = gelu, dgelu = gelu'). rin: in's rows rounded to
 * bf16 by in's producer, or NULL (bf16: the product rounds them). rout (bf16): out's
 * rows rounded by this product for the one that reads out next, or NULL; rcols (bf16):
 * out's columns for the dW product that reads out as its in, or NULL. */
static void linear_forward_rounding(const Model *m, float *out, float *dgelu, Bf16Rows *rout,
                                    Bf16Rows *rcols, const float *in, const Bf16Rows *rin,
                                    const float *W, const float *b, int N, int IC, int OC)
{
    if (m->precision == PRECISION_BF16)
        bf16_forward_rounding_cols(out, dgelu, rout, rcols, in, rin, W,
                                   bf16_weight_find(m->bf16_copies, W, OC, IC), b, N, IC,
                                   OC, m->bf16_path);
    else if (dgelu)
        matmul_forward_gelu(out, dgelu, in, W, b, N, IC, OC);
    else
        matmul_forward(out, in, W, b, N, IC, OC);
}

static void linear_forward(const Model *m, float *out, float *dgelu, const float *in,
                           const Bf16Rows *rin, const float *W, const float *b, int N, int IC,
                           int OC)
{
    linear_forward_rounding(m, out, dgelu, NULL, NULL, in, rin, W, b, N, IC, OC);
}

/* The gradients of linear_forward in the model's precision (matmul.h's
 * matmul_backward, or with dgelu matmul_backward_gelu; kernels/bf16.h's bf16_backward
 * runs the same products with bf16 inputs). rdout: dout's rows rounded by dout's
 * producer, or NULL; rin: in's columns rounded by in's producer in the forward, or
 * NULL; rdin (bf16): din's rows rounded by this product for the one that reads din
 * next, or NULL. */
static void linear_backward_rounding(const Model *m, float *din, Bf16Rows *rdin, float *dW,
                                     float *db, const float *dout, const Bf16Rows *rdout,
                                     const float *in, const Bf16Rows *rin, const float *W,
                                     const float *dgelu, int N, int IC, int OC)
{
    if (m->precision == PRECISION_BF16)
        bf16_backward_rounding(din, rdin, dW, db, dout, rdout, in, rin, W,
                               bf16_weight_find(m->bf16_copies, W, OC, IC), dgelu, N, IC, OC,
                               m->bf16_path);
    else if (dgelu)
        matmul_backward_gelu(din, dW, db, dout, in, W, dgelu, N, IC, OC);
    else
        matmul_backward(din, dW, db, dout, in, W, N, IC, OC);
}

static void linear_backward(const Model *m, float *din, float *dW, float *db, const float *dout,
                            const Bf16Rows *rdout, const float *in, const Bf16Rows *rin,
                            const float *W, const float *dgelu, int N, int IC, int OC)
{
    linear_backward_rounding(m, din, NULL, dW, db, dout, rdout, in, rin, W, dgelu, N, IC, OC);
}

double gpt_forward(const Model *m, Activations *a, const int *tokens, const int *targets,
                   int B, int T, const PassOptions *opt)
{
    static const PassOptions none = {0};
    if (!opt)
        opt = &none;
    const Config *c = &m->cfg;
    const Weights *w = &m->w;
    int C = c->C, H = c->H, D = c->D, A = H * D, V = c->V;
    int N = B * T;
    size_t NC = a->N * a->C, TT = (size_t)a->B * a->H * a->T * a->T;
    float p = opt->dropout;
    double balance = 0.0;
    /* bf16: each LayerNorm rounds its output for the product that reads it next */
    Bf16Rows *rounded = m->precision == PRECISION_BF16 && a->rows_bf16.rows ? &a->rows_bf16 : NULL;
    /* and fc's product rounds the GELU's output for fcproj */
    Bf16Rows *hidden = m->precision == PRECISION_BF16 && a->mlp_bf16.rows ? &a->mlp_bf16 : NULL;
    /* and, where a backward follows, each LayerNorm its output's columns for the dW
     * product reading it, attention too where it writes atty's rows (Activations.in_cols,
     * 3l: ln1, 3l + 1: atty, 3l + 2: ln2, 3L: lnf); else none, and what an earlier
     * forward left there is dropped: this one overwrites the outputs they were of */
    Bf16Rows *incols = NULL;
    if (a->in_cols && m->precision == PRECISION_BF16 && opt->backward_next)
        incols = a->in_cols;
    else if (a->in_cols)
        for (size_t i = 0; i < 3 * a->L + 1; i++)
            bf16_rows_drop(&a->in_cols[i]);
    /* and, with the pairs, fc's product the GELU's output's columns for fcproj's dW
     * (Activations.gelu_cols), on the same terms */
    Bf16Rows *gelucols = NULL;
    if (a->gelu_cols && m->precision == PRECISION_BF16 && opt->backward_next)
        gelucols = a->gelu_cols;
    else if (a->gelu_cols)
        for (size_t l = 0; l < a->L; l++)
            bf16_rows_drop(&a->gelu_cols[l]);

    encoder_forward(a->encoded, tokens, w->wte, w->wpe, B, T, C);
    const float *res = a->encoded;
    for (int l = 0; l < c->L; l++) {
        const LayerWeights *lw = &w->layer[l];
        float *ln1 = a->ln1 + l * NC, *qkv = a->qkv + l * a->N * 3 * a->A;
        float *atty = a->atty + l * a->N * a->A, *att = a->att + l * TT;
        float *attd = a->attd ? a->attd + l * TT : NULL;
        /* with gates the gate reads atty_open and writes atty; with routing the heads
         * write atty_heads and the route weights copy it into the gate's input */
        float *open = c->gates ? a->atty_open + l * a->N * a->A : atty;
        float *heads = c->route_k ? a->atty_heads + l * a->N * a->A : open;
        size_t rt = (size_t)l * a->N * a->H; /* this layer's routing, (N, H) */
        float *attproj = a->attproj + l * NC, *res2 = a->res2 + l * NC;
        float *ln2 = a->ln2 + l * NC, *fch_dgelu = a->fch_dgelu + l * NC * 4;
        float *fch_gelu = a->fch_gelu + l * NC * 4, *fcproj = a->fcproj + l * NC;
        float *res3 = a->res3 + l * NC;

        layernorm_forward_rounded(ln1, a->ln1_mean + l * a->N, a->ln1_rstd + l * a->N, res,
                                  lw->ln1w, lw->ln1b, N, C, rounded,
                                  incols ? &incols[3 * l] : NULL);
        linear_forward(m, qkv, NULL, ln1, rounded, lw->qkvw, lw->qkvb, N, C, 3 * A);
        /* the router reads ln1 alone: its choice comes first, so that the heads a
         * token did not choose can skip attending at its row */
        if (c->route_k)
            balance += route_scores_forward(a->route_prob + rt, a->route_on + rt,
                                            a->route_weight + rt, ln1,
                                            w->router_w + (size_t)l * H * C,
                                            w->router_b + (size_t)l * H, N, C, H, c->route_k);
        /* attention rounds its output's rows for proj where nothing modifies it after,
         * and then its columns for proj's dW where a backward follows */
        int last = !(c->gates || c->route_k || opt->head_on || opt->head_dropout > 0.0f);
        Bf16Rows *ratty = last ? rounded : NULL;
        Bf16Rows *catty = incols ? &incols[3 * l + 1] : NULL;
        if (catty && !last) {
            bf16_rows_drop(catty);
            catty = NULL;
        }
        if (c->route_k && opt->skip_unrouted)
            attention_forward_routed(heads, att, attd, qkv, a->route_on + rt, B, T, H, D, p,
                                     site_key(opt, l, SITE_ATT));
        else
            attention_forward_rounded(heads, att, attd, qkv, B, T, H, D, p,
                                      site_key(opt, l, SITE_ATT), ratty, catty);
        silence_heads(heads, opt, l, (size_t)N, H, D, 1);
        head_dropout_forward(heads, B, T, H, D, opt->head_dropout,
                             site_key(opt, l, SITE_HEAD));
        if (c->route_k)
            route_forward(open, heads, a->route_on + rt, a->route_weight + rt, N, H, D);
        if (c->gates) {
            size_t at = (size_t)l * a->B * a->H;
            float *gate = a->gate + at;
            gates_draw(gate, a->dgate + at, w->log_alpha + (size_t)l * H, B, H, opt->gate_noise,
                       site_key(opt, l, SITE_GATE));
            gates_forward(atty, open, gate, B, T, H, D);
        }
        linear_forward(m, attproj, NULL, atty, ratty, lw->projw, lw->projb, N, A, C);
        if (p > 0.0f) {
            dropout_forward(res2, attproj, (size_t)N * C, p, site_key(opt, l, SITE_ATTN_RESID));
            residual_forward(res2, res, res2, (size_t)N * C);
        } else {
            residual_forward(res2, res, attproj, (size_t)N * C);
        }

        layernorm_forward_rounded(ln2, a->ln2_mean + l * a->N, a->ln2_rstd + l * a->N, res2,
                                  lw->ln2w, lw->ln2b, N, C, rounded,
                                  incols ? &incols[3 * l + 2] : NULL);
        linear_forward_rounding(m, fch_gelu, fch_dgelu, hidden,
                                gelucols ? &gelucols[l] : NULL, ln2, rounded, lw->fcw,
                                lw->fcb, N, C, 4 * C);
        linear_forward(m, fcproj, NULL, fch_gelu, hidden, lw->fcprojw, lw->fcprojb, N, 4 * C, C);
        if (p > 0.0f) {
            dropout_forward(res3, fcproj, (size_t)N * C, p, site_key(opt, l, SITE_MLP_RESID));
            residual_forward(res3, res2, res3, (size_t)N * C);
        } else {
            residual_forward(res3, res2, fcproj, (size_t)N * C);
        }
        res = res3;
    }
    layernorm_forward_rounded(a->lnf, a->lnf_mean, a->lnf_rstd, res, w->lnfw, w->lnfb, N, C,
                              rounded, incols ? &incols[3 * c->L] : NULL);
    linear_forward(m, a->logits, NULL, a->lnf, rounded, w->wte, NULL, N, C, V);
    a->balance_loss = balance;
    return crossentropy_forward(a->losses, a->probs, a->logits, targets, N, V);
}

/* The reverse of gpt_forward, layer by layer. dres carries d(loss)/d(residual
 * stream): every block adds its branch's input gradient into it. */
void gpt_backward(const Model *m, Grads *grads, Activations *a, const int *tokens,
                  const int *targets, int B, int T, const PassOptions *opt)
{
    static const PassOptions none = {0};
    if (!opt)
        opt = &none;
    const Config *c = &m->cfg;
    const Weights *w = &m->w;
    Weights *g = &grads->w;
    int C = c->C, H = c->H, D = c->D, A = H * D, V = c->V, L = c->L;
    int N = B * T;
    size_t NC = a->N * a->C, TT = (size_t)a->B * a->H * a->T * a->T, nc = (size_t)N * C;
    float p = opt->dropout;

    /* bf16: the cross-entropy backward rounds dlogits' rows and columns for the logits'
     * din and dW, and the residual gradient's producers its rows for proj's and fcproj's
     * din and its columns for their dW: the LayerNorms dres' (read directly without
     * dropout), dropout_backward dbranch's */
    Bf16Rows *rounded = m->precision == PRECISION_BF16 && a->rows_bf16.rows ? &a->rows_bf16 : NULL;
    Bf16Rows *rdres = p > 0.0f ? NULL : rounded;
    /* and fcproj's din product dfch's rows and columns for fc's backward */
    Bf16Rows *hidden = m->precision == PRECISION_BF16 && a->mlp_bf16.rows ? &a->mlp_bf16 : NULL;
    /* and the forward's producers the columns of qkv's, proj's, fc's and the logits'
     * in for their dW (where the forward had backward_next; Activations.in_cols) */
    const Bf16Rows *incols = m->precision == PRECISION_BF16 ? a->in_cols : NULL;
    /* and, with the pairs, fc's product fch_gelu's columns for fcproj's dW */
    const Bf16Rows *gelucols = m->precision == PRECISION_BF16 ? a->gelu_cols : NULL;

    memset(a->dlogits, 0, (size_t)N * V * sizeof(float));
    crossentropy_backward_rounded(a->dlogits, a->probs, targets, N, V, 1.0f / (float)N, rounded);
    linear_backward(m, a->dln, g->wte, NULL, a->dlogits, rounded, a->lnf,
                    incols ? &incols[3 * L] : NULL, w->wte, NULL, N, C, V);
    memset(a->dres, 0, nc * sizeof(float));
    layernorm_backward_rounded(a->dres, g->lnfw, g->lnfb, a->dln, a->res3 + (L - 1) * NC,
                               w->lnfw, a->lnf_mean, a->lnf_rstd, N, C, rdres);

    for (int l = L - 1; l >= 0; l--) {
        const LayerWeights *lw = &w->layer[l];
        LayerWeights *lg = &g->layer[l];
        const float *res = l == 0 ? a->encoded : a->res3 + (l - 1) * NC;
        float *ln1 = a->ln1 + l * NC, *qkv = a->qkv + l * a->N * 3 * a->A;
        float *atty = a->atty + l * a->N * a->A, *att = a->att + l * TT;
        float *attd = a->attd ? a->attd + l * TT : NULL;
        float *res2 = a->res2 + l * NC, *ln2 = a->ln2 + l * NC;
        float *fch_dgelu = a->fch_dgelu + l * NC * 4, *fch_gelu = a->fch_gelu + l * NC * 4;
        float *branch = a->dres;
        size_t rt = (size_t)l * a->N * a->H; /* this layer's routing, (N, H) */

        /* res3 = res2 + dropout(fcproj(gelu(fc(ln2(res2))))) */
        if (p > 0.0f) {
            memset(a->dbranch, 0, nc * sizeof(float));
            dropout_backward_rounded(a->dbranch, a->dres, N, C, p,
                                     site_key(opt, l, SITE_MLP_RESID), rounded);
            branch = a->dbranch;
        }
        linear_backward_rounding(m, a->dfch, hidden, lg->fcprojw, lg->fcprojb, branch, rounded,
                                 fch_gelu, gelucols ? &gelucols[l] : NULL, lw->fcprojw,
                                 fch_dgelu, N, 4 * C, C);
        linear_backward(m, a->dln, lg->fcw, lg->fcb, a->dfch, hidden, ln2,
                        incols ? &incols[3 * l + 2] : NULL, lw->fcw, NULL, N, C, 4 * C);
        layernorm_backward_rounded(a->dres, lg->ln2w, lg->ln2b, a->dln, res2, lw->ln2w,
                                   a->ln2_mean + l * a->N, a->ln2_rstd + l * a->N, N, C, rdres);

        /* res2 = res + dropout(proj(z * g * m * attn(qkv(ln1(res))))), m the
         * head-dropout mask, g the route weight (1 without routing; g from
         * router(ln1(res))) and z the gate (1 without gates); atty holds proj's
         * input, atty_open g * m * attn, atty_heads m * attn; dattn = m * g * z * datty */
        branch = a->dres;
        if (p > 0.0f) {
            memset(a->dbranch, 0, nc * sizeof(float));
            dropout_backward_rounded(a->dbranch, a->dres, N, C, p,
                                     site_key(opt, l, SITE_ATTN_RESID), rounded);
            branch = a->dbranch;
        }
        linear_backward(m, a->datty, lg->projw, lg->projb, branch, rounded, atty,
                        incols ? &incols[3 * l + 1] : NULL, lw->projw, NULL, N, A, C);
        silence_heads(a->datty, opt, l, (size_t)N, H, D, 0);
        if (opt->head_grad)
            gate_gradient(opt->head_grad + (size_t)l * H, a->datty, atty, (size_t)N, H, D);
        if (c->gates)
            gates_backward(a->datty, g->log_alpha + (size_t)l * H, a->atty_open + l * a->N * a->A,
                           a->gate + (size_t)l * a->B * a->H, a->dgate + (size_t)l * a->B * a->H,
                           B, T, H, D);
        if (c->route_k)
            route_backward(a->datty, a->droute, a->atty_heads + l * a->N * a->A,
                           a->route_prob + rt, a->route_on + rt, a->route_weight + rt, N, H, D,
                           c->route_k, opt->route_balance);
        head_dropout_backward(a->datty, B, T, H, D, opt->head_dropout,
                              site_key(opt, l, SITE_HEAD));
        /* attention's backward is dqkv's only writer: it rounds dqkv's rows and columns
         * for qkv's backward */
        if (c->route_k && opt->skip_unrouted)
            attention_backward_routed_rounded(a->dqkv, a->datt, a->datty, qkv, att, attd,
                                              a->route_on + rt, B, T, H, D, p, rounded);
        else
            attention_backward_rounded(a->dqkv, a->datt, a->datty, qkv, att, attd, B, T, H, D,
                                       p, rounded);
        linear_backward(m, a->dln, lg->qkvw, lg->qkvb, a->dqkv, rounded, ln1,
                        incols ? &incols[3 * l] : NULL, lw->qkvw, NULL, N, C, 3 * A);
        if (c->route_k)
            route_scores_backward(a->dln, g->router_w + (size_t)l * H * C,
                                  g->router_b + (size_t)l * H, a->droute, ln1,
                                  w->router_w + (size_t)l * H * C, N, C, H);
        /* layer 0's dres goes to the encoder's backward, which reads no rounding */
        layernorm_backward_rounded(a->dres, lg->ln1w, lg->ln1b, a->dln, res, lw->ln1w,
                                   a->ln1_mean + l * a->N, a->ln1_rstd + l * a->N, N, C,
                                   l > 0 ? rdres : NULL);
    }
    encoder_backward(g->wte, g->wpe, a->dres, tokens, B, T, C);
}

void gpt_fill_unrouted(const Model *m, Activations *a, int B, int T)
{
    const Config *c = &m->cfg;
    if (!c->route_k)
        return;
    size_t TT = (size_t)a->B * a->H * a->T * a->T;
    for (int l = 0; l < c->L; l++)
        attention_fill_unrouted(a->att + l * TT, a->qkv + l * a->N * 3 * a->A,
                                a->route_on + (size_t)l * a->N * a->H, B, T, c->H, c->D);
}
