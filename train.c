/* train: trains a headcount model on a text file (or the built-in corpus).
 *
 * The program's entry point and its setup: reading the flags (app/train_options),
 * checking before anything is written that every output is safe to write
 * (fileguard), loading the data and the model fresh or from a checkpoint, sizing
 * the buffers, and finishing a run (the final save, the whole-split evaluation,
 * the summary). The loop itself, the log and the early stops are in
 * app/train_loop.c; the maths in model/, the data in data/. Checkpoints carry the
 * training state, so --resume continues bit-exactly. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/train_options.h"
#include "app/train_run.h"
#include "app/cli.h"
#include "app/dist.h"
#include "app/fileguard.h"
#include "data/corpus.h"
#include "data/induction.h"
#include "data/synth.h"
#include "trainer/ckpt.h"
#include "model/evaluate.h"
#include "model/gpt.h"
#include "analysis/heads.h"
#include "trainer/limits.h"

static void train_exit(int code) __attribute__((noreturn));

/* The run whose locks are released at exit, whichever way main ends. */
static Run *exiting_run = NULL;

static void release_locks(void)
{
    if (!exiting_run)
        return;
    run_lock_path = NULL;
    guard_unlock(&exiting_run->lock);
    guard_unlock(&exiting_run->best_lock);
}

/* The size of a fresh run's built-in corpus. */
static size_t builtin_size(const Options *o)
{
    return train_is_induction(o) ? INDUCTION_DEFAULT_BYTES : SYNTH_DEFAULT_BYTES;
}

static void load_data(Run *r, const char *path, size_t builtin_bytes)
{
    char err[1500];
    int rc;
    if (path)
        rc = textfile_read(&r->file, path, r->o.allow_binary, err, sizeof err);
    else if (train_is_induction(&r->o))
        rc = induction_textfile(&r->file, builtin_bytes, err, sizeof err);
    else
        rc = textfile_builtin(&r->file, builtin_bytes, err, sizeof err);
    if (rc)
        cli_fail("%s", err);
}

/* Refuses, with the figure, a model and batch that would not fit in the memory
 * this machine has free; `held` floats are already allocated (a resumed model). */
static void check_memory(const Run *r, const Config *cfg, size_t held)
{
    size_t P = (size_t)config_param_count(cfg);
    double floats = 4.0 * (double)P - (double)held +
                    (double)acts_floats(cfg, (int)r->o.batch, cfg->T, r->o.dropout > 0) +
                    (r->micro > 1 ? 2.0 * (double)P : 0.0);
    double bytes = 4.0 * floats + 8.0 * (double)r->o.batch * (double)cfg->T;
    unsigned long long avail = guard_mem_available();
    if (avail && bytes > (double)avail)
        cli_fail("out of memory: %.3fM parameters with batch %ld x %d need %.2f GiB (weights, "
                 "gradients, Adam moments, activations), and this machine has %.2f GiB "
                 "available (MemAvailable); lower --batch, --block, --embd or --layers",
                 (double)P / 1e6, r->o.batch, cfg->T, bytes / 1073741824.0,
                 (double)avail / 1073741824.0);
}

static void setup_fresh(Run *r)
{
    Options *o = &r->o;
    char err[1500];
    load_data(r, o->data, builtin_size(o));
    if (corpus_prepare(&r->corpus, &r->file, NULL, o->val_frac, (int)o->block, err, sizeof err))
        cli_fail("%s", err);
    if (!o->head_size && o->embd % o->heads != 0)
        cli_usage_error("--heads %ld does not divide --embd %ld; pick a divisor or give "
                        "--head-size", o->heads, o->embd);
    Config cfg = {.V = r->corpus.tok.V, .T = (int)o->block, .L = (int)o->layers,
                  .H = (int)o->heads, .C = (int)o->embd,
                  .D = (int)(o->head_size ? o->head_size : o->embd / o->heads)};
    if (config_validate(&cfg, err, sizeof err))
        cli_usage_error("%s", err);
    check_memory(r, &cfg, 0);
    if (trainer_init(&r->tr, &cfg, o->seed, err, sizeof err))
        cli_fail("%s", err);
    r->ts.best_step = -1;
}

/* Reads the checkpoint to resume and takes its settings; the data is loaded
 * later (load_resumed_data), once the outputs are known to be safe to write. */
