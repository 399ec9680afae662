/* heads: per-head attention statistics, probes, divergences, importance and
 * types (see heads.h; docs/heads.md has the formulas and their sources).
 * OpenMP splits work over heads (or pairs of heads): each output sum belongs
 * to one thread and runs in a fixed order. */
#include "analysis/heads.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/errbuf.h"

const char *const heads_type_names[HEAD_TYPES] = {
    "induction", "copy", "previous-token", "bracket", "first-position", "delimiter", "local",
    "broad", "mixed", "masked",
};

#define HEADS_METRIC_ROW(field, per, legend, col, fmt, pct, col_legend, explore, log)            \
    {#field, offsetof(HeadStats, field), legend, col, fmt, pct, col_legend, explore, log},
const HeadsMetricRow heads_metric_table[HEADS_METRIC_COUNT] = {HEADS_METRICS(HEADS_METRIC_ROW)};
#undef HEADS_METRIC_ROW

double heads_metric(const HeadStats *s, int m)
{
    return *(const double *)((const char *)s + heads_metric_table[m].offset);
}

int heads_metric_at(size_t which, int place)
{
    for (int m = 0; m < HEADS_METRIC_COUNT; m++)
        if (*(const int *)((const char *)&heads_metric_table[m] + which) == place)
            return m;
    return -1;
}

int heads_skip(int T)
{
    int s = T / 4 < HEADS_SKIP_ROWS ? T / 4 : HEADS_SKIP_ROWS;
    return s < 1 ? 1 : s;
}

const float *heads_att(const Activations *a, int l, int b, int h, int T)
{
    size_t layer = (size_t)a->B * a->H * a->T * a->T;
    return a->att + (size_t)l * layer + ((size_t)b * a->H + (size_t)h) * T * T;
}

int heads_is_delim(unsigned char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f' ||
           (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
}

int heads_token_is_delim(const Tokenizer *tok, int id)
{
    size_t n;
    const unsigned char *p = tok_piece(tok, id, &n);
    for (size_t k = 0; k < n; k++)
        if (!heads_is_delim(p[k]))
            return 0;
    return 1;
}

void heads_repeat_targets(int *match, const int *tokens, int B, int T)
{
    for (int b = 0; b < B; b++) {
        const int *x = tokens + (size_t)b * T;
        int *mb = match + (size_t)b * T;
        for (int i = 0; i < T; i++) {
            mb[i] = -1;
            for (int j = i - 3; j >= 1; j--)
                if (x[j] == x[i] && x[j - 1] == x[i - 1]) {
                    mb[i] = j + 1;
                    break;
                }
        }
    }
}

/* Row statistics of one head's attention on one window, added into s. */
static void add_window_rows(HeadSums *s, const float *att, const unsigned char *delim,
                            const int *match, int T)
{
    for (int i = heads_skip(T); i < T; i++) {
        const float *row = att + (size_t)i * T;
        double ent = 0.0, mx = 0.0, dist = 0.0, dl = 0.0, loc = 0.0;
        for (int j = 0; j <= i; j++) {
            double p = row[j];
            if (p > 0.0)
                ent -= p * log(p);
            if (p > mx)
                mx = p;
            dist += p * (double)(i - j);
            if (delim && delim[j])
                dl += p;
            if (j >= i - 3)
                loc += p;
        }
        s->entropy += ent / log((double)(i + 1));
        s->confidence += mx;
        s->distance += dist;
        s->prev += row[i - 1];
        s->self += row[i];
        s->first += row[0];
        s->delim += dl;
        s->local3 += loc;
        s->rows += 1.0;
        if (match && match[i] >= 0) {
            s->repeat += row[match[i]];
            s->repeat_rows += 1.0;
        }
    }
}

void heads_add_rows(HeadSums *sums, const Activations *a, const unsigned char *delim,
                    const int *match, int B, int T)
{
    int H = (int)a->H, n = (int)a->L * H;
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++)
        for (int b = 0; b < B; b++)
            add_window_rows(&sums[k], heads_att(a, k / H, b, k % H, T),
                            delim ? delim + (size_t)b * T : NULL,
                            match ? match + (size_t)b * T : NULL, T);
}

double heads_delim_share(const unsigned char *delim, int T, double *rows)
{
    double share = 0.0;
    int count = 0, skip = heads_skip(T);
    *rows = 0.0;
    for (int i = 0; i < T; i++) {
        count += delim[i] != 0;
        if (i >= skip) {
            share += (double)count / (double)(i + 1);
            *rows += 1.0;
        }
    }
    return share;
}

int heads_probe_build(int *tokens, int T, const int *alpha, int n, int *pool, Rng *rng)
{
    int P = T / 2 < n ? T / 2 : n;
    /* Partial Fisher-Yates: P distinct tokens, so each has one earlier copy. */
    for (int v = 0; v < n; v++)
        pool[v] = alpha[v];
    for (int k = 0; k < P; k++) {
        int r = k + (int)rng_below(rng, (uint64_t)(n - k));
        int t = pool[k];
        pool[k] = pool[r];
        pool[r] = t;
        tokens[k] = pool[k];
    }
    for (int k = 0; k < P; k++)
        tokens[P + k] = tokens[k];
    return P;
}

void heads_add_probe(HeadSums *sums, const Activations *a, int B, int P)
{
    int H = (int)a->H, n = (int)a->L * H, T = 2 * P;
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++)
        for (int b = 0; b < B; b++) {
            const float *att = heads_att(a, k / H, b, k % H, T);
            /* Query P + q repeats token q: its earlier copy is at q, and the
             * token that followed that copy at q + 1 (<= P + q). */
            for (int q = 0; q < P; q++) {
                const float *row = att + (size_t)(P + q) * T;
                sums[k].induction += row[q + 1];
                sums[k].duplicate += row[q];
                sums[k].probe_rows += 1.0;
            }
        }
}

