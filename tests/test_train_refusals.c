/* Command-line refusals of ./train and ./infer (found in $HEADCOUNT_BIN): every
 * bad input (data file, numeric value, flag, output path, checkpoint, resume
 * flags that contradict the run) gets one error line and exit 2 (usage) or 1
 * (anything else), and writes nothing. Every run is tiny (one layer, C = 16, a
 * 20 KB generated text file), with OMP_WAIT_POLICY=passive (see test_train.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "data/synth.h"
#include "trainer/ckpt.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

Test(train, bad_data_files_get_one_line_and_exit_1)
{
    Env e;
    env_init(&e, "train-baddata");
    char path[400], flags[600];
    struct { const char *name, *content; size_t n; const char *needle; } cases[] = {
        {"empty.txt", "", 0, "file is empty"},
        {"short.txt", "just ten b", 10, "fewer than one window"},
        {"shortval.txt", NULL, 150, "leave 15 for validation"},
        {"binary.txt", NULL, 2000, "looks binary"},
    };
    char text[2000], binary[2000];
    for (int i = 0; i < 2000; i++) {
        text[i] = (char)('a' + i % 26);
        binary[i] = i % 100 == 50 ? '\0' : text[i];
    }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *content = cases[c].content ? cases[c].content : c == 3 ? binary : text;
        make_file(&e, cases[c].name, content, cases[c].n, path, sizeof path);
        snprintf(flags, sizeof flags, "--data %s", path);
        refuse_train(&e, flags, 1, cases[c].needle);
    }
    snprintf(flags, sizeof flags, "--data %s/missing.txt", e.dir);
    refuse_train(&e, flags, 1, "no such file");
    snprintf(flags, sizeof flags, "--data %s", e.dir);
    refuse_train(&e, flags, 1, "is a directory");
    snprintf(path, sizeof path, "%s/fifo", e.dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    snprintf(flags, sizeof flags, "--data %s", path);
    refuse_train(&e, flags, 1, "not a regular file");
    if (geteuid() != 0) {
        make_file(&e, "secret.txt", text, 1000, path, sizeof path);
        cr_assert_eq(chmod(path, 0), 0);
        snprintf(flags, sizeof flags, "--data %s", path);
        refuse_train(&e, flags, 1, "cannot open");
    }
    /* The binary file is fine when asked for. */
    char *out;
    snprintf(path, sizeof path, "%s/binary.txt", e.dir);
    int rc = tu_run(&out, "%s/train " TINY " --steps 2 --data %s --allow-binary --out %s", tu_bin(),
                    path, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

Test(train, heads_not_dividing_embd_is_a_usage_error)
{
    Env e;
    env_init(&e, "train-heads");
    char flags[600];
    snprintf(flags, sizeof flags, "--data %s --heads 3", e.data);
    refuse_train(&e, flags, 2, "--n-heads 3 does not divide --embd 16");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 2 --data %s --heads 3 --head-size 5 --out %s",
                    tu_bin(), e.data, e.out);
    cr_assert_eq(rc, 0, "an explicit --head-size should allow it:\n%s", out);
    free(out);
}

/* Integer flags: name, smallest valid value, the first value above the range.
 * 0 is valid where it names the default or off (head-size: embd / heads;
 * threads: all cores). */
static const struct { const char *flag; long lo; const char *above; } INT_FLAGS[] = {
    {"layers", 1, "65"}, {"n-heads", 1, "257"}, {"embd", 1, "8193"}, {"head-size", 0, "4097"},
    {"block", 1, "4097"}, {"batch", 1, "65537"}, {"steps", 1, "100000001"},
    {"warmup", 0, "100000001"}, {"eval-every", 0, "100000001"}, {"eval-iters", 1, "100001"},
    {"save-every", 0, "100000001"}, {"threads", 0, "1025"},
};
static const struct { const char *flag; double lo; const char *above; } REAL_FLAGS[] = {
    {"lr", 1e-9, "10.5"}, {"min-lr", 0, "11"}, {"wd", 0, "10.01"}, {"clip", 0, "1e7"},
    {"dropout", 0, "0.96"}, {"val-frac", 0, "0.95"}, {"head-dropout", 0, "0.96"},
};

static void refuse_value(const Env *e, const char *flag, const char *value)
{
    char extra[700], needle[64];
    snprintf(extra, sizeof extra, "--data %s '--%s=%s'", e->data, flag, value);
    snprintf(needle, sizeof needle, "--%s", flag);
    refuse_train(e, extra, 2, needle);
}