static void open_resume(Run *r, const unsigned char *given, Tokenizer *tok)
{
    Options *o = &r->o;
    TrainState *ts = &r->ts;
    char err[1500];
    int has_state;
    if (ckpt_load_trainer(o->resume, &r->tr, tok, ts, &has_state, err, sizeof err))
        cli_fail("%s", err);
    long steps_done = r->tr.step;
    if (!has_state)
        cli_fail("%s: has no training state (flags 0): it can be evaluated and sampled, not "
                 "resumed", o->resume);
    train_options_resume(o, given, &r->tr.model.cfg, ts);
    o->allow_binary = o->allow_binary || ts->allow_binary;
    if (steps_done >= o->steps)
        cli_usage_error("%s has already trained %ld of %ld steps; give --steps above %ld to "
                        "train further", o->resume, steps_done, o->steps, steps_done);
    /* The step's micro-batch count is the run's; the ranks may change with it. */
    long n = r->dist.size;
    if (given[OPT_ACCUM] && o->accum * n != ts->accum)
        cli_usage_error("--accum %ld on %ld rank%s sums %ld micro-batches a step, and the run "
                        "sums %ld: an exact resume continues the run as it was set up", o->accum,
                        n, n > 1 ? "s" : "", o->accum * n, ts->accum);
    if (ts->accum % n != 0)
        cli_usage_error("the run sums %ld micro-batches a step, which %ld ranks cannot share "
                        "evenly; resume it on a number of ranks that divides %ld", ts->accum, n,
                        ts->accum);
    o->accum = ts->accum / n;
    /* Continue into the same files unless told otherwise. */
    if (!given[OPT_OUT])
        o->out = o->resume;
    if (!o->log)
        fprintf(stderr, "train: note: this resumed run writes no log; pass --log FILE to append "
                "to the run's log (checkpoints do not record it, so that their bytes depend "
                "on the run's settings alone)\n");
    int builtin = strcmp(ts->data_path, CORPUS_BUILTIN_NAME) == 0;
    int induction = strcmp(ts->data_path, INDUCTION_CORPUS_NAME) == 0;
    if (given[OPT_CORPUS] && train_is_induction(o) != induction)
        cli_usage_error("--corpus %s contradicts the checkpoint, which trained on %s", o->corpus,
                        ts->data_path);
    o->corpus = induction ? "induction" : "text";
    if (!given[OPT_DATA] && !builtin && !induction)
        o->data = ts->data_path;
    if (o->heads_every && !o->log)
        cli_usage_error("--heads-every %ld needs --log FILE to write the metrics to",
                        o->heads_every);
    r->resumed_step = steps_done;
    r->last_saved = guard_same_file(o->out, o->resume) ? steps_done : -1;
}

static void load_resumed_data(Run *r, const unsigned char *given, const Tokenizer *tok)
{
    Options *o = &r->o;
    TrainState *ts = &r->ts;
    char err[1500];
    check_memory(r, &r->tr.model.cfg, 4 * r->tr.model.table.total); /* params, grads, moments */
    if (given[OPT_DATA]) {
        load_data(r, o->data, 0);
        if (r->file.hash != ts->data_hash || r->file.n != ts->data_size)
            fprintf(stderr, "train: note: %s differs from the data this run started on (%s); "
                    "continuing on it as asked\n", o->data, ts->data_path);
    } else {
        load_data(r, o->data, (size_t)ts->data_size);
        if (r->file.hash != ts->data_hash || r->file.n != ts->data_size)
            cli_fail("%s changed since the checkpoint was written (%llu bytes, hash %016llx; "
                     "now %zu bytes, hash %016llx); pass --data %s to continue on it anyway",
                     ts->data_path, (unsigned long long)ts->data_size,
                     (unsigned long long)ts->data_hash, r->file.n,
                     (unsigned long long)r->file.hash, ts->data_path);
    }
    if (corpus_prepare(&r->corpus, &r->file, tok, o->val_frac, r->tr.model.cfg.T, err,
                       sizeof err))
        cli_fail("%s", err);
    fprintf(stderr, "train: resuming %s at step %ld of %ld\n", o->resume, r->resumed_step,
            o->steps);
    if (given[OPT_STEPS] && o->steps != ts->steps)
        fprintf(stderr, "train: note: total steps changed from %ld to %ld (the cosine schedule "
                "stretches to the new end)\n", ts->steps, o->steps);
}

