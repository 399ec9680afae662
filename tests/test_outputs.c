/* Nothing lost: ./train never writes or deletes a file the user did not name as
 * an output (fileguard.c, trainer/ckpt.c's temporaries, train.c's checked writes
 * and signal handling). One test per way a file used to be destroyed, each with
 * the data or checkpoint it must leave untouched, plus the identity rules of
 * fileguard on their own. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/common/fileguard.h"
#include "trainer/ckpt.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

/* The bytes of path, to compare before and after. */
typedef struct {
    unsigned char *bytes;
    size_t n;
} Snapshot;

static Snapshot snap(const char *path)
{
    Snapshot s = {0};
    s.bytes = tu_read_file(path, &s.n);
    cr_assert_not_null(s.bytes, "cannot read %s", path);
    return s;
}

static void expect_unchanged(const char *path, Snapshot *s)
{
    size_t n;
    unsigned char *now = tu_read_file(path, &n);
    cr_assert(now && n == s->n && memcmp(now, s->bytes, n) == 0, "%s was changed", path);
    free(now);
    free(s->bytes);
}

/* A checkpoint of a finished 4-step TINY run at path. */
static void train_to(const Env *e, const char *path, const char *extra)
{
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s %s", tu_bin(), e->data,
                    path, extra);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static long ckpt_steps(const char *path)
{
    Model m;
    Tokenizer tok;
    long steps = -1;
    char err[2000];
    cr_assert_eq(ckpt_load(path, &m, &tok, &steps, NULL, NULL, err, sizeof err), 0, "%s", err);
    model_free(&m);
    tok_free(&tok);
    return steps;
}

/* An error that comes after training started: exit code, and a
 * "train: error:" line holding needle. */
static void expect_late_error(const char *out, int rc, int code, const char *needle)
{
    cr_assert_eq(rc, code, "exit %d, expected %d:\n%s", rc, code, out);
    const char *line = strstr(out, "train: error: ");
    cr_assert_not_null(line, "no error line:\n%s", out);
    size_t len = strcspn(line, "\n");
    cr_assert(find_in(line, len, needle), "expected '%s' in the error line:\n%s", needle, out);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

Test(outputs, an_output_that_is_the_data_file_is_refused_by_identity)
{
    Env e;
    env_init(&e, "out-data");
    char link[400], dotted[400], *out;
    snprintf(link, sizeof link, "%s/link.txt", e.dir);
    cr_assert_eq(symlink("data.txt", link), 0);
    snprintf(dotted, sizeof dotted, "%s/./data.txt", e.dir);
    const char *spellings[] = {e.data, link, dotted};
    const char *flags[] = {"--out", "--log", "--dump-val"};
    for (int f = 0; f < 3; f++)
        for (int k = 0; k < 3; k++) {
            Snapshot before = snap(e.data);
            int rc = tu_run(&out, "%s/train " TINY " --steps 2 --data %s %s %s", tu_bin(), e.data,
                            flags[f], spellings[k]);
            expect_error(out, rc, 2, "train", "is the same file as --data");
            cr_assert(strstr(out, flags[f]), "the output flag is not named:\n%s", out);
            free(out);
            expect_unchanged(e.data, &before);
        }
}

Test(outputs, data_named_like_a_temporary_is_neither_deleted_nor_changed)
{
    Env e;
    env_init(&e, "out-datatmp");
    char dtmp[300], d[400];
    snprintf(dtmp, sizeof dtmp, "%s/d.tmp", e.dir);
    snprintf(d, sizeof d, "%s/d", e.dir);
    cr_assert_eq(rename(e.data, dtmp), 0);
    Snapshot before = snap(dtmp);
    snprintf(e.data, sizeof e.data, "%s", dtmp);
    train_to(&e, d, "");
    expect_unchanged(dtmp, &before);
    cr_assert_eq(ckpt_steps(d), 4);
}

Test(outputs, resuming_from_a_file_named_like_a_temporary_keeps_it)
{
    Env e;
    env_init(&e, "out-resumetmp");
    char src[400], dst[400], *out;
    snprintf(src, sizeof src, "%s/run.ckpt.tmp", e.dir);
    snprintf(dst, sizeof dst, "%s/run.ckpt", e.dir);
    train_to(&e, src, "");
    Snapshot before = snap(src);
    int rc = tu_run(&out, "%s/train --resume %s --steps 6 --out %s", tu_bin(), src, dst);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    expect_unchanged(src, &before);
    cr_assert_eq(ckpt_steps(dst), 6);
}

Test(outputs, a_log_aimed_at_a_checkpoint_is_refused)
{
    Env e;
    env_init(&e, "out-logckpt");
    char a[400], b[400], *out;
    snprintf(a, sizeof a, "%s/a.ckpt", e.dir);
    snprintf(b, sizeof b, "%s/b.ckpt", e.dir);
    train_to(&e, a, "");
    Snapshot before = snap(a);
    /* The checkpoint being resumed. */
    int rc = tu_run(&out, "%s/train --resume %s --steps 6 --out %s --log %s", tu_bin(), a, b, a);
    expect_error(out, rc, 2, "train", "--log");
    cr_assert(strstr(out, "--resume"), "%s", out);
    free(out);
    cr_assert_neq(access(b, F_OK), 0, "the refused run wrote --out");
    /* The run's own previous checkpoint, about to be replaced. */
    rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s --log %s", tu_bin(), e.data,
                a, a);
    expect_error(out, rc, 2, "train", "two outputs cannot share a file");
    cr_assert(strstr(out, "--out") && strstr(out, "--log"), "%s", out);
    free(out);
    expect_unchanged(a, &before);
}

