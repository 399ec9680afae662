/* Command-line tests of ./train and ./infer (found in $HEADCOUNT_BIN): every bad
 * input gets one error line and exit 2 (usage) or 1 (anything else) and writes
 * nothing; 1 and 2 threads give the same bits; a resumed run matches an
 * uninterrupted one bit for bit; SIGINT/SIGTERM save a loadable checkpoint at
 * the reported step; a diverging run stops naming the step without writing a
 * non-finite checkpoint; ./infer --eval reproduces train's final val loss.
 * Every run is tiny (one layer, C = 16, a 20 KB generated text file). The
 * programs run with OMP_WAIT_POLICY=passive: spinning OpenMP threads on a busy
 * 2-core machine make runs 30x slower, and the policy changes no result. */
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
    int rc = run(&out, "train", TINY " --steps 2 --data %s --allow-binary --out %s", path, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

Test(train, heads_not_dividing_embd_is_a_usage_error)
{
    Env e;
    env_init(&e, "train-heads");
    char flags[600];
    snprintf(flags, sizeof flags, "--data %s --heads 3", e.data);
    refuse_train(&e, flags, 2, "--heads 3 does not divide --embd 16");
    char *out;
    int rc = run(&out, "train", TINY " --steps 2 --data %s --heads 3 --head-size 5 --out %s",
                 e.data, e.out);
    cr_assert_eq(rc, 0, "an explicit --head-size should allow it:\n%s", out);
    free(out);
}

/* Integer flags: name, smallest valid value, the first value above the range. */
static const struct { const char *flag; long lo; const char *above; } INT_FLAGS[] = {
    {"layers", 1, "65"}, {"heads", 1, "257"}, {"embd", 1, "8193"}, {"head-size", 1, "4097"},
    {"block", 1, "4097"}, {"batch", 1, "65537"}, {"steps", 1, "100000001"},
    {"warmup", 0, "100000001"}, {"eval-every", 0, "100000001"}, {"eval-iters", 1, "100001"},
    {"save-every", 0, "100000001"}, {"threads", 1, "1025"},
};
static const struct { const char *flag; double lo; const char *above; } REAL_FLAGS[] = {
    {"lr", 1e-9, "10.5"}, {"min-lr", 0, "11"}, {"wd", 0, "10.01"}, {"clip", 0, "1e7"},
    {"dropout", 0, "0.96"}, {"val-frac", 0, "0.95"},
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
    int rc = run(&out, "train", "--out %s --data %s --steps", e.out, e.data);
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
    int cases = 3;
    if (geteuid() != 0) {
        char ro[400];
        snprintf(ro, sizeof ro, "%s/ro", e.dir);
        cr_assert_eq(mkdir(ro, 0555), 0);
        cases = 4;
    }
    for (int c = 0; c < cases; c++) {
        unlink(e.log);
        int rc = run(&out, "train", TINY " --steps 5 --data %s --out %s --log %s", e.data, bad[c],
                     e.log);
        expect_error(out, rc, 1, "train", needles[c]);
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
    int rc = run(&out, "train", TINY " --steps 4 --data %s --out %s", e->data, out_path);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void refuse_eval(const char *ckpt, const char *evalfile, const char *needle)
{
    char *out;
    int rc = run(&out, "infer", "--ckpt %s --eval %s", ckpt, evalfile);
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
    int rc = run(&out, "train", TINY " --steps 4 --save-every 2 --data %s --out %s", e.data, ck);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    const char *flags[] = {"--layers 2", "--embd 32", "--heads 4", "--head-size 4", "--block 8",
                           "--batch 8", "--lr 0.01", "--seed 1", "--dropout 0.2", "--wd 0"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        snprintf(extra, sizeof extra, "--resume %s %s", ck, flags[i]);
        put_sentinel(&e);
        rc = run(&out, "train", "--out %s --log %s %s", e.out, e.log, extra);
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
    snprintf(extra, sizeof extra, "--resume %s --steps 8", bare);
    refuse_train(&e, extra, 1, "has no training state");
    /* Repeating the checkpoint's own values is allowed. */
    rc = run(&out, "train", "--resume %s --steps 6 --layers 1 --embd 16 --out %s", ck, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* Value-taking flags; every one must show its default in --help. */
static const char *const VALUE_FLAGS[] = {
    "--data", "--out", "--log", "--resume", "--save-every", "--layers", "--heads", "--embd",
    "--head-size", "--block", "--batch", "--steps", "--lr", "--min-lr", "--warmup", "--wd",
    "--clip", "--dropout", "--seed", "--val-frac", "--eval-every", "--eval-iters", "--threads",
};
static const char *const SWITCH_FLAGS[] = {"--keep-best", "--allow-binary", "--help"};

/* The help line describing flag (indented, containing "flag "), copied into buf. */
static int help_line(const char *help, const char *flag, char *buf, size_t len)
{
    char key[64];
    snprintf(key, sizeof key, "%s ", flag);
    for (const char *line = help; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        if (line[0] == ' ' && find_in(line, ll, key)) {
            snprintf(buf, len, "%.*s", (int)ll, line);
            return 0;
        }
        line = end ? end + 1 : NULL;
    }
    return -1;
}

/* The number after "(default: " on flag's help line. */
static double help_default(const char *help, const char *flag)
{
    char line[300];
    cr_assert_eq(help_line(help, flag, line, sizeof line), 0, "%s is not in --help", flag);
    const char *d = strstr(line, "(default: ");
    cr_assert_not_null(d, "%s has no default in --help: %s", flag, line);
    return strtod(d + 10, NULL);
}

/* The number after "key": in a JSON line. */
static double json_number(const char *line, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *at = strstr(line, k);
    cr_assert_not_null(at, "%s missing from %s", key, line);
    return strtod(at + strlen(k), NULL);
}

Test(train, help_lists_every_flag_with_the_default_in_use)
{
    Env e;
    env_init(&e, "train-help");
    char *help, line[300];
    int rc = run(&help, "train", "--help");
    cr_assert_eq(rc, 0);
    for (size_t i = 0; i < sizeof SWITCH_FLAGS / sizeof SWITCH_FLAGS[0]; i++)
        cr_assert(strstr(help, SWITCH_FLAGS[i]), "%s is not in --help", SWITCH_FLAGS[i]);
    for (size_t i = 0; i < sizeof VALUE_FLAGS / sizeof VALUE_FLAGS[0]; i++) {
        cr_assert_eq(help_line(help, VALUE_FLAGS[i], line, sizeof line), 0,
                     "%s is not in --help", VALUE_FLAGS[i]);
        cr_assert(strstr(line, "(default: "), "%s shows no default: %s", VALUE_FLAGS[i], line);
    }
    /* The printed defaults are the ones a run uses (its settings log line). */
    char *out;
    rc = run(&out, "train", "--data %s --steps 1 --eval-iters 1 --out %s --log %s", e.data, e.out,
             e.log);
    cr_assert_eq(rc, 0, "%s", out);
    size_t n;
    char *log = (char *)tu_read_file(e.log, &n);
    cr_assert_not_null(log);
    log[n] = '\0';
    const char *pairs[][2] = {{"--layers", "layers"}, {"--heads", "heads"}, {"--embd", "embd"},
                              {"--block", "block"}, {"--batch", "batch"}, {"--lr", "lr"},
                              {"--min-lr", "min_lr"}, {"--warmup", "warmup"}, {"--wd", "wd"},
                              {"--clip", "clip"}, {"--dropout", "dropout"}, {"--seed", "seed"},
                              {"--val-frac", "val_frac"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        cr_assert_eq(help_default(help, pairs[i][0]), json_number(log, pairs[i][1]),
                     "%s: --help and the run disagree", pairs[i][0]);
    cr_assert_eq(json_number(log, "head_size"),
                 json_number(log, "embd") / json_number(log, "heads"));
    free(log);
    free(out);
    free(help);
    rc = run(&help, "infer", "--help");
    cr_assert_eq(rc, 0);
    cr_assert(strstr(help, "--eval") && strstr(help, "--ckpt"));
    free(help);
}

/* The lines of a log of one type, from step `from` on, each cut before `cut`
 * (the timing fields), joined. */
static char *log_lines(const char *path, const char *type, long from, const char *cut)
{
    size_t n;
    char *text = (char *)tu_read_file(path, &n);
    cr_assert_not_null(text, "no log %s", path);
    text[n] = '\0';
    char prefix[64];
    snprintf(prefix, sizeof prefix, "{\"type\":\"%s\",", type);
    char *res = calloc(n + 1, 1);
    size_t len = 0;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        if (strncmp(line, prefix, strlen(prefix)) == 0 && json_number(line, "step") >= from) {
            const char *c = cut ? find_in(line, ll, cut) : NULL;
            size_t keep = c ? (size_t)(c - line) : ll;
            memcpy(res + len, line, keep);
            len += keep;
            res[len++] = '\n';
        }
        line += ll + (end ? 1 : 0);
    }
    free(text);
    return res;
}

static void expect_same_files(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    cr_assert(x && y, "missing %s or %s", a, b);
    cr_assert(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

static void expect_same_log(const char *a, const char *b, long from)
{
    struct { const char *type, *cut; } kinds[] = {
        {"step", ",\"ms\":"}, {"eval", NULL}, {"final", ",\"train_seconds\":"}};
    for (int k = 0; k < 3; k++) {
        char *x = log_lines(a, kinds[k].type, from, kinds[k].cut);
        char *y = log_lines(b, kinds[k].type, from, kinds[k].cut);
        cr_assert(x[0], "no %s lines in %s", kinds[k].type, a);
        cr_assert_str_eq(x, y, "%s lines differ between %s and %s", kinds[k].type, a, b);
        free(x);
        free(y);
    }
}

#define RUN_FLAGS "--layers 1 --embd 16 --heads 2 --block 16 --batch 4 --eval-iters 2 " \
                  "--steps 24 --eval-every 8 --dropout 0.1 --warmup 4"

Test(train, one_and_two_threads_give_identical_losses_and_checkpoints)
{
    Env e;
    env_init(&e, "train-threads");
    char ck[2][400], log[2][400], *out[2];
    for (int t = 0; t < 2; t++) {
        snprintf(ck[t], sizeof ck[t], "%s/t%d.ckpt", e.dir, t + 1);
        snprintf(log[t], sizeof log[t], "%s/t%d.log", e.dir, t + 1);
        int rc = run(&out[t], "train", RUN_FLAGS " --threads %d --data %s --out %s --log %s",
                     t + 1, e.data, ck[t], log[t]);
        cr_assert_eq(rc, 0, "%s", out[t]);
        cr_assert(strstr(out[t], t ? "2 threads" : "1 threads"), "%s", out[t]);
    }
    expect_same_log(log[0], log[1], 0);
    expect_same_files(ck[0], ck[1]);
    free(out[0]);
    free(out[1]);
}

/* The checkpoint written at step 8 of a 24-step run is captured with the crash
 * hook: the run aborts right after writing it to out.tmp.XXXXXX, before the rename.
 * Resuming from it (with the other thread count) must reproduce the
 * uninterrupted run's steps 9..24 and its final checkpoint byte for byte. */
Test(train, resumed_run_matches_an_uninterrupted_one)
{
    Env e;
    env_init(&e, "train-resume");
    char ref[400], reflog[400], part[400], parttmp[420], at8[400], res[400], reslog[400], *out;
    snprintf(ref, sizeof ref, "%s/ref.ckpt", e.dir);
    snprintf(reflog, sizeof reflog, "%s/ref.log", e.dir);
    snprintf(part, sizeof part, "%s/part.ckpt", e.dir);
    snprintf(parttmp, sizeof parttmp, "%s.tmp", part);
    snprintf(at8, sizeof at8, "%s/at8.ckpt", e.dir);
    snprintf(res, sizeof res, "%s/res.ckpt", e.dir);
    snprintf(reslog, sizeof reslog, "%s/res.log", e.dir);
    int rc = run(&out, "train", RUN_FLAGS " --save-every 8 --threads 1 --data %s --out %s --log %s",
                 e.data, ref, reflog);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "ulimit -c 0; HEADCOUNT_TEST_CRASH_BEFORE_RENAME=1 "
             "OMP_WAIT_POLICY=passive %s/train " RUN_FLAGS " --save-every 8 --threads 1 "
             "--data %s --out %s", tu_bin(), e.data, part);
    rc = tu_run(cmd, &out);
    cr_assert_eq(rc, 128 + SIGABRT, "the crash hook did not fire: %d\n%s", rc, out);
    free(out);
    cr_assert_neq(access(part, F_OK), 0);
    cr_assert_eq(tu_find_prefix(e.dir, "part.ckpt.tmp.", parttmp, sizeof parttmp), 1);
    cr_assert_eq(rename(parttmp, at8), 0);
    Model m;
    Tokenizer tok;
    TrainState ts;
    long steps;
    int has;
    char err[2000];
    cr_assert_eq(ckpt_load(at8, &m, &tok, &steps, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert(steps == 8 && has && ts.steps == 24);
    model_free(&m);
    rc = run(&out, "train", "--resume %s --threads 2 --out %s --log %s", at8, res, reslog);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "resuming"), "%s", out);
    free(out);
    char *first = log_lines(reslog, "step", 0, ",\"ms\":");
    cr_assert_eq(strncmp(first, "{\"type\":\"step\",\"step\":9,", 24), 0, "%s", first);
    free(first);
    expect_same_log(reflog, reslog, 9);
    expect_same_files(ref, res);
}

static void signal_saves_at_the_reported_step(int sig, const char *word)
{
    Env e;
    env_init(&e, sig == SIGINT ? "train-sigint" : "train-sigterm");
    char errpath[400];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", e.dir);
    pid_t pid = start_train(&e, errpath);
    cr_assert_eq(kill(pid, sig), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    size_t n;
    char *text = (char *)tu_read_file(errpath, &n);
    text[n] = '\0';
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig,
              "status 0x%x, expected exit %d:\n%s", status, 128 + sig, text);
    char key[64];
    snprintf(key, sizeof key, "train: %s at step ", word);
    const char *at = strstr(text, key);
    cr_assert_not_null(at, "no '%s' line:\n%s", key, text);
    long reported = strtol(at + strlen(key), NULL, 10);
    Model m;
    Tokenizer tok;
    TrainState ts;
    long steps;
    int has;
    char err[2000];
    cr_assert_eq(ckpt_load(e.out, &m, &tok, &steps, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert_eq(steps, reported, "checkpoint at step %ld, stderr says %ld", steps, reported);
    cr_assert(has && ts.step == reported && ts.steps == 100000000);
    char *last = log_lines(e.log, "step", reported, ",\"ms\":");
    cr_assert(count_lines(last) == 1 && json_number(last, "step") == reported,
              "the log does not end at step %ld: %s", reported, last);
    free(last);
    model_free(&m);
    free(text);
}

Test(train, sigint_saves_a_loadable_checkpoint_at_the_reported_step_and_exits_130)
{
    signal_saves_at_the_reported_step(SIGINT, "interrupted");
}

Test(train, sigterm_saves_a_loadable_checkpoint_at_the_reported_step_and_exits_143)
{
    signal_saves_at_the_reported_step(SIGTERM, "terminated");
}

/* A second signal exits at once: whatever it interrupts, no damaged checkpoint. */
Test(train, a_second_signal_exits_at_once_leaving_no_damaged_checkpoint)
{
    Env e;
    env_init(&e, "train-twosignals");
    char errpath[400];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", e.dir);
    pid_t pid = start_train(&e, errpath);
    kill(pid, SIGINT);
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x", status);
    if (access(e.out, F_OK) == 0) {
        Model m;
        Tokenizer tok;
        char err[2000];
        cr_assert_eq(ckpt_load(e.out, &m, &tok, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
        model_free(&m);
    }
}

/* lr 10 with weight decay 10 multiplies every decayed weight by (1 - 100) per
 * step, so the loss overflows within ~20 steps on any machine. */
#define DIVERGE "--lr 10 --min-lr 0 --wd 10 --clip 0 --warmup 0 --steps 200"

Test(train, a_diverging_run_stops_naming_the_step_and_keeps_the_last_good_checkpoint)
{
    Env e;
    env_init(&e, "train-nan");
    char *out;
    int rc = run(&out, "train", TINY " " DIVERGE " --save-every 3 --data %s --out %s", e.data,
                 e.out);
    cr_assert_eq(rc, 1, "%s", out);
    const char *at = strstr(out, "is not finite at step ");
    cr_assert_not_null(at, "%s", out);
    long bad = strtol(at + 22, NULL, 10);
    long good = (bad - 1) / 3 * 3;
    cr_assert_geq(good, 3, "diverged too early to test the saved checkpoint:\n%s", out);
    char key[500];
    snprintf(key, sizeof key, "The last good checkpoint is %s (step %ld)", e.out, good);
    cr_assert(strstr(out, key), "expected '%s' in:\n%s", key, out);
    cr_assert_eq(count_lines(strstr(out, "train: error: ")), 1, "%s", out);
    Model m;
    Tokenizer tok;
    TrainState ts;
    long steps;
    int has;
    char err[2000];
    /* ckpt_load refuses non-finite parameters and moments, so loading is the check. */
    cr_assert_eq(ckpt_load(e.out, &m, &tok, &steps, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert_eq(steps, good);
    model_free(&m);
    free(out);
    /* Without periodic saves the run writes nothing and the old file survives. */
    size_t n0, n1;
    unsigned char *before = tu_read_file(e.out, &n0);
    rc = run(&out, "train", TINY " " DIVERGE " --save-every 0 --data %s --out %s", e.data, e.out);
    cr_assert_eq(rc, 1, "%s", out);
    snprintf(key, sizeof key, "is not finite at step %ld", bad);
    cr_assert(strstr(out, key), "the same run diverged at another step:\n%s", out);
    unsigned char *after = tu_read_file(e.out, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "the previous checkpoint changed");
    snprintf(key, sizeof key, "%s.tmp", e.out);
    cr_assert_neq(access(key, F_OK), 0);
    free(before);
    free(after);
    free(out);
}

/* Checks "eval loss L ppl P bpc B tokens N" exactly: L with 6 decimals, P and
 * B with 4, and P, B consistent with L. Returns L's text in loss (16 bytes). */
static void parse_eval_line(const char *line, char *loss, size_t *tokens)
{
    double l, p, b;
    char tail[8];
    int k = sscanf(line, "eval loss %15s ppl %lf bpc %lf tokens %zu%7s", loss, &p, &b, tokens,
                   tail);
    cr_assert_eq(k, 4, "not an eval line: %s", line);
    l = strtod(loss, NULL);
    char again[200];
    snprintf(again, sizeof again, "eval loss %.6f ppl %.4f bpc %.4f tokens %zu\n", l, p, b,
             *tokens);
    cr_assert_str_eq(line, again, "format differs");
    cr_assert(fabs(p - exp(l)) <= 1e-4 * exp(l) + 1e-4 && fabs(b - l / log(2.0)) <= 1e-4,
              "ppl or bpc inconsistent with the loss: %s", line);
}

Test(train, infer_eval_reproduces_the_final_val_loss)
{
    Env e;
    env_init(&e, "train-eval");
    char *out;
    int rc = run(&out, "train", TINY " --steps 20 --data %s --out %s --log %s", e.data, e.out,
                 e.log);
    cr_assert_eq(rc, 0, "%s", out);
    const char *v = strstr(out, "done: ");
    v = v ? strstr(v, "| val loss ") : NULL;
    cr_assert_not_null(v, "%s", out);
    double shown;
    size_t split_tokens;
    cr_assert_eq(sscanf(v, "| val loss %lf (whole val split, %zu tokens)", &shown,
                        &split_tokens), 2, "%s", v);
    char *final = log_lines(e.log, "final", 0, NULL);
    const char *jv = strstr(final, "\"val_loss\":");
    cr_assert_not_null(jv, "%s", final);
    char want[32];
    snprintf(want, sizeof want, "%.*s", (int)strcspn(jv + 11, ","), jv + 11);
    /* The val split is the last (n - ntrain) bytes, ntrain as data/corpus.c computes it. */
    size_t n, ntrain = (size_t)((double)DATA_BYTES * (1.0 - 0.1));
    unsigned char *text = tu_read_file(e.data, &n);
    char val[400];
    make_file(&e, "val.txt", text + ntrain, n - ntrain, val, sizeof val);
    free(text);
    for (int threads = 1; threads <= 2; threads++) {
        char *ev, loss[16];
        size_t tokens;
        rc = run(&ev, "infer", "--ckpt %s --eval %s --threads %d", e.out, val, threads);
        cr_assert_eq(rc, 0, "%s", ev);
        parse_eval_line(ev, loss, &tokens);
        cr_assert_str_eq(loss, want, "infer --eval %s, train's final val loss %s", loss, want);
        cr_assert_eq(tokens, split_tokens);
        cr_assert_eq(tokens, n - ntrain - 1);
        char four[16];
        snprintf(four, sizeof four, "%.4f", strtod(want, NULL));
        cr_assert_eq(strtod(four, NULL), shown, "stderr shows %.4f", shown);
        free(ev);
    }
    free(final);
    free(out);
}

/* Adam's constants are stored in the checkpoint and used again on resume (they
 * used to be saved and then ignored, so a resumed run with --beta2 0.95 went on
 * with 0.99). Warm-up beyond the last step keeps the schedule independent of
 * --steps, so 3 + 3 steps must equal 6. */
Test(train, a_resumed_run_keeps_its_adam_constants)
{
    Env e;
    env_init(&e, "train-betas");
    expect_resume_matches(&e, TINY " --beta1 0.8 --beta2 0.95 --eps 1e-6 --warmup 100 "
                          "--eval-every 0", "--beta2 0.99",
                          "--beta2 0.99 contradicts the checkpoint");
}

/* --json gives scripts the same number as the human-readable line, parsed
 * without a regex; it is refused outside --eval. */
Test(train, infer_eval_json_matches_the_text_line)
{
    Env e;
    env_init(&e, "train-evaljson");
    char *out, *js;
    int rc = run(&out, "train", TINY " --steps 4 --data %s --out %s", e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = run(&out, "train", "--data %s --dump-val %s/val.txt", e.data, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = run(&out, "infer", "--ckpt %s --eval %s/val.txt", e.out, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    rc = run(&js, "infer", "--ckpt %s --eval %s/val.txt --json", e.out, e.dir);
    cr_assert_eq(rc, 0, "%s", js);
    double text_loss = strtod(strstr(out, "eval loss ") + 10, NULL);
    const char *l = strstr(js, "{\"loss\":"), *t = strstr(js, "\"tokens\":");
    cr_assert(l && t, "not the JSON object: %s", js);
    cr_assert(fabs(strtod(l + 8, NULL) - text_loss) < 1e-6, "%s vs %s", js, out);
    cr_assert_eq(strtol(t + 9, NULL, 10), strtol(strstr(out, "tokens ") + 7, NULL, 10));
    free(out);
    free(js);
    rc = run(&out, "infer", "--ckpt %s --json", e.out);
    expect_error(out, rc, 2, "infer", "--json needs --eval");
    free(out);
}

/* --heads --json prints summary.json's object, the same bytes the report writes,
 * and no table; with --prune-curve the curve is in it: one entry per active head
 * plus the start, which removes nothing and costs the base loss. */
Test(train, infer_heads_json_is_the_summary_with_the_prune_curve, .timeout = 60)
{
    Env e;
    env_init(&e, "train-headsjson");
    char *out;
    int rc = run(&out, "train", TINY " --steps 4 --data %s --out %s", e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = run(&out, "train", "--data %s --dump-val %s/val.txt", e.data, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char cmd[1024], path[600];
    snprintf(path, sizeof path, "%s/rep/summary.json", e.dir);
    snprintf(cmd, sizeof cmd, "{ %s/infer --ckpt %s --heads %s/val.txt --windows 2 -j 1 --json "
             "--prune-curve --report %s/rep 2>/dev/null; }", tu_bin(), e.out, e.dir, e.dir);
    char *js;
    rc = tu_run(cmd, &js);
    cr_assert_eq(rc, 0, "%s\n%s", cmd, js);
    size_t n = strlen(js), m = 0;
    char *file = (char *)tu_read_file(path, &m);
    cr_assert_not_null(file, "no %s", path);
    cr_assert_eq(n, m, "stdout holds exactly summary.json:\n%s\n%s", js, file);
    cr_assert_eq(memcmp(js, file, n), 0, "%s\nvs\n%s", js, file);
    cr_assert_null(strstr(js, "prune curve (heads removed"), "no table with --json");
    const char *pc = strstr(js, "\"prune_curve\":[{\"removed\":0,\"head\":null,\"loss\":");
    cr_assert_not_null(pc, "%s", js);
    const char *bl = strstr(js, "\"base_loss\":");
    cr_assert_not_null(bl);
    cr_assert_eq(strtod(pc + strlen("\"prune_curve\":[{\"removed\":0,\"head\":null,\"loss\":"),
                        NULL), strtod(bl + 12, NULL));
    int entries = 0;
    for (const char *p = pc; (p = strstr(p, "\"removed\":")); p++)
        entries++;
    const char *ah = strstr(js, "\"active_heads\":");
    cr_assert_not_null(ah);
    cr_assert_eq(entries, strtol(ah + 15, NULL, 10) + 1, "%s", js);
    free(js);
    free(file);
}