static double ratio(double num, double den)
{
    return den > 0.0 ? num / den : 0.0;
}

/* Each metric's division in heads_finish, by its row's `per`. */
#define HEADS_FINISH_rows(f) st[k].f = ratio(s[k].f, s[k].rows);
#define HEADS_FINISH_repeat_rows(f) st[k].f = ratio(s[k].f, s[k].repeat_rows);
#define HEADS_FINISH_probe_rows(f) st[k].f = ratio(s[k].f, s[k].probe_rows);
#define HEADS_FINISH_none(f)
#define HEADS_FINISH(field, per, ...) HEADS_FINISH_##per(field)

void heads_finish(HeadStats *st, const HeadSums *s, int n)
{
    for (int k = 0; k < n; k++) {
        HEADS_METRICS(HEADS_FINISH)
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            st[k].rel[q] = ratio(s[k].rel[q], s[k].rel_rows[q]);
    }
}

/* sum_j x_j ln x_j over n entries (0 ln 0 = 0). */
static double xlogx_sum(const float *x, int n)
{
    double s = 0.0;
    for (int j = 0; j < n; j++)
        if (x[j] > 0.0f)
            s += (double)x[j] * log((double)x[j]);
    return s;
}

/* JSD = (sum p ln p + sum q ln q) / 2 - sum m ln m, m = (p + q) / 2, given the
 * first two sums; identical rows give exactly 0 (same terms, same order). */
static double jsd_from_sums(const float *p, const float *q, int n, double plogp, double qlogq)
{
    double mm = 0.0;
    for (int j = 0; j < n; j++) {
        double m = 0.5 * ((double)p[j] + (double)q[j]);
        if (m > 0.0)
            mm += m * log(m);
    }
    double d = 0.5 * (plogp + qlogq) - mm;
    return d > 0.0 ? d : 0.0;
}

double heads_jsd(const float *p, const float *q, int n)
{
    return jsd_from_sums(p, q, n, xlogx_sum(p, n), xlogx_sum(q, n));
}

