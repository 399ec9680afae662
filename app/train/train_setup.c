/* train_setup: setting a ./train run up (see train_run.h): the training text
 * (a file or a built-in corpus), the model fresh (trainer_init) or from the
 * checkpoint --resume names (ckpt_load_trainer, with the resume rules of
 * train_options), the memory check, the trainer's step settings and buffers,
 * and --dump-val, which sets up the data and writes its validation split. The
 * files a run writes are train_files.c's; the loop is train_loop.c's. */
#include "app/train/train_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/common/cli.h"
#include "app/common/fileguard.h"
#include "data/corpus.h"
#include "model/evaluate.h"
#include "trainer/limits.h"

/* The built-in corpus a run without --data trains on. */
static const CorpusSourceRow *builtin_corpus(const Options *o)
{
    return &corpus_sources[train_is_induction(o) ? CORPUS_SOURCE_INDUCTION : CORPUS_SOURCE_TEXT];
}

/* The size of a fresh run's built-in corpus. */
static size_t builtin_size(const Options *o)
{
    return builtin_corpus(o)->default_bytes;
}

static void load_data(Run *r, const char *path, size_t builtin_bytes)
{
    char err[1500];
    int rc;
    if (path)
        rc = textfile_read(&r->file, path, r->o.allow_binary, err, sizeof err);
    else
        rc = builtin_corpus(&r->o)->generate(&r->file, builtin_bytes, err, sizeof err);
    if (rc)
        cli_fail("%s", err);
    if (r->file.note[0])
        fprintf(stderr, "train: %s\n", r->file.note);
}

/* Refuses, with the figure, a model and batch that would not fit in the memory
 * this machine has free; `held` floats are already allocated (a resumed model). */
static void check_memory(const Run *r, const Config *cfg, size_t held)
{
    size_t P = (size_t)config_param_count(cfg);
    double floats = 4.0 * (double)P - (double)held +
                    (double)acts_floats(cfg, (int)r->o.batch, cfg->T, r->o.dropout > 0) +
                    (r->loop.micro > 1 ? 2.0 * (double)P : 0.0);
    double bytes = 4.0 * floats + 8.0 * (double)r->o.batch * (double)cfg->T;
    unsigned long long avail = guard_mem_available();
    if (avail && bytes > (double)avail)
        cli_fail("out of memory: %.3fM parameters with batch %ld x %d need %.2f GiB (weights, "
                 "gradients, Adam moments, activations), and this machine has %.2f GiB "
                 "available (MemAvailable); lower --batch, --block, --embd or --layers",
                 (double)P / 1e6, r->o.batch, cfg->T, bytes / 1073741824.0,
                 (double)avail / 1073741824.0);
}

void run_setup_fresh(Run *r)
{
    Options *o = &r->o;
    char err[1500];
    load_data(r, o->data, builtin_size(o));
    int rc = corpus_prepare_until(&r->corpus, &r->file, NULL, (int)o->vocab, o->val_frac,
                                  (int)o->block, &r->stop.signal, err, sizeof err);
    if (rc == CORPUS_STOPPED) {
        /* The outputs are claimed (their locks go at exit) but none is open yet. */
        fprintf(stderr, "train: %s while learning the merges and encoding the text; nothing "
                "was written\n", r->stop.signal == SIGINT ? "interrupted" : "terminated");
        run_exit(r, 128 + r->stop.signal);
    }
    if (rc == CORPUS_VOCAB_TOO_SMALL)
        cli_usage_error("%s", err);
    if (rc)
        cli_fail("%s", err);
    size_t uncounted = o->vocab ? bpe_uncounted(r->file.bytes, r->corpus.train_bytes) : 0;
    if (uncounted && run_lead(r))
        fprintf(stderr, "train: note: %zu bytes of the train split lie past the first %d bytes "
                "of a chunk (a run without whitespace or punctuation) and were not counted "
                "for merges; they are still encoded and trained on (docs/tokenizer.md)\n",
                uncounted, BPE_CHUNK_MAX);
    Config cfg = train_options_config(o, r->corpus.tok.V);
    if (!cfg.D)
        cli_usage_error("--n-heads %ld does not divide --embd %ld; pick a divisor or give "
                        "--head-size", o->heads, o->embd);
    if (config_validate(&cfg, err, sizeof err))
        cli_usage_error("%s", err);
    check_memory(r, &cfg, 0);
    if (trainer_init(&r->tr, &cfg, o->seed, err, sizeof err))
        cli_fail("%s", err);
    if (strcmp(o->init_heads, "same") == 0)
        params_same_heads(&r->tr.model.table, r->tr.model.params);
    params_scale_positions(&r->tr.model.table, r->tr.model.params, o->pos_std);
    r->tr.model.precision = (Precision)o->precision;
    r->ts.best_step = -1;
}

