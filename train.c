/* train: trains a headcount model on a text file (or the built-in corpus).
 *
 * The program's entry point and its setup: reading the flags (app/train_options),
 * checking before anything is written that every output is safe to write
 * (fileguard), loading the data and the model fresh or from a checkpoint, sizing
 * the buffers, and finishing a run (the final save, the whole-split evaluation,
 * the summary). The loop itself, the log and the early stops are in
 * app/train/train_loop.c; the maths in model/, the data in data/. Checkpoints carry the
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

#include "app/train/train_options.h"
#include "app/train/train_run.h"
#include "app/common/cli.h"
#include "app/train/dist.h"
#include "app/common/fileguard.h"
#include "data/corpus.h"
#include "data/induction.h"
#include "trainer/ckpt.h"
#include "model/evaluate.h"
#include "model/gpt.h"
#include "analysis/heads.h"
#include "trainer/limits.h"

static void train_exit(int code) __attribute__((noreturn));

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

static void setup_fresh(Run *r)
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
    if (!o->head_size && o->embd % o->heads != 0)
        cli_usage_error("--heads %ld does not divide --embd %ld; pick a divisor or give "
                        "--head-size", o->heads, o->embd);
    Config cfg = {.V = r->corpus.tok.V};
    settings_config(o, &cfg);
    cfg.gates = o->head_gates > 0;
    if (!cfg.D)
        cfg.D = cfg.C / cfg.H;
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
static void open_resume(Run *r, const unsigned char *given, Tokenizer *tok)
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
    if (given[SETTING_DATA]) {
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

static void load_resumed_data(Run *r, const unsigned char *given, const Tokenizer *tok)
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
    if (given[SETTING_STEPS] && o->steps != ts->steps)
        fprintf(stderr, "train: note: total steps changed from %ld to %ld (the cosine schedule "
                "stretches to the new end)\n", ts->steps, o->steps);
}

/* --print-settings with --resume: the settings the resumed run would train
 * with (the checkpoint's, and the flags it may change), printed only once the
 * checkpoint, the flags and the data have passed the checks a real resume makes
 * of them. */