Test(outputs, resume_continues_into_its_own_checkpoint_and_the_hint_continues_the_run)
{
    Env e;
    env_init(&e, "out-hint");
    char errpath[400], cwd_ckpt[64] = "headcount.ckpt";
    snprintf(errpath, sizeof errpath, "%s/err.txt", e.dir);
    struct stat before_cwd;
    int had_cwd = stat(cwd_ckpt, &before_cwd) == 0;
    pid_t pid = start_train(&e, errpath);
    cr_assert_eq(kill(pid, SIGINT), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x", status);
    char *text = tu_read_text(errpath);
    const char *hint = strstr(text, "continue with: ./train ");
    cr_assert_not_null(hint, "no resume hint:\n%s", text);
    hint += strlen("continue with: ./train ");
    char args[1500];
    snprintf(args, sizeof args, "%.*s", (int)strcspn(hint, "\n"), hint);
    cr_assert(strstr(args, "--log"), "the hint drops the run's log: %s", args);
    free(text);
    long at = ckpt_steps(e.out);
    /* The pasted hint, with a finite --steps so that it ends. */
    char *out;
    int rc = tu_run(&out, "%s/train %s --steps %ld", tu_bin(), args, at + 3);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    cr_assert_eq(ckpt_steps(e.out), at + 3, "the hint did not continue into --out");
    char *log = tu_read_text(e.log);
    char key[64];
    snprintf(key, sizeof key, "{\"type\":\"step\",\"step\":%ld,", at + 1);
    cr_assert(strstr(log, key) && strstr(log, "\"type\":\"final\""),
              "the log was not continued:\n%s", log);
    free(log);
    struct stat after_cwd;
    int has_cwd = stat(cwd_ckpt, &after_cwd) == 0;
    cr_assert_eq(had_cwd, has_cwd, "the resume wrote headcount.ckpt in the working directory");
    if (had_cwd)
        cr_assert(before_cwd.st_ino == after_cwd.st_ino &&
                  before_cwd.st_mtime == after_cwd.st_mtime, "headcount.ckpt was replaced");
}

Test(outputs, a_second_trainer_on_the_same_checkpoint_is_refused_naming_the_first)
{
    Env e;
    env_init(&e, "out-lock");
    char errpath[400], *out, pid_text[32];
    snprintf(errpath, sizeof errpath, "%s/err.txt", e.dir);
    pid_t pid = start_train(&e, errpath);
    snprintf(pid_text, sizeof pid_text, "pid %ld", (long)pid);
    char other_log[400];
    snprintf(other_log, sizeof other_log, "%s/other.log", e.dir);
    int rc = tu_run(&out, "%s/train " TINY " --steps 2 --data %s --out %s --log %s", tu_bin(),
                    e.data, e.out, other_log);
    kill(pid, SIGINT);
    int status;
    waitpid(pid, &status, 0);
    expect_error(out, rc, 1, "train", "is being written by another running process");
    cr_assert(strstr(out, pid_text), "the holder is not named (%s):\n%s", pid_text, out);
    free(out);
    cr_assert_neq(access(other_log, F_OK), 0, "the refused trainer opened its log");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x", status);
    ckpt_steps(e.out); /* the first trainer's save is whole */
    char lock[400];
    snprintf(lock, sizeof lock, "%s.lock", e.out);
    cr_assert_neq(access(lock, F_OK), 0, "the lock file outlived the run");
}

Test(outputs, a_symlink_planted_at_the_old_temporary_name_is_not_followed)
{
    Env e;
    env_init(&e, "out-symlink");
    char victim[400], tmp[400], *out;
    make_file(&e, "victim.txt", "precious\n", 9, victim, sizeof victim);
    snprintf(tmp, sizeof tmp, "%s.tmp", e.out);
    cr_assert_eq(symlink(victim, tmp), 0);
    Snapshot before = snap(victim);
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --save-every 2 --data %s --out %s", tu_bin(),
                    e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "leftover"), "the stray temporary name was not reported:\n%s", out);
    free(out);
    expect_unchanged(victim, &before);
    struct stat st;
    cr_assert(lstat(tmp, &st) == 0 && S_ISLNK(st.st_mode), "the planted link was removed");
    cr_assert_eq(ckpt_steps(e.out), 4);
}