Test(train, bad_numeric_values_are_usage_errors_naming_the_flag)
{
    Env e;
    env_init(&e, "train-numbers");
    const char *junk[] = {"-1", "abc", "", "7x", " ", "99999999999999999999999", "0x10", "1e3"};
    for (size_t i = 0; i < sizeof INT_FLAGS / sizeof INT_FLAGS[0]; i++) {
        if (INT_FLAGS[i].lo > 0)
            refuse_value(&e, INT_FLAGS[i].flag, "0");
        refuse_value(&e, INT_FLAGS[i].flag, INT_FLAGS[i].above);
        for (size_t j = 0; j < sizeof junk / sizeof junk[0]; j++)
            refuse_value(&e, INT_FLAGS[i].flag, junk[j]);
    }
    const char *real_junk[] = {"-1", "abc", "", "0.5x", "nan", "inf", "-inf", "1e400"};
    for (size_t i = 0; i < sizeof REAL_FLAGS / sizeof REAL_FLAGS[0]; i++) {
        if (REAL_FLAGS[i].lo > 0)
            refuse_value(&e, REAL_FLAGS[i].flag, "0");
        refuse_value(&e, REAL_FLAGS[i].flag, REAL_FLAGS[i].above);
        for (size_t j = 0; j < sizeof real_junk / sizeof real_junk[0]; j++)
            refuse_value(&e, REAL_FLAGS[i].flag, real_junk[j]);
    }
    const char *seed_junk[] = {"-1", "abc", "", "1.5", "18446744073709551616"};
    for (size_t j = 0; j < sizeof seed_junk / sizeof seed_junk[0]; j++)
        refuse_value(&e, "seed", seed_junk[j]);
    char extra[700];
    snprintf(extra, sizeof extra, "--data %s --lr 0.001 --min-lr 0.01", e.data);
    refuse_train(&e, extra, 2, "--min-lr 0.01 is above --lr 0.001");
    /* In range one by one, too big together. */
    snprintf(extra, sizeof extra, "--data %s --layers 64 --embd 8192 --heads 64", e.data);
    refuse_train(&e, extra, 2, "parameters");
}

/* 65536 x 1024 tokens need ~0.5 TB of activations: a clean out-of-memory
 * error. Only where the kernel refuses such a request outright (overcommit 0
 * or 2); with overcommit 1 the allocation would succeed and thrash. */
Test(train, an_impossible_allocation_fails_cleanly)
{
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    int mode = -1;
    if (f) {
        if (fscanf(f, "%d", &mode) != 1)
            mode = -1;
        fclose(f);
    }
    int strict = mode == 0 || mode == 2;
    if (!strict)
        cr_skip_test("vm.overcommit_memory is 1: a huge calloc would not fail");
    Env e;
    env_init(&e, "train-oom");
    char extra[700];
    snprintf(extra, sizeof extra, "--data %s --batch 65536 --block 1024", e.data);
    refuse_train(&e, extra, 1, "out of memory");
}

Test(train, unknown_flags_and_stray_arguments_are_usage_errors)
{
    Env e;
    env_init(&e, "train-unknown");
    char extra[700];
    snprintf(extra, sizeof extra, "--data %s --bogus 3", e.data);
    refuse_train(&e, extra, 2, "unknown option '--bogus'");
    snprintf(extra, sizeof extra, "--data %s -Z", e.data);
    refuse_train(&e, extra, 2, "unknown option '-Z'");
    snprintf(extra, sizeof extra, "--data %s stray.txt", e.data);
    refuse_train(&e, extra, 2, "unexpected argument 'stray.txt'");
    snprintf(extra, sizeof extra, "--data %s --keep-best=yes", e.data);
    refuse_train(&e, extra, 2, "--keep-best");
    char *out;
    put_sentinel(&e);
    int rc = tu_run(&out, "%s/train --out %s --data %s --steps", tu_bin(), e.out, e.data);
    expect_error(out, rc, 2, "train", "'--steps' needs a value");
    expect_nothing_written(&e);
    free(out);
}