static void print_resumed_settings(Run *r, const unsigned char *given)
{
    Tokenizer tok;
    memset(&tok, 0, sizeof tok);
    take_resume(r, given, &tok);
    load_run_data(r, given, &r->ts);
    train_options_print(&r->o);
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
    /* A symlink at --out: the checkpoint is the file it points to, written
     * (and locked) there, so every spelling of it shares one lock. */
    if (guard_resolve(o->out, r->files.out, sizeof r->files.out))
        cli_usage_error("--out: the path is too long");
    o->out = r->files.out;
    if (o->keep_best)
        best_path(o->out, r->files.best, sizeof r->files.best);
    if (!run_lead(r))
        return;
    GuardPath paths[] = {
        {"--data", o->data, 0, NULL},
        {"--resume", o->resume, 0, NULL},
        {"--out", o->out, 1, "--resume"},
        {"--keep-best", r->files.best[0] ? r->files.best : NULL, 1, NULL},
        {"--log", o->log, 1, NULL},
    };
    if (guard_check_paths(paths, (int)(sizeof paths / sizeof paths[0]), err, sizeof err))
        cli_usage_error("%s", err);
    if (ckpt_check_writable(o->out, err, sizeof err))
        cli_fail("--out %s", err);
    if (r->files.best[0] && ckpt_check_writable(r->files.best, err, sizeof err))
        cli_fail("--keep-best %s", err);
    if (guard_lock(&r->files.lock, "--out", o->out, err, sizeof err))
        cli_fail("%s", err);
    r->stop.lock_paths[0] = guard_lock_path(&r->files.lock);
    if (r->files.best[0] &&
        guard_lock(&r->files.best_lock, "--keep-best", r->files.best, err, sizeof err))
        cli_fail("%s", err);
    r->stop.lock_paths[1] = guard_lock_path(&r->files.best_lock);
    /* The log is locked like a checkpoint: a second run writing it (a fresh
     * one would replace it, a resumed one interleave with it) is refused. */
    if (o->log && guard_lock(&r->files.log_lock, "--log", o->log, err, sizeof err))
        cli_fail("%s", err);
    r->stop.lock_paths[2] = guard_lock_path(&r->files.log_lock);
    for (int k = 0; k < 2; k++) {
        const char *path = k ? r->files.best : o->out;
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
        if (o->data && !given[SETTING_DATA])
            snprintf(trained_on, len, "%s", o->data);
        vocab = &tok;
    }
    if (o->keep_best)
        best_path(o->out, r->files.best, sizeof r->files.best);
    GuardPath paths[] = {
        {"--data", given[SETTING_DATA] ? o->data : NULL, 0, NULL},
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
static int dump_val(Run *r, const unsigned char *given)
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
 * train split's, found by planted_find, and room for one batch's keys. */
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
    size_t bt = (size_t)r->o.batch * r->o.block;
    r->loop.heads_starts = malloc((size_t)r->o.batch * sizeof *r->loop.heads_starts);
    int ok = r->loop.heads_starts != NULL;
    for (int q = HEADS_REL_TEXT; q < HEADS_REL_COUNT; q++) {
        r->loop.planted_key[q] = malloc(bt * sizeof(int));
        r->loop.planted_first[q] = malloc(bt * sizeof(int));
        ok = ok && r->loop.planted_key[q] && r->loop.planted_first[q];
    }
    if (!ok)
        cli_fail("out of memory for the planted relations");
}

/* The trainer's step settings and activations, the batches, and the buffers of
 * --heads-every and of summed micro-batches. */
static void alloc_buffers(Run *r)
{
    const Options *o = &r->o;
    char err[1500];
    TrainHyper hp = {.micro = r->loop.micro};
    settings_hyper(o, &hp);
    params_decay_positions(&r->tr.model.table, o->pos_decay == 0);
    if (trainer_prepare(&r->tr, &hp, (int)o->batch, err, sizeof err))
        cli_fail("%s", err);
    size_t bt = (size_t)r->o.batch * r->o.block;
    r->loop.inputs = malloc(bt * sizeof(int));
    r->loop.targets = malloc(bt * sizeof(int));
    if (!r->loop.inputs || !r->loop.targets)
        cli_fail("out of memory for batches");
    if (r->o.heads_every) {
        r->loop.head_metrics = malloc((size_t)r->tr.model.cfg.L * r->tr.model.cfg.H * HEADS_QUICK_COUNT *
                                 sizeof(float));
        r->loop.token_counts = malloc((size_t)r->tr.model.cfg.V * sizeof *r->loop.token_counts);
        size_t n = (size_t)r->tr.model.cfg.L * r->tr.model.cfg.H;
        r->loop.heads_jsd = malloc(n * n * sizeof(double));
        if (!r->loop.head_metrics || !r->loop.token_counts || !r->loop.heads_jsd)
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

/* A log a resumed run appends to must end in a complete line. A run stopped in
 * the middle of a write (killed, or by a program older than the checked writes)
 * can leave part of a record after the last newline: that part, and only when
 * it is the start of one of our records, is cut with a note; anything else
 * there is refused, so the run never glues its records onto a broken line nor
 * cuts what is not ours. Returns the log's length, ready to append to. */
static off_t mend_log_tail(const Run *r, int fd, off_t size)
{
    static const char head[] = "{\"type\":\"";
    char buf[4096];
    off_t end = size; /* the bytes at [end, size) follow the last newline */
    while (end > 0) {
        size_t want = end < (off_t)sizeof buf ? (size_t)end : sizeof buf;
        ssize_t n = pread(fd, buf, want, end - (off_t)want);
        if (n != (ssize_t)want)
            cli_fail("--log %s: cannot read its end: %s", r->o.log,
                     n < 0 ? strerror(errno) : "the file shrank");
        size_t k = want;
        while (k > 0 && buf[k - 1] != '\n')
            k--;
        end -= (off_t)(want - k);
        if (k > 0)
            break;
    }
    if (end == size)
        return size;
    size_t tail = (size_t)(size - end), look = tail < sizeof head - 1 ? tail : sizeof head - 1;
    if (pread(fd, buf, look, end) != (ssize_t)look || memcmp(buf, head, look) != 0)
        cli_fail("--log %s: does not end in a complete line (%zu bytes after its last "
                 "newline, not the start of a record), so it is not a log this run can append "
                 "to; nothing was written", r->o.log, tail);
    if (ftruncate(fd, end) != 0)
        cli_fail("--log %s: cannot cut its incomplete last record: %s", r->o.log, strerror(errno));
    fprintf(stderr, "train: note: --log %s ended in an incomplete record (a run stopped while "
            "writing it); cut its %zu bytes after the last complete line before appending\n",
            r->o.log, tail);
    return end;
}

/* A resumed run appends to its log (mended first: mend_log_tail); a fresh one
 * writes a temporary beside it, renamed over the log once its first record is
 * written (place_log), so a log that cannot be written leaves an earlier one as
 * it was. */
static void open_log(Run *r)
{
    if (!r->o.log || !run_lead(r))
        return;
    int fd;
    off_t end = 0;
    if (r->o.resume) {
        /* O_NONBLOCK: a FIFO put there since the check must not block the open. */
        fd = open(r->o.log, O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            cli_fail("--log %s: not a regular file (a FIFO, device or socket)", r->o.log);
        }
        if (fd >= 0) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            end = mend_log_tail(r, fd, st.st_size);
        }
    } else {
        char real[4200];
        if (guard_resolve(r->o.log, real, sizeof real))
            cli_fail("--log %s: the path is too long", r->o.log);
        fd = ckpt_tmp_create(real, r->files.log_tmp, sizeof r->files.log_tmp);
        if (fd < 0)
            r->files.log_tmp[0] = '\0';
    }
    if (fd < 0)
        cli_fail("--log %s: cannot open for writing: %s", r->o.log,
                 errno == ENOENT ? "directory does not exist" : strerror(errno));
    r->files.log_fd = fd;
    r->files.log_end = end;
}

/* A fresh log's first record is written: fsync it and rename it into place. */
static void place_log(Run *r)
{
    if (r->files.log_fd < 0 || !r->files.log_tmp[0])
        return;
    char real[4200];
    int bad = r->files.log_errno;
    if (!bad && fsync(r->files.log_fd) != 0)
        bad = errno ? errno : EIO;
    if (!bad && (guard_resolve(r->o.log, real, sizeof real) || rename(r->files.log_tmp, real) != 0))
        bad = errno ? errno : ENAMETOOLONG;
    if (bad) {
        unlink(r->files.log_tmp); /* ours: created by open_log */
        cli_fail("--log %s: write failed: %s; nothing was written there (and nothing trained)",
                 r->o.log, strerror(bad));
    }
    r->files.log_tmp[0] = '\0';
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

/* Error exits: release the locks, then end every rank (dist_abort). */
static void train_exit(int code)
{
    run_release_watched();
    dist_abort(code);
}

int main(int argc, char **argv)
{
    cli_prog = "train";
    cli_hold_std_fds();
    cli_bounded_spin_openmp(argv);
    /* On the heap: its path buffers would take tens of KiB of the main thread's
     * stack, which the kernels' frames need (tests/test_train.c runs it small). */
    Run *r = calloc(1, sizeof *r);
    if (!r)
        cli_fail("out of memory");
    r->files.lock.fd = r->files.best_lock.fd = r->files.log_lock.fd = r->files.log_fd = -1;
    r->files.last_saved = r->files.resumed_step = -1;
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
    unsigned char given[GIVEN_COUNT] = {0};
    train_options_parse(argc, argv, &r->o, given);
    Bf16Path bf16_path = cli_bf16_path();
    if (r->o.threads)
        omp_set_num_threads((int)r->o.threads);
    run_watch_signals(r);
    if (given[GIVEN_PRINT_SETTINGS])
        print_resumed_settings(r, given); /* a fresh run's were printed by the parser */
    if (r->o.dump_val) {
        int rc = run_lead(r) ? dump_val(r, given) : 0;
        dist_finish(&r->dist);
        run_watch_signals(NULL);
        free(r);
        return rc;
    }
    run_release_at_exit();
    Tokenizer tok;
    memset(&tok, 0, sizeof tok);
    if (r->o.resume)
        open_resume(r, given, &tok);
    r->loop.micro = r->o.accum * r->dist.size;
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
    r->tr.model.bf16_path = bf16_path;
    if (r->tr.model.precision == PRECISION_BF16 && run_lead(r))
        cli_say_bf16(bf16_path);
    place_log(r);
    if (dist_any(&r->dist, r->stop.signal)) {
        int sig = r->stop.signal ? r->stop.signal : SIGINT;
        const char *how = sig == SIGINT ? "interrupted" : "terminated";
        if (r->files.log_fd >= 0)
            fprintf(stderr, "train: %s before the first step; no checkpoint was written, and "
                    "the log %s holds this run's settings record\n", how, r->o.log);
        else
            fprintf(stderr, "train: %s before the first step; nothing was written\n", how);
        run_log_close(r, 1);
        run_exit(r, 128 + sig);
    }
    double t0 = cli_now();
    run_train_loop(r, start);
    finish(r, start, t0, cli_now() - t0);
    dist_finish(&r->dist);
    free(r->loop.inputs);
    free(r->loop.targets);
    free(r->loop.mb_in);
    free(r->loop.mb_tg);
    free(r->loop.acc);
    free(r->loop.head_metrics);
    free(r->loop.heads_jsd);
    free(r->loop.token_counts);
    planted_free(&r->loop.planted);
    free(r->loop.heads_starts);
    for (int q = HEADS_REL_TEXT; q < HEADS_REL_COUNT; q++) {
        free(r->loop.planted_key[q]);
        free(r->loop.planted_first[q]);
    }
    trainer_free(&r->tr);
    corpus_free(&r->corpus);
    textfile_free(&r->file);
    tok_free(&tok);
    run_release_files(r);
    run_watch_signals(NULL);
    free(r);
    return 0;
}
