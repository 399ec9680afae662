/* train_loop: the training loop of ./train and everything that happens inside it
 * (see train_run.h): each step's gradient (one batch, or micro-batches summed in a
 * fixed order over --accum and MPI ranks) handed to the trainer's update
 * (trainer/trainer.h: clipping, schedule, AdamW), progress, the JSON
 * log, periodic evaluations and saves, and the three ways a run stops early: a
 * signal, a failed log write, a non-finite loss. */
#include "app/train/train_run.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/common/cli.h"
#include "analysis/heads_measure.h"
#include "data/batch.h"
#include "model/evaluate.h"
#include "model/gates.h"
#include "trainer/limits.h"
#include "util/json.h"
#include "util/rng.h"

/* The run the signal handlers stop and whose files are let go at exit: the one
 * mutable global, because a handler has no other way to reach the run. */
static Run *volatile watched = NULL;

static void on_signal(int sig)
{
    Run *r = watched;
    if (!r)
        return;
    if (r->stop.signal) {
        static const char msg[] = "\ntrain: second signal, exiting at once; "
                                  "the last saved checkpoint is intact\n";
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)ignored;
        for (int k = 0; k < 3; k++)
            if (r->stop.lock_paths[k])
                unlink(r->stop.lock_paths[k]);
        _exit(128 + sig);
    }
    r->stop.signal = sig;
}

/* SIGINT/SIGTERM ask for a save; SIGXFSZ (a file over `ulimit -f`) becomes an
 * EFBIG write error, reported like any other. */
void run_watch_signals(Run *r)
{
    watched = r;
    if (!r) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGXFSZ, SIG_IGN);
}

void run_release_files(Run *r)
{
    for (int k = 0; k < 3; k++)
        r->stop.lock_paths[k] = NULL;
    if (r->files.log_tmp[0])
        unlink(r->files.log_tmp); /* a fresh log not yet in place: ours */
    guard_unlock(&r->files.lock);
    guard_unlock(&r->files.best_lock);
    guard_unlock(&r->files.log_lock);
}

void run_release_watched(void)
{
    Run *r = watched;
    if (r)
        run_release_files(r);
}

void run_release_at_exit(void)
{
    atexit(run_release_watched);
}

/* Only rank 0 writes files and prints progress. */
int run_lead(const Run *r)
{
    return r->dist.rank == 0;
}

/* Ends this process after an orderly stop that every rank reached together. */
void run_exit(Run *r, int code)
{
    dist_finish(&r->dist);
    exit(code);
}

/* The record built so far, written with checked writes. A failure (a full disk,
 * `ulimit -f`) cuts the file back to its last complete record, so the log never
 * holds part of a line that a resumed run would glue its first record onto; the
 * first failure is kept in log_errno and the training loop stops on it. */
static void log_write_record(Run *r)
{
    RunFiles *f = &r->files;
    size_t done = 0;
    while (done < f->log_len) {
        ssize_t n = write(f->log_fd, f->log_rec + done, f->log_len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            f->log_errno = n < 0 && errno ? errno : EIO;
            if (ftruncate(f->log_fd, f->log_end) != 0)
                fprintf(stderr, "train: warning: --log %s: cutting a partly written record "
                        "failed too (%s); its last line is incomplete\n", r->o.log,
                        strerror(errno));
            f->log_len = 0;
            return;
        }
        done += (size_t)n;
    }
    f->log_end += (off_t)f->log_len;
    f->log_len = 0;
}

void run_log(Run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void run_log(Run *r, const char *fmt, ...)
{
    RunFiles *f = &r->files;
    if (f->log_fd < 0 || f->log_errno)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(f->log_rec + f->log_len, f->log_cap - f->log_len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            f->log_errno = EINVAL;
            return;
        }
        if ((size_t)n < f->log_cap - f->log_len) {
            f->log_len += (size_t)n;
            break;
        }
        size_t cap = 2 * (f->log_cap + (size_t)n) + 256;
        char *grown = realloc(f->log_rec, cap);
        if (!grown)
            cli_fail("out of memory for the log");
        f->log_rec = grown;
        f->log_cap = cap;
    }
    if (f->log_len && f->log_rec[f->log_len - 1] == '\n')
        log_write_record(r);
}