/* The --keep-best path: x.ckpt -> x.best.ckpt, anything else -> anything.best. */
static void best_path(const char *out, char *buf, size_t len)
{
    size_t n = strlen(out);
    if (n > 5 && strcmp(out + n - 5, ".ckpt") == 0)
        snprintf(buf, len, "%.*s.best.ckpt", (int)(n - 5), out);
    else
        snprintf(buf, len, "%s.best", out);
}

/* Before anything is written: no output is an input or another output, the
 * checkpoints can be written and are locked against a second trainer, and the
 * leftovers of interrupted saves are reported (never removed). */
static void claim_outputs(Run *r)
{
    Options *o = &r->o;
    char err[5000];
    if (o->keep_best)
        best_path(o->out, r->best, sizeof r->best);
    if (!run_lead(r))
        return;
    GuardPath paths[] = {
        {"--data", o->data, 0, NULL},
        {"--resume", o->resume, 0, NULL},
        {"--out", o->out, 1, "--resume"},
        {"--keep-best", r->best[0] ? r->best : NULL, 1, NULL},
        {"--log", o->log, 1, NULL},
    };
    if (guard_check_paths(paths, (int)(sizeof paths / sizeof paths[0]), err, sizeof err))
        cli_usage_error("%s", err);
    if (ckpt_check_writable(o->out, err, sizeof err))
        cli_fail("--out %s", err);
    if (r->best[0] && ckpt_check_writable(r->best, err, sizeof err))
        cli_fail("--keep-best %s", err);
    if (guard_lock(&r->lock, o->out, err, sizeof err))
        cli_fail("%s", err);
    run_lock_path = guard_lock_path(&r->lock);
    if (r->best[0] && guard_lock(&r->best_lock, r->best, err, sizeof err))
        cli_fail("%s", err);
    for (int k = 0; k < 2; k++) {
        const char *path = k ? r->best : o->out;
        if (!path[0])
            continue;
        char list[2000];
        int n = guard_leftovers(path, list, sizeof list);
        if (n)
            fprintf(stderr, "train: note: %d leftover temporary file%s of an interrupted save "
                    "beside %s (not removed; delete %s when no run writes there):\n%s\n", n,
                    n > 1 ? "s" : "", path, n > 1 ? "them" : "it", list);
    }
}

/* Writes n bytes to fd, checking for a signal between pieces; 0, -1 (errno set)
 * or 1 when a signal asked to stop. */
static int write_stoppable(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        if (run_stop_signal)
            return 1;
        size_t piece = n < ((size_t)1 << 20) ? n : (size_t)1 << 20;
        ssize_t w = write(fd, p, piece);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* --dump-val: the held-out bytes, exactly as training splits them, for --eval
 * and --heads (the built-in corpus has no file of its own). A regular file is
 * replaced atomically (a temporary beside it, renamed when complete), so no
 * partial file is ever left; a device or FIFO is written directly. */
static int dump_val(Run *r)
{
    char err[5000];
    const char *path = r->o.dump_val;
    GuardPath paths[] = {{"--data", r->o.data, 0, NULL}, {"--dump-val", path, 1, NULL}};
    if (guard_check_paths(paths, 2, err, sizeof err))
        cli_usage_error("%s", err);
    struct stat st;
    int exists = stat(path, &st) == 0, direct = exists && !S_ISREG(st.st_mode);
    if (exists && S_ISDIR(st.st_mode))
        cli_fail("--dump-val %s: is a directory, expected a file path", path);
    load_data(r, r->o.data, builtin_size(&r->o));
    if (corpus_prepare(&r->corpus, &r->file, NULL, r->o.val_frac, (int)r->o.block, err,
                       sizeof err))
        cli_fail("%s", err);
    char tmp[4200] = "";
    int fd = direct ? open(path, O_WRONLY | O_CLOEXEC) : ckpt_tmp_create(path, tmp, sizeof tmp);
    if (fd < 0)
        cli_fail("--dump-val %s: cannot write there: %s", path,
                 errno == ENOENT ? "directory does not exist" : strerror(errno));
    size_t n = r->corpus.nval;
    int rc = write_stoppable(fd, r->file.bytes + r->corpus.ntrain, n);
    int saved = errno;
    if (rc == 0 && !direct && fsync(fd) != 0) {
        rc = -1;
        saved = errno;
    }
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && !direct && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0 && tmp[0])
        unlink(tmp); /* ours: created above */
    if (rc == 1) {
        fprintf(stderr, "train: interrupted; %s was not written\n", path);
        exit(128 + run_stop_signal);
    }
    if (rc != 0)
        cli_fail("--dump-val %s: write failed: %s%s", path, strerror(saved),
                 direct ? "" : "; nothing was written there");
    fprintf(stderr, "train: wrote the validation split of %s (%zu bytes) to %s\n", r->file.name,
            n, path);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    return 0;
}

