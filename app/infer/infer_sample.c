/* infer_sample: the text generation driver of ./infer (the default mode).
 *
 * Reads the prompt, encodes it with the model's tokenizer, and writes each
 * sample to stdout as prompt + continuation, each token's bytes as soon as the
 * token is drawn;
 * settings, notes and the final statistics go to stderr. With several samples
 * each one (the first too) comes under the same header; on a terminal the text
 * ends with a newline. With --explore (and no --text) the first sample's bytes
 * are kept and handed to the explorer. The decoder, the
 * window policy and the sampling rule are in analysis/sample.h; the policies
 * users see are in docs/sampling.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/common/cli.h"
#include "data/corpus.h"
#include "app/infer/infer_modes.h"
#include "util/rng.h"
#include "analysis/sample.h"

#define SAMPLE_HEADER "----- sample %ld -----\n"

/* The bytes of one sample, kept for the explorer. */
typedef struct {
    unsigned char *bytes;
    size_t n, cap;
} Kept;

static void kept_add(Kept *k, const void *bytes, size_t n)
{
    if (k->n + n > k->cap) {
        k->cap = (k->n + n) * 2 + 64;
        k->bytes = realloc(k->bytes, k->cap);
        if (!k->bytes)
            cli_fail("out of memory");
    }
    memcpy(k->bytes + k->n, bytes, n);
    k->n += n;
}

/* The prompt's bytes: --prompt, --prompt-file, or none. An empty file counts
 * as no prompt. *owned is set when the bytes must be freed (textfile_free). */
