/* heads_measure: the one head-measuring pipeline. ./infer --heads (many windows
 * of a file), ./infer --explore (one window of a text) and ./train
 * --heads-every (the batch a training step just ran) all call heads_measure,
 * which runs the stages they ask for in one order: row statistics and JSD on
 * the scored windows, the probes, the relations, the importance passes, the
 * causal passes (minimal pairs and relation losses with each head silenced, the
 * needed heads and sets), then the derived numbers (redundancy, types,
 * effective heads, each relation's best head, the summary) and the prune
 * curve, and on a routed model what its routers send where. The stages
 * call the per-row functions of heads.h, heads_route.h, pairs.h and
 * compromise.h; the programs call only this. Choosing the windows and probes
 * (heads_windows_*) is here too. Nothing here prints or exits: progress goes to
 * the caller's callback, errors to its buffer. */
#ifndef HEADCOUNT_HEADS_MEASURE_H
#define HEADCOUNT_HEADS_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/compromise.h"
#include "analysis/heads.h"
#include "analysis/heads_route.h"
#include "analysis/pairs.h"
#include "analysis/planted.h"

/* The scored windows and the probes. */
typedef struct {
    int T, nwin;
    size_t *start;              /* [nwin] first token of each window (spread windows) */
    int *in, *tg, *match;       /* [nwin][T]; tg NULL for a lone window */
    unsigned char *delim;       /* [nwin][T] delimiter keys; NULL: no delimiter score */
    double delim_share;         /* share of delimiter keys in the scored rows (NaN: none) */
    int P, nprobe;              /* nprobe probes of 2P tokens */
    int *probe;                 /* [nprobe][2P] */
    int probe_rule;             /* which rule of heads_probe_alphabet chose their tokens */
} HeadsWindows;

/* nwin windows of T tokens spread over ids[nids] (nids >= T + 1): window k starts
 * uniformly at random inside the k-th of nwin equal strata of the possible
 * starts, seeded; with their delimiter keys, repeat targets and HEADS_PROBES
 * probes of up to T tokens (./infer --heads). -1 when out of memory. */
int heads_windows_spread(HeadsWindows *w, const TokenId *ids, size_t nids, int T, int nwin,
                         const Tokenizer *tok, uint64_t seed, char *err, size_t errlen);
/* The one window x[T] with its delimiter keys, repeat targets and HEADS_PROBES
 * probes of up to probe_T tokens (./infer --explore). */
int heads_windows_one(HeadsWindows *w, const int *x, int T, int probe_T, const Tokenizer *tok,
                      uint64_t seed, char *err, size_t errlen);
/* The B windows tokens[B][T] of a training batch: repeat targets only. */
int heads_windows_batch(HeadsWindows *w, const int *tokens, int B, int T, char *err,
                        size_t errlen);
void heads_windows_free(HeadsWindows *w);

/* The stages, in the order they run. */
enum {
    HEADS_ROWS = 1 << 0,        /* row statistics and JSD on the scored windows */
    HEADS_PROBE = 1 << 1,       /* induction and duplicate scores on the probes */
    HEADS_WINDOW_RELATIONS = 1 << 2, /* relations on the scored windows (no loss) */
    HEADS_RELATIONS = 1 << 3,   /* the relation pass over the text's consecutive windows:
                                 * attention, loss, minimal pairs, compromise */
    HEADS_IMPORTANCE = 1 << 4,  /* base loss and each head's delta loss */
    HEADS_GATE_GRAD = 1 << 5,   /* the gate gradient of every head */
    HEADS_MEAN_ABLATE = 1 << 6, /* heads silenced to their mean output in the causal passes */
    HEADS_CAUSAL = 1 << 7,      /* the causal passes: cost of every head to every relation */
    HEADS_NEEDED = 1 << 8,      /* each relation's needed head and needed set */
    HEADS_DERIVE = 1 << 9,      /* redundancy, types, effective heads, best heads, summary */
    HEADS_PRUNE = 1 << 10,      /* the prune curve */
    HEADS_ROUTING = 1 << 11,    /* a routed model: what its routers send where, summed in
                                 * the relation pass (HEADS_RELATIONS) or else on the
                                 * scored windows, finished after the causal passes */
};

/* Progress the passes report, for the caller to show: EV_ATTENTION as the
 * attention pass begins, EV_ABLATE_BEGIN / _DONE around head k's ablation
 * (k of n), EV_ABLATE_END after the last, EV_SILENCE_DONE after head k's causal
 * pass, EV_SILENCE_END after the last. */