/* The trainer's step settings and activations, the batches, and the buffers of
 * --heads-every and of summed micro-batches. */
static void alloc_buffers(Run *r)
{
    const Options *o = &r->o;
    char err[1500];
    TrainHyper hp = {.lr = (float)o->lr, .min_lr = (float)o->min_lr, .warmup = o->warmup,
                     .steps = o->steps, .clip = (float)o->clip, .dropout = (float)o->dropout,
                     .head_dropout = (float)o->head_dropout, .seed = o->seed, .micro = r->micro,
                     .adam = {.beta1 = (float)o->beta1, .beta2 = (float)o->beta2,
                              .eps = (float)o->eps, .weight_decay = (float)o->wd}};
    if (trainer_prepare(&r->tr, &hp, (int)o->batch, err, sizeof err))
        cli_fail("%s", err);
    size_t bt = (size_t)r->o.batch * r->o.block;
    r->inputs = malloc(bt * sizeof(int));
    r->targets = malloc(bt * sizeof(int));
    if (!r->inputs || !r->targets)
        cli_fail("out of memory for batches");
    if (r->o.heads_every) {
        r->head_metrics = malloc((size_t)r->tr.model.cfg.L * r->tr.model.cfg.H * HEADS_QUICK_COUNT *
                                 sizeof(float));
        if (!r->head_metrics)
            cli_fail("out of memory for head metrics");
    }
    if (r->micro > 1) {
        r->acc = malloc(r->tr.model.table.total * sizeof(float));
        r->mb_in = malloc(bt * sizeof(int));
        r->mb_tg = malloc(bt * sizeof(int));
        if (!r->acc || !r->mb_in || !r->mb_tg || dist_setup(&r->dist, r->tr.model.table.total))
            cli_fail("out of memory for gradient accumulation");
    }
}

/* Every rank must train on the same bytes: a copy that differs on one node would
 * make the ranks' gradients disagree silently. */
static void check_same_data(const Run *r)
{
    int bad;
    uint64_t size, hash;
    if (dist_same_data(&r->dist, r->file.n, r->file.hash, &bad, &size, &hash))
        return;
    if (!run_lead(r))
        train_exit(1); /* rank 0 says why */
    cli_fail("the ranks read different data: rank 0 read %s as %zu bytes with hash %016llx, "
             "rank %d as %llu bytes with hash %016llx; every rank needs the same data file",
             r->file.name, r->file.n, (unsigned long long)r->file.hash, bad,
             (unsigned long long)size, (unsigned long long)hash);
}

