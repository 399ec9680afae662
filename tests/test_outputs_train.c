/* Nothing lost, on ./train's edges: --dump-val is checked against every input and
 * output and writes the split of the run it names; a checkpoint that cannot be
 * saved stops the run at once; the lock follows a symlink at --out; FIFOs are
 * refused as outputs before any open; empty paths, --val-frac 0 and a --corpus
 * that contradicts the resumed run are usage errors; the first ETA waits for a
 * timed step. (The older guarantees are in test_outputs.c.) */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/progutil.h"
#include "tests/testutil.h"

/* A 4-step TINY checkpoint at path, trained on e->data with extra flags. */
static void train_to(const Env *e, const char *path, const char *extra)
{
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s %s", tu_bin(), e->data,
                    path, extra);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    unsigned char *b = tu_read_file(path, n);
    cr_assert_not_null(b, "cannot read %s", path);
    return b;
}

static void expect_bytes(const char *path, const unsigned char *want, size_t n)
{
    size_t m;
    unsigned char *b = tu_read_file(path, &m);
    cr_assert(b && m == n && memcmp(b, want, n) == 0, "%s was changed", path);
    free(b);
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Row 1: the checkpoint being resumed is an input of --dump-val, by any name. */
Test(train_outputs, dump_val_onto_the_resumed_checkpoint_is_refused)
{
    Env e;
    env_init(&e, "to-dump-resume");
    train_to(&e, e.out, "");
    char sym[400], hard[400], *out;
    snprintf(sym, sizeof sym, "%s/sym.ckpt", e.dir);
    snprintf(hard, sizeof hard, "%s/hard.ckpt", e.dir);
    cr_assert_eq(symlink("out.ckpt", sym), 0);
    cr_assert_eq(link(e.out, hard), 0);
    size_t n;
    unsigned char *before = slurp(e.out, &n);
    const char *names[] = {e.out, sym, hard};
    for (int k = 0; k < 3; k++) {
        int rc = tu_run(&out, "%s/train --resume %s --dump-val %s", tu_bin(), e.out, names[k]);
        expect_error(out, rc, 2, "train", "--dump-val");
        cr_assert(strstr(out, "same file as --resume"), "%s", out);
        free(out);
        expect_bytes(e.out, before, n);
    }
    free(before);
}

/* Row 8: --resume's split is that of the checkpoint's data and --val-frac. */
Test(train_outputs, dump_val_with_resume_writes_that_runs_split)
{
    Env e;
    env_init(&e, "to-dump-split");
    train_to(&e, e.out, "--val-frac 0.25");
    char a[400], b[400], *out;
    snprintf(a, sizeof a, "%s/resumed.txt", e.dir);
    snprintf(b, sizeof b, "%s/direct.txt", e.dir);
    int rc = tu_run(&out, "%s/train --resume %s --dump-val %s", tu_bin(), e.out, a);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --data %s --val-frac 0.25 --dump-val %s", tu_bin(), e.data, b);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    size_t na, nb;
    unsigned char *da = slurp(a, &na), *db = slurp(b, &nb);
    cr_assert_eq(na, DATA_BYTES / 4, "the split is %zu bytes, not the quarter of the data", na);
    cr_assert(na == nb && memcmp(da, db, na) == 0, "not the run's split");
    free(da);
    free(db);
    /* A flag contradicting the run is refused, as on a resume. */
    rc = tu_run(&out, "%s/train --resume %s --val-frac 0.1 --dump-val %s", tu_bin(), e.out, a);
    expect_error(out, rc, 2, "train", "--val-frac 0.1 contradicts the checkpoint");
    free(out);
}

/* Row 11: --dump-val against the other outputs; --corpus against the run. */
Test(train_outputs, dump_val_onto_another_output_or_a_contradicting_corpus_is_refused)
{
    Env e;
    env_init(&e, "to-dump-outputs");
    char best[400], kb[400], *out;
    snprintf(kb, sizeof kb, "%s/kb.ckpt", e.dir);
    snprintf(best, sizeof best, "%s/kb.best.ckpt", e.dir);
    train_to(&e, best, "");
    size_t n;
    unsigned char *before = slurp(best, &n);
    int rc = tu_run(&out, "%s/train --data %s --out %s --keep-best --dump-val %s", tu_bin(), e.data,
                    kb, best);
    expect_error(out, rc, 2, "train", "--keep-best");
    free(out);
    expect_bytes(best, before, n);
    free(before);
    cr_assert_eq(tu_write_file(e.log, "log\n", 4), 0);
    rc = tu_run(&out, "%s/train --data %s --log %s --dump-val %s", tu_bin(), e.data, e.log, e.log);
    expect_error(out, rc, 2, "train", "two outputs cannot share a file");
    free(out);
    expect_bytes(e.log, (const unsigned char *)"log\n", 4);
    /* best was trained on data.txt, not on a built-in corpus. */
    rc = tu_run(&out, "%s/train --resume %s --corpus text --steps 8", tu_bin(), best);
    expect_error(out, rc, 2, "train", "--corpus text contradicts the checkpoint");
    free(out);
}

/* Row 7: the first checkpoint that cannot be written stops the run, once. */
Test(train_outputs, a_checkpoint_that_cannot_be_saved_stops_the_run_with_one_message)
{
    Env e;
    env_init(&e, "to-save-fails");
    train_to(&e, e.out, "--warmup 100");
    char next[400], cmd[1500], *out;
    snprintf(next, sizeof next, "%s/next.ckpt", e.dir);
    /* 8 blocks (4 KB under sh) is far below the checkpoint's size. */
    snprintf(cmd, sizeof cmd, "ulimit -f 8; %s/train "
             "--resume %s --out %s --steps 100 --save-every 1", tu_bin(), e.out, next);
    int rc = tu_run(&out, "%s", cmd);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert_eq(count(out, "not saved"), 1, "not one message:\n%s", out);
    cr_assert(strstr(out, "train: error: the checkpoint was not saved at step 5") &&
              strstr(out, "File too large"), "%s", out);
    cr_assert(strstr(out, "the one it resumed from"), "the last good one is not named:\n%s", out);
    cr_assert_null(strstr(out, "step 6/"), "the run went on:\n%s", out);
    free(out);
    cr_assert_neq(access(next, F_OK), 0);
    cr_assert_eq(tu_find_prefix(e.dir, "next.ckpt.tmp", NULL, 0), 0, "a temporary was left");
}

/* Row 9: one checkpoint, one lock, whatever the spelling of --out. */
Test(train_outputs, a_symlink_to_a_checkpoint_being_written_is_refused, .timeout = 60)
{
    Env e;
    env_init(&e, "to-lock-link");
    char errpath[400], sym[400], *out;
    snprintf(errpath, sizeof errpath, "%s/first.err", e.dir);
    snprintf(sym, sizeof sym, "%s/link.ckpt", e.dir);
    cr_assert_eq(symlink("out.ckpt", sym), 0);
    pid_t pid = start_train(&e, errpath);
    char log2[400];
    snprintf(log2, sizeof log2, "%s/second.log", e.dir);
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s --log %s", tu_bin(),
                    e.data, sym, log2);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    expect_error(out, rc, 1, "train", "is being written by another running process");
    free(out);
    struct stat st;
    cr_assert(lstat(sym, &st) == 0 && S_ISLNK(st.st_mode), "the symlink was replaced");
}

