/* gpt: the whole model: parameters, activations, forward and backward.
 *
 * x = wte[token] + wpe[t]; L pre-LayerNorm blocks
 *   x += proj(attn(ln1(x)));  x += fcproj(gelu(fc(ln2(x))))
 * then logits = lnf(x) wte^T (tied output weights) and a mean cross-entropy.
 * Dropout (optional) hits the attention weights and both residual branches;
 * head dropout (optional, training) zeroes whole heads' outputs per sequence.
 * A head mask can silence heads (their outputs are zeroed) for ablations.
 * A model with head gates (Config.gates, model/gates.h) multiplies each head's
 * output by its gate, after the mask and head dropout, before the projection.
 * A routed model (Config.route_k = K > 0, model/route.h) gives each token K of
 * each layer's heads, chosen by a router on ln1's output: the heads' outputs are
 * multiplied by their route weights (0 for the heads not chosen) after the mask
 * and head dropout, before the gates. */
#ifndef HEADCOUNT_GPT_H
#define HEADCOUNT_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/bf16_weight.h"
#include "model/config.h"
#include "model/params.h"

/* The parameters and the arithmetic they were trained with: what evaluation, sampling
 * and analysis read. */
typedef struct {
    Config cfg;
    ParamTable table;
    float *params;   /* table.total floats */
    Weights w;
    Precision precision; /* of the linear layers' products; model_init: fp32 */
    Bf16Path bf16_path;  /* which code runs bf16 products (the same bits either way; not
                          * stored); model_init: BF16_AUTO */
    const Bf16WeightSet *bf16_copies; /* the weights' bf16 copies the layers read, kept
                          * equal to them by their owner (the trainer), or NULL: the
                          * layers round the weights (the same bits); model_init: NULL */
} Model;

/* Allocates parameters (zeroed) for a validated config. */
int model_init(Model *m, const Config *cfg, char *err, size_t errlen);
void model_free(Model *m);

/* A gradient buffer in the parameters' layout, owned apart from the model: the
 * trainer holds one, and so can an analysis that differentiates a model it only
 * reads (the head-gate gradient), without copying or touching the model. */
typedef struct {
    size_t n;        /* floats: the model's table.total */
    float *data;
    Weights w;       /* named pointers into data */
} Grads;

/* Zeroed gradients for m's parameter table; grads_free is safe on a failed or
 * zeroed Grads. */
int grads_init(Grads *g, const Model *m, char *err, size_t errlen);
void grads_zero(Grads *g);
void grads_free(Grads *g);

/* Everything forward stores for backward, for a batch of up to B rows of up to
 * T positions, in one allocation. N = B*T positions, A = H*D. Per layer l the
 * arrays are indexed [l]; a row-major shape is written (dims). */
