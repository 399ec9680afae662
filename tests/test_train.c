/* Command-line tests of ./train and ./infer (found in $HEADCOUNT_BIN): --help
 * lists every flag with its default; 1 and 2 threads give the same bits; a
 * resumed run matches an uninterrupted one bit for bit; SIGINT/SIGTERM save a
 * loadable checkpoint at the reported step; a diverging run stops naming the
 * step without writing a non-finite checkpoint; ./infer --eval reproduces
 * train's final val loss. The refusals of bad input are in
 * test_train_refusals.c. Every run is tiny (one layer, C = 16, a 20 KB generated
 * text file). The programs run with OMP_WAIT_POLICY=passive: spinning OpenMP
 * threads on a busy 2-core machine make runs 30x slower, and the policy changes
 * no result. */
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

/* Value-taking flags; every one must show its default in --help. */
static const char *const VALUE_FLAGS[] = {
    "--data", "--out", "--log", "--resume", "--save-every", "--layers", "--n-heads", "--embd",
    "--head-size", "--block", "--vocab", "--batch", "--steps", "--lr", "--min-lr", "--warmup", "--wd",
    "--clip", "--dropout", "--seed", "--val-frac", "--eval-every", "--eval-iters", "--threads",
    "--head-dropout", "--progress-every", "--pos-std", "--pos-decay",
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

Test(train, help_lists_every_flag_with_the_default_in_use)
{
    Env e;
    env_init(&e, "train-help");
    char *help, line[300];
    int rc = tu_run(&help, "%s/train --help", tu_bin());
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
    rc = tu_run(&out, "%s/train --data %s --steps 1 --eval-iters 1 --out %s --log %s", tu_bin(),
                e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    char *log = tu_read_text(e.log);
    const char *pairs[][2] = {{"--layers", "layers"}, {"--n-heads", "heads"}, {"--embd", "embd"},
                              {"--block", "block"}, {"--batch", "batch"}, {"--lr", "lr"},
                              {"--min-lr", "min_lr"}, {"--warmup", "warmup"}, {"--wd", "wd"},
                              {"--clip", "clip"}, {"--dropout", "dropout"}, {"--seed", "seed"},
                              {"--val-frac", "val_frac"}, {"--head-dropout", "head_dropout"},
                              {"--pos-std", "pos_std"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        cr_assert_eq(help_default(help, pairs[i][0]), json_number(log, pairs[i][1]),
                     "%s: --help and the run disagree", pairs[i][0]);
    cr_assert_eq(json_number(log, "head_size"),
                 json_number(log, "embd") / json_number(log, "heads"));
    free(log);
    free(out);
    free(help);
    rc = tu_run(&help, "%s/infer --help", tu_bin());
    cr_assert_eq(rc, 0);
    cr_assert(strstr(help, "--eval") && strstr(help, "--ckpt"));
    free(help);
}

/* The built-in text corpus trains with its own recipe (a higher learning rate,
 * docs/heads.md) when no --data is given; --data keeps the --help defaults; any
 * flag given wins over the recipe; a real run uses what --print-settings shows;
 * and --help names the recipe. */
Test(train, the_text_recipe_applies_only_without_data_and_flags_override_it)
{
    Env e;
    env_init(&e, "train-text-recipe");
    char *help, *out;
    cr_assert_eq(tu_run(&help, "%s/train --help", tu_bin()), 0);
    double lr_default = help_default(help, "--lr"), min_default = help_default(help, "--min-lr");
    double warmup_default = help_default(help, "--warmup");
    const char *recipe = strstr(help, "--corpus text (the default)");
    cr_assert_not_null(recipe, "--help does not name the text recipe:\n%s", help);
    recipe += strlen("--corpus text (the default)");
    recipe += strspn(recipe, " ");
    const char *line = "--pos-std 0.1 --vocab 1536 --steps 4000 --lr 0.005 --min-lr 0.0005 "
                       "--warmup 800 --pos-decay off\n";
    cr_assert(strncmp(recipe, line, strlen(line)) == 0,
              "--help's text recipe line is not the recipe:\n%s", help);
    double steps_default = help_default(help, "--steps");
    double pos_std_default = help_default(help, "--pos-std");
    free(help);
    struct {
        const char *args;
        double lr, min_lr;
        long vocab;
        double steps, warmup, pos_std;
        const char *pos_decay;
    } cases[] = {
        {"", 5e-3, 5e-4, 1536, 4000, 800, 0.1, "off"},
        {"--corpus text", 5e-3, 5e-4, 1536, 4000, 800, 0.1, "off"},
        {"--lr 0.002", 2e-3, 5e-4, 1536, 4000, 800, 0.1, "off"},
        {"--min-lr 0.0001", 5e-3, 1e-4, 1536, 4000, 800, 0.1, "off"},
        {"--vocab 0", 5e-3, 5e-4, 0, 4000, 800, 0.1, "off"},
        {"--vocab 300 --steps 300 --warmup 50", 5e-3, 5e-4, 300, 300, 50, 0.1, "off"},
        {"--pos-std 0.02 --pos-decay on", 5e-3, 5e-4, 1536, 4000, 800, 0.02, "on"},
        {"--data %s", lr_default, min_default, 0, steps_default, warmup_default,
         pos_std_default, "on"},
        {"--data %s --lr 0.003", 3e-3, min_default, 0, steps_default, warmup_default,
         pos_std_default, "on"},
        {"--data %s --pos-decay off", lr_default, min_default, 0, steps_default, warmup_default,
         pos_std_default, "off"},
    };
    cr_assert_neq(pos_std_default, 0.1, "the recipe's --pos-std would be the default's");
    cr_assert_neq(steps_default, 4000.0, "the recipe's steps would be the default's");
    cr_assert_neq(warmup_default, 800.0, "the recipe's warm-up would be the default's");
    cr_assert_neq(lr_default, 5e-3, "the recipe would be indistinguishable from the default");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[600];
        snprintf(args, sizeof args, cases[i].args, e.data);
        int rc = tu_run(&out, "%s/train %s --print-settings", tu_bin(), args);
        cr_assert_eq(rc, 0, "%s: %s", args, out);
        cr_assert_eq(json_number(out, "lr"), cases[i].lr, "'%s': %s", args, out);
        cr_assert_eq(json_number(out, "min_lr"), cases[i].min_lr, "'%s': %s", args, out);
        cr_assert_eq(json_number(out, "vocab"), (double)cases[i].vocab, "'%s': %s", args, out);
        cr_assert_eq(json_number(out, "steps"), cases[i].steps, "'%s': %s", args, out);
        cr_assert_eq(json_number(out, "warmup"), cases[i].warmup, "'%s': %s", args, out);
        cr_assert_eq(json_number(out, "pos_std"), cases[i].pos_std, "'%s': %s", args, out);
        char decay[40];
        snprintf(decay, sizeof decay, "\"pos_decay\":\"%s\"", cases[i].pos_decay);
        cr_assert(strstr(out, decay), "'%s': not %s: %s", args, decay, out);
        free(out);
    }
    int rc = tu_run(&out, "%s/train -L 1 -C 16 -H 2 -T 16 -B 2 --steps 1 --eval-iters 1 "
                    "--out %s --log %s", tu_bin(), e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char *log = tu_read_text(e.log);
    cr_assert_eq(json_number(log, "lr"), 5e-3, "the run did not use the recipe: %s", log);
    cr_assert_eq(json_number(log, "min_lr"), 5e-4, "%s", log);
    free(log);
}

/* The lines of a log of one type, from step `from` on, each cut before `cut`
 * (the timing fields), joined. */
static char *log_lines(const char *path, const char *type, long from, const char *cut)
{
    char *text = tu_read_text(path);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "{\"type\":\"%s\",", type);
    char *res = calloc(strlen(text) + 1, 1);
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
        int rc = tu_run(&out[t], "%s/train " RUN_FLAGS " --threads %d --data %s --out %s --log %s",
                        tu_bin(), t + 1, e.data, ck[t], log[t]);
        cr_assert_eq(rc, 0, "%s", out[t]);
        cr_assert(strstr(out[t], t ? "2 threads" : "1 threads"), "%s", out[t]);
    }
    expect_same_log(log[0], log[1], 0);
    expect_same_files(ck[0], ck[1]);
    free(out[0]);
    free(out[1]);
}

/* Small stacks: the kernels' packing buffers (up to 512 KiB) are per-thread heap
 * memory, not stack, so a run whose threads have 384 KiB of stack (the main thread by
 * ulimit, the others by OMP_STACKSIZE) trains and equals a run with default stacks.
 * With the buffers on the stack it died of SIGSEGV. */
Test(train, small_thread_stacks_train_the_same_checkpoint)
{
    Env e;
    env_init(&e, "train-stacks");
    char ck[2][400], *out[2];
    for (int t = 0; t < 2; t++) {
        snprintf(ck[t], sizeof ck[t], "%s/s%d.ckpt", e.dir, t);
        int rc = tu_run(&out[t], "%s %s/train " RUN_FLAGS
                        " --threads 2 --data %s --out %s",
                        t ? "ulimit -s 384; OMP_STACKSIZE=384K" : "", tu_bin(), e.data, ck[t]);
        cr_assert_eq(rc, 0, "stacks %s: exit %d: %s", t ? "384 KiB" : "default", rc, out[t]);
    }
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
    int rc = tu_run(&out, "%s/train " RUN_FLAGS
                    " --save-every 8 --threads 1 --data %s --out %s --log %s", tu_bin(), e.data,
                    ref, reflog);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "HEADCOUNT_TEST_CRASH_BEFORE_RENAME=1 "
             "%s/train " RUN_FLAGS " --save-every 8 --threads 1 "
             "--data %s --out %s", tu_bin(), e.data, part);
    rc = tu_run(&out, "%s", cmd);
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
    tok_free(&tok);
    rc = tu_run(&out, "%s/train --resume %s --threads 2 --out %s --log %s", tu_bin(), at8, res,
                reslog);
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
    tok_free(&tok);
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
        tok_free(&tok);
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
    int rc = tu_run(&out, "%s/train " TINY " " DIVERGE " --save-every 3 --data %s --out %s",
                    tu_bin(), e.data, e.out);
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
    tok_free(&tok);
    free(out);
    /* Without periodic saves the run writes nothing and the old file survives. */
    size_t n0, n1;
    unsigned char *before = tu_read_file(e.out, &n0);
    rc = tu_run(&out, "%s/train " TINY " " DIVERGE " --save-every 0 --data %s --out %s", tu_bin(),
                e.data, e.out);
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

/* Checks "eval loss L ppl P bpb B tokens N bytes M" exactly: L with 6 decimals,
 * P and B with 4, and P consistent with L; for a byte-level model M = N and
 * B = L / ln 2. Returns L's text in loss (16 bytes). */
static void parse_eval_line(const char *line, char *loss, size_t *tokens)
{
    double l, p, b;
    size_t bytes;
    char tail[8];
    int k = sscanf(line, "eval loss %15s ppl %lf bpb %lf tokens %zu bytes %zu%7s", loss, &p, &b,
                   tokens, &bytes, tail);
    cr_assert_eq(k, 5, "not an eval line: %s", line);
    l = strtod(loss, NULL);
    char again[200];
    snprintf(again, sizeof again, "eval loss %.6f ppl %.4f bpb %.4f tokens %zu bytes %zu\n", l,
             p, b, *tokens, bytes);
    cr_assert_str_eq(line, again, "format differs");
    cr_assert_eq(bytes, *tokens, "a byte-level model's tokens are its bytes: %s", line);
    cr_assert(fabs(p - exp(l)) <= 1e-4 * exp(l) + 1e-4 && fabs(b - l / log(2.0)) <= 1e-4,
              "ppl or bpb inconsistent with the loss: %s", line);
}

Test(train, infer_eval_reproduces_the_final_val_loss)
{
    Env e;
    env_init(&e, "train-eval");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 20 --data %s --out %s --log %s", tu_bin(),
                    e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    const char *v = strstr(out, "done: ");
    v = v ? strstr(v, "| val loss ") : NULL;
    cr_assert_not_null(v, "%s", out);
    double shown;
    size_t split_tokens;
    double shown_bpb;
    cr_assert_eq(sscanf(v, "| val loss %lf, val bpb %lf (whole val split, %zu tokens)", &shown,
                        &shown_bpb, &split_tokens), 3, "%s", v);
    cr_assert_float_eq(shown_bpb, shown / log(2.0), 2e-4, "byte-level bpb is loss / ln 2");
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
        rc = tu_run(&ev, "%s/infer --ckpt %s --eval %s --threads %d", tu_bin(), e.out, val,
                    threads);
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
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s", tu_bin(), e.data,
                    e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --data %s --dump-val %s/val.txt", tu_bin(), e.data, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s/val.txt", tu_bin(), e.out, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    rc = tu_run(&js, "%s/infer --ckpt %s --eval %s/val.txt --json", tu_bin(), e.out, e.dir);
    cr_assert_eq(rc, 0, "%s", js);
    double text_loss = strtod(strstr(out, "eval loss ") + 10, NULL);
    const char *l = strstr(js, "{\"loss\":"), *t = strstr(js, "\"tokens\":");
    cr_assert(l && t, "not the JSON object: %s", js);
    cr_assert(fabs(strtod(l + 8, NULL) - text_loss) < 1e-6, "%s vs %s", js, out);
    cr_assert_eq(strtol(t + 9, NULL, 10), strtol(strstr(out, "tokens ") + 7, NULL, 10));
    free(out);
    free(js);
    rc = tu_run(&out, "%s/infer --ckpt %s --json", tu_bin(), e.out);
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
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s", tu_bin(), e.data,
                    e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --data %s --dump-val %s/val.txt", tu_bin(), e.data, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char cmd[1024], path[600];
    snprintf(path, sizeof path, "%s/rep/summary.json", e.dir);
    snprintf(cmd, sizeof cmd, "{ %s/infer --ckpt %s --heads %s/val.txt --windows 2 -j 1 --json "
             "--prune-curve --report %s/rep 2>/dev/null; }", tu_bin(), e.out, e.dir, e.dir);
    char *js;
    rc = tu_run(&js, "%s", cmd);
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

/* --precision bf16 is kept in the checkpoint: a resume continues in bf16 and refuses
 * --precision fp32, ./infer samples with it (the same text as --precision bf16, not
 * as fp32), and a name outside fp32|bf16 is a usage error. Where the products are
 * emulated (no AVX512-BF16 in the build, or HEADCOUNT_BF16=emulate), a fresh run, a
 * resumed one and ./infer say so in one line; fp32 says nothing. */
Test(train, bf16_is_kept_in_the_checkpoint_and_a_resume_or_infer_uses_it)
{
    Env e;
    env_init(&e, "train-bf16");
    char ck[400], ck2[400], *out;
    snprintf(ck, sizeof ck, "%s/bf16.ckpt", e.dir);
    snprintf(ck2, sizeof ck2, "%s/bf16-more.ckpt", e.dir);
    static const char note[] = "note: bf16 products are emulated (";
    static const char same_bits[] = "): the same bits as the instruction, a training step about";
    int rc = tu_run(&out, "env -u HEADCOUNT_BF16 %s/train " RUN_FLAGS " --precision bf16 "
                    "--data %s --out %s", tu_bin(), e.data, ck);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "precision bf16"), "%s", out);
    cr_assert_eq(strstr(out, note) != NULL, !BF16_NATIVE, "the note where it is emulated, "
                 "and only there: %s", out);
    free(out);
    Model m;
    Tokenizer tok;
    TrainState ts;
    int has;
    char err[2000];
    cr_assert_eq(ckpt_load(ck, &m, &tok, NULL, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has && ts.precision == PRECISION_BF16 && m.precision == PRECISION_BF16);
    model_free(&m);
    tok_free(&tok);
    rc = tu_run(&out, "%s/train --resume %s --steps 30 --precision fp32 --out %s", tu_bin(), ck,
                ck2);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--precision fp32 contradicts the checkpoint (bf16)"), "%s", out);
    cr_assert_neq(access(ck2, F_OK), 0);
    free(out);
    char log[400];
    snprintf(log, sizeof log, "%s/bf16.log", e.dir);
    rc = tu_run(&out, "HEADCOUNT_BF16=emulate %s/train --resume %s --steps 30 --out %s --log %s",
                tu_bin(), ck, ck2, log);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "precision bf16"), "%s", out);
    char *line = strstr(out, note);
    cr_assert(line && strstr(line, same_bits) && strstr(line, "docs/matmul.md"), "%s", out);
    cr_assert(line > out && line[-1] == ' ' && strncmp(line - 7, "train: ", 7) == 0, "%s", out);
    cr_assert(!strstr(line + 1, note), "one line only: %s", out);
    free(out);
    rc = tu_run(&out, "HEADCOUNT_BF16=fast %s/train --resume %s --steps 30 --out %s", tu_bin(), ck,
                ck2);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "HEADCOUNT_BF16='fast': expected 'emulate' or nothing"), "%s", out);
    free(out);
    /* The log's settings record names it too. */
    char *text = tu_read_text(log);
    const char *p = strstr(text, "\"precision\":\"bf16\"");
    cr_assert(strncmp(text, "{\"type\":\"settings\",", 19) == 0 && p && p < strchr(text, '\n'),
              "no precision in the settings record:\n%s", text);
    free(text);
    rc = tu_run(&out, "%s/train " RUN_FLAGS " --precision fp16 --data %s --out %s", tu_bin(),
                e.data, ck2);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--precision 'fp16': expected fp32 or bf16"), "%s", out);
    free(out);

    /* The val loss to 9 digits (--eval --json): the checkpoint's precision by default. */
    char *loss[3];
    const char *how[3] = {"", "--precision bf16", "--precision fp32"};
    for (int k = 0; k < 3; k++) {
        rc = tu_run(&loss[k], "HEADCOUNT_BF16=emulate %s/infer --ckpt %s --eval %s --json %s",
                    tu_bin(), ck, e.data, how[k]);
        cr_assert_eq(rc, 0, "%s", loss[k]);
        cr_assert_eq(strstr(loss[k], "infer: note: bf16 products are emulated (") != NULL, k < 2,
                     "%s: %s", how[k], loss[k]);
    }
    cr_assert_str_eq(loss[0], loss[1], "infer did not evaluate in the checkpoint's bf16");
    cr_assert_str_neq(loss[0], loss[2], "--precision fp32 changed nothing: %s", loss[0]);
    for (int k = 0; k < 3; k++)
        free(loss[k]);
    rc = tu_run(&out, "%s/infer --ckpt %s --precision fp16", tu_bin(), ck);
    cr_assert_eq(rc, 2, "%s", out);
    free(out);
}