/* Reads the checkpoint to resume and takes its settings, with the flags a
 * resumed run may change; a flag it may not change, a checkpoint that cannot be
 * resumed, or too few --steps are refused here. */
static void take_resume(Run *r, const unsigned char *given, Tokenizer *tok)
{
    Options *o = &r->o;
    char err[1500];
    int has_state;
    if (ckpt_load_trainer(o->resume, &r->tr, tok, &r->ts, &has_state, err, sizeof err))
        cli_fail("%s", err);
    long steps_done = r->tr.step;
    if (!has_state)
        cli_fail("%s: has no training state (flags 0): it can be evaluated and sampled, not "
                 "resumed", o->resume);
    train_options_resume(o, given, &r->tr.model.cfg, &r->ts, r->dist.size, o->resume);
    if (steps_done >= o->steps)
        cli_usage_error("%s has already trained %ld of %ld steps; give --steps above %ld to "
                        "train further", o->resume, steps_done, o->steps, steps_done);
}

/* Reads the checkpoint to resume and takes its settings (take_resume); the data
 * is loaded later (load_resumed_data), once the outputs are known to be safe to
 * write. */
void run_open_resume(Run *r, const unsigned char *given, Tokenizer *tok)
{
    Options *o = &r->o;
    take_resume(r, given, tok);
    long steps_done = r->tr.step;
    if (!o->log)
        fprintf(stderr, "train: note: this resumed run writes no log; pass --log FILE to append "
                "to the run's log (checkpoints do not record it, so that their bytes depend "
                "on the run's settings alone)\n");
    r->files.resumed_step = steps_done;
    r->files.last_saved = guard_same_file(o->out, o->resume) ? steps_done : -1;
}

/* Loads the data of a resumed run (train_options_resume chose it): the checkpoint's,
 * which must not have changed, or the file --data names. */
static void load_run_data(Run *r, const unsigned char *given, const TrainState *ts)
{
    const Options *o = &r->o;
    if (given[OPT_DATA]) {
        load_data(r, o->data, 0);
        if (r->file.hash != ts->data_hash || r->file.n != ts->data_size)
            fprintf(stderr, "train: note: %s differs from the data this run started on (%s); "
                    "continuing on it as asked\n", o->data, ts->data_path);
    } else {
        char err[1500];
        TextfileMatch got = textfile_reopen(&r->file, ts->data_path, ts->data_size, ts->data_hash,
                                            o->allow_binary, err, sizeof err);
        if (got == TEXTFILE_MISSING || got == TEXTFILE_UNREADABLE)
            cli_fail("%s", err);
        int generated = corpus_source_of(ts->data_path) != CORPUS_SOURCE_FILE;
        if (generated && got == TEXTFILE_CHANGED)
            cli_fail("%s is not the text this checkpoint trained on (%llu bytes, hash %016llx; "
                     "this build generates %zu bytes, hash %016llx): it was written by a build "
                     "whose generator made other text (docs/corpus.md), so it cannot be "
                     "resumed exactly; start a new run", ts->data_path,
                     (unsigned long long)ts->data_size, (unsigned long long)ts->data_hash,
                     r->file.n, (unsigned long long)r->file.hash);
        if (got == TEXTFILE_CHANGED)
            cli_fail("%s changed since the checkpoint was written (%llu bytes, hash %016llx; "
                     "now %zu bytes, hash %016llx); pass --data %s to continue on it anyway",
                     ts->data_path, (unsigned long long)ts->data_size,
                     (unsigned long long)ts->data_hash, r->file.n,
                     (unsigned long long)r->file.hash, ts->data_path);
    }
}

