/* infer_eval: the --eval driver. Scores a file with the model: the mean loss of
 * predicting each token from the ones before it (windows of the block size, as
 * model/evaluate's eval_sequence walks them), its perplexity and the bits per
 * byte of the text the predicted tokens stand for. */
#include "app/infer/infer_modes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app/common/cli.h"
#include "model/evaluate.h"

int infer_eval(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    char err[1500];
    TextFile f;
    if (textfile_read(&f, o->eval, 1, err, sizeof err))
        cli_fail("%s", err);
    if (f.n < 2)
        cli_fail("%s: %zu byte(s); scoring needs at least 2 (one input, one target)", o->eval,
                 f.n);
    TokenId *ids = malloc(f.n * sizeof *ids);
    if (!ids)
        cli_fail("out of memory");
    long nids = tok_encode(tok, f.bytes, f.n, ids, o->eval, err, sizeof err);
    if (nids < 0)
        cli_fail("%s", err);
    if (nids < 2)
        cli_fail("%s: %zu bytes make %ld token; scoring needs at least 2 (one input, one "
                 "target)", o->eval, f.n, nids);
    Activations a;
    if (acts_init(&a, &m->cfg, 16, m->cfg.T, 0, err, sizeof err))
        cli_fail("%s", err);
    PassOptions po = {.head_on = o->head_on};
    double loss;
    size_t n;
    if (eval_sequence(m, &a, ids, (size_t)nids, &po, &loss, &n, NULL, err, sizeof err))
        cli_fail("%s", err);
    /* The bytes the predicted tokens (all but the first) stand for. */
    size_t bytes = tok_count_bytes(tok, ids + 1, n);
    double bpb = eval_bpb(loss, n, bytes);
    if (o->json)
        printf("{\"loss\":%.9g,\"ppl\":%.9g,\"bpb\":%.9g,\"tokens\":%zu,\"bytes\":%zu}\n",
               loss, exp(loss), bpb, n, bytes);
    else
        printf("eval loss %.6f ppl %.4f bpb %.4f tokens %zu bytes %zu\n", loss, exp(loss), bpb,
               n, bytes);
    acts_free(&a);
    free(ids);
    textfile_free(&f);
    return 0;
}