/* Progress lines go to stderr at most every --progress-every seconds, and always
 * at the first and last step; 0 prints none, and changes nothing else. */
Test(train, progress_every_zero_prints_no_progress_line_and_trains_the_same)
{
    Env e;
    env_init(&e, "train-progress");
    char *out, quiet_ckpt[400];
    int rc = tu_run(&out, "%s/train " TINY " --steps 3 --data %s --out %s", tu_bin(), e.data,
                    e.out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "step 1/3 |") && strstr(out, "step 3/3 |"),
              "the first and last step print a progress line: %s", out);
    free(out);
    snprintf(quiet_ckpt, sizeof quiet_ckpt, "%s/quiet.ckpt", e.dir);
    rc = tu_run(&out, "%s/train " TINY " --steps 3 --data %s --out %s --progress-every 0",
                tu_bin(), e.data, quiet_ckpt);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "step 1/3"), "--progress-every 0 printed progress: %s", out);
    cr_assert(strstr(out, "eval step 3"), "the evaluation line stays: %s", out);
    free(out);
    expect_same_files(e.out, quiet_ckpt);
}

/* --log-every N writes a step record every N steps and at the last, and changes
 * nothing else: the same records at those steps, the same evaluations and the
 * same checkpoint. */
Test(train, log_every_thins_the_step_records_and_trains_the_same)
{
    Env e;
    env_init(&e, "train-log-every");
    char *out, ckpt[400], log[400];
    int rc = tu_run(&out, "%s/train " TINY " --steps 7 --eval-every 3 --data %s --out %s --log %s",
                    tu_bin(), e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(ckpt, sizeof ckpt, "%s/thin.ckpt", e.dir);
    snprintf(log, sizeof log, "%s/thin.log", e.dir);
    rc = tu_run(&out, "%s/train " TINY " --steps 7 --eval-every 3 --data %s --out %s --log %s "
                "--log-every 3", tu_bin(), e.data, ckpt, log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* The records of every step, less their timings, kept at steps 3, 6 and 7. */
    char *every = log_lines(e.log, "step", 0, ",\"ms\""), *thin = log_lines(log, "step", 0,
                                                                               ",\"ms\"");
    cr_assert_eq(count_lines(every), 7, "%s", every);
    char *want = calloc(strlen(every) + 1, 1);
    size_t len = 0;
    for (char *line = every; *line;) {
        size_t n = strcspn(line, "\n") + 1;
        long step = (long)json_number(line, "step");
        if (step % 3 == 0 || step == 7) {
            memcpy(want + len, line, n);
            len += n;
        }
        line += n;
    }
    cr_assert_str_eq(thin, want, "--log-every 3 wrote other step records");
    free(want);
    free(every);
    free(thin);
    char *evals = log_lines(e.log, "eval", 0, NULL), *thin_evals = log_lines(log, "eval", 0, NULL);
    cr_assert_eq(count_lines(evals), 3, "%s", evals);
    cr_assert_str_eq(thin_evals, evals, "the evaluations changed with --log-every");
    free(evals);
    free(thin_evals);
    expect_same_files(e.out, ckpt);
    rc = tu_run(&out, "%s/train --log-every 0 --print-settings", tu_bin());
    cr_assert(rc == 2 && strstr(out, "--log-every"), "%s", out);
    free(out);
}
