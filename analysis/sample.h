/* sample: text generation. Two parts:
 *
 * 1. Sampler, a decoder that keeps a key/value cache, so that each new token
 *    costs one position's worth of work (per layer: layernorm, qkv for one row,
 *    one query attending over the cached keys and values, proj, MLP for one
 *    row) instead of a forward pass over the whole context. It also owns the
 *    context window and its sliding policy: the model has only T rows of
 *    position embeddings, so when a token arrives with the window full, the
 *    window is cut to its newest SAMPLER_KEEP(T) tokens (the new one included),
 *    which are re-encoded from scratch at positions 0.. by one full forward.
 *    With use_cache = 0 every token gets a full forward over the window instead
 *    (the same window, for benchmarks and for checking the cache).
 *
 * 2. The pure functions that turn logits into a token: softmax at a
 *    temperature, top-k then top-p filtering, and an inverse-CDF draw.
 *
 * Printing, prompts and the random generator's seed are the caller's
 * (infer_sample.c); docs/sampling.md states the policies for users. */
#ifndef HEADCOUNT_SAMPLE_H
#define HEADCOUNT_SAMPLE_H

#include <stddef.h>

#include "model/gpt.h"
#include "util/rng.h"

/* Tokens kept when a full window of T slides: ceil(T / 2), the new one included. */
#define SAMPLER_KEEP(T) ((T) - (T) / 2)

typedef struct {
    const Model *m;
    const unsigned char *head_on; /* [L*H], 0 silences a head; NULL: all on */
    int use_cache;
    int T, A;                     /* window capacity (cfg.T); attention width H*D */
    int n;                        /* tokens in the window = positions cached */
    long slides;                  /* times the window has slid since sampler_start */
    int *window;                  /* [T] token ids at positions 0..n-1 */
    Activations acts;             /* B = 1 x T: the full forwards */
    float *buf;                   /* the one allocation behind every array below */
    float *kv;                    /* [L][T][2A]: key, then value, of each position */
    float *wt;                    /* with the cache: each layer's qkv, proj, fc, fcproj
                                   * weights transposed ([in][out]), then wte^T [C][V];
                                   * in bf16, packed by bf16_pack_weights instead */
    float *x, *ln, *branch;       /* [C]: residual stream, layernorm out, branch out */
    float *qkv, *atty;            /* [3A], [A] */
    float *scores;                /* [H][T]: one attention row per head */
    float *route_prob, *route_on, *route_weight; /* [H] each, in a routed model: the
                                   * router's outputs for the token in a layer */
    float *fch, *fch_gelu;        /* [4C] */
    float *logits;                /* [V]: what the last call returned */
} Sampler;

/* head_on (may be NULL) must outlive the sampler. Errors: out of memory. */
int sampler_init(Sampler *s, const Model *m, const unsigned char *head_on, int use_cache,
                 char *err, size_t errlen);
/* Safe on a zeroed or half-built sampler. */
void sampler_free(Sampler *s);

/* Starts a new text from ids[0..n-1] (n >= 1, each in [0, V)): the window
 * becomes the last min(n, T) of them, encoded by one full forward (which
 * fills the cache). Returns logits[V] for the token after ids[n-1]; the
 * pointer stays valid until the next call. */
const float *sampler_start(Sampler *s, const int *ids, int n);

/* Appends token (in [0, V)) to the window, sliding it first when full, and
 * returns logits[V] for the token after it. With the cache and no slide this
 * is one position of work; otherwise a full forward over the window. */
const float *sampler_step(Sampler *s, int token);

/* How logits become a token. temperature 0: greedy; top_k 0: no limit;
 * top_p >= 1: no limit. */
typedef struct {
    double temperature;
    int top_k;
    double top_p;
} SampleSettings;

/* probs[V] = softmax(logits / temperature), temperature > 0, with the exp of
 * vmath.h in the order crossentropy_forward uses (so temperature 1 gives the
 * full forward's probs bit for bit). */
void sample_softmax(float *probs, const float *logits, int V, double temperature);

/* Index of the largest logit; ties go to the lowest index. */
int sample_argmax(const float *logits, int V);

/* Zeroes, in place, every token outside the top_k most likely (top_k <= 0 or
 * >= V: none), then every survivor outside the nucleus: the shortest run of
 * survivors, taken from the most likely, whose probability renormalised over
 * the survivors reaches top_p (top_p >= 1: none). The ranking is by
 * probability, ties to the lower token id, so the result is one fixed set.
 * Sums are in double, in rank order. probs need not sum to 1. Returns the
 * number of tokens kept (>= 1 when any probability is positive). */
int sample_filter(float *probs, int V, int top_k, double top_p);

/* Inverse CDF: the first token i whose running sum probs[0] + ... + probs[i]
 * (in double, in token order) exceeds u * (the sum of all), for u in [0, 1).
 * probs need not be normalised; tokens with probability 0 are never drawn. */
int sample_draw(const float *probs, int V, double u);

/* The whole rule: temperature 0 gives sample_argmax (the most likely token is
 * always in the top-k and in the nucleus, so the filters change nothing) and
 * draws nothing; otherwise sample_softmax, sample_filter, then sample_draw
 * with one rng_uniform_double. scratch has room for V floats. */
int sample_next(const float *logits, int V, const SampleSettings *st, float *scratch, Rng *rng);

#endif