static void read_prompt(const InferOptions *o, const unsigned char **bytes, size_t *n,
                        TextFile *owned)
{
    char err[1500];
    memset(owned, 0, sizeof *owned);
    *bytes = NULL;
    *n = 0;
    if (o->prompt) {
        *bytes = (const unsigned char *)o->prompt;
        *n = strlen(o->prompt);
        return;
    }
    if (!o->prompt_file)
        return;
    if (strcmp(o->prompt_file, "-") == 0) {
        infer_read_input(owned, "-", "prompt-file");
        *bytes = owned->bytes;
        *n = owned->n;
        return;
    }
    struct stat st;
    if (stat(o->prompt_file, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        return;
    if (textfile_read(owned, o->prompt_file, 1, err, sizeof err))
        cli_fail("--prompt-file %s", err);
    *bytes = owned->bytes;
    *n = owned->n;
}

/* Writes n bytes and flushes, so a reader sees the text as it is made. */
static void emit(const void *bytes, size_t n)
{
    errno = 0;
    if ((n && fwrite(bytes, 1, n, stdout) != n) || fflush(stdout) != 0)
        cli_fail("writing standard output: %s", errno ? strerror(errno) : "a write failed");
}

static void print_settings(const InferOptions *o, const Model *m)
{
    char topk[32] = "off", topp[32] = "off";
    if (o->top_k > 0 && o->top_k < m->cfg.V)
        snprintf(topk, sizeof topk, "%ld", o->top_k);
    if (o->top_p < 1.0)
        snprintf(topp, sizeof topp, "%g", o->top_p);
    fprintf(stderr, "infer: sampling %ld token(s) x %ld sample(s), temperature %g%s, top-k %s, "
            "top-p %s, seed %llu, %s, block size %d%s%s\n", o->tokens, o->samples,
            o->temperature, o->temperature == 0.0 ? " (greedy)" : "", topk, topp,
            (unsigned long long)o->seed, o->no_cache ? "no cache" : "KV cache", m->cfg.T,
            o->mask ? ", heads off " : "", o->mask ? o->mask : "");
}

/* The context the model starts from: the prompt's last T tokens, or "\n" (token
 * 0 when the vocabulary has no "\n"). Notes on stderr say what was done. */
static int *start_context(const Tokenizer *tok, const TokenId *pids, size_t plen, int T,
                          int *nctx)
{
    *nctx = plen == 0 ? 1 : (plen < (size_t)T ? (int)plen : T);
    int *ctx = malloc((size_t)*nctx * sizeof(int));
    if (!ctx)
        cli_fail("out of memory");
    if (plen == 0) {
        ctx[0] = tok->id['\n'] >= 0 ? tok->id['\n'] : 0;
        if (tok->id['\n'] < 0)
            fprintf(stderr, "infer: note: no prompt and no '\\n' in the vocabulary; starting "
                    "from token 0 (byte 0x%02x)\n", tok->bytes[0]);
        return ctx;
    }
    for (int i = 0; i < *nctx; i++)
        ctx[i] = pids[plen - (size_t)*nctx + i];
    if (plen > (size_t)T)
        fprintf(stderr, "infer: note: the prompt is %zu tokens; the model sees only its last %d "
                "(the block size)\n", plen, T);
    return ctx;
}

/* One sample: n tokens after the context, each token's bytes written as soon as
 * it is drawn. Sets *ttft (seconds since t0) at the first token if it is still
 * negative. */
static void generate(Sampler *s, const int *ctx, int nctx, long n, const SampleSettings *st,
                     Rng *rng, float *scratch, const Tokenizer *tok, double t0, double *ttft,
                     Kept *keep)
{
    if (n == 0)
        return;
    const float *logits = sampler_start(s, ctx, nctx);
    for (long i = 0; i < n; i++) {
        int id = sample_next(logits, tok->V, st, scratch, rng);
        size_t len;
        const unsigned char *piece = tok_piece(tok, id, &len);
        emit(piece, len);
        if (keep)
            kept_add(keep, piece, len);
        if (*ttft < 0.0)
            *ttft = cli_now() - t0;
        if (i + 1 < n)
            logits = sampler_step(s, id);
    }
}

int infer_sample(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    char err[1500];
    const unsigned char *prompt;
    size_t plen;
    TextFile pf;
    read_prompt(o, &prompt, &plen, &pf);
    TokenId *pids = malloc((plen ? plen : 1) * sizeof *pids);
    if (!pids)
        cli_fail("out of memory");
    long np = tok_encode(tok, prompt, plen, pids, o->prompt_file ? o->prompt_file : "the prompt",
                         err, sizeof err);
    if (np < 0)
        cli_fail("%s", err);
    int nctx;
    int *ctx = start_context(tok, pids, (size_t)np, m->cfg.T, &nctx);
    print_settings(o, m);

    Sampler s;
    if (sampler_init(&s, m, o->head_on, !o->no_cache, err, sizeof err))
        cli_fail("%s", err);
    float *scratch = malloc((size_t)m->cfg.V * sizeof(float));
    if (!scratch)
        cli_fail("out of memory");
    SampleSettings st = {.temperature = o->temperature, .top_k = (int)o->top_k,
                         .top_p = o->top_p};
    Rng rng;
    rng_init(&rng, o->seed, RNG_STREAM_SAMPLE);

    double t0 = cli_now(), ttft = -1.0;
    long slides = 0;
    Kept keep = {0};
    for (long k = 0; k < o->samples; k++) {
        if (o->samples > 1) {
            char head[64];
            int len = snprintf(head, sizeof head, SAMPLE_HEADER, k + 1);
            emit(head, (size_t)len);
        }
        emit(prompt, plen);
        Kept *kp = o->explore && k == 0 ? &keep : NULL;
        if (kp)
            kept_add(kp, prompt, plen);
        generate(&s, ctx, nctx, o->tokens, &st, &rng, scratch, tok, t0, &ttft, kp);
        slides += s.slides;
        emit("\n", 1);   /* a sample ends its line, on a terminal or in a file */
    }
    double secs = cli_now() - t0;
    long total = o->tokens * o->samples;
    char first[48] = "no token generated";
    if (ttft >= 0.0)
        snprintf(first, sizeof first, "first token after %.1f ms", ttft * 1e3);
    char context[160] = "";
    if (slides)
        snprintf(context, sizeof context, "; the text outgrew the model's context of %d "
                 "tokens %ld time%s, and each time the model went on from its latest %d",
                 m->cfg.T, slides, slides > 1 ? "s" : "", SAMPLER_KEEP(m->cfg.T));
    fprintf(stderr, "infer: %ld token(s) in %.3f s: %.1f tok/s, %s, %s%s\n", total, secs,
            secs > 0 ? (double)total / secs : 0.0, first, o->no_cache ? "no cache" : "KV cache",
            context);

    int rc = 0;
    if (o->explore)
        rc = infer_explore(o, m, tok, keep.bytes, keep.n, "the first sample", 1);
    free(keep.bytes);
    free(scratch);
    sampler_free(&s);
    free(ctx);
    free(pids);
    textfile_free(&pf);
    return rc;
}
