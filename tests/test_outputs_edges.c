/* Nothing lost, on the last edges of both programs: standard output is an output
 * (a full disk or a closed descriptor is exit 1 with the reason); paths whose
 * bytes are not UTF-8 keep every JSON file valid; a log is locked like a
 * checkpoint, so two runs never share one; a checkpoint a running ./train holds
 * is not replaced by --dump-val or the explorer; a signal during byte-pair
 * learning stops it at once and says what is on disk; and messages print values
 * that differ as different. (The older guarantees are in test_outputs*.c.) */
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
#include "util/rng.h"

/* e->out: a 4-step TINY checkpoint trained on e->data. */
static void model(Env *e, const char *name)
{
    env_init(e, name);
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s", tu_bin(), e->data,
                    e->out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* "<prog> <args>" with its standard output sent to `where` ("> /dev/full",
 * ">&-"): exit 1 and one error line naming standard output and why. */
static void expect_stdout_error(const char *prog, const char *args, const char *where,
                                const char *why)
{
    char *out;
    int rc = tu_run(&out, "(%s/%s %s 2>&1 %s)", tu_bin(), prog,
                    args, where);
    char needle[200];
    snprintf(needle, sizeof needle, "writing standard output: %s", why);
    cr_assert_eq(rc, 1, "%s %s %s: exit %d, expected 1:\n%s", prog, args, where, rc, out);
    char line[300];
    snprintf(line, sizeof line, "%s: error: %s\n", prog, needle);
    cr_assert(strstr(out, line), "%s %s %s: expected '%s':\n%s", prog, args, where, line, out);
    free(out);
}

static void expect_stdout_checked(const char *prog, const char *args)
{
    expect_stdout_error(prog, args, "> /dev/full", "No space left on device");
    expect_stdout_error(prog, args, ">&-", "Bad file descriptor");
}

/* Row 6: every mode that prints its result checks the writes and the close. */
Test(edges, every_infer_mode_checks_standard_output, .timeout = 60)
{
    Env e;
    model(&e, "ed-stdout-infer");
    char args[1200];
    const char *modes[] = {"--eval %s", "--eval %s --json", "--heads %s --windows 4",
                           "--heads %s --windows 4 --json", "--tokens 8 --prompt 'The'"};
    for (int k = 0; k < 5; k++) {
        char mode[700];
        snprintf(mode, sizeof mode, modes[k], e.data);
        snprintf(args, sizeof args, "--ckpt %s --threads 1 %s", e.out, mode);
        expect_stdout_checked("infer", args);
    }
    expect_stdout_checked("infer", "--help");
    expect_stdout_checked("infer", "--version");
}

Test(edges, train_print_settings_help_and_version_check_standard_output)
{
    expect_stdout_checked("train", "--print-settings");
    expect_stdout_checked("train", "--help");
    expect_stdout_checked("train", "--version");
}

/* Row 6: a closed stdout must not let a later file take its descriptor: the
 * report's files hold only what the report writes. */
Test(edges, a_closed_stdout_does_not_write_into_a_report_file, .timeout = 60)
{
    Env e;
    model(&e, "ed-stdout-report");
    char dir[400], *out;
    snprintf(dir, sizeof dir, "%s/rep", e.dir);
    int rc = tu_run(&out, "(%s/infer --ckpt %s --heads %s --windows 4 --threads 1 --report %s "
                    "2>&1 >&-)", tu_bin(), e.out, e.data, dir);
    cr_assert_eq(rc, 1, "%s", out);
    free(out);
    char path[500];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    char *text = tu_read_text(path);
    cr_assert_eq(text[0], '{', "summary.json starts with '%.20s'", text);
    cr_assert_null(strstr(text, "entropy  conf"), "the table went into summary.json");
    free(text);
}

/* True when b[0..n) is well-formed UTF-8 (no overlong forms, no surrogates). */
static int valid_utf8(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (b[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = b[i] >= 0xf0 ? 4 : b[i] >= 0xe0 ? 3 : b[i] >= 0xc2 ? 2 : 0;
        if (!len || b[i] > 0xf4 || i + len > n)
            return 0;
        unsigned c = b[i] & (0x7fu >> len);
        for (size_t k = 1; k < len; k++) {
            if ((b[i + k] & 0xc0) != 0x80)
                return 0;
            c = c << 6 | (b[i + k] & 0x3f);
        }
        static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (c < least[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

/* path must be valid UTF-8 and hold needle. */
static void expect_utf8_with(const char *path, const char *needle)
{
    size_t n;
    unsigned char *b = tu_read_file(path, &n);
    cr_assert_not_null(b, "cannot read %s", path);
    cr_assert(valid_utf8(b, n), "%s is not valid UTF-8", path);
    cr_assert(strstr((char *)b, needle), "%s lacks %s", path, needle);
    free(b);
}

/* Row 5: a Latin-1 file name (caf\xe9.txt) in the log, --print-settings, the
 * report's summary.json and the explorer's data is \u00e9 (in the report's
 * page &#xe9;), and each file is valid UTF-8. */
Test(edges, a_path_that_is_not_utf8_is_escaped_in_every_json_file, .timeout = 60)
{
    Env e;
    env_init(&e, "ed-latin1");
    char data[400], settings[400], rep[400], summary[500], page[400], json[400], *out;
    snprintf(data, sizeof data, "%s/caf\xe9.txt", e.dir);
    cr_assert_eq(rename(e.data, data), 0);
    int rc = tu_run(&out, "%s/train " TINY " --steps 2 --data '%s' --out %s --log %s", tu_bin(),
                    data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    expect_utf8_with(e.log, "caf\\u00e9.txt\"");
    snprintf(settings, sizeof settings, "%s/settings.json", e.dir);
    rc = tu_run(&out, "%s/train --data '%s' --print-settings > %s", tu_bin(), data, settings);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    expect_utf8_with(settings, "caf\\u00e9.txt\"");
    snprintf(rep, sizeof rep, "%s/rep", e.dir);
    rc = tu_run(&out, "%s/infer --ckpt %s --heads '%s' --windows 4 --threads 1 --report %s",
                tu_bin(), e.out, data, rep);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(summary, sizeof summary, "%s/summary.json", rep);
    expect_utf8_with(summary, "caf\\u00e9.txt");
    snprintf(summary, sizeof summary, "%s/index.html", rep);
    expect_utf8_with(summary, "caf&#xe9;.txt");
    snprintf(page, sizeof page, "%s/page.html", e.dir);
    snprintf(json, sizeof json, "%s/att.json", e.dir);
    rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --text-file '%s' "
                "--threads 1", tu_bin(), e.out, page, json, data);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    expect_utf8_with(page, "/caf\\u00e9.txt\"");
}

/* Row 13: a symlink is refused as a report directory, and the message says so. */
Test(edges, a_symlink_as_the_report_directory_is_named_as_one, .timeout = 60)
{
    Env e;
    model(&e, "ed-report-link");
    char dir[400], link[400], *out;
    snprintf(dir, sizeof dir, "%s/real", e.dir);
    snprintf(link, sizeof link, "%s/rlink", e.dir);
    cr_assert_eq(mkdir(dir, 0777), 0);
    cr_assert_eq(symlink("real", link), 0);
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --windows 4 --report %s", tu_bin(), e.out,
                    e.data, link);
    expect_error(out, rc, 2, "infer", "is a symbolic link");
    cr_assert_null(strstr(out, "is not a directory"), "%s", out);
    free(out);
}

/* Row 14: values that differ print differently in a resume's refusal. */
Test(edges, a_contradicting_value_prints_with_the_digits_that_differ)
{
    Env e;
    env_init(&e, "ed-digits");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 2 --head-dropout 0.5 --data %s --out %s",
                    tu_bin(), e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --resume %s --steps 4 --head-dropout 0.50000000001", tu_bin(),
                e.out);
    expect_error(out, rc, 2, "train",
                 "--head-dropout 0.50000000001 contradicts the checkpoint (0.5)");
    free(out);
}

/* Row 15: a number that underflows to 0 or a subnormal is inside [0, 0.95]; a
 * negative one is not. */
Test(edges, an_underflowing_value_in_range_is_accepted)
{
    const char *ok[] = {"1e-400", "4.9e-324", "2e-310"};
    for (int k = 0; k < 3; k++) {
        char *out;
        int rc = tu_run(&out, "%s/train --head-dropout %s --print-settings", tu_bin(), ok[k]);
        cr_assert_eq(rc, 0, "--head-dropout %s: %s", ok[k], out);
        free(out);
    }
    char *out;
    int rc = tu_run(&out, "%s/train --head-dropout -1e-400 --print-settings", tu_bin());
    expect_error(out, rc, 2, "train", "--head-dropout: expected a number in [0, 0.95]");
    free(out);
    rc = tu_run(&out, "%s/train --head-dropout 1e400 --print-settings", tu_bin());
    expect_error(out, rc, 2, "train", "--head-dropout: expected a number in [0, 0.95]");
    free(out);
}

/* Stops the background trainer started by start_train. */
static void stop_train(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Row 4: while one run writes e->log (and e->out), no other run may take either
 * as its log, or the log as its checkpoint: fresh, resumed or by a symlink. */
Test(edges, a_log_another_run_writes_is_refused, .timeout = 60)
{
    Env e;
    env_init(&e, "ed-log-shared");
    char errpath[400], other[400], sym[400], resumed[400], *out;
    snprintf(errpath, sizeof errpath, "%s/first.err", e.dir);
    snprintf(other, sizeof other, "%s/other.ckpt", e.dir);
    snprintf(sym, sizeof sym, "%s/link.log", e.dir);
    snprintf(resumed, sizeof resumed, "%s/resumed.ckpt", e.dir);
    cr_assert_eq(symlink("run.log", sym), 0);
    int rc = tu_run(&out, "%s/train " TINY " --steps 2 --data %s --out %s", tu_bin(), e.data,
                    resumed);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* Every refused run is run while the first one writes, and checked once it
     * is stopped, so that a failed check never leaves it running. */
    pid_t pid = start_train(&e, errpath);
    size_t nb, na;
    char *before = (char *)tu_read_file(e.log, &nb);
    const char *cases[][2] = {
        {"fresh", "--data %s --out %s --log %s"},
        {"link", "--data %s --out %s --log %s"},
        {"resume", "--data %s --resume %s --steps 4 --log %s"},
        {"log as checkpoint", "--data %s --out %s --log %s"},
    };
    char *outs[4];
    int rcs[4];
    for (int k = 0; k < 4; k++) {
        char args[2000];
        const char *ckpt = k == 2 ? resumed : k == 3 ? e.log : other;
        const char *log = k == 1 ? sym : k == 3 ? e.out : e.log;
        snprintf(args, sizeof args, cases[k][1], e.data, ckpt, log);
        rcs[k] = tu_run(&outs[k], "%s/train " TINY " --steps 4 %s", tu_bin(), args);
    }
    char *after = (char *)tu_read_file(e.log, &na);
    stop_train(pid);
    for (int k = 0; k < 4; k++) {
        expect_error(outs[k], rcs[k], 1, "train", "is being written by another running process");
        cr_assert(strstr(outs[k], k == 3 ? "--out" : "--log"), "%s: %s", cases[k][0], outs[k]);
        free(outs[k]);
    }
    /* The first run's log is the same file, still growing from its start. */
    cr_assert(before && after, "the first run's log is missing");
    cr_assert(na >= nb && memcmp(after, before, nb) == 0, "the first run's log was replaced");
    free(before);
    free(after);
    /* Once it has stopped, resuming into its log appends to it. */
    rc = tu_run(&out, "%s/train --resume %s --steps 4 --log %s", tu_bin(), resumed, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* The locked checkpoint: --dump-val and the explorer do not replace a file that a
 * running ./train holds (its checkpoint or its log). */
Test(edges, one_shot_outputs_do_not_replace_a_locked_checkpoint_or_log, .timeout = 60)
{
    Env e;
    model(&e, "ed-locked");
    char ckpt[400], errpath[400], *out;
    snprintf(ckpt, sizeof ckpt, "%s/reader.ckpt", e.dir);
    snprintf(errpath, sizeof errpath, "%s/first.err", e.dir);
    cr_assert_eq(rename(e.out, ckpt), 0);
    /* Run while it writes, checked once it is stopped (see above). */
    pid_t pid = start_train(&e, errpath);
    const char *targets[] = {e.out, e.log};
    char page[400], *outs[6];
    int rcs[6], page_written = 0;
    snprintf(page, sizeof page, "%s/page.html", e.dir);
    for (int k = 0; k < 2; k++) {
        rcs[3 * k] = tu_run(&outs[3 * k], "%s/train --data %s --dump-val %s", tu_bin(), e.data,
                            targets[k]);
        rcs[3 * k + 1] = tu_run(&outs[3 * k + 1], "%s/infer --ckpt %s --explore %s --text The "
                                "--threads 1", tu_bin(), ckpt, targets[k]);
        rcs[3 * k + 2] = tu_run(&outs[3 * k + 2], "%s/infer --ckpt %s --explore %s "
                                "--explore-json %s --text The --threads 1", tu_bin(), ckpt, page,
                                targets[k]);
        page_written |= access(page, F_OK) == 0;
    }
    stop_train(pid);
    static const char *const flags[3] = {"--dump-val", "--explore", "--explore-json"};
    for (int i = 0; i < 6; i++) {
        expect_error(outs[i], rcs[i], 1, i % 3 ? "infer" : "train", flags[i % 3]);
        cr_assert(strstr(outs[i], "is being written by another running process"), "%s",
                  outs[i]);
        free(outs[i]);
    }
    cr_assert(!page_written, "the page was written");
    /* A lock its holder left behind (killed) holds nothing. */
    int rc = tu_run(&out, "%s/train --data %s --dump-val %s", tu_bin(), e.data, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* Row 12: SIGINT while the merges are learned stops the learning (it does not
 * wait for it to finish) and says what is on disk: nothing, no log either. The
 * shell starts train, waits until the process is train (its comm: before the
 * exec, the forked shell also catches SIGINT, and would swallow it) and its
 * SIGINT handler is installed (SigCgt in /proc/PID/status, bit 1), sends SIGINT
 * and reports the exit status. */
Test(edges, a_signal_during_merge_learning_stops_it_and_writes_nothing, .timeout = 60)
{
    Env e;
    env_init(&e, "ed-bpe-signal");
    /* 1 MB of random words: seconds of learning for 8,000 tokens. */
    size_t n = 1000000;
    char *text = malloc(n);
    Rng rng;
    rng_init(&rng, 31, 0);
    for (size_t i = 0; i < n;) {
        size_t len = 3 + rng_below(&rng, 8);
        for (size_t k = 0; k < len && i < n; k++)
            text[i++] = (char)('a' + rng_below(&rng, 26));
        if (i < n)
            text[i++] = ' ';
    }
    char data[400], *out;
    make_file(&e, "words.txt", text, n, data, sizeof data);
    free(text);
    int rc = tu_run(&out, "(%s/train " TINY
                    " --steps 5 --vocab 8000 --data %s " "--out %s --log %s & p=$!; i=0; "
                    "until { [ \"$(cat /proc/$p/comm 2>/dev/null)\" = train ] && "
                    "[ $(( 0x$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$p/status "
                    "2>/dev/null || echo 0) & 2 )) != 0 ]; } || [ $i -ge 4000 ]; do "
                    "sleep 0.002; i=$((i + 1)); done; kill -INT $p; wait $p; echo \"rc=$?\")",
                    tu_bin(), data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "rc=130\n"), "%s", out);
    cr_assert(strstr(out, "train: interrupted while learning the merges and encoding the text; "
                          "nothing was written\n"), "%s", out);
    cr_assert_null(strstr(out, "vocabulary"), "learning finished before the stop:\n%s", out);
    free(out);
    cr_assert_neq(access(e.out, F_OK), 0, "a checkpoint was written");
    cr_assert_neq(access(e.log, F_OK), 0, "a log was written");
    cr_assert_eq(tu_find_prefix(e.dir, "out.ckpt", NULL, 0), 0, "a lock or temporary was left");
    cr_assert_eq(tu_find_prefix(e.dir, "run.log", NULL, 0), 0, "a lock or temporary was left");
}

/* name: n bytes of c followed by ext, n + strlen(ext) = 255 (NAME_MAX). */
static void long_name(char *buf, size_t len, const char *dir, char c, const char *ext)
{
    char name[256];
    size_t n = 255 - strlen(ext);
    memset(name, c, n);
    snprintf(name + n, sizeof name - n, "%s", ext);
    snprintf(buf, len, "%s/%s", dir, name);
}

/* A legal name of 255 bytes (NAME_MAX) is written, whatever suffix its
 * temporary or lock takes: the checkpoint and log of ./train, the explorer
 * page and heads report of ./infer, and plot_log's directory, with nothing
 * left beside them; one byte more is refused before anything is trained. */
Test(edges, a_255_byte_output_name_is_written_and_256_refused_up_front, .timeout = 120)
{
    Env e;
    env_init(&e, "edge-name-max");
    char ck[600], log[600], page[600], rep[600], plots[600], *out;
    long_name(ck, sizeof ck, e.dir, 'b', ".ckpt");
    long_name(log, sizeof log, e.dir, 'l', ".log");
    long_name(page, sizeof page, e.dir, 'e', ".html");
    long_name(rep, sizeof rep, e.dir, 'r', "");
    long_name(plots, sizeof plots, e.dir, 'p', "");
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --keep-best --data %s --out %s --log %s",
                    tu_bin(), e.data, ck, log);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out); /* ck's .best.ckpt would be 260 bytes */
    cr_assert(strstr(out, "--keep-best") && strstr(out, "more than the 255"), "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s --log %s", tu_bin(), e.data,
                ck, log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --text 'the cat'", tu_bin(), ck, page);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --report %s", tu_bin(), ck, e.data, rep);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    struct stat st;
    cr_assert(stat(ck, &st) == 0 && stat(log, &st) == 0 && stat(page, &st) == 0, "not written");
    cr_assert(stat(rep, &st) == 0 && S_ISDIR(st.st_mode), "no report");
    if (system("python3 -c '' 2>/dev/null") == 0) {
        rc = tu_run(&out, "python3 scripts/plot_log.py %s --out %s", log, plots);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
        cr_assert(stat(plots, &st) == 0 && S_ISDIR(st.st_mode), "no plots");
    }
    char listing[64];
    int n = tu_find_prefix(e.dir, "", listing, sizeof listing);
    int want = 7 + (stat(plots, &st) == 0); /* ., .., data.txt, ck, log, page, rep (, plots) */
    cr_assert_eq(n, want, "%d entries beside the outputs, expected %d (a temporary or lock "
                 "left?)", n, want);
    char longer[600];
    snprintf(longer, sizeof longer, "%s/x%s", e.dir, strrchr(ck, '/') + 1);
    rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s", tu_bin(), e.data, longer);
    expect_error(out, rc, 1, "train", "the file name is 256 bytes, more than the 255");
    free(out);
    cr_assert_neq(access(longer, F_OK), 0);
}