int run_log_close(Run *r, int sync)
{
    RunFiles *f = &r->files;
    if (f->log_fd < 0)
        return 0;
    if (sync && !f->log_errno && fsync(f->log_fd) != 0)
        f->log_errno = errno ? errno : EIO;
    if (close(f->log_fd) != 0 && !f->log_errno)
        f->log_errno = errno ? errno : EIO;
    f->log_fd = -1;
    free(f->log_rec);
    f->log_rec = NULL;
    f->log_len = f->log_cap = 0;
    return f->log_errno ? -1 : 0;
}

/* Copies the settings of the run into the training state a checkpoint stores. */
static void sync_state(Run *r, long step)
{
    TrainState *ts = &r->ts;
    const Options *o = &r->o;
    train_options_store(o, ts);
    ts->step = step;
    ts->adam_m = r->tr.adam_m;
    ts->adam_v = r->tr.adam_v;
    ts->batch_rng = r->tr.batches.rng.state;
    ts->data_size = r->file.n; ts->data_hash = r->file.hash;
    ts->accum = r->loop.micro;
    snprintf(ts->data_path, sizeof ts->data_path, "%s", r->file.name);
}

static void crash_now(const char *tmp, void *ctx)
{
    (void)tmp;
    (void)ctx;
    abort();
}

static int save(Run *r, const char *path, long step, char *err, size_t errlen)
{
    sync_state(r, step);
    /* The test suite's crash point (docs/checkpoint.md): abort once the new
     * checkpoint is complete but not yet renamed into place. */
    if (getenv("HEADCOUNT_TEST_CRASH_BEFORE_RENAME"))
        return ckpt_save_hooked(path, &r->tr.model, &r->corpus.tok, step, &r->ts, crash_now, NULL,
                                err, errlen);
    return ckpt_save(path, &r->tr.model, &r->corpus.tok, step, &r->ts, err, errlen);
}

/* Saves --out at step done, remembering it as the last good checkpoint. */
int run_save_out(Run *r, long done, char *err, size_t errlen)
{
    if (run_lead(r) && save(r, r->o.out, done, err, errlen))
        return -1;
    r->files.last_saved = done;
    return 0;
}

/* Where the last good checkpoint is, for messages after a failure. */
void run_last_good(const Run *r, char *buf, size_t len)
{
    if (r->files.last_saved >= 0)
        snprintf(buf, len, "The last good checkpoint is %s (step %ld)", r->o.out, r->files.last_saved);
    else if (r->files.resumed_step >= 0)
        snprintf(buf, len, "This run saved no checkpoint; the one it resumed from, %s (step "
                 "%ld), is intact", r->o.resume, r->files.resumed_step);
    else
        snprintf(buf, len, "This run wrote no checkpoint");
}

/* The command that continues this run into the same files, quoted for a shell. */
static void resume_command(const Run *r, char *buf, size_t len)
{
    char q[4400];
    guard_shell_quote(r->o.out, q, sizeof q);
    int n = snprintf(buf, len, "./train --resume %s", q);
    if (r->o.log && n > 0 && (size_t)n < len) {
        guard_shell_quote(r->o.log, q, sizeof q);
        n += snprintf(buf + n, len - (size_t)n, " --log %s", q);
    }
    if (r->o.keep_best && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " --keep-best");
    if (r->o.heads_every && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " --heads-every %ld", r->o.heads_every);
}

/* Mean loss over eval_iters fixed batches of a split (the same batches at every
 * evaluation: their sampler is re-seeded each time), and, when bpb is not NULL,
 * the same in bits per byte of the targets (eval_bpb). */