typedef struct {
    int B, T, dropout;   /* capacities; dropout: attd allocated */
    size_t N, C, A, V, L, H;
    float *encoded;                  /* (N, C): wte[token] + wpe[t], the residual stream's start */
    float *ln1, *ln1_mean, *ln1_rstd; /* (L, N, C), (L, N), (L, N): ln1's output, mean, 1/std */
    float *qkv;                      /* (L, N, 3A): q, k, v of every head */
    float *atty;                     /* (L, N, A): the heads' outputs, concatenated (gated,
                                        with head gates): the projection's input */
    float *atty_open;                /* (L, N, A): with head gates, the outputs before the
                                        gate; else NULL */
    float *gate, *dgate;             /* (L, B, H), (L, B, H): with head gates, each head's
                                        gate and dgate/dlog_alpha; else NULL */
    float *atty_heads;               /* (L, N, A): with routing, the heads' outputs before
                                        their route weights; else NULL */
    float *route_prob, *route_on, *route_weight; /* (L, N, H) each: with routing, the
                                        router's softmax over all heads, 1 for a chosen
                                        head (else 0), the chosen heads' weights (else
                                        0) (model/route.h); else NULL */
    double balance_loss;             /* with routing, the forward's balance loss summed
                                        over the layers (unscaled); else 0 */
    float *att, *attd;               /* (L, B, H, T, T): softmaxed weights; after dropout
                                        (zero rows where skip_unrouted skipped a head) */
    float *attproj;                  /* (L, N, C): proj(atty) */
    float *res2;                     /* (L, N, C): residual after the attention branch */
    float *ln2, *ln2_mean, *ln2_rstd; /* (L, N, C), (L, N), (L, N) */
    float *fch_gelu, *fch_dgelu;     /* (L, N, 4C): gelu(fc) and gelu'(fc) */
    float *fcproj;                   /* (L, N, C): the MLP branch's output */
    float *res3;                     /* (L, N, C): residual after the MLP branch */
    float *lnf, *lnf_mean, *lnf_rstd; /* (N, C), (N), (N) */
    float *logits, *probs;           /* (N, V) */
    float *losses;                   /* (N): cross-entropy per position */
    /* backward scratch: gradients of the residual stream (N, C), of a branch after
     * dropout (N, C), of a linear layer's input (room for (N, 4C)), of qkv (N, 3A),
     * of atty (N, A), of the attention weights (B, H, T, T), of fc's output (N, 4C),
     * of the logits (N, V) */
    float *dres, *dbranch, *dln, *dqkv, *datty, *datt, *dfch, *dlogits;
    float *droute;                   /* (N, H): with routing, d/dscore of a layer's router */
    float *buf;                      /* the one allocation the arrays above point into */
    Bf16Rows rows_bf16;              /* --precision bf16: a LayerNorm's output (N, C),
                                        dlogits (N, V), the residual gradient (dres or
                                        dbranch, N, C), attention's output (atty, N, A)
                                        or dqkv (N, 3A), rounded to bf16 along the rows by
                                        the layer writing it for the product that reads it
                                        next (kernels/bf16_rows.h), one at a time, and the
                                        columns of the residual gradient, dlogits and dqkv
                                        for the dW of proj and fcproj, the logits and qkv;
                                        rows NULL (acts_init) where there is
                                        none: the products round it themselves (the same
                                        bits) */
    Bf16Rows mlp_bf16;               /* --precision bf16, the pairs' layout only: the
                                        MLP's hidden rows (N, 4C), rounded by the product
                                        writing them as its tiles finish, for the one
                                        reading them next: fch_gelu (fc's forward, for
                                        fcproj's) and dfch (fcproj's din, for fc's
                                        backward, its columns too for fc's dW); apart
                                        from rows_bf16, which fc's product reads while
                                        it writes this one */
    Bf16Rows *in_cols;               /* --precision bf16 training, [3L + 1]: the columns
                                        of every layer's ln1 (3l), atty (3l + 1, N x A)
                                        and ln2 (3l + 2) and of lnf (3L), (N, C) each,
                                        rounded by the LayerNorm, or attention where it is
                                        atty's last writer, in a forward that a backward
                                        follows (PassOptions.backward_next) and kept for
                                        qkv's, proj's, fc's and the logits' dW
                                        (bf16_rows_init_in_cols): about 4 N C bytes each
                                        in the floats' layout, 2 N C in the pairs'; NULL
                                        (or an entry holding none) where there is none:
                                        dW's product rounds in's columns itself (the same
                                        bits) */
    Bf16Rows *gelu_cols;             /* --precision bf16 training, the pairs' layout
                                        only, [L]: the columns of every layer's fch_gelu
                                        (N, 4C), rounded by fc's forward product as its
                                        bands of rows finish, in a forward that a backward
                                        follows, and kept for fcproj's dW
                                        (bf16_rows_init_in_cols): L N 4C 2 bytes in all;
                                        NULL (or an entry holding none) where there is
                                        none: fcproj's dW rounds them itself (the same
                                        bits) */
} Activations;

int acts_init(Activations *a, const Config *cfg, int B, int T, int with_dropout,
              char *err, size_t errlen);
