/* heads_windows: the windows heads_measure scores and the probes it runs
 * (heads_measure.h): spread over a file, one window of a text, or a training
 * batch, with their delimiter keys, in-text repeat targets and the repeated
 * random probes drawn from the windows' own tokens. */
#include "analysis/heads_measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/errbuf.h"
#include "util/rng.h"

static void *zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

static int oom(char *err, size_t errlen, const char *what)
{
    return err_set(err, errlen, "out of memory for %s", what);
}

void heads_windows_free(HeadsWindows *w)
{
    free(w->start);
    free(w->in);
    free(w->tg);
    free(w->match);
    free(w->delim);
    free(w->probe);
    memset(w, 0, sizeof *w);
}

/* The delimiter share of w's windows, and its probes drawn from the alphabet of
 * its windows (heads_probe_alphabet), each of up to probe_T tokens, from a
 * generator of their own so they do not change with the number of windows. */
static int windows_finish(HeadsWindows *w, int probe_T, const Tokenizer *tok, uint64_t seed,
                          char *err, size_t errlen)
{
    size_t NT = (size_t)w->nwin * w->T;
    double share = 0.0, rows = 0.0;
    for (int k = 0; k < w->nwin; k++) {
        double r;
        share += heads_delim_share(w->delim + (size_t)k * w->T, w->T, &r);
        rows += r;
    }
    w->delim_share = rows > 0 ? share / rows : NAN;
    int *copy_key = zalloc(NT, sizeof(int)), *copy_first = zalloc(NT, sizeof(int));
    int *alpha = zalloc((size_t)tok->V, sizeof(int)), *pool = zalloc((size_t)tok->V, sizeof(int));
    int rc = 0;
    if (!copy_key || !copy_first || !alpha || !pool) {
        rc = oom(err, errlen, "the probes");
        goto done;
    }
    heads_keys_copy(copy_key, copy_first, w->in, w->nwin, w->T);
    int na = heads_probe_alphabet(alpha, &w->probe_rule, w->in, copy_key, w->nwin, w->T, tok);
    w->P = probe_T / 2 < na ? probe_T / 2 : na;
    w->nprobe = w->P >= 1 ? HEADS_PROBES : 0;
    w->probe = zalloc((size_t)HEADS_PROBES * 2 * (w->P > 0 ? w->P : 1), sizeof(int));
    if (!w->probe) {
        rc = oom(err, errlen, "the probes");
        goto done;
    }
    Rng prng;
    rng_init(&prng, rng_hash(seed, RNG_STREAM_HEADS, 1), RNG_STREAM_HEADS);
    for (int p = 0; p < w->nprobe; p++)
        heads_probe_build(w->probe + (size_t)p * 2 * w->P, probe_T, alpha, na, pool, &prng);
done:
    free(copy_key);
    free(copy_first);
    free(alpha);
    free(pool);
    return rc;
}

static int windows_alloc(HeadsWindows *w, int nwin, int T, int with_tg, char *err,
                         size_t errlen)
{
    size_t NT = (size_t)nwin * T;
    memset(w, 0, sizeof *w);
    w->T = T;
    w->nwin = nwin;
    w->in = zalloc(NT, sizeof(int));
    w->match = zalloc(NT, sizeof(int));
    w->delim = zalloc(NT, 1);
    w->tg = with_tg ? zalloc(NT, sizeof(int)) : NULL;
    w->start = zalloc((size_t)nwin, sizeof(size_t));
    if (!w->in || !w->match || !w->delim || (with_tg && !w->tg) || !w->start) {
        heads_windows_free(w);
        return oom(err, errlen, "the windows");
    }
    return 0;
}

int heads_windows_spread(HeadsWindows *w, const TokenId *ids, size_t nids, int T, int nwin,
                         const Tokenizer *tok, uint64_t seed, char *err, size_t errlen)
{
    if (windows_alloc(w, nwin, T, 1, err, errlen))
        return -1;
    Rng rng;
    rng_init(&rng, seed, RNG_STREAM_HEADS);
    uint64_t S = nids - (size_t)T, N = (uint64_t)nwin;
    for (int k = 0; k < nwin; k++) {
        uint64_t lo = (uint64_t)k * S / N, hi = (uint64_t)(k + 1) * S / N;
        size_t s = (size_t)(hi > lo ? lo + rng_below(&rng, hi - lo) : lo);
        w->start[k] = s;
        for (int t = 0; t < T; t++) {
            size_t i = (size_t)k * T + t;
            w->in[i] = ids[s + t];
            w->tg[i] = ids[s + t + 1];
            w->delim[i] = (unsigned char)heads_token_is_delim(tok, ids[s + t]);
        }
    }
    heads_repeat_targets(w->match, w->in, nwin, T);
    if (windows_finish(w, T, tok, seed, err, errlen)) {
        heads_windows_free(w);
        return -1;
    }
    return 0;
}

int heads_windows_one(HeadsWindows *w, const int *x, int T, int probe_T, const Tokenizer *tok,
                      uint64_t seed, char *err, size_t errlen)
{
    if (windows_alloc(w, 1, T, 0, err, errlen))
        return -1;
    for (int t = 0; t < T; t++) {
        w->in[t] = x[t];
        w->delim[t] = (unsigned char)heads_token_is_delim(tok, x[t]);
    }
    heads_repeat_targets(w->match, w->in, 1, T);
    if (windows_finish(w, probe_T, tok, seed, err, errlen)) {
        heads_windows_free(w);
        return -1;
    }
    return 0;
}

int heads_windows_batch(HeadsWindows *w, const int *tokens, int B, int T, char *err,
                        size_t errlen)
{
    if (windows_alloc(w, B, T, 0, err, errlen))
        return -1;
    memcpy(w->in, tokens, (size_t)B * T * sizeof(int));
    heads_repeat_targets(w->match, w->in, B, T);
    free(w->delim);
    w->delim = NULL;          /* a training batch is not scored on delimiters */
    w->delim_share = NAN;
    return 0;
}