double run_estimate(Run *r, const TokenId *ids, size_t len, double *bpb)
{
    BatchSampler s;
    batch_init(&s, r->o.seed, RNG_STREAM_EVAL);
    int B = (int)r->o.batch, T = (int)r->o.block;
    double total = 0.0;
    size_t bytes = 0;
    for (long i = 0; i < r->o.eval_iters; i++) {
        batch_next(&s, ids, len, B, T, r->loop.inputs, r->loop.targets);
        total += gpt_forward(&r->tr.model, &r->tr.acts, r->loop.inputs, r->loop.targets, B, T, NULL);
        for (int k = 0; k < B * T; k++) {
            size_t n;
            tok_piece(&r->corpus.tok, r->loop.targets[k], &n);
            bytes += n;
        }
    }
    double loss = total / (double)r->o.eval_iters;
    if (bpb)
        *bpb = eval_bpb(loss, (size_t)r->o.eval_iters * (size_t)B * (size_t)T, bytes);
    return loss;
}

void run_print_settings(Run *r)
{
    const Options *o = &r->o;
    const Config *c = &r->tr.model.cfg;
    char voc[1100];
    tok_describe(&r->corpus.tok, voc, sizeof voc);
    const Tokenizer *tok = &r->corpus.tok;
    char merges[160] = "";
    if (o->vocab && tok->V < o->vocab)
        snprintf(merges, sizeof merges, " = %d bytes + %d merges (--vocab %ld: no pair occurs "
                 "twice after %d merges)", tok->nbytes, tok->nmerges, o->vocab, tok->nmerges);
    else if (o->vocab)
        snprintf(merges, sizeof merges, " = %d bytes + %d merges", tok->nbytes, tok->nmerges);
    fprintf(stderr, "train: data %s: %zu bytes, vocabulary %d%s, train %zu / val %zu tokens\n",
            r->file.name, r->file.n, c->V, merges, r->corpus.ntrain, r->corpus.nval);
    fprintf(stderr, "train: model L=%d H=%d C=%d D=%d T=%d V=%d, %.3fM parameters\n", c->L, c->H,
            c->C, c->D, c->T, c->V, (double)r->tr.model.table.total / 1e6);
    char said[600];
    train_options_say(o, said, sizeof said);
    fprintf(stderr, "train: %ld steps x batch %ld x %d tokens, lr %g -> %g (warm-up %ld, "
            "cosine)%s, %d threads\n", o->steps, o->batch, c->T, o->lr, o->min_lr, o->warmup,
            said, omp_get_max_threads());
    if (r->loop.micro > 1)
        fprintf(stderr, "train: each step sums %ld micro-batches (--accum %ld x %d rank%s): "
                "%ld sequences a step\n", r->loop.micro, o->accum, r->dist.size,
                r->dist.size > 1 ? "s" : "", r->loop.micro * o->batch);
    fprintf(stderr, "train: checkpoint %s (every %ld steps and at the end)%s%s\n", o->out,
            o->save_every, o->log ? ", log " : "", o->log ? o->log : "");
    char *name = malloc(json_string(NULL, r->file.name) + 1);
    if (!name)
        cli_fail("out of memory");
    json_string(name, r->file.name);
    char record[1000];
    train_options_record(o, record, sizeof record);
    run_log(r, "{\"type\":\"settings\",\"data\":%s,\"data_bytes\":%zu,\"vocab\":%d,"
               "\"vocab_bytes\":%d,\"merges\":%d,\"vocab_asked\":%ld,"
               "\"layers\":%d,\"heads\":%d,\"embd\":%d,\"head_size\":%d,\"block\":%d,"
               "\"params\":%zu,%s,\"threads\":%d,\"resume\":%s,\"accum\":%ld,\"ranks\":%d}\n",
               name, r->file.n, c->V, tok->nbytes, tok->nmerges, o->vocab, c->L, c->H, c->C, c->D,
               c->T, r->tr.model.table.total, record, omp_get_max_threads(),
               o->resume ? "true" : "false", o->accum, r->dist.size);
    free(name);
}

