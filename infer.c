/* infer: uses a checkpoint: --eval scores a file, --heads analyses what every
 * attention head does, --explore writes an interactive page of every head's
 * attention on a text, and otherwise it samples text. The whole program: parse
 * the flags (app/infer/infer_options.c), load the checkpoints, check the
 * outputs (infer_outputs.c) and run the mode; each mode's driver is in
 * app/infer/ (infer_sample.c, infer_eval.c, infer_heads.c, infer_explore.c). */
#include "app/infer/infer_modes.h"

#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"
#include "data/conllu.h"
#include "data/corpus.h"
#include "trainer/ckpt.h"

/* --explore with --text or --text-file: the page of that text through the one
 * model, or the compare page through every --ckpt (state[k]: model k's
 * training state, NULL for none). */
static int run_explore_text(const InferOptions *o, const Model *m, const Tokenizer *tok,
                            const TrainState *const *state)
{
    if (o->text_file && conllu_is_path(o->text_file))
        return infer_explore_tree(o, m, tok);
    TextFile f = {.bytes = NULL};
    const unsigned char *bytes = (const unsigned char *)o->text;
    size_t nbytes = o->text ? strlen(o->text) : 0;
    const char *source = "the --text argument";
    if (o->text_file) {
        infer_read_input(&f, o->text_file, "text-file");
        bytes = f.bytes;
        nbytes = f.n;
        source = f.name;
    }
    int rc = o->ckpt.n > 1 ? infer_compare(o, m, tok, state, bytes, nbytes, source)
                           : infer_explore(o, m, tok, bytes, nbytes, source, 0);
    if (o->text_file)
        textfile_free(&f);
    return rc;
}

int main(int argc, char **argv)
{
    cli_prog = "infer";
    cli_hold_std_fds();
    cli_bounded_spin_openmp(argv);
    InferOptions o;
    infer_options_parse(argc, argv, &o);
    /* A file over `ulimit -f` is a write error (EFBIG) with a message, not a kill. */
    signal(SIGXFSZ, SIG_IGN);
    if (o.threads)
        omp_set_num_threads((int)o.threads);
    /* Every --ckpt (several only for --explore), each with its training state. */
    int n = o.ckpt.n;
    Model *m = calloc((size_t)n, sizeof *m);
    Tokenizer *tok = calloc((size_t)n, sizeof *tok);
    TrainState *ts = calloc((size_t)n, sizeof *ts);
    if (!m || !tok || !ts)
        cli_fail("out of memory");
    const TrainState *state[INFER_CKPT_MAX];
    const char *trained_on[INFER_CKPT_MAX];
    char err[1500];
    Bf16Path bf16_path = cli_bf16_path();
    int bf16 = 0;
    for (int k = 0; k < n; k++) {
        long steps;
        int has_state;
        if (ckpt_load(o.ckpt.path[k], &m[k], &tok[k], &steps, &ts[k], &has_state, err,
                      sizeof err))
            cli_fail("%s", err);
        int file = has_state && corpus_source_of(ts[k].data_path) == CORPUS_SOURCE_FILE;
        trained_on[k] = file ? ts[k].data_path : NULL;
        state[k] = has_state ? &ts[k] : NULL;
        if (o.precision)
            m[k].precision = infer_precision(o.precision);
        m[k].bf16_path = bf16_path;
        bf16 |= m[k].precision == PRECISION_BF16;
    }
    if (bf16)
        cli_say_bf16(bf16_path);
    infer_check_outputs(&o, trained_on);
    if (o.mask)
        o.head_on = infer_parse_mask(o.mask, &m[0].cfg);
    o.train_state = state[0];
    int rc;
    if (o.eval)
        rc = infer_eval(&o, &m[0], &tok[0]);
    else if (o.heads)
        rc = infer_heads(&o, &m[0], &tok[0]);
    else if (o.explore && (o.text || o.text_file))
        rc = run_explore_text(&o, m, tok, state);
    else
        rc = infer_sample(&o, &m[0], &tok[0]);
    free(o.head_on);
    for (int k = 0; k < o.nsweep; k++)
        free(o.sweep_ckpt[k]);
    for (int k = 0; k < n; k++) {
        model_free(&m[k]);
        tok_free(&tok[k]);
    }
    free(m);
    free(tok);
    free(ts);
    if (rc == 0)
        cli_close_stdout();
    return rc;
}