/* Found before anything is loaded or trained: the error is the only line. */
Test(train, unusable_out_path_is_found_before_training)
{
    Env e;
    env_init(&e, "train-badout");
    char file[400], *out;
    make_file(&e, "plain.txt", "x", 1, file, sizeof file);
    char bad[4][450];
    snprintf(bad[0], sizeof bad[0], "%s/no-such-dir/x.ckpt", e.dir);
    snprintf(bad[1], sizeof bad[1], "%s/x.ckpt", file);
    snprintf(bad[2], sizeof bad[2], "%s", e.dir);
    snprintf(bad[3], sizeof bad[3], "%s/ro/x.ckpt", e.dir);
    const char *needles[4] = {"directory does not exist", "Not a directory", "is a directory",
                              "Permission denied"};
    const int codes[4] = {1, 1, 2, 1}; /* a directory is refused with the other usage errors */
    int cases = 3;
    if (geteuid() != 0) {
        char ro[400];
        snprintf(ro, sizeof ro, "%s/ro", e.dir);
        cr_assert_eq(mkdir(ro, 0555), 0);
        cases = 4;
    }
    for (int c = 0; c < cases; c++) {
        unlink(e.log);
        int rc = tu_run(&out, "%s/train " TINY " --steps 5 --data %s --out %s --log %s", tu_bin(),
                        e.data, bad[c], e.log);
        expect_error(out, rc, codes[c], "train", needles[c]);
        cr_assert(strstr(out, "--out"), "the flag is not named:\n%s", out);
        cr_assert_neq(access(e.log, F_OK), 0, "the run started (it opened its log)");
        free(out);
    }
    snprintf(bad[0], sizeof bad[0], "%s/no-such-dir", e.dir);
    cr_assert_neq(access(bad[0], F_OK), 0, "the missing directory was created");
}

/* A 2-step checkpoint of a 4-step run in e->out. */
static void train_small(const Env *e, const char *out_path)
{
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s", tu_bin(), e->data,
                    out_path);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void refuse_eval(const char *ckpt, const char *evalfile, const char *needle)
{
    char *out;
    int rc = tu_run(&out, "%s/infer --ckpt %s --eval %s", tu_bin(), ckpt, evalfile);
    expect_error(out, rc, 1, "infer", needle);
    free(out);
}

Test(train, eval_refuses_damaged_and_foreign_checkpoints)
{
    Env e;
    env_init(&e, "train-evalbad");
    train_small(&e, e.out);
    size_t n;
    unsigned char *good = tu_read_file(e.out, &n);
    cr_assert_not_null(good);
    char path[400], bin[400];
    make_file(&e, "half.ckpt", good, n / 2, path, sizeof path);
    refuse_eval(path, e.data, "truncated");
    make_file(&e, "short1.ckpt", good, n - 1, path, sizeof path);
    refuse_eval(path, e.data, "truncated");
    good[2000] ^= 0x01;
    make_file(&e, "flipped.ckpt", good, n, path, sizeof path);
    refuse_eval(path, e.data, "checksum mismatch");
    good[2000] ^= 0x01;
    refuse_eval(e.data, e.data, "not a headcount checkpoint");
    snprintf(bin, sizeof bin, "%s/train", tu_bin());
    refuse_eval(bin, e.data, "not a headcount checkpoint");
    Rng rng;
    rng_init(&rng, 11, 0);
    for (size_t i = 0; i < n; i++)
        good[i] = (unsigned char)rng_u64(&rng);
    make_file(&e, "noise.ckpt", good, n, path, sizeof path);
    refuse_eval(path, e.data, "not a headcount checkpoint");
    make_file(&e, "empty.ckpt", "", 0, path, sizeof path);
    refuse_eval(path, e.data, "too short");
    refuse_eval(e.dir, e.data, "is a directory");
    snprintf(path, sizeof path, "%s/missing.ckpt", e.dir);
    refuse_eval(path, e.data, "no such checkpoint file");
    /* Good checkpoint, bad file to score. */
    make_file(&e, "alien.txt", "The cat sat.\n\x01", 14, path, sizeof path);
    refuse_eval(e.out, path, "byte 0x01 at offset 13");
    make_file(&e, "one.txt", "T", 1, path, sizeof path);
    refuse_eval(e.out, path, "at least 2");
    free(good);
}