/* A checkpoint could not be written (a full disk, `ulimit -f`): the run stops at
 * once, with the reason and where the last good checkpoint is. */
static void stop_save_failed(const Run *r, long done, const char *what, const char *err)
{
    char good[5000];
    run_last_good(r, good, sizeof good);
    cli_fail("%s was not saved at step %ld, so the run stops: %s. %s", what, done, err, good);
}

/* The estimate at an evaluation point; keeps the best checkpoint if asked. */
static void evaluate_now(Run *r, long done)
{
    double bpb = NAN;
    double tr = run_estimate(r, r->corpus.ids, r->corpus.ntrain, NULL);
    double va = r->corpus.nval ? run_estimate(r, r->corpus.ids + r->corpus.ntrain, r->corpus.nval,
                                              &bpb)
                               : NAN;
    const Config *c = &r->tr.model.cfg;
    char said[64] = "", logged[64] = "";
    if (c->gates) {
        int open = gates_open(r->tr.model.w.log_alpha, (size_t)c->L * c->H);
        snprintf(said, sizeof said, " | open heads %d of %d", open, c->L * c->H);
        snprintf(logged, sizeof logged, ",\"open_heads\":%d", open);
    }
    fprintf(stderr, "eval step %ld: train loss %.4f | val loss %.4f | val bpb %.4f%s (%ld batches "
            "each)\n", done, tr, va, bpb, said, r->o.eval_iters);
    if (isfinite(va))
        run_log(r, "{\"type\":\"eval\",\"step\":%ld,\"train_loss\":%.6f,\"val_loss\":%.6f,"
                   "\"val_bpb\":%.6f%s}\n", done, tr, va, bpb, logged);
    else
        run_log(r, "{\"type\":\"eval\",\"step\":%ld,\"train_loss\":%.6f%s}\n", done, tr,
                logged);
    if (isfinite(va) && (r->ts.best_step < 0 || va < r->ts.best_val)) {
        r->ts.best_val = va;
        r->ts.best_step = done;
        if (r->o.keep_best) {
            char err[1500];
            if (save(r, r->files.best, done, err, sizeof err))
                stop_save_failed(r, done, "the best checkpoint", err);
        }
    }
}

/* avg_s is the running mean step time of the steps after the run's first (which
 * also pays for warming up: threads, page faults, caches), 0 until one is timed;
 * until then there is no estimate of the time left. */
static void progress(Run *r, long done, double loss, float lr, double step_s, double avg_s)
{
    char eta[32] = "--";
    if (avg_s > 0)
        cli_duration(avg_s * (double)(r->o.steps - done), eta, sizeof eta);
    double tok = (double)r->o.batch * (double)r->o.block;
    fprintf(stderr, "step %ld/%ld | loss %.4f | lr %.2e | %.0f ms | %.1fk tok/s | eta %s\n", done,
            r->o.steps, loss, lr, step_s * 1e3, tok / (avg_s > 0 ? avg_s : step_s) / 1e3, eta);
}

/* --heads-every: the per-head metrics and relations of the step's first
 * micro-batch, measured right after its forward and backward (its attention
 * weights are still in the activations; in a routed model the rows its heads
 * skipped are filled in first). The first micro-batch is rank 0's first
 * under MPI as without it, so -np N and --accum N log the same numbers. */
static void measure_heads(Run *r)
{
    const Config *c = &r->tr.model.cfg;
    RunLoop *lp = &r->loop;
    gpt_fill_unrouted(&r->tr.model, &r->tr.acts, (int)r->o.batch, c->T);
    char *err = lp->heads_err;
    size_t len = sizeof lp->heads_err;
    err[0] = '\0';
    HeadsWindows w;
    if (heads_windows_batch(&w, lp->inputs, (int)r->o.batch, c->T, err, len))
        return;
    int with_planted = lp->heads_starts != NULL;
    HeadsMeasureIn in = {
        .what = HEADS_ROWS | HEADS_WINDOW_RELATIONS, .m = &r->tr.model, .tok = &r->corpus.tok,
        .w = &w, .filled = 1, .counts = lp->token_counts,
        .planted = with_planted ? &lp->planted : NULL, .starts = lp->heads_starts,
        .window_relations = with_planted ? HEADS_REL_COUNT : HEADS_REL_TEXT,
    };
    heads_measure(&lp->heads, &in, &r->tr.acts, err, len);
    heads_windows_free(&w);
}