void run_load_resumed_data(Run *r, const unsigned char *given, const Tokenizer *tok)
{
    Options *o = &r->o;
    TrainState *ts = &r->ts;
    char err[1500];
    check_memory(r, &r->tr.model.cfg, 4 * r->tr.model.table.total); /* params, grads, moments */
    load_run_data(r, given, ts);
    if (corpus_prepare(&r->corpus, &r->file, tok, 0, o->val_frac, r->tr.model.cfg.T, err,
                       sizeof err))
        cli_fail("%s", err);
    fprintf(stderr, "train: resuming %s at step %ld of %ld\n", o->resume, r->files.resumed_step,
            o->steps);
    if (given[OPT_STEPS] && o->steps != ts->steps)
        fprintf(stderr, "train: note: total steps changed from %ld to %ld (the cosine schedule "
                "stretches to the new end)\n", ts->steps, o->steps);
}

/* --print-settings with --resume: the settings the resumed run would train
 * with (the checkpoint's, and the flags it may change), printed only once the
 * checkpoint, the flags and the data have passed the checks a real resume makes
 * of them. */
void run_print_resumed_settings(Run *r, const unsigned char *given)
{
    Tokenizer tok;
    memset(&tok, 0, sizeof tok);
    take_resume(r, given, &tok);
    load_run_data(r, given, &r->ts);
    train_options_print(&r->o);
}

/* Writes n bytes to fd, checking for a signal between pieces; 0, -1 (errno set)
 * or 1 when a signal asked to stop. */