void acts_free(Activations *a);
/* Memory for Activations.rows_bf16 (room for the rows and the columns of N x max(C, V,
 * 3A)), in_cols (3L + 1 columns of N x C or N x A) and, for BF16_COPY_PANELS, mlp_bf16
 * (the rows and columns of N x 4C) and gelu_cols (L columns of N x 4C) in the layout
 * `kind` (bf16_copy_kind of the model's path), freed by acts_free or acts_bf16_free; -1
 * when out of memory for any (then that one is missing). For bf16 training only: an
 * evaluation's forward reads none of it but rows_bf16. */
int acts_bf16_init(Activations *a, Bf16CopyKind kind);
void acts_bf16_free(Activations *a);
/* Floats acts_init allocates for these arguments (for memory estimates). */
size_t acts_floats(const Config *cfg, int B, int T, int with_dropout);

/* How a forward/backward pass runs: dropout probability and the mask key
 * (RNG_STREAM_DROPOUT seed mixed with the step), the head-dropout probability
 * (each head's output y_h of each sequence and layer is zeroed with probability
 * head_dropout, else scaled by 1/(1 - head_dropout), before the projection; its
 * masks come from the same key at a site of their own), and an optional head gate
 * head_on[L*H] (NULL: every head on; 0 silences a head). When head_grad[L*H]
 * is not NULL, gpt_backward adds into it dLoss/dxi_h for a gate xi_h = 1
 * multiplying each head's output (Michel et al. 2019's head importance, before
 * the absolute value): sum over positions of dy_h . y_h. With head_mean[L*H][D]
 * a silenced head's output is that vector at every position (mean ablation)
 * instead of zero. In a model with head gates, gate_noise = 1 draws each
 * (sequence, layer, head)'s gate from the key (training); 0 uses the
 * deterministic evaluation gate. In a routed model route_balance is the
 * coefficient of the balance loss: gpt_backward differentiates the mean loss
 * plus route_balance times Activations.balance_loss; with skip_unrouted = 1 a head
 * attends only at the rows of the tokens whose router chose it
 * (attention_forward_routed: the output is the same, with less work), and its
 * rows of Activations.att at the other tokens are zeros (gpt_fill_unrouted fills
 * them); 0 (analysis, which reads every head's attention at every row) attends at
 * every row. A plain model ignores it. backward_next = 1 says that gpt_backward
 * follows this forward: with --precision bf16 and Activations.in_cols the LayerNorms
 * and attention, and with gelu_cols fc's product, then round their outputs' columns
 * for the backward's dW products too (0, an evaluation, does not pay for them). */
typedef struct {
    float dropout;
    uint64_t dropout_key;
    float head_dropout;
    int gate_noise;
    const unsigned char *head_on;
    double *head_grad;
    const float *head_mean;
    float route_balance;
    int skip_unrouted;
    int backward_next;
} PassOptions;

/* Forward over tokens[B][T] (B, T within the capacities). With targets it
 * returns the mean loss (and fills a->losses); without, it fills logits and
 * probs and returns 0. A routed model's balance loss is not in the returned
 * value: it goes to a->balance_loss. opt may be NULL (no dropout, no head
 * dropout, all heads). */
double gpt_forward(const Model *m, Activations *a, const int *tokens, const int *targets,
                   int B, int T, const PassOptions *opt);
/* Adds d(mean loss + route_balance balance_loss)/d(params) into g (laid out by
 * m's table); needs the forward just run with the same arguments. */
void gpt_backward(const Model *m, Grads *g, Activations *a, const int *tokens,
                  const int *targets, int B, int T, const PassOptions *opt);

/* After a forward with skip_unrouted, writes into a->att the rows it left zero (the
 * heads a token's router did not choose), as a forward without it stores them, bit
 * for bit; the rest of a is unchanged. A plain model's a is left as it is. */
void gpt_fill_unrouted(const Model *m, Activations *a, int B, int T);

#endif