/* Before the batch measure_heads will read is drawn: where its windows start,
 * for the planted relations' keys. */
static void peek_heads_batch(Run *r, size_t ntrain)
{
    if (r->loop.heads_starts)
        batch_peek(&r->tr.batches, ntrain, (int)r->o.batch, r->tr.model.cfg.T,
                   r->loop.heads_starts);
}

/* The metrics measure_heads took this step, as one JSON line. */
static void log_heads(Run *r, long done)
{
    const Config *c = &r->tr.model.cfg;
    const HeadsMeasured *hm = &r->loop.heads;
    const HeadsRelation *rel = hm->rel;
    char name[32];
    if (r->loop.heads_err[0]) {
        fprintf(stderr, "train: warning: head metrics skipped at step %ld: %s\n", done,
                r->loop.heads_err);
        return;
    }
    run_log(r, "{\"type\":\"heads\",\"step\":%ld,\"heads\":[", done);
    for (int l = 0; l < c->L; l++)
        for (int h = 0; h < c->H; h++) {
            const HeadStats *s = &hm->st[l * c->H + h];
            run_log(r, "%s{\"layer\":%d,\"head\":%d", l + h ? "," : "", l, h);
            /* The metrics whose rows give them a place in this log, as floats. */
            for (int k, place = 1; (k = heads_metric_at(offsetof(HeadsMetricRow, log), place)) >= 0;
                 place++)
                run_log(r, ",\"%s\":%.5f", heads_metric_table[k].name,
                        (double)(float)heads_metric(s, k));
            run_log(r, "}");
        }
    /* Each layer's mean JSD over its pairs of heads (docs/heads.md): 0 when every
     * head of the layer attends alike. */
    run_log(r, "],\"jsd_within_layer\":[");
    for (int l = 0; l < c->L; l++) {
        double s = 0.0;
        size_t n = (size_t)c->L * c->H;
        for (int p = 0; p < c->H; p++)
            for (int q = p + 1; q < c->H; q++)
                s += hm->jsd[((size_t)l * c->H + p) * n + (size_t)l * c->H + q];
        double pairs = (double)c->H * (c->H - 1) / 2;
        run_log(r, "%s%.6f", l ? "," : "", pairs > 0 ? s / pairs : 0.0);
    }
    /* The relations of this batch (previous-token, bracket, copy, rare, and on the
     * built-in corpus its planted ones): the best head's attention on the
     * relation's key, and a uniform head's; null when the batch has no row of
     * that relation. On the built-in corpus, a relation with minimal pairs in the
     * batch adds their accuracy, logit difference and count (coreference its
     * same-class contrast too, as class_*). */
    const PairScore *ps = hm->pairs;
    run_log(r, "],\"relations\":{");
    for (int q = 0; q < (r->loop.heads_starts ? HEADS_REL_COUNT : HEADS_REL_TEXT); q++) {
        snprintf(name, sizeof name, "\"L%dH%d\"", rel[q].best / c->H, rel[q].best % c->H);
        run_log(r, "%s\"%s\":{\"best_head\":%s,\"attention\":%.5f,\"uniform\":%.5f",
                q ? "," : "", heads_rel_table[q].name, rel[q].best < 0 ? "null" : name,
                rel[q].attention, rel[q].uniform);
        if (r->loop.heads_starts && ps[q].pairs > 0)
            run_log(r, ",\"accuracy\":%.5f,\"logit_diff\":%.5f,\"pairs\":%.0f", ps[q].accuracy,
                    ps[q].logit_diff, ps[q].pairs);
        const PairScore *cl = &ps[PAIRS_COREF_CLASS];
        if (r->loop.heads_starts && q == HEADS_REL_COREF && cl->pairs > 0)
            run_log(r, ",\"class_accuracy\":%.5f,\"class_logit_diff\":%.5f,\"class_pairs\":%.0f",
                    cl->accuracy, cl->logit_diff, cl->pairs);
        run_log(r, "}");
    }
    run_log(r, "}}\n");
}