static void open_log(Run *r)
{
    if (!r->o.log || !run_lead(r))
        return;
    r->log = fopen(r->o.log, r->o.resume ? "a" : "w");
    if (!r->log)
        cli_fail("--log %s: cannot open for writing: %s", r->o.log, strerror(errno));
    setvbuf(r->log, NULL, _IOLBF, 0);
}

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
static void finish(Run *r, long start, double t0, double train_s)
{
    char err[1500], good[5000];
    if (r->last_saved < r->o.steps && run_save_out(r, r->o.steps, err, sizeof err)) {
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
    if (r->corpus.nval >= 2) {
        fprintf(stderr, "train: scoring the whole val split (%zu tokens)\n", r->corpus.nval - 1);
        int rc = eval_sequence_until(&r->tr.model, &r->tr.acts, r->corpus.ids + r->corpus.ntrain,
                                     r->corpus.nval, NULL, &val, &nval_tok, token_loss,
                                     &run_stop_signal, err, sizeof err);
        if (rc < 0)
            cli_fail("%s", err);
        if (rc == 0 && copy)
            copy_loss(r, token_loss, &copy_first, &copy_repeat);
    }
    free(token_loss);
    double train_est = run_stop_signal ? NAN : run_estimate(r, r->corpus.ids, r->corpus.ntrain);
    if (run_stop_signal) {
        fprintf(stderr, "train: %s during the final evaluation; %s is saved and complete "
                "(step %ld of %ld)\n", run_stop_signal == SIGINT ? "interrupted" : "terminated",
                r->o.out, r->o.steps, r->o.steps);
        if (r->log)
            fclose(r->log);
        run_exit(r, 128 + run_stop_signal);
    }
    double wall = cli_now() - t0;
    long steps_run = r->o.steps - start;
    double tok_s = (double)steps_run * (double)r->o.batch * (double)r->o.block *
                   (double)r->micro / train_s;
    char dur[32];
    cli_duration(wall, dur, sizeof dur);
    fprintf(stderr, "done: %ld steps in %.1f s (%.0f tok/s) | train loss %.4f (estimate) | "
            "val loss %.4f (whole val split, %zu tokens) | total %s | saved %s\n", steps_run,
            train_s, tok_s, train_est, val, nval_tok, dur, r->o.out);
    char vbuf[32] = "null";
    if (isfinite(val))
        snprintf(vbuf, sizeof vbuf, "%.6f", val);
    run_log(r, "{\"type\":\"final\",\"step\":%ld,\"train_loss\":%.6f,\"val_loss\":%s,"
               "\"val_tokens\":%zu,\"train_seconds\":%.3f,\"wall_seconds\":%.3f,\"tok_s\":%.1f",
               r->o.steps, train_est, vbuf, nval_tok, train_s, wall, tok_s);
    if (isfinite(copy_first) && isfinite(copy_repeat))
        run_log(r, ",\"copy_loss_first\":%.6f,\"copy_loss_repeat\":%.6f", copy_first,
                copy_repeat);
    run_log(r, "}\n");
    if (r->log && (fclose(r->log) != 0 || r->log_errno)) {
        r->log = NULL;
        cli_fail("--log %s: write failed at the end of the run: %s; %s is saved", r->o.log,
                 strerror(r->log_errno ? r->log_errno : errno), r->o.out);
    }
    r->log = NULL;
}

/* Error exits: release the locks, then end every rank (dist_abort). */
static void train_exit(int code)
{
    release_locks();
    dist_abort(code);
}

int main(int argc, char **argv)
{
    cli_prog = "train";
    cli_bounded_spin_openmp(argv);
    Run run;
    memset(&run, 0, sizeof run);
    Run *r = &run;
    r->lock.fd = r->best_lock.fd = -1;
    r->last_saved = r->resumed_step = -1;
    if (dist_init(&r->dist, &argc, &argv))
        cli_fail("cannot start MPI");
    if (r->dist.size > 1) {
        /* Rank 0 speaks for the job; the others report only their errors. */
        static char prog[32];
        cli_set_exit(train_exit);
        if (!run_lead(r)) {
            snprintf(prog, sizeof prog, "train[rank %d]", r->dist.rank);
            cli_prog = prog;
            int fd = dup(STDERR_FILENO);
            FILE *err = fd >= 0 ? fdopen(fd, "w") : NULL;
            if (err && freopen("/dev/null", "w", stderr))
                cli_set_error_stream(err);
        }
    }
    unsigned char given[OPT_COUNT] = {0};
    train_options_parse(argc, argv, &r->o, given);
    if (r->o.threads)
        omp_set_num_threads((int)r->o.threads);
    run_install_signals();
    if (r->o.dump_val) {
        int rc = run_lead(r) ? dump_val(r) : 0;
        dist_finish(&r->dist);
        return rc;
    }
    exiting_run = r;
    atexit(release_locks);
    Tokenizer tok;
    if (r->o.resume)
        open_resume(r, given, &tok);
    r->micro = r->o.accum * r->dist.size;
    claim_outputs(r);
    if (r->o.resume)
        load_resumed_data(r, given, &tok);
    else
        setup_fresh(r);
    check_same_data(r);
    alloc_buffers(r);
    open_log(r);
    long start = r->tr.step;
    run_print_settings(r);
    if (dist_any(&r->dist, run_stop_signal)) {
        fprintf(stderr, "train: interrupted before the first step; nothing was written\n");
        run_exit(r, 128 + (run_stop_signal ? run_stop_signal : SIGINT));
    }
    double t0 = cli_now();
    run_train_loop(r, start);
    finish(r, start, t0, cli_now() - t0);
    dist_finish(&r->dist);
    free(r->inputs);
    free(r->targets);
    free(r->mb_in);
    free(r->mb_tg);
    free(r->acc);
    free(r->head_metrics);
    trainer_free(&r->tr);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    return 0;
}