enum {
    HEADS_EV_ATTENTION,
    HEADS_EV_ABLATE_BEGIN,
    HEADS_EV_ABLATE_DONE,
    HEADS_EV_ABLATE_END,
    HEADS_EV_SILENCE_DONE,
    HEADS_EV_SILENCE_END,
};

/* What heads_measure reads. */
typedef struct {
    unsigned what;              /* HEADS_* stages */
    const Model *m;
    const Tokenizer *tok;
    const unsigned char *head_on; /* [L*H] the heads the caller keeps on; NULL: all */
    const HeadsWindows *w;      /* the scored windows and the probes */
    int filled;                 /* 1: the activations already hold the forward over w's
                                 * windows (a training step's); no forward is run for them */
    int probe_batch;            /* probes per forward; 0: as many as the activations hold */
    /* The text (HEADS_RELATIONS, HEADS_CAUSAL, HEADS_IMPORTANCE with loss_text):
     * consecutive windows of text_T tokens of ids[nids] from token 0, text token
     * `at` of the whole text (where the planted relations and pairs are). */
    const TokenId *ids;
    size_t nids, at;
    int text_T;
    int rel_windows;            /* windows of the relation pass */
    int causal_windows;         /* the first of them, read by every causal pass */
    int loss_text;              /* 1: the importance loss is over the text's causal windows,
                                 * not over w's windows */
    int unmeasured_nan;         /* 1: a head not ablated (masked) gets delta_loss NaN */
    /* Relations: the planted ones (NULL or unknown: none); the rare relation's
     * token counts (NULL: the scored windows' own); keys given for the scored
     * windows and the text (key[q][T], first[q][T]; only with one window), NULL:
     * found by each relation's rule; starts[nwin]: where the scored windows lie
     * in the text the planted relations were found in (a training batch). */
    const Planted *planted;
    const uint64_t *counts;
    int *const *key, *const *first;
    const size_t *starts;
    int window_relations;       /* relations measured on the scored windows: HEADS_REL_TEXT,
                                 * or HEADS_REL_COUNT with planted ones */
    void (*progress)(void *ctx, int event, int k, int n);
    void *ctx;
} HeadsMeasureIn;

/* Everything heads_measure finds; heads_measure_init sizes it, heads_measure_free
 * frees it. */
typedef struct {
    int L, H, n;
    HeadStats *st;              /* [n] */
    double *jsd;                /* [n][n] mean JSD per scored row */
    RelationSums rsums[HEADS_REL_COUNT];
    HeadsRelation rel[HEADS_REL_COUNT];
    PairScore pairs[PAIRS_SETS]; /* HEADS_WINDOW_RELATIONS: the scored windows' minimal pairs */
    CompromiseSums csums;
    Compromise compromise;      /* how the heads divide their weight among shared rows' keys */
    double base_loss;
    float *att_text, *att_probe; /* heatmaps of window 0 and probe 0: [n][T][T], [n][2P][2P];
                                  * NULL: not kept */
    float *head_mean;           /* HEADS_MEAN_ABLATE: [n][D] each head's mean output */
    CausalScore base;           /* minimal pairs and relation losses, heads as given */
    CausalScore *ablated;       /* [n]: the same with head k silenced too */
    int needed_head[HEADS_REL_COUNT]; /* the head whose silencing costs most; -1: none */
    NeededSet needed[HEADS_REL_COUNT];
    double *layer_eff;          /* [L] */
    double effective;
    HeadsSummary sum;
    int *prune_order;           /* HEADS_PRUNE: [n] */
    double *prune_loss;         /* [n + 1] */
    int nprune;
    /* HEADS_ROUTING on a routed model (route.K > 0; else K = 0): the routing, its
     * sums, and window 0's choices [L][T][H] (1: routed) when the heatmaps are kept */
    HeadsRouting route;
    RouteSums route_sums;
    unsigned char *route_text;
    int keep_T;
} HeadsMeasured;

/* Sizes r for a model of L layers and H heads; keep_text, keep_probe: room for
 * the heatmaps of windows of T and probes of 2P tokens (0: none). */
int heads_measure_init(HeadsMeasured *r, int L, int H, int keep_text_T, int keep_probe_T,
                       char *err, size_t errlen);
void heads_measure_free(HeadsMeasured *r);

/* Runs in->what's stages into r (cleared first but for its buffers), through
 * the activations a (capacity: a->B windows). -1 with the reason when out of
 * memory. */
int heads_measure(HeadsMeasured *r, const HeadsMeasureIn *in, Activations *a, char *err,
                  size_t errlen);

#endif