/* A non-finite loss or gradient norm ends the run before the update touches the
 * parameters; whatever checkpoint was written before stays as it is. */
static void stop_nonfinite(const Run *r, long step, double loss, double norm)
{
    const char *what = isfinite(loss) ? "the gradient norm" : "the loss";
    char good[5000];
    run_last_good(r, good, sizeof good);
    cli_fail("%s is not finite at step %ld (loss %g, gradient norm %g); stopping before the "
             "update. %s; try a lower --lr", what, step, loss, norm, good);
}

/* A write to the log failed: save what was trained (if anything since the last
 * save) and stop, saying why and where the model is. */
static void stop_log_failed(Run *r, long done)
{
    char err[1500], good[5000], cmd[4600];
    const char *why = strerror(r->files.log_errno);
    if (done > r->files.last_saved && run_save_out(r, done, err, sizeof err))
        fprintf(stderr, "train: saving after the log failed did not work either: %s\n", err);
    run_last_good(r, good, sizeof good);
    resume_command(r, cmd, sizeof cmd);
    cli_fail("--log %s: write failed at step %ld: %s. %s%s%s", r->o.log, done, why, good,
             r->files.last_saved >= 0 ? "; continue with: " : "", r->files.last_saved >= 0 ? cmd : "");
}

/* Ctrl-C / SIGTERM after a step: save (unless this step was just saved) and exit. */
static void stop_on_signal(Run *r, long done)
{
    char err[1500], cmd[4600];
    if (done > r->files.last_saved && run_save_out(r, done, err, sizeof err))
        cli_fail("interrupted at step %ld, and saving failed: %s", done, err);
    resume_command(r, cmd, sizeof cmd);
    fprintf(stderr, "train: %s at step %ld of %ld: saved %s; continue with: %s\n",
            r->stop.signal == SIGINT ? "interrupted" : "terminated", done, r->o.steps, r->o.out,
            cmd);
    run_log_close(r, 1);
    run_exit(r, 128 + r->stop.signal);
}

/* One step's gradient, mean loss and mean balance loss (a routed model's, summed
 * over its layers, before its coefficient; else 0). With one micro-batch in all,
 * the gradient is the trainer's own; with more (--accum, or several ranks), the micro-batches
 * are drawn in order from the one sampler, each rank computes its own (round j,
 * micro-batch j * ranks + rank), and dist folds them in micro-batch order (dist.h),
 * so the bits do not depend on the number of ranks. Returns the gradient. */
