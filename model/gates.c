/* gates: the hard-concrete head gate's draw, forward, backward and penalty (see
 * gates.h). Each gate's value is computed in double from one float and rounded
 * once, so it does not depend on the thread that computes it. */
#include "model/gates.h"

#include <math.h>

#include "util/rng.h"

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* z = clamp(s (zeta - gamma) + gamma, 0, 1) and, with ds = ds/dlog_alpha,
 * dz = (zeta - gamma) ds inside the clamp and 0 where it holds. */
static float stretch(double s, double ds, float *dz)
{
    double z = s * (GATE_ZETA - GATE_GAMMA) + GATE_GAMMA;
    int inside = z > 0.0 && z < 1.0;
    if (dz)
        *dz = inside ? (float)((GATE_ZETA - GATE_GAMMA) * ds) : 0.0f;
    return z <= 0.0 ? 0.0f : z >= 1.0 ? 1.0f : (float)z;
}

float gate_eval(float log_alpha, float *dz)
{
    double s = sigmoid((double)log_alpha);
    return stretch(s, s * (1.0 - s), dz);
}

float gate_sample(float log_alpha, uint64_t key, uint64_t i, float *dz)
{
    /* 53 random bits, shifted by half a step: u is never 0 or 1. */
    double u = ((double)(rng_hash(key, i, 0) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double s = sigmoid((log(u) - log1p(-u) + (double)log_alpha) / GATE_BETA);
    return stretch(s, s * (1.0 - s) / GATE_BETA, dz);
}

void gates_draw(float *z, float *dz, const float *log_alpha, int B, int H, int noise,
                uint64_t key)
{
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t i = (size_t)b * H + h;
            z[i] = noise ? gate_sample(log_alpha[h], key, i, &dz[i])
                         : gate_eval(log_alpha[h], &dz[i]);
        }
}

void gates_forward(float *out, const float *in, const float *z, int B, int T, int H, int D)
{
    size_t A = (size_t)H * D;
    #pragma omp parallel for schedule(static) if ((long)B * T * H * D >= 16384)
    for (int n = 0; n < B * T; n++) {
        const float *z_b = z + (size_t)(n / T) * H;
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                size_t i = (size_t)n * A + (size_t)h * D + d;
                out[i] = z_b[h] * in[i];
            }
    }
}

/* In the forward pass this was out = z_bh in, so dL/din = z_bh dL/dout and
 * dL/dlog_alpha_h = sum_b dz_bh/dlog_alpha_h sum_{t,d} dL/dout in. One thread per
 * head: its sum runs over b, t, d in order, and it scales only its own slices. */
void gates_backward(float *dout, float *dlog_alpha, const float *in, const float *z,
                    const float *dz, int B, int T, int H, int D)
{
    size_t A = (size_t)H * D;
    #pragma omp parallel for schedule(static) if ((long)B * T * H * D >= 16384)
    for (int h = 0; h < H; h++) {
        double s = 0.0;
        for (int b = 0; b < B; b++) {
            double dot = 0.0;
            float zb = z[(size_t)b * H + h];
            for (int t = 0; t < T; t++) {
                size_t at = ((size_t)b * T + t) * A + (size_t)h * D;
                for (int d = 0; d < D; d++) {
                    dot += (double)dout[at + d] * in[at + d];
                    dout[at + d] *= zb;
                }
            }
            s += (double)dz[(size_t)b * H + h] * dot;
        }
        dlog_alpha[h] += (float)s;
    }
}

int gates_open(const float *log_alpha, size_t n)
{
    int open = 0;
    for (size_t i = 0; i < n; i++)
        open += gate_eval(log_alpha[i], NULL) > 0.0f;
    return open;
}

double gates_penalty(const float *log_alpha, float *dlog_alpha, size_t n, float lambda)
{
    double shift = GATE_BETA * log(-GATE_GAMMA / GATE_ZETA), total = 0.0;
    for (size_t i = 0; i < n; i++) {
        double p = sigmoid((double)log_alpha[i] - shift);
        total += p;
        if (dlog_alpha)
            dlog_alpha[i] += (float)((double)lambda * p * (1.0 - p));
    }
    return (double)lambda * total;
}