Test(train, resume_with_contradicting_flags_is_refused)
{
    Env e;
    env_init(&e, "train-resumebad");
    char ck[400], extra[900], *out;
    snprintf(ck, sizeof ck, "%s/two.ckpt", e.dir);
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --save-every 2 --data %s --out %s", tu_bin(),
                    e.data, ck);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    const char *flags[] = {"--layers 2", "--embd 32", "--heads 4", "--head-size 4", "--block 8",
                           "--batch 8", "--lr 0.01", "--seed 1", "--dropout 0.2", "--wd 0",
                           "--head-dropout 0.2"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        snprintf(extra, sizeof extra, "--resume %s %s", ck, flags[i]);
        put_sentinel(&e);
        rc = tu_run(&out, "%s/train --out %s --log %s %s", tu_bin(), e.out, e.log, extra);
        expect_error(out, rc, 2, "train", "contradicts the checkpoint");
        expect_nothing_written(&e);
        free(out);
    }
    snprintf(extra, sizeof extra, "--resume %s --steps 4", ck);
    refuse_train(&e, extra, 2, "already trained 4 of 4 steps");
    snprintf(extra, sizeof extra, "--resume %s/missing.ckpt", e.dir);
    refuse_train(&e, extra, 1, "no such checkpoint file");
    /* The same file without training state (written through the library). */
    Model m;
    Tokenizer tok;
    char err[2000], bare[400];
    cr_assert_eq(ckpt_load(ck, &m, &tok, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    snprintf(bare, sizeof bare, "%s/bare.ckpt", e.dir);
    cr_assert_eq(ckpt_save(bare, &m, &tok, 4, NULL, err, sizeof err), 0, "%s", err);
    model_free(&m);
    tok_free(&tok);
    snprintf(extra, sizeof extra, "--resume %s --steps 8", bare);
    refuse_train(&e, extra, 1, "has no training state");
    /* --heads-every writes its metrics to the log: without --log it is refused,
     * in a fresh run and in a resumed one. */
    put_sentinel(&e);
    rc = tu_run(&out, "%s/train " TINY " --steps 5 --data %s --heads-every 2 --out %s", tu_bin(),
                e.data, e.out);
    expect_error(out, rc, 2, "train", "--heads-every 2 needs --log FILE");
    expect_nothing_written(&e);
    free(out);
    put_sentinel(&e);
    rc = tu_run(&out, "%s/train --resume %s --steps 6 --heads-every 2 --out %s", tu_bin(), ck,
                e.out);
    expect_error(out, rc, 2, "train", "--heads-every 2 needs --log FILE");
    expect_nothing_written(&e);
    free(out);
    /* Repeating the checkpoint's own values is allowed. */
    rc = tu_run(&out, "%s/train --resume %s --steps 6 --layers 1 --embd 16 --out %s", tu_bin(), ck,
                e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* --print-settings with --resume tells what the resumed run would use: the
 * checkpoint's settings (its head gates, its steps done checked against
 * --steps), and the same refusals a real resume makes; a missing or truncated
 * checkpoint is one line and exit 1, never the built-in recipe and exit 0. */
Test(train, print_settings_with_resume_reads_the_checkpoint_and_refuses_as_a_resume_does)
{
    Env e;
    env_init(&e, "train-print-resume");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --head-gates 0.05 --data %s --out %s",
                    tu_bin(), e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --print-settings --resume %s --steps 9", tu_bin(), e.out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"head_gates\":0.05") && strstr(out, "\"layers\":1,") &&
              strstr(out, "\"embd\":16,") && strstr(out, "\"steps\":9,"), "%s", out);
    cr_assert_eq(count_lines(out), 1, "more than the settings:\n%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --print-settings --resume %s --steps 9 --head-gates 0.5", tu_bin(),
                e.out);
    expect_error(out, rc, 2, "train", "--head-gates 0.5 contradicts the checkpoint (0.05)");
    free(out);
    rc = tu_run(&out, "%s/train --print-settings --resume %s", tu_bin(), e.out);
    expect_error(out, rc, 2, "train", "already trained 4 of 4 steps");
    free(out);
    rc = tu_run(&out, "%s/train --print-settings --resume %s/missing.ckpt --steps 9", tu_bin(),
                e.dir);
    expect_error(out, rc, 1, "train", "no such checkpoint file");
    free(out);
    size_t n;
    unsigned char *good = tu_read_file(e.out, &n);
    char half[400];
    make_file(&e, "half.ckpt", good, n / 2, half, sizeof half);
    free(good);
    rc = tu_run(&out, "%s/train --print-settings --resume %s --steps 9", tu_bin(), half);
    expect_error(out, rc, 1, "train", "truncated");
    free(out);
}
