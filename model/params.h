/* params: the one table of parameters.
 *
 * Every parameter tensor is listed once, in checkpoint order, with its shape,
 * init rule and weight-decay flag. Sizes, pointers into the single buffer, the
 * checkpoint order, AdamW's decay groups and the gradient-check loop all come
 * from this table. Gradients and Adam moments use the same layout, so
 * params_view works on any of those buffers. */
#ifndef HEADCOUNT_PARAMS_H
#define HEADCOUNT_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"

typedef enum {
    P_WTE, P_WPE,
    P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_PROJW, P_PROJB,
    P_LN2W, P_LN2B, P_FCW, P_FCB, P_FCPROJW, P_FCPROJB,
    P_LNFW, P_LNFB,
    P_GATES,
    P_ROUTER_W, P_ROUTER_B
} ParamKind;

typedef enum {
    INIT_NORMAL,       /* N(0, PARAMS_INIT_STD) */
    INIT_NORMAL_RESID, /* N(0, PARAMS_INIT_STD / sqrt(2L)): the two residual projections */
    INIT_ONE,          /* LayerNorm weights */
    INIT_ZERO,         /* biases */
    INIT_GATE          /* head gates' log_alpha: GATE_LOG_ALPHA_INIT (model/gates.h) */
} InitRule;

typedef struct {
    ParamKind kind;
    int layer;          /* -1 for wte, wpe, lnf */
    char name[24];      /* e.g. "h2.qkv.w" */
    int rows, cols;     /* a vector has rows = 1 */
    size_t offset;      /* in floats, into the parameter buffer */
    size_t count;       /* rows * cols */
    InitRule init;
    int decay;          /* 1: AdamW weight decay applies (matrices and embeddings) */
    float lr_scale;     /* AdamW steps this tensor at lr_scale x the learning rate */
} ParamSpec;

#define PARAMS_MAX_TENSORS (7 + 12 * CONFIG_MAX_LAYERS)

typedef struct {
    Config cfg;
    int n;              /* number of tensors */
    size_t total;       /* number of floats */
    ParamSpec spec[PARAMS_MAX_TENSORS];
} ParamTable;

/* One block's tensors, row-major [rows][cols]; A = H*D is the attention width. A
 * linear layer computes out = in W^T + b with W[out][in]. */
typedef struct {
    float *ln1w, *ln1b;        /* (C), (C): LayerNorm before attention, scale and shift */
    float *qkvw, *qkvb;        /* (3A, C), (3A): rows [0,A) give q, [A,2A) k, [2A,3A) v;
                                  head h owns rows hD..hD+D-1 of each */
    float *projw, *projb;      /* (C, A), (C): attention output projection */
    float *ln2w, *ln2b;        /* (C), (C): LayerNorm before the MLP */
    float *fcw, *fcb;          /* (4C, C), (4C): MLP up-projection, then GELU */
    float *fcprojw, *fcprojb;  /* (C, 4C), (C): MLP down-projection */
} LayerWeights;

/* Named pointers into one buffer laid out by a ParamTable. */
typedef struct {
    float *wte;                /* (V, C): token embedding, also the output layer (tied) */
    float *wpe;                /* (T, C): position embedding */
    LayerWeights layer[CONFIG_MAX_LAYERS];
    float *lnfw, *lnfb;        /* (C), (C): final LayerNorm */
    float *log_alpha;          /* (L, H): the head gates' log_alpha (model/gates.h); NULL
                                  in a model without gates (Config.gates = 0) */
    float *router_w;           /* (L, H, C): each layer's router, scores = W ln1(x) + b
                                  (model/route.h); NULL without routing (Config.route_k = 0) */
    float *router_b;           /* (L, H): the routers' biases; NULL without routing */
} Weights;

/* The standard deviation of the embeddings' and matrices' initial values (the two
 * residual projections: this over sqrt(2L)). */
#define PARAMS_INIT_STD 0.02

/* cfg must be validated (config_validate) first. */
void params_table_init(ParamTable *t, const Config *cfg);
void params_view(const ParamTable *t, float *base, Weights *w);
/* The entry of the first tensor of that kind (of layer 0 for a per-layer kind);
 * NULL when the table has none (the gates of a model without them). */
const ParamSpec *params_spec(const ParamTable *t, ParamKind kind);
/* Fills base by the init rules, drawing normals in table order from (seed, RNG_STREAM_INIT). */
void params_init(const ParamTable *t, float *base, uint64_t seed);
/* Makes every head of each layer a copy of head 0 (./train --init-heads same): its
 * rows of q, k and v in qkv.w and qkv.b, and its columns of proj.w. Called after
 * params_init, so every other parameter keeps its draw. */
void params_same_heads(const ParamTable *t, float *base);
/* Scales the position embedding's initial values from PARAMS_INIT_STD to std
 * (./train --pos-std): the same draws, multiplied by std / PARAMS_INIT_STD.
 * Called after params_init, so every other parameter keeps its draw. */
void params_scale_positions(const ParamTable *t, float *base, double std);
/* Whether AdamW decays the position embedding (./train --pos-decay): its
 * entry's decay flag, 1 as the table is built. */
void params_decay_positions(ParamTable *t, int decay);

#endif
