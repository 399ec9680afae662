/* evaluate: whole-sequence loss in consecutive windows (see evaluate.h). */
#include "model/evaluate.h"

#include <math.h>
#include <stdlib.h>

#include "util/errbuf.h"

int eval_sequence(const Model *m, Activations *a, const uint16_t *ids, size_t n,
                  const PassOptions *opt, double *mean_loss, size_t *count, float *token_loss,
                  char *err, size_t errlen)
{
    return eval_sequence_until(m, a, ids, n, opt, mean_loss, count, token_loss, NULL, err,
                               errlen);
}

int eval_sequence_until(const Model *m, Activations *a, const uint16_t *ids, size_t n,
                        const PassOptions *opt, double *mean_loss, size_t *count,
                        float *token_loss, const volatile int *stop, char *err, size_t errlen)
{
    if (n < 2)
        return err_set(err, errlen, "need at least 2 tokens to score, got %zu", n);
    int T = a->T, Bcap = a->B;
    size_t predicted = n - 1, nfull = predicted / (size_t)T;
    int tail = (int)(predicted % (size_t)T);
    int *in = malloc((size_t)Bcap * T * sizeof(int)), *tg = malloc((size_t)Bcap * T * sizeof(int));
    if (!in || !tg) {
        free(in);
        free(tg);
        return err_set(err, errlen, "out of memory for evaluation batches");
    }
    double total = 0.0;
    for (size_t w0 = 0; w0 < nfull; w0 += (size_t)Bcap) {
        if (stop && *stop) {
            free(in);
            free(tg);
            return 1;
        }
        int B = nfull - w0 < (size_t)Bcap ? (int)(nfull - w0) : Bcap;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                size_t pos = (w0 + (size_t)b) * T + t;
                in[b * T + t] = ids[pos];
                tg[b * T + t] = ids[pos + 1];
            }
        gpt_forward(m, a, in, tg, B, T, opt);
        for (int i = 0; i < B * T; i++) {
            total += a->losses[i];
            if (token_loss)
                token_loss[w0 * T + (size_t)i] = a->losses[i];
        }
    }
    if (tail > 0) {
        size_t start = nfull * T;
        for (int t = 0; t < tail; t++) {
            in[t] = ids[start + t];
            tg[t] = ids[start + t + 1];
        }
        gpt_forward(m, a, in, tg, 1, tail, opt);
        for (int i = 0; i < tail; i++) {
            total += a->losses[i];
            if (token_loss)
                token_loss[start + (size_t)i] = a->losses[i];
        }
    }
    free(in);
    free(tg);
    *mean_loss = total / (double)predicted;
    if (count)
        *count = predicted;
    return 0;
}

double eval_bpb(double mean_loss, size_t tokens, size_t bytes)
{
    return mean_loss * ((double)tokens / (double)bytes) / log(2.0);
}