/* Row 10 and row 13's ./train half: an empty path is a usage error up front. */
Test(train_outputs, empty_paths_are_usage_errors_before_training)
{
    Env e;
    env_init(&e, "to-empty");
    const char *flags[] = {"--out ''", "--data ''", "--log ''", "--dump-val ''", "--resume ''"};
    for (int k = 0; k < 5; k++) {
        char *out;
        int rc = tu_run(&out, "%s/train " TINY " --steps 3 %s", tu_bin(), flags[k]);
        expect_error(out, rc, 2, "train", "the path is empty");
        free(out);
    }
}

/* Row 6, ./train's half: a FIFO as the log or the val dump. */
Test(train_outputs, a_fifo_as_the_log_or_the_val_dump_is_refused_at_once, .timeout = 60)
{
    Env e;
    env_init(&e, "to-fifo");
    char fifo[400], *out;
    snprintf(fifo, sizeof fifo, "%s/fifo", e.dir);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    /* timeout: the old behaviour blocks in open() */
    int rc = tu_run(&out, "timeout 20 %s/train " TINY
                    " --steps 3 --data %s --out %s --log %s", tu_bin(), e.data, e.out, fifo);
    expect_error(out, rc, 2, "train", "--log");
    cr_assert(strstr(out, "not a regular file"), "%s", out);
    free(out);
    rc = tu_run(&out, "timeout 20 %s/train --data %s --dump-val %s", tu_bin(), e.data, fifo);
    expect_error(out, rc, 2, "train", "--dump-val");
    cr_assert(strstr(out, "not a regular file"), "%s", out);
    free(out);
    cr_assert_neq(access(e.out, F_OK), 0);
}

/* Row 14, ./train's half: no val split means no val loss. */
Test(train_outputs, val_frac_zero_is_refused)
{
    Env e;
    env_init(&e, "to-valfrac");
    refuse_train(&e, "--val-frac 0", 2, "--val-frac 0 holds nothing out");
}

/* The first step also pays for warming up, so its time says nothing of the rest. */
Test(train_outputs, the_first_progress_line_gives_no_eta)
{
    Env e;
    env_init(&e, "to-eta");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 3 --data %s --out %s", tu_bin(), e.data,
                    e.out);
    cr_assert_eq(rc, 0, "%s", out);
    const char *first = strstr(out, "step 1/3");
    cr_assert_not_null(first, "%s", out);
    size_t len = strcspn(first, "\n");
    cr_assert(find_in(first, len, "| eta --"), "an ETA from the first step alone:\n%s", out);
    const char *last = strstr(out, "step 3/3");
    cr_assert(last && strstr(last, "| eta 0"), "no ETA once steps are timed:\n%s", out);
    free(out);
}