int heads_add_jsd(double *jsd, const Activations *a, int B, int T, char *err, size_t errlen)
{
    int H = (int)a->H, n = (int)a->L * H, skip = heads_skip(T);
    size_t rows = (size_t)B * T;
    /* xl[k][b][i] = sum_j A ln A of row i: each row's own term of the JSD. */
    double *xl = malloc((size_t)n * rows * sizeof(double));
    if (!xl)
        return err_set(err, errlen, "out of memory for %d x %zu attention-row entropies", n, rows);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++)
        for (int b = 0; b < B; b++)
            for (int i = skip; i < T; i++)
                xl[(size_t)k * rows + (size_t)b * T + i] =
                    xlogx_sum(heads_att(a, k / H, b, k % H, T) + (size_t)i * T, i + 1);
    #pragma omp parallel for schedule(dynamic)
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n; q++) {
            double s = 0.0;
            for (int b = 0; b < B; b++) {
                const float *ap = heads_att(a, p / H, b, p % H, T);
                const float *aq = heads_att(a, q / H, b, q % H, T);
                for (int i = skip; i < T; i++) {
                    size_t r = (size_t)b * T + i;
                    s += jsd_from_sums(ap + (size_t)i * T, aq + (size_t)i * T, i + 1,
                                       xl[(size_t)p * rows + r], xl[(size_t)q * rows + r]);
                }
            }
            jsd[(size_t)p * n + q] += s;
            jsd[(size_t)q * n + p] += s;
        }
    free(xl);
    return 0;
}

/* Eigenvalues of the symmetric k x k matrix A (destroyed) into eig, by cyclic
 * Jacobi rotations (Golub & Van Loan, Matrix Computations, 8.5). */
static void sym_eigenvalues(double *A, int k, double *eig)
{
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, total = 0.0;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                total += A[i * k + j] * A[i * k + j];
                if (i != j)
                    off += A[i * k + j] * A[i * k + j];
            }
        if (off <= 1e-24 * total)
            break;
        for (int p = 0; p < k; p++)
            for (int q = p + 1; q < k; q++) {
                double apq = A[p * k + q];
                if (fabs(apq) < 1e-300)
                    continue;
                double theta = (A[q * k + q] - A[p * k + p]) / (2.0 * apq);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int r = 0; r < k; r++) {
                    double arp = A[r * k + p], arq = A[r * k + q];
                    A[r * k + p] = c * arp - s * arq;
                    A[r * k + q] = s * arp + c * arq;
                }
                for (int r = 0; r < k; r++) {
                    double apr = A[p * k + r], aqr = A[q * k + r];
                    A[p * k + r] = c * apr - s * aqr;
                    A[q * k + r] = s * apr + c * aqr;
                }
            }
    }
    for (int i = 0; i < k; i++)
        eig[i] = A[i * k + i];
}

int heads_effective(double *out, const double *jsd, int n, const int *idx, int k,
                    char *err, size_t errlen)
{
    *out = 0.0;
    if (k <= 0)
        return 0;
    double *S = malloc((size_t)k * k * sizeof(double)), *eig = malloc((size_t)k * sizeof(double));
    if (!S || !eig) {
        free(S);
        free(eig);
        return err_set(err, errlen, "out of memory for a %d x %d head similarity matrix", k, k);
    }
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            S[i * k + j] = i == j ? 1.0 : 1.0 - jsd[(size_t)idx[i] * n + idx[j]] / log(2.0);
    sym_eigenvalues(S, k, eig);
    double sum = 0.0, ent = 0.0;
    for (int i = 0; i < k; i++)
        sum += eig[i] > 0.0 ? eig[i] : 0.0;
    for (int i = 0; i < k; i++)
        if (eig[i] > 0.0 && sum > 0.0)
            ent -= eig[i] / sum * log(eig[i] / sum);
    *out = exp(ent);
    free(S);
    free(eig);
    return 0;
}

void heads_redundancy(HeadStats *st, const double *jsd, int L, int H)
{
    int n = L * H;
    for (int p = 0; p < n; p++) {
        double within = 0.0, best = 0.0;
        int count = 0;
        st[p].nearest = -1;
        st[p].jsd_layer = st[p].jsd_nearest = 0.0;
        if (st[p].masked)
            continue;
        for (int q = 0; q < n; q++) {
            if (q == p || st[q].masked)
                continue;
            double d = jsd[(size_t)p * n + q];
            if (q / H == p / H) {
                within += d;
                count++;
            }
            if (st[p].nearest < 0 || d < best) {
                best = d;
                st[p].nearest = q;
            }
        }
        st[p].jsd_layer = ratio(within, count);
        st[p].jsd_nearest = best;
    }
}

