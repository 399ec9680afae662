/* dist: the gradient of one optimizer step, summed over micro-batches in a fixed
 * order, on one process or over MPI ranks (make MPI=1).
 *
 * A step of `--accum K` on N ranks has M = N*K micro-batches, numbered in the
 * order one process would draw them. Rank r computes micro-batches r, r + N,
 * r + 2N, ... (round j holds micro-batches jN .. jN + N - 1). The parameters are
 * cut into N contiguous slices and rank s owns slice s: in every round each rank
 * sends slice s of its micro-batch gradient to rank s (an all-to-all), and each
 * owner adds what it received in rank order. So every element of the summed
 * gradient is  ((g_0 + g_1) + g_2) + ... + g_{M-1}  in micro-batch order, with
 * the same float operations whatever N is: `mpirun -np N ./train --accum K` and
 * `./train --accum N*K` give the same bits. The owners then scale their slice by
 * 1/M and the slices are gathered back to every rank (an all-gather).
 *
 * Cost per step, P parameters in float32: each rank sends and receives
 * K * (N-1)/N * 4P bytes in the all-to-alls and (N-1)/N * 4P in the all-gather.
 *
 * Without MPI (the default build) there is one rank and no communication. With
 * MPI, failures on one rank end the whole job (dist_abort). Nothing here prints
 * except dist_abort's caller-given message. */
#ifndef HEADCOUNT_DIST_H
#define HEADCOUNT_DIST_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int rank, size;
    size_t P;          /* floats in a gradient */
    size_t *off, *cnt; /* [size] each rank's slice of the parameters */
    float *recv;       /* [cnt[rank] * size] the slices received in a round */
    int *counts;       /* [4 * size] MPI's send/receive counts and offsets, set once */
} Dist;

/* Starts MPI (when built with it) and fills rank and size; 0 or -1. */
int dist_init(Dist *d, int *argc, char ***argv);
/* Sets up the slices for P floats; 0 or -1 (out of memory). */
int dist_setup(Dist *d, size_t P);
/* Ends MPI; safe to call twice. */
void dist_finish(Dist *d);
/* Ends every rank of the job with exit status code (MPI_Abort), or exit(). */
void dist_abort(int code) __attribute__((noreturn));

/* Round j of a step: g is this rank's micro-batch gradient (P floats); acc's own
 * slice receives the first contribution of round 0 as is and adds the others,
 * in rank order. */
void dist_fold(Dist *d, float *acc, const float *g, int round);
/* After the last round: acc's own slice times scale, then every slice to every
 * rank, so acc holds the whole summed gradient everywhere. */
void dist_gather(Dist *d, float *acc, float scale);

/* The M = size * k losses of this step's micro-batches, in micro-batch order,
 * from each rank's k losses (mine[j] is micro-batch j * size + rank). */
void dist_losses(const Dist *d, const double *mine, int k, double *all);
/* The largest flag over all ranks, on every rank (non-zero when any rank's is). */
int dist_any(const Dist *d, int flag);
/* Whether every rank read the same data (size and hash); on a mismatch, which
 * rank differs from rank 0 and how, in *bad_rank, *bad_size, *bad_hash. */
int dist_same_data(const Dist *d, uint64_t size, uint64_t hash, int *bad_rank,
                   uint64_t *bad_size, uint64_t *bad_hash);

#endif
