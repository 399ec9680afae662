/* params: building the parameter table, viewing buffers through it, and init. */
#include "model/params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/gates.h"
#include "util/rng.h"

static ParamSpec *add(ParamTable *t, ParamKind kind, int layer, const char *name, int rows,
                      int cols, InitRule init, int decay)
{
    ParamSpec *s = &t->spec[t->n++];
    s->kind = kind;
    s->layer = layer;
    if (layer >= 0)
        snprintf(s->name, sizeof s->name, "h%d.%s", layer, name);
    else
        snprintf(s->name, sizeof s->name, "%s", name);
    s->rows = rows;
    s->cols = cols;
    s->offset = t->total;
    s->count = (size_t)rows * cols;
    s->init = init;
    s->decay = decay;
    s->lr_scale = 1.0f;
    t->total += s->count;
    return s;
}

void params_table_init(ParamTable *t, const Config *c)
{
    int C = c->C, A = c->H * c->D;
    t->cfg = *c;
    t->n = 0;
    t->total = 0;
    add(t, P_WTE, -1, "wte", c->V, C, INIT_NORMAL, 1);
    add(t, P_WPE, -1, "wpe", c->T, C, INIT_NORMAL, 1);
    for (int l = 0; l < c->L; l++) {
        add(t, P_LN1W, l, "ln1.w", 1, C, INIT_ONE, 0);
        add(t, P_LN1B, l, "ln1.b", 1, C, INIT_ZERO, 0);
        add(t, P_QKVW, l, "qkv.w", 3 * A, C, INIT_NORMAL, 1);
        add(t, P_QKVB, l, "qkv.b", 1, 3 * A, INIT_ZERO, 0);
        add(t, P_PROJW, l, "proj.w", C, A, INIT_NORMAL_RESID, 1);
        add(t, P_PROJB, l, "proj.b", 1, C, INIT_ZERO, 0);
        add(t, P_LN2W, l, "ln2.w", 1, C, INIT_ONE, 0);
        add(t, P_LN2B, l, "ln2.b", 1, C, INIT_ZERO, 0);
        add(t, P_FCW, l, "fc.w", 4 * C, C, INIT_NORMAL, 1);
        add(t, P_FCB, l, "fc.b", 1, 4 * C, INIT_ZERO, 0);
        add(t, P_FCPROJW, l, "fcproj.w", C, 4 * C, INIT_NORMAL_RESID, 1);
        add(t, P_FCPROJB, l, "fcproj.b", 1, C, INIT_ZERO, 0);
    }
    add(t, P_LNFW, -1, "lnf.w", 1, C, INIT_ONE, 0);
    add(t, P_LNFB, -1, "lnf.b", 1, C, INIT_ZERO, 0);
    /* Last, so that a model without gates has the table (and the checkpoint bytes)
     * it had before gates existed. */
    if (c->gates)
        add(t, P_GATES, -1, "gates.log_alpha", c->L, c->H, INIT_GATE, 0)->lr_scale = GATE_LR_SCALE;
    /* After the gates for the same reason: a model without routing keeps its table,
     * and a routed one draws every other tensor's initial values as the plain
     * model does, its router's after them. */
    if (c->route_k) {
        add(t, P_ROUTER_W, -1, "router.w", c->L * c->H, C, INIT_NORMAL, 1);
        add(t, P_ROUTER_B, -1, "router.b", c->L, c->H, INIT_ZERO, 0);
    }
}

static float **slot(Weights *w, const ParamSpec *s)
{
    LayerWeights *lw = s->layer >= 0 ? &w->layer[s->layer] : NULL;
    switch (s->kind) {
    case P_WTE: return &w->wte;
    case P_WPE: return &w->wpe;
    case P_LN1W: return &lw->ln1w;
    case P_LN1B: return &lw->ln1b;
    case P_QKVW: return &lw->qkvw;
    case P_QKVB: return &lw->qkvb;
    case P_PROJW: return &lw->projw;
    case P_PROJB: return &lw->projb;
    case P_LN2W: return &lw->ln2w;
    case P_LN2B: return &lw->ln2b;
    case P_FCW: return &lw->fcw;
    case P_FCB: return &lw->fcb;
    case P_FCPROJW: return &lw->fcprojw;
    case P_FCPROJB: return &lw->fcprojb;
    case P_LNFW: return &w->lnfw;
    case P_LNFB: return &w->lnfb;
    case P_GATES: return &w->log_alpha;
    case P_ROUTER_W: return &w->router_w;
    case P_ROUTER_B: return &w->router_b;
    }
    return NULL;
}

void params_view(const ParamTable *t, float *base, Weights *w)
{
    for (int i = 0; i < t->n; i++)
        *slot(w, &t->spec[i]) = base + t->spec[i].offset;
}

void params_init(const ParamTable *t, float *base, uint64_t seed)
{
    Rng rng;
    rng_init(&rng, seed, RNG_STREAM_INIT);
    double resid_std = PARAMS_INIT_STD / sqrt(2.0 * t->cfg.L);
    for (int i = 0; i < t->n; i++) {
        const ParamSpec *s = &t->spec[i];
        float *p = base + s->offset;
        for (size_t j = 0; j < s->count; j++) {
            switch (s->init) {
            case INIT_NORMAL: p[j] = (float)(PARAMS_INIT_STD * rng_normal(&rng)); break;
            case INIT_NORMAL_RESID: p[j] = (float)(resid_std * rng_normal(&rng)); break;
            case INIT_ONE: p[j] = 1.0f; break;
            case INIT_ZERO: p[j] = 0.0f; break;
            case INIT_GATE: p[j] = GATE_LOG_ALPHA_INIT; break;
            }
        }
    }
}

const ParamSpec *params_spec(const ParamTable *t, ParamKind kind)
{
    for (int i = 0; i < t->n; i++)
        if (t->spec[i].kind == kind)
            return &t->spec[i];
    return NULL;
}

void params_scale_positions(const ParamTable *t, float *base, double std)
{
    const ParamSpec *s = params_spec(t, P_WPE);
    double f = std / PARAMS_INIT_STD;
    float *p = base + s->offset;
    for (size_t j = 0; j < s->count; j++)
        p[j] = (float)(f * p[j]);
}

void params_decay_positions(ParamTable *t, int decay)
{
    t->spec[params_spec(t, P_WPE) - t->spec].decay = decay;
}

void params_same_heads(const ParamTable *t, float *base)
{
    const Config *c = &t->cfg;
    int H = c->H, D = c->D, A = H * D, C = c->C;
    Weights w;
    params_view(t, base, &w);
    for (int l = 0; l < c->L; l++) {
        LayerWeights *lw = &w.layer[l];
        for (int h = 1; h < H; h++) {
            for (int part = 0; part < 3; part++) {     /* q, k, v */
                size_t from = (size_t)part * A, to = from + (size_t)h * D;
                memcpy(lw->qkvw + to * C, lw->qkvw + from * C, (size_t)D * C * sizeof(float));
                memcpy(lw->qkvb + to, lw->qkvb + from, (size_t)D * sizeof(float));
            }
            for (int r = 0; r < C; r++)
                memcpy(lw->projw + (size_t)r * A + (size_t)h * D, lw->projw + (size_t)r * A,
                       (size_t)D * sizeof(float));
        }
    }
}