HeadType heads_classify(const HeadStats *s, double delim_share)
{
    if (s->masked)
        return HEAD_MASKED;
    if (s->induction >= HEADS_INDUCTION_MIN && s->induction > s->duplicate)
        return HEAD_INDUCTION;
    if (s->rel[HEADS_REL_COPY] >= HEADS_COPY_MIN)
        return HEAD_COPY;
    if (s->prev >= HEADS_PREV_MIN)
        return HEAD_PREVIOUS;
    if (s->rel[HEADS_REL_BRACKET] >= HEADS_BRACKET_MIN)
        return HEAD_BRACKET;
    if (s->first >= HEADS_SINK_MIN)
        return HEAD_SINK;
    if (s->delim >= HEADS_DELIM_MIN && s->delim >= HEADS_DELIM_LIFT * delim_share)
        return HEAD_DELIMITER;
    if (s->distance <= HEADS_LOCAL_MAX)
        return HEAD_LOCAL;
    if (s->entropy >= HEADS_BROAD_MIN)
        return HEAD_BROAD;
    return HEAD_MIXED;
}

double heads_loss(const Model *m, Activations *a, const int *inputs, const int *targets,
                  int n, int T, const unsigned char *head_on)
{
    PassOptions po = {.head_on = head_on};
    double total = 0.0;
    for (int w0 = 0; w0 < n; w0 += a->B) {
        int B = n - w0 < a->B ? n - w0 : a->B;
        size_t off = (size_t)w0 * T;
        gpt_forward(m, a, inputs + off, targets + off, B, T, &po);
        for (int i = 0; i < B * T; i++)
            total += a->losses[i];
    }
    return total / ((double)n * T);
}

int heads_gate_grad(double *total, double *per_window, const Model *m, Activations *a,
                    const int *inputs, const int *targets, int n, int T,
                    const unsigned char *head_on, char *err, size_t errlen)
{
    int nh = m->cfg.L * m->cfg.H;
    /* The backward needs somewhere to put parameter gradients, which nobody
     * reads: a buffer of our own, so m itself stays read-only. */
    Grads grads;
    double *g = calloc((size_t)nh, sizeof(double));
    if (!g)
        return err_set(err, errlen, "out of memory for the gate gradient");
    if (grads_init(&grads, m, err, errlen)) {
        free(g);
        return -1;
    }
    memset(total, 0, (size_t)nh * sizeof(double));
    memset(per_window, 0, (size_t)nh * sizeof(double));
    PassOptions po = {.head_on = head_on, .head_grad = g};
    for (int w = 0; w < n; w++) {
        const int *in = inputs + (size_t)w * T, *tg = targets + (size_t)w * T;
        memset(g, 0, (size_t)nh * sizeof(double));
        gpt_forward(m, a, in, tg, 1, T, &po);
        gpt_backward(m, &grads, a, in, tg, 1, T, &po);
        for (int k = 0; k < nh; k++) {
            total[k] += g[k];
            per_window[k] += fabs(g[k]);
        }
    }
    for (int k = 0; k < nh; k++) {
        total[k] = fabs(total[k]) / n;
        per_window[k] /= n;
    }
    grads_free(&grads);
    free(g);
    return 0;
}

void heads_summarise(HeadsSummary *s, const HeadStats *st, const double *jsd, int L, int H,
                     double base_loss)
{
    int n = L * H, within = 0, between = 0;
    memset(s, 0, sizeof *s);
    for (int k = 0; k < n; k++) {
        s->type_counts[st[k].type]++;
        if (st[k].masked)
            continue;
        s->active++;
        s->mean_entropy += st[k].entropy;
        s->mean_distance += st[k].distance;
        if (s->active == 1 || st[k].delta_loss > s->max_importance)
            s->max_importance = st[k].delta_loss;
        if (st[k].delta_loss < 0.01 * base_loss)
            s->removable_1pct++;
        for (int q = k + 1; q < n; q++) {
            if (st[q].masked)
                continue;
            if (q / H == k / H) {
                s->jsd_within += jsd[(size_t)k * n + q];
                within++;
            } else {
                s->jsd_between += jsd[(size_t)k * n + q];
                between++;
            }
        }
    }
    s->mean_entropy = ratio(s->mean_entropy, s->active);
    s->mean_distance = ratio(s->mean_distance, s->active);
    s->jsd_within = ratio(s->jsd_within, within);
    s->jsd_between = ratio(s->jsd_between, between);
}