Test(outputs, a_device_as_the_log_or_the_val_dump_is_refused_before_anything_runs)
{
    Env e;
    env_init(&e, "out-full");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s --log /dev/full",
                    tu_bin(), e.data, e.out);
    expect_error(out, rc, 2, "train", "--log /dev/full: not a regular file");
    free(out);
    cr_assert_neq(access(e.out, F_OK), 0, "the run trained");
    rc = tu_run(&out, "%s/train --data %s --dump-val /dev/full", tu_bin(), e.data);
    expect_error(out, rc, 2, "train", "--dump-val /dev/full: not a regular file");
    free(out);
}

/* `ulimit -f 1` (512 bytes under sh): the lock file fits, but neither the log's
 * first record (longer, with a 200-byte data file name) nor the 2,000-byte val
 * split does; each is an error with the reason, and the earlier file at that
 * path is left as it was. */
Test(outputs, a_file_size_limit_under_the_log_or_the_val_dump_keeps_the_earlier_file)
{
    Env e;
    env_init(&e, "out-fsize-log");
    char *out, cmd[2000], val[400], name[210], data[700];
    size_t n;
    unsigned char *text = tu_read_file(e.data, &n);
    memset(name, 'd', 200);
    snprintf(name + 200, sizeof name - 200, ".txt");
    make_file(&e, name, text, n, data, sizeof data);
    free(text);
    snprintf(val, sizeof val, "%s/val.txt", e.dir);
    cr_assert_eq(tu_write_file(e.log, "earlier log\n", 12), 0);
    cr_assert_eq(tu_write_file(val, "earlier val\n", 12), 0);
    Snapshot log = snap(e.log), v = snap(val);
    snprintf(cmd, sizeof cmd, "ulimit -f 1; %s/train " TINY
             " --steps 4 --data %s --out %s --log %s", tu_bin(), data, e.out, e.log);
    int rc = tu_run(&out, "%s", cmd);
    expect_late_error(out, rc, 1, "File too large");
    cr_assert(strstr(out, "--log"), "%s", out);
    free(out);
    expect_unchanged(e.log, &log);
    snprintf(cmd, sizeof cmd, "ulimit -f 1; %s/train --data %s --dump-val %s",
             tu_bin(), e.data, val);
    rc = tu_run(&out, "%s", cmd);
    expect_late_error(out, rc, 1, "File too large");
    free(out);
    expect_unchanged(val, &v);
    cr_assert_eq(tu_find_prefix(e.dir, "run.log.tmp", NULL, 0), 0, "a temporary was left");
    cr_assert_eq(tu_find_prefix(e.dir, "val.txt.tmp", NULL, 0), 0, "a temporary was left");
}

Test(outputs, a_file_size_limit_is_a_write_error_not_a_silent_kill)
{
    Env e;
    env_init(&e, "out-fsize");
    char *out, cmd[1500];
    /* 8 blocks (4 or 8 KB, by shell) is far below the checkpoint's 60 KB. */
    snprintf(cmd, sizeof cmd, "ulimit -f 8; %s/train " TINY
             " --steps 4 --data %s --out %s", tu_bin(), e.data, e.out);
    int rc = tu_run(&out, "%s", cmd);
    expect_late_error(out, rc, 1, "File too large");
    cr_assert(strstr(out, "This run wrote no checkpoint"), "%s", out);
    free(out);
    cr_assert_neq(access(e.out, F_OK), 0);
    cr_assert_eq(tu_find_prefix(e.dir, "out.ckpt.tmp", NULL, 0), 0, "a temporary was left");
}

