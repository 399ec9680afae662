/* dist: micro-batch gradient sums in a fixed order, over MPI or not (see dist.h). */
#include "app/train/dist.h"

#include <stdlib.h>
#include <string.h>

#ifdef HEADCOUNT_MPI
#include <mpi.h>
#endif

int dist_init(Dist *d, int *argc, char ***argv)
{
    memset(d, 0, sizeof *d);
    d->rank = 0;
    d->size = 1;
#ifdef HEADCOUNT_MPI
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
#else
    (void)argc;
    (void)argv;
#endif
    return 0;
}

int dist_setup(Dist *d, size_t P)
{
    int n = d->size;
    d->P = P;
    d->off = malloc((size_t)n * sizeof(size_t));
    d->cnt = malloc((size_t)n * sizeof(size_t));
    if (!d->off || !d->cnt)
        return -1;
    size_t base = P / (size_t)n, rem = P % (size_t)n, at = 0;
    for (int s = 0; s < n; s++) {
        d->cnt[s] = base + ((size_t)s < rem ? 1 : 0);
        d->off[s] = at;
        at += d->cnt[s];
    }
    if (n > 1) {
        d->recv = malloc((d->cnt[d->rank] * (size_t)n + 1) * sizeof(float));
        d->counts = malloc((size_t)n * 4 * sizeof(int));
        if (!d->recv || !d->counts)
            return -1;
        /* Sending: slice s of a gradient to rank s; receiving: this rank's slice
         * from every rank, one after another. */
        int *scount = d->counts, *sdisp = scount + n, *rcount = scount + 2 * n,
            *rdisp = scount + 3 * n;
        size_t mine = d->cnt[d->rank];
        for (int s = 0; s < n; s++) {
            scount[s] = (int)d->cnt[s];
            sdisp[s] = (int)d->off[s];
            rcount[s] = (int)mine;
            rdisp[s] = (int)(mine * (size_t)s);
        }
    }
    return 0;
}

void dist_finish(Dist *d)
{
    free(d->off);
    free(d->cnt);
    free(d->recv);
    free(d->counts);
    d->off = d->cnt = NULL;
    d->recv = NULL;
    d->counts = NULL;
#ifdef HEADCOUNT_MPI
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down)
        MPI_Finalize();
#endif
}

void dist_abort(int code)
{
#ifdef HEADCOUNT_MPI
    int up = 0, down = 0, size = 1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) {
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (size > 1)
            MPI_Abort(MPI_COMM_WORLD, code);
        MPI_Finalize();
    }
#endif
    exit(code);
}

/* dst = src (first) or dst += src, element by element: every element is its own
 * sum, so any thread split gives the same bits. */
static void add_into(float *dst, const float *src, size_t n, int first)
{
    if (first) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

void dist_fold(Dist *d, float *acc, const float *g, int round)
{
    if (d->size == 1) {
        add_into(acc, g, d->P, round == 0);
        return;
    }
#ifdef HEADCOUNT_MPI
    int n = d->size, me = d->rank;
    size_t mine = d->cnt[me];
    const int *c = d->counts;
    MPI_Alltoallv(g, c, c + n, MPI_FLOAT, d->recv, c + 2 * n, c + 3 * n, MPI_FLOAT,
                  MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        add_into(acc + d->off[me], d->recv + mine * (size_t)r, mine, round == 0 && r == 0);
#endif
}

void dist_gather(Dist *d, float *acc, float scale)
{
    float *own = acc + d->off[d->rank];
    size_t mine = d->cnt[d->rank];
    if (scale != 1.0f) {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < mine; i++)
            own[i] *= scale;
    }
#ifdef HEADCOUNT_MPI
    if (d->size > 1) {
        /* The send counts and offsets are also each slice's size and place. */
        const int *c = d->counts;
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, acc, c, c + d->size, MPI_FLOAT,
                       MPI_COMM_WORLD);
    }
#endif
}

void dist_losses(const Dist *d, const double *mine, int k, double *all)
{
    if (d->size == 1) {
        memcpy(all, mine, (size_t)k * sizeof(double));
        return;
    }
#ifdef HEADCOUNT_MPI
    int n = d->size;
    double *by_rank = malloc((size_t)n * (size_t)k * sizeof(double));
    if (!by_rank)
        dist_abort(1);
    MPI_Allgather(mine, k, MPI_DOUBLE, by_rank, k, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < k; j++)
            all[(size_t)j * n + r] = by_rank[(size_t)r * k + j];
    free(by_rank);
#endif
}

int dist_any(const Dist *d, int flag)
{
    int out = flag;
#ifdef HEADCOUNT_MPI
    if (d->size > 1)
        MPI_Allreduce(&flag, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#else
    (void)d;
#endif
    return out;
}

int dist_same_data(const Dist *d, uint64_t size, uint64_t hash, int *bad_rank,
                   uint64_t *bad_size, uint64_t *bad_hash)
{
#ifdef HEADCOUNT_MPI
    if (d->size > 1) {
        uint64_t mine[2] = {size, hash};
        uint64_t *all = malloc((size_t)d->size * 2 * sizeof(uint64_t));
        if (!all)
            dist_abort(1);
        MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
        for (int r = 1; r < d->size; r++)
            if (all[2 * r] != all[0] || all[2 * r + 1] != all[1]) {
                *bad_rank = r;
                *bad_size = all[2 * r];
                *bad_hash = all[2 * r + 1];
                free(all);
                return 0;
            }
        free(all);
    }
#else
    (void)d;
    (void)size;
    (void)hash;
    (void)bad_rank;
    (void)bad_size;
    (void)bad_hash;
#endif
    return 1;
}