static float *step_gradient(Run *r, double *loss, double *balance, int heads_due)
{
    const TokenId *ids = r->corpus.ids;
    size_t ntrain = r->corpus.ntrain;
    if (r->loop.micro == 1) {
        if (heads_due)
            peek_heads_batch(r, ntrain);
        trainer_next_batch(&r->tr, ids, ntrain, r->loop.inputs, r->loop.targets);
        *loss = trainer_micro(&r->tr, r->loop.inputs, r->loop.targets, 0);
        *balance = r->tr.acts.balance_loss;
        if (heads_due)
            measure_heads(r);
        return r->tr.grads.data;
    }
    int n = r->dist.size, me = r->dist.rank;
    long k = r->o.accum;
    double mine[LIMIT_ACCUM_MAX], all[LIMIT_ACCUM_MAX];
    double mine_bal[LIMIT_ACCUM_MAX], all_bal[LIMIT_ACCUM_MAX];
    for (long j = 0; j < k; j++) {
        for (int q = 0; q < n; q++) {
            int keep = q == me;
            if (heads_due && j == 0 && keep)
                peek_heads_batch(r, ntrain);
            trainer_next_batch(&r->tr, ids, ntrain, keep ? r->loop.inputs : r->loop.mb_in,
                               keep ? r->loop.targets : r->loop.mb_tg);
        }
        mine[j] = trainer_micro(&r->tr, r->loop.inputs, r->loop.targets, j * n + me);
        mine_bal[j] = r->tr.acts.balance_loss;
        if (heads_due && j == 0)
            measure_heads(r);
        dist_fold(&r->dist, r->loop.acc, r->tr.grads.data, (int)j);
    }
    dist_gather(&r->dist, r->loop.acc, 1.0f / (float)r->loop.micro);
    dist_losses(&r->dist, mine, (int)k, all);
    if (r->tr.model.cfg.route_k)
        dist_losses(&r->dist, mine_bal, (int)k, all_bal);
    double total = 0.0, total_bal = 0.0;
    for (long i = 0; i < r->loop.micro; i++) {
        total += all[i];
        total_bal += r->tr.model.cfg.route_k ? all_bal[i] : 0.0;
    }
    *loss = total / (double)r->loop.micro;
    *balance = total_bal / (double)r->loop.micro;
    return r->loop.acc;
}

void run_train_loop(Run *r, long start)
{
    const Options *o = &r->o;
    int B = (int)o->batch, T = (int)o->block;
    double last_print = 0.0, avg = 0.0;
    char err[1500];
    for (long step = start; step < o->steps; step++) {
        double t0 = cli_now(), loss, balance;
        long done = step + 1;
        int heads_due = r->files.log_fd >= 0 && o->heads_every &&
                        (done % o->heads_every == 0 || done == start + 1);
        float *grads = step_gradient(r, &loss, &balance, heads_due);
        TrainStep s;
        if (trainer_update(&r->tr, grads, loss, &s))
            stop_nonfinite(r, step + 1, loss, s.norm);
        double norm = s.norm;
        float lr = s.lr;
        double t1 = cli_now(), dt = t1 - t0;
        if (step > start)
            avg = step == start + 1 ? dt : 0.9 * avg + 0.1 * dt;
        double tokens = (double)B * T * (double)r->loop.micro;
        char gates[64] = "", route[64] = "";
        if (r->tr.model.cfg.gates)
            snprintf(gates, sizeof gates, ",\"gate_penalty\":%.6f", s.gate_penalty);
        if (r->tr.model.cfg.route_k)
            snprintf(route, sizeof route, ",\"balance_loss\":%.6f", balance);
        if (done % o->log_every == 0 || done == o->steps)
            run_log(r, "{\"type\":\"step\",\"step\":%ld,\"loss\":%.6f%s%s,\"lr\":%.6e,"
                       "\"grad_norm\":%.6f,\"ms\":%.3f,\"tok_s\":%.1f}\n", done, loss, gates, route,
                       lr, norm, dt * 1e3, tokens / dt);
        if (heads_due)
            log_heads(r, done);
        if (o->progress_every > 0 &&
            (done == start + 1 || done == o->steps || t1 - last_print >= o->progress_every)) {
            progress(r, done, loss, lr, dt, avg);
            last_print = t1;
        }
        if (run_lead(r) && ((o->eval_every && done % o->eval_every == 0) || done == o->steps))
            evaluate_now(r, done);
        /* Every rank stops at the same step: a signal to any of them, or the log
         * (rank 0's) failing, ends all (256 marks the log). */
        int stop = r->stop.signal | (r->files.log_errno ? 256 : 0);
        if (r->dist.size > 1)
            stop = dist_any(&r->dist, stop);
        if (stop & 256)
            stop_log_failed(r, done);
        if (o->save_every && done % o->save_every == 0 && done < o->steps &&
            run_save_out(r, done, err, sizeof err))
            stop_save_failed(r, done, "the checkpoint", err);
        if (stop && done < o->steps) {
            if (!r->stop.signal)
                r->stop.signal = stop & 255;
            stop_on_signal(r, done);
        }
    }
}
