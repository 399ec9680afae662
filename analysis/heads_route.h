/* heads_route: what a routed model's router (model/route.h) sends where, read
 * from the choices gpt_forward leaves in Activations.route_on and
 * route_weight ((L, N, H) each). Per head: how often its layer's router picks
 * it among the K (its share) and its mean route weight when picked. Per
 * relation: the share of the relation's query rows (the rows heads_add_relation
 * and heads_add_rare score) routed to each head, the head most of them go to,
 * and whether that head serves the relation (heads_serves). docs/heads.md,
 * "Routing", gives the rules. heads_measure runs it as the HEADS_ROUTING
 * stage; nothing here prints, and every sum runs in token order. */
#ifndef HEADCOUNT_HEADS_ROUTE_H
#define HEADCOUNT_HEADS_ROUTE_H

#include "analysis/heads.h"

/* The sums over any number of windows, for a model of n = L*H heads. */
typedef struct {
    int n;
    double tokens;              /* token positions summed (each counts once in every layer) */
    double *chosen;             /* [n] positions at which head k was among its layer's K */
    double *weight;             /* [n] its route weight summed over those positions */
    double rows[HEADS_REL_COUNT]; /* query rows of each relation */
    double *rel_chosen;         /* [HEADS_REL_COUNT][n] of those rows, the ones routed to k */
} RouteSums;

/* The routing, measured. K = 0: the model is not routed or the stage did not run,
 * and nothing else is filled. */
typedef struct {
    int K, L, H, n;
    double tokens;              /* token positions per layer the shares are over */
    double *share;              /* [n] chosen / tokens: sums to K over a layer's heads */
    double *weight;             /* [n] mean route weight when chosen; 0 when never chosen */
    double rows[HEADS_REL_COUNT];
    double *rel_share;          /* [HEADS_REL_COUNT][n] share of relation q's query rows
                                 * routed to head k; 0 when q has no rows */
    int top[HEADS_REL_COUNT];   /* the head with the largest rel_share, ties to the lower
                                 * index; -1: the relation has no rows */
    int served;                 /* 1: serving was measured (the causal passes ran), so
                                 * top_serves, nserve and serve_share mean something */
    int top_serves[HEADS_REL_COUNT]; /* 1: heads_serves(top, q) */
    int nserve[HEADS_REL_COUNT];     /* heads that serve q */
    int serve_top[HEADS_REL_COUNT];  /* the serving head with the largest rel_share, ties
                                      * to the lower index; -1: none serves */
} HeadsRouting;

int route_sums_init(RouteSums *s, int n);
void route_sums_free(RouteSums *s);

/* Every head's choices at the B*T positions of a forward over B windows of T
 * tokens of a routed model (a->route_on non-NULL) into s. */
void heads_add_route(RouteSums *s, const Activations *a, int B, int T);

/* Relation q's query rows among those positions: the rows i >= heads_skip(T)
 * with key[b][i] >= 0, as heads_add_relation scores them; key NULL: every row
 * i >= heads_rare_first_row(T), the rare relation's, as heads_add_rare scores
 * them. */
void heads_add_route_relation(RouteSums *s, int q, const Activations *a, const int *key, int B,
                              int T);

int heads_routing_init(HeadsRouting *r, int L, int H);
void heads_routing_free(HeadsRouting *r);

/* The routing of a model routing K heads of H per layer from the sums and the
 * finished head stats st[n] (serving: heads_serves; served says whether the
 * causal passes measured it). */
void heads_route_finish(HeadsRouting *r, const RouteSums *s, const HeadStats *st, int K,
                        int served);

#endif