Test(outputs, ctrl_c_during_the_final_evaluation_exits_130_with_the_checkpoint_saved)
{
    Env e;
    env_init(&e, "out-finaleval");
    /* A val split long enough that scoring it takes seconds. */
    size_t n = 3000000;
    char *text = malloc(n);
    for (size_t i = 0; i < n; i++)
        text[i] = (char)('a' + (i * 7 + i / 13) % 26);
    cr_assert_eq(tu_write_file(e.data, text, n), 0);
    free(text);
    char errpath[400], bin[400];
    snprintf(errpath, sizeof errpath, "%s/err.txt", e.dir);
    snprintf(bin, sizeof bin, "%s/train", tu_bin());
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (!freopen(errpath, "w", stderr))
            _exit(99);
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execl(bin, bin, "--layers", "2", "--embd", "64", "--heads", "4", "--block", "128",
              "--batch", "2", "--steps", "2", "--eval-iters", "1", "--threads", "1",
              "--val-frac", "0.9", "--data", e.data, "--out", e.out, (char *)NULL);
        _exit(98);
    }
    int seen = 0;
    for (int i = 0; i < 6000 && !seen; i++) {
        size_t len;
        char *err = (char *)tu_read_file(errpath, &len);
        if (err) {
            err[len] = '\0';
            seen = strstr(err, "scoring the whole val split") != NULL;
            free(err);
        }
        if (!seen)
            sleep_ms(5);
    }
    cr_assert(seen, "the final evaluation never started");
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    size_t len;
    char *err = (char *)tu_read_file(errpath, &len);
    err[len] = '\0';
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x:\n%s", status, err);
    cr_assert(strstr(err, "during the final evaluation"), "%s", err);
    free(err);
    cr_assert_eq(ckpt_steps(e.out), 2);
}

Test(outputs, a_data_path_too_long_to_record_is_refused_up_front)
{
    Env e;
    env_init(&e, "out-longpath");
    char deep[1200], link[1300], *out;
    /* A path over 511 bytes that names the real file: a chain of ./ components. */
    int k = snprintf(deep, sizeof deep, "%s", e.dir);
    while (k < 560)
        k += snprintf(deep + k, sizeof deep - (size_t)k, "/.");
    snprintf(link, sizeof link, "%s/data.txt", deep);
    cr_assert_eq(access(link, R_OK), 0);
    put_sentinel(&e);
    int rc = tu_run(&out, "%s/train " TINY " --steps 2 --data %s --out %s", tu_bin(), link, e.out);
    expect_error(out, rc, 2, "train", "--data");
    cr_assert(strstr(out, "at most 511"), "%s", out);
    free(out);
    expect_nothing_written(&e);
}

Test(outputs, a_64_bit_seed_that_differs_only_past_2_to_the_53_is_caught_on_resume)
{
    Env e;
    env_init(&e, "out-seed");
    train_to(&e, e.out, "--seed 18446744073709551614");
    Snapshot before = snap(e.out);
    char *out;
    int rc = tu_run(&out, "%s/train --resume %s --steps 6 --seed 18446744073709551615", tu_bin(),
                    e.out);
    expect_error(out, rc, 2, "train", "--seed 18446744073709551615 contradicts");
    free(out);
    expect_unchanged(e.out, &before);
}

Test(outputs, divergence_right_after_a_resume_into_a_new_file_names_the_real_checkpoint)
{
    Env e;
    env_init(&e, "out-nanresume");
    char src[400], dst[400], *out;
    snprintf(src, sizeof src, "%s/src.ckpt", e.dir);
    snprintf(dst, sizeof dst, "%s/dst.ckpt", e.dir);
    /* lr 10 with weight decay 10 diverges within a few steps; with a save every
     * step, src holds the last good one, and resuming it diverges at once. */
    int rc = tu_run(&out, "%s/train " TINY " --steps 200 --lr 10 --min-lr 0 --warmup 0 --wd 10 "
                    "--clip 0 --eval-every 0 --save-every 1 --data %s --out %s", tu_bin(), e.data,
                    src);
    cr_assert_eq(rc, 1, "the run did not diverge:\n%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --resume %s --steps 200 --out %s", tu_bin(), src, dst);
    expect_late_error(out, rc, 1, "is not finite");
    cr_assert(strstr(out, "This run saved no checkpoint; the one it resumed from"),
              "the message names a checkpoint that does not exist:\n%s", out);
    cr_assert(strstr(out, src), "%s", out);
    free(out);
    cr_assert_neq(access(dst, F_OK), 0);
}