static int write_stoppable(const Run *r, int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        if (r->stop.signal)
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

/* --dump-val's data and split: the run's, read from the checkpoint with
 * --resume (its data file or built-in corpus, its --val-frac and block size;
 * flags that contradict them are refused as on a resume), else the flags'. */
static void dump_val_data(Run *r, const unsigned char *given, char *trained_on, size_t len)
{
    Options *o = &r->o;
    char err[1500];
    Tokenizer tok, *vocab = NULL;
    trained_on[0] = '\0';
    if (o->resume) {
        Model m;
        int has_state;
        if (ckpt_load(o->resume, &m, &tok, NULL, &r->ts, &has_state, err, sizeof err))
            cli_fail("%s", err);
        Config cfg = m.cfg;
        model_free(&m);
        if (!has_state)
            cli_fail("--dump-val with --resume %s: the checkpoint has no training state, so it "
                     "does not record the data it trained on; give --data FILE instead",
                     o->resume);
        train_options_resume(o, given, &cfg, &r->ts, r->dist.size, o->resume);
        if (o->data && !given[OPT_DATA])
            snprintf(trained_on, len, "%s", o->data);
        vocab = &tok;
    }
    run_name_best(r);
    GuardPath paths[] = {
        {"--data", given[OPT_DATA] ? o->data : NULL, 0, NULL},
        {"--resume", o->resume, 0, NULL},
        {"the training data of --resume,", trained_on[0] ? trained_on : NULL, 0, NULL},
        {"--dump-val", o->dump_val, 1, NULL},
        {"--out", o->out, 1, "--resume"},
        {"--keep-best", r->files.best[0] ? r->files.best : NULL, 1, NULL},
        {"--log", o->log, 1, NULL},
    };
    char gerr[5000];
    if (guard_check_paths(paths, (int)(sizeof paths / sizeof paths[0]), gerr, sizeof gerr))
        cli_usage_error("%s", gerr);
    if (guard_check_unlocked("--dump-val", o->dump_val, gerr, sizeof gerr))
        cli_fail("%s", gerr);
    if (o->resume)
        load_run_data(r, given, &r->ts);
    else
        load_data(r, o->data, builtin_size(o));
    int rc = corpus_prepare(&r->corpus, &r->file, vocab, 0, o->val_frac, (int)o->block, err,
                            sizeof err);
    if (vocab)
        tok_free(vocab);
    if (rc)
        cli_fail("%s", err);
}

/* --dump-val: the held-out bytes, exactly as training splits them, for --eval
 * and --heads (the built-in corpus has no file of its own), written whole to a
 * temporary and renamed into place, so no partial file is ever left. */
int run_dump_val(Run *r, const unsigned char *given)
{
    char err[5000], trained_on[CKPT_PATH_MAX];
    const char *path = r->o.dump_val;
    dump_val_data(r, given, trained_on, sizeof trained_on);
    GuardFile g;
    if (guard_file_open(&g, path, err, sizeof err))
        cli_fail("--dump-val %s", err);
    size_t n = r->corpus.val_bytes;
    int rc = write_stoppable(r, g.fd, r->file.bytes + r->corpus.train_bytes, n);
    int saved = errno;
    if (rc == 1) {
        guard_file_abort(&g);
        fprintf(stderr, "train: interrupted; %s was not written\n", path);
        exit(128 + r->stop.signal);
    }
    if (rc != 0) {
        guard_file_abort(&g);
        cli_fail("--dump-val %s: write failed: %s; nothing was written there", path,
                 strerror(saved));
    }
    if (guard_file_commit(&g, err, sizeof err))
        cli_fail("--dump-val %s", err);
    fprintf(stderr, "train: wrote the validation split of %s (%zu bytes) to %s\n", r->file.name,
            n, path);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    return 0;
}

/* --heads-every on the built-in corpus also logs its planted relations: the
 * train split's, found by planted_find, and where a batch's windows start. */
static void alloc_planted(Run *r)
{
    char err[300];
    if (corpus_source_of(r->file.name) != CORPUS_SOURCE_TEXT)
        return;
    if (planted_find(&r->loop.planted, r->corpus.ids, r->corpus.ntrain, &r->corpus.tok, r->file.n,
                     err, sizeof err))
        cli_fail("%s", err);
    if (!r->loop.planted.builtin)
        return;
    r->loop.heads_starts = malloc((size_t)r->o.batch * sizeof *r->loop.heads_starts);
    if (!r->loop.heads_starts)
        cli_fail("out of memory for the planted relations");
}

/* The trainer's step settings and activations, the batches, and the buffers of
 * --heads-every and of summed micro-batches. */
void run_alloc_buffers(Run *r)
{
    const Options *o = &r->o;
    char err[1500];
    TrainHyper hp = train_options_hyper(o);
    hp.micro = r->loop.micro;
    params_decay_positions(&r->tr.model.table, o->pos_decay == 0);
    if (trainer_prepare(&r->tr, &hp, (int)o->batch, err, sizeof err))
        cli_fail("%s", err);
    size_t bt = (size_t)r->o.batch * r->o.block;
    r->loop.inputs = malloc(bt * sizeof(int));
    r->loop.targets = malloc(bt * sizeof(int));
    if (!r->loop.inputs || !r->loop.targets)
        cli_fail("out of memory for batches");
    if (r->o.heads_every) {
        r->loop.token_counts = malloc((size_t)r->tr.model.cfg.V * sizeof *r->loop.token_counts);
        if (!r->loop.token_counts ||
            heads_measure_init(&r->loop.heads, r->tr.model.cfg.L, r->tr.model.cfg.H, 0, 0, err,
                               sizeof err))
            cli_fail("out of memory for head metrics");
        heads_token_counts(r->loop.token_counts, r->corpus.ids, r->corpus.ntrain, r->tr.model.cfg.V);
        alloc_planted(r);
    }
    if (r->loop.micro > 1) {
        r->loop.acc = malloc(r->tr.model.table.total * sizeof(float));
        r->loop.mb_in = malloc(bt * sizeof(int));
        r->loop.mb_tg = malloc(bt * sizeof(int));
        if (!r->loop.acc || !r->loop.mb_in || !r->loop.mb_tg || dist_setup(&r->dist, r->tr.model.table.total))
            cli_fail("out of memory for gradient accumulation");
    }
}

/* Every rank must train on the same bytes: a copy that differs on one node would
 * make the ranks' gradients disagree silently. */
void run_check_same_data(const Run *r)
{
    int bad;
    uint64_t size, hash;
    if (dist_same_data(&r->dist, r->file.n, r->file.hash, &bad, &size, &hash))
        return;
    if (!run_lead(r))
        run_abort(1); /* rank 0 says why */
    cli_fail("the ranks read different data: rank 0 read %s as %zu bytes with hash %016llx, "
             "rank %d as %llu bytes with hash %016llx; every rank needs the same data file",
             r->file.name, r->file.n, (unsigned long long)r->file.hash, bad,
             (unsigned long long)size, (unsigned long long)hash);
}

/* Error exits: release the locks, then end every rank (dist_abort). */
void run_abort(int code)
{
    run_release_watched();
    dist_abort(code);
}
