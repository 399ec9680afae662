/* train_finish: the end of a ./train run (see train_run.h): the final save, the
 * whole-split evaluation (and, for the induction task, the copy loss), the
 * summary on stderr and in the log, and freeing what the run holds. */
#include "app/train/train_run.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"
#include "data/induction.h"
#include "model/evaluate.h"

/* --corpus induction: the final loss on the val split's letters of a first copy
 * and of a later copy whose earlier copy is in the same window (data/induction.h). */
static void copy_loss(Run *r, const float *token_loss, double *first, double *repeat)
{
    char err[300];
    InductionSpec spec = induction_default_spec();
    uint8_t *back = malloc(r->file.n);
    char *text = malloc(r->file.n);
    if (!back || !text)
        cli_fail("out of memory for the copy loss");
    if (induction_generate(text, back, r->file.n, INDUCTION_CORPUS_SEED, &spec, err, sizeof err))
        cli_fail("the copy loss: %s", err);
    free(text);
    size_t nf, nr;
    induction_copy_loss(back, r->corpus.ntrain, r->corpus.nval, r->tr.model.cfg.T, token_loss,
                        first, &nf, repeat, &nr);
    free(back);
    fprintf(stderr, "copy: loss %.4f on %zu letters of a first copy, %.4f on %zu repeated "
            "letters (ratio %.3f)\n", *first, nf, *repeat, nr, *repeat / *first);
}

/* After the last step: save first, so that the final evaluation (the whole val
 * split, which can take a while) can be interrupted without losing anything. */
void run_finish(Run *r, long start, double t0, double train_s)
{
    char err[1500], good[5000];
    if (r->files.last_saved < r->o.steps && run_save_out(r, r->o.steps, err, sizeof err)) {
        run_last_good(r, good, sizeof good);
        cli_fail("training finished but the checkpoint was not saved: %s. %s", err, good);
    }
    if (!run_lead(r))
        return; /* the evaluation and the summary are rank 0's */
    double val = NAN, copy_first = NAN, copy_repeat = NAN;
    size_t nval_tok = 0;
    int copy = train_is_induction(&r->o) && !r->o.data && r->corpus.nval >= 2;
    float *token_loss = copy ? malloc((r->corpus.nval - 1) * sizeof(float)) : NULL;
    if (copy && !token_loss)
        cli_fail("out of memory for the copy loss");
    double bpb = NAN;
    if (r->corpus.nval >= 2) {
        fprintf(stderr, "train: scoring the whole val split (%zu tokens)\n", r->corpus.nval - 1);
        const TokenId *vids = r->corpus.ids + r->corpus.ntrain;
        int rc = eval_sequence_until(&r->tr.model, &r->tr.acts, vids, r->corpus.nval, NULL, &val,
                                     &nval_tok, token_loss, &r->stop.signal, err, sizeof err);
        if (rc < 0)
            cli_fail("%s", err);
        if (rc == 0)
            bpb = eval_bpb(val, nval_tok, tok_count_bytes(&r->corpus.tok, vids + 1, nval_tok));
        if (rc == 0 && copy)
            copy_loss(r, token_loss, &copy_first, &copy_repeat);
    }
    free(token_loss);
    double train_est = r->stop.signal ? NAN : run_estimate(r, r->corpus.ids, r->corpus.ntrain, NULL);
    if (r->stop.signal) {
        fprintf(stderr, "train: %s during the final evaluation; %s is saved and complete "
                "(step %ld of %ld)\n", r->stop.signal == SIGINT ? "interrupted" : "terminated",
                r->o.out, r->o.steps, r->o.steps);
        run_log_close(r, 1);
        run_exit(r, 128 + r->stop.signal);
    }
    double wall = cli_now() - t0;
    long steps_run = r->o.steps - start;
    double tok_s = (double)steps_run * (double)r->o.batch * (double)r->o.block *
                   (double)r->loop.micro / train_s;
    char dur[32];
    cli_duration(wall, dur, sizeof dur);
    fprintf(stderr, "done: %ld steps in %.1f s (%.0f tok/s) | train loss %.4f (estimate) | "
            "val loss %.4f, val bpb %.4f (whole val split, %zu tokens) | total %s | saved %s\n",
            steps_run, train_s, tok_s, train_est, val, bpb, nval_tok, dur, r->o.out);
    char vbuf[32] = "null", bbuf[32] = "null";
    if (isfinite(val))
        snprintf(vbuf, sizeof vbuf, "%.6f", val);
    if (isfinite(bpb))
        snprintf(bbuf, sizeof bbuf, "%.6f", bpb);
    run_log(r, "{\"type\":\"final\",\"step\":%ld,\"train_loss\":%.6f,\"val_loss\":%s,"
               "\"val_bpb\":%s,\"val_tokens\":%zu,\"train_seconds\":%.3f,"
               "\"wall_seconds\":%.3f,\"tok_s\":%.1f", r->o.steps, train_est, vbuf, bbuf,
               nval_tok, train_s, wall, tok_s);
    if (isfinite(copy_first) && isfinite(copy_repeat))
        run_log(r, ",\"copy_loss_first\":%.6f,\"copy_loss_repeat\":%.6f", copy_first,
                copy_repeat);
    run_log(r, "}\n");
    if (run_log_close(r, 1))
        cli_fail("--log %s: write failed at the end of the run: %s; %s is saved", r->o.log,
                 strerror(r->files.log_errno), r->o.out);
}

void run_free(Run *r, Tokenizer *tok)
{
    free(r->loop.inputs);
    free(r->loop.targets);
    free(r->loop.mb_in);
    free(r->loop.mb_tg);
    free(r->loop.acc);
    heads_measure_free(&r->loop.heads);
    free(r->loop.token_counts);
    planted_free(&r->loop.planted);
    free(r->loop.heads_starts);
    trainer_free(&r->tr);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    tok_free(tok);
}