Test(outputs, a_model_larger_than_the_free_memory_is_refused_with_the_figure)
{
    if (guard_mem_available() == 0)
        cr_skip_test("no MemAvailable in /proc/meminfo");
    Env e;
    env_init(&e, "out-memory");
    put_sentinel(&e);
    char *out;
    int rc = tu_run(&out, "%s/train --steps 2 --layers 64 --embd 1024 --heads 16 --block 16 "
                    "--batch 65536 --data %s --out %s", tu_bin(), e.data, e.out);
    expect_error(out, rc, 1, "train", "out of memory");
    cr_assert(strstr(out, "GiB") && strstr(out, "MemAvailable"), "%s", out);
    free(out);
    expect_nothing_written(&e);
}

/* ---- fileguard on its own ---- */

Test(outputs, same_file_follows_links_and_resolves_paths_not_yet_made)
{
    const char *d = tu_tmpdir("guard-same");
    char a[400], hard[400], soft[400], dangling[400], target[400], viadot[400];
    snprintf(a, sizeof a, "%s/a.txt", d);
    snprintf(hard, sizeof hard, "%s/hard.txt", d);
    snprintf(soft, sizeof soft, "%s/soft.txt", d);
    snprintf(dangling, sizeof dangling, "%s/dangling", d);
    snprintf(target, sizeof target, "%s/not-yet.txt", d);
    snprintf(viadot, sizeof viadot, "%s/./not-yet.txt", d);
    cr_assert_eq(tu_write_file(a, "x", 1), 0);
    cr_assert_eq(link(a, hard), 0);
    cr_assert_eq(symlink("a.txt", soft), 0);
    cr_assert_eq(symlink("not-yet.txt", dangling), 0);
    cr_assert(guard_same_file(a, hard));
    cr_assert(guard_same_file(a, soft));
    cr_assert(guard_same_file(dangling, target), "a dangling link names the file it would make");
    cr_assert(guard_same_file(viadot, target));
    cr_assert_not(guard_same_file(a, target));
    GuardPath ok[] = {{"--resume", a, 0, NULL}, {"--out", soft, 1, "--resume"}};
    char err[1000];
    cr_assert_eq(guard_check_paths(ok, 2, err, sizeof err), 0, "%s", err);
    GuardPath bad[] = {{"--data", a, 0, NULL}, {"--out", target, 1, NULL},
                       {"--log", dangling, 1, NULL}};
    cr_assert_eq(guard_check_paths(bad, 3, err, sizeof err), -1);
    cr_assert(strstr(err, "--out") && strstr(err, "--log"), "%s", err);
}

Test(outputs, shell_quoting_reads_back_as_the_same_word)
{
    const char *words[] = {"plain.ckpt", "with space.ckpt", "it's.ckpt", "$HOME;rm -rf x", ""};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char q[400], cmd[600], *out;
        guard_shell_quote(words[i], q, sizeof q);
        snprintf(cmd, sizeof cmd, "printf '%%s' %s", q);
        cr_assert_eq(tu_run(&out, "%s", cmd), 0);
        cr_assert_str_eq(out, words[i], "quoted as %s", q);
        free(out);
    }
}

Test(outputs, infer_outputs_that_are_its_inputs_are_refused)
{
    Env e;
    env_init(&e, "out-infer");
    char *out, csv[400];
    train_to(&e, e.out, "");
    Snapshot ck = snap(e.out);
    int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --text hello", tu_bin(), e.out, e.out);
    expect_error(out, rc, 2, "infer", "--explore");
    cr_assert(strstr(out, "same file as --ckpt"), "%s", out);
    free(out);
    expect_unchanged(e.out, &ck);
    /* --report DIR rewrites DIR/heads.csv: not when that is the text analysed. */
    snprintf(csv, sizeof csv, "%s/heads.csv", e.dir);
    cr_assert_eq(rename(e.data, csv), 0);
    Snapshot text = snap(csv);
    rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --report %s", tu_bin(), e.out, csv, e.dir);
    expect_error(out, rc, 2, "infer", "same file as --heads");
    free(out);
    expect_unchanged(csv, &text);
}
