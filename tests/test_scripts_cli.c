/* Tests of the Python command lines' contract (scripts/cli.py, scripts/runlog.py):
 * headcount.py, plot_log.py, induction_phase.py and ablate.sh answer bad input as
 * ./train and ./infer do, with one line "PROG: error: ..." and exit 2 (usage) or 1,
 * never a traceback; a FIFO given as input is refused, not waited on; a full
 * standard output is exit 1 with the reason; plot_log --out never overwrites a
 * file in a directory it did not write; ablate refuses --heads '' and an --out
 * that is a file or someone else's directory, and names a failed run's error; an
 * atomic write that fails names its file and leaves no temporary behind.
 * Skipped where python3 (or, for headcount.py, Debian's python3-torch) is missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"

#define TORCH_PY "/usr/bin/python3"

static void need_torch(void)
{
    char *out;
    int rc = tu_run(&out, TORCH_PY " -c 'import torch'");
    free(out);
    if (rc != 0)
        cr_skip_test("python3-torch is not installed");
}

/* cmd (run under a 60 s timeout, so a blocked read fails instead of hanging) must
 * exit with status and print exactly one line, "prog: error: ...", holding needle. */
static void expect_error(const char *prog, int status, const char *needle, const char *cmd)
{
    char *out;
    int rc = tu_run(&out, "{ timeout 60 %s; }", cmd); /* cmd may redirect its stdout */
    cr_assert_neq(rc, 124, "%s: blocked (killed after 60 s)", cmd);
    cr_assert_eq(rc, status, "%s: exit %d, expected %d:\n%s", cmd, rc, status, out);
    cr_assert_null(strstr(out, "Traceback"), "%s: a traceback:\n%s", cmd, out);
    size_t n = strlen(out);
    cr_assert(n > 0 && out[n - 1] == '\n' && strchr(out, '\n') == out + n - 1,
              "%s: not one line:\n%s", cmd, out);
    char head[80];
    snprintf(head, sizeof head, "%s: error: ", prog);
    cr_assert(strncmp(out, head, strlen(head)) == 0, "%s: expected '%s...':\n%s", cmd, head, out);
    cr_assert_not_null(strstr(out, needle), "%s: expected '%s' in:\n%s", cmd, needle, out);
    free(out);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(tu_write_file(path, text, strlen(text)), 0);
}

/* Files every test below feeds the scripts: a FIFO, a plain file, and logs that
 * are broken in one way each. */
static const char *scratch(const char *name)
{
    const char *d = tu_tmpdir(name);
    cr_assert_not_null(d);
    char p[400];
    snprintf(p, sizeof p, "%s/fifo", d);
    cr_assert_eq(mkfifo(p, 0644), 0);
    write_text(d, "afile", "not a directory\n");
    write_text(d, "good.log", "{\"type\":\"settings\",\"layers\":2,\"heads\":1}\n"
               "{\"type\":\"step\",\"step\":1,\"loss\":3.5,\"lr\":0.001}\n"
               "{\"type\":\"heads\",\"step\":1,\"heads\":[{\"layer\":1,\"head\":0,"
               "\"repeat\":0.5}]}\n"
               "{\"type\":\"step\",\"step\":2,\"lo"); /* a run still writing */
    write_text(d, "latin1.log", "{\"type\":\"settings\",\"data\":\"caf\xe9.txt\"}\n");
    write_text(d, "binary.log", "{\"type\":\"step\",\"step\":1,\"loss\":3}\n\x89PNG\r\n\x1a\n"
               "\xff\xfe\x00\x01\n");
    write_text(d, "array.log", "{\"type\":\"step\",\"step\":1,\"loss\":3}\n[1, 2]\n");
    write_text(d, "nostep.log", "{\"type\":\"step\",\"loss\":3}\n");
    write_text(d, "noloss.log", "{\"type\":\"step\",\"step\":4}\n");
    write_text(d, "negstep.log", "{\"type\":\"step\",\"step\":-1,\"loss\":3}\n");
    write_text(d, "bigstep.log", "{\"type\":\"step\",\"step\":1e18,\"loss\":3}\n");
    write_text(d, "hugestep.log", "{\"type\":\"step\",\"step\":1,\"loss\":3}\n"
               "{\"type\":\"heads\",\"step\":1e308,\"heads\":[]}\n");
    write_text(d, "badhead.log", "{\"type\":\"step\",\"step\":1,\"loss\":3}\n"
               "{\"type\":\"heads\",\"step\":1,\"heads\":[{\"layer\":1,\"repeat\":0.5}]}\n");
    write_text(d, "escaped.log", "{\"type\":\"settings\",\"data\":\"caf\\u00e9.txt\","
               "\"layers\":2,\"heads\":1}\n{\"type\":\"step\",\"step\":1,\"loss\":3}\n"
               "{\"type\":\"heads\",\"step\":1,\"heads\":[{\"layer\":1,\"head\":0,"
               "\"repeat\":0.5}]}\n");
    return d;
}

Test(scripts_cli, log_readers_name_the_bad_line_and_never_block_or_trace_back)
{
    tu_need_python("json");
    const char *d = scratch("scripts-logs");
    char cmd[1200];
    const char *progs[] = {"plot_log", "induction_phase"};
    struct { const char *log, *needle; } cases[] = {
        {"latin1.log", "latin1.log:1: not UTF-8 text (byte 0xe9 at column 31)"},
        {"binary.log", "binary.log:2: not UTF-8 text"},
        {"array.log", "array.log:2: an array, not a JSON object"},
        {"nostep.log", "nostep.log:1: a step record without a step number"},
        {"noloss.log", "noloss.log:1: a step record without a loss"},
        {"negstep.log", "negstep.log:1: a step record whose step -1 is not a whole number "
                        "from 0 to 100000000"},
        {"bigstep.log", "bigstep.log:1: a step record whose step 1e+18 is not a whole number"},
        {"hugestep.log", "hugestep.log:2: a heads record whose step 1e+308 is not a whole number"},
        {"badhead.log", "badhead.log:2: a heads record with an entry that has no layer"},
        {"fifo", "fifo: not a regular file (a FIFO, device or socket)"},
        {"missing.log", "missing.log: no such log file"},
        {".", ".: is a directory"},
    };
    for (int p = 0; p < 2; p++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            snprintf(cmd, sizeof cmd, "python3 scripts/%s.py %s/%s%s%s", progs[p], d,
                     cases[c].log, p ? "" : " --out ", p ? "" : d);
            if (!p)
                strcat(cmd, "/plots");
            expect_error(progs[p], 1, cases[c].needle, cmd);
        }
    /* What ./train writes for a non-UTF-8 path (\u00XX) reads, and so does a log
     * whose last line is being written. */
    char *out;
    int rc = tu_run(&out, "python3 scripts/induction_phase.py %s/escaped.log %s/good.log", d, d);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "escaped.log: formed"), "%s", out);
    cr_assert_not_null(strstr(out, "good.log: formed"), "%s", out);
    free(out);
    rc = tu_run(&out, "python3 scripts/plot_log.py %s/escaped.log --out %s/plots", d, d);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* A log whose own name is not UTF-8: printed and drawn with the byte
     * escaped as \xe9, never as the surrogate Python holds it in; a message
     * naming it too. */
    rc = tu_run(&out, "cp %s/escaped.log %s/caf$(printf '\\351').log && python3 "
                "scripts/induction_phase.py %s/caf*.log && python3 scripts/plot_log.py "
                "%s/caf*.log --out %s/plots-latin1", d, d, d, d, d);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "caf\\xe9.log: formed"), "%s", out);
    cr_assert_null(strstr(out, "udc"), "%s", out);
    free(out);
    for (int p = 0; p < 2; p++) {
        snprintf(cmd, sizeof cmd, "python3 scripts/%s.py %s/caf$(printf '\\351')-missing.log%s%s%s",
                 progs[p], d, p ? "" : " --out ", p ? "" : d, p ? "" : "/plots");
        expect_error(progs[p], 1, "caf\\xe9-missing.log: no such log file", cmd);
    }
    snprintf(cmd, sizeof cmd, "python3 scripts/induction_phase.py --threshold x %s/good.log", d);
    expect_error("induction_phase", 2, "--threshold: invalid float value", cmd);
}

Test(scripts_cli, a_full_standard_output_is_exit_1_with_the_reason)
{
    tu_need_python("json");
    const char *d = scratch("scripts-full");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "python3 scripts/induction_phase.py %s/good.log > /dev/full", d);
    expect_error("induction_phase", 1, "cannot write standard output: No space left", cmd);
    snprintf(cmd, sizeof cmd, "python3 scripts/plot_log.py %s/good.log --out %s/p > /dev/full",
             d, d);
    expect_error("plot_log", 1, "cannot write standard output: No space left", cmd);
    /* --help too: argparse's own writer would drop the page and exit 0. */
    expect_error("ablate", 1, "cannot write standard output: No space left",
                 "scripts/ablate.sh --help > /dev/full");
}

/* Started with standard output closed (`>&-`), Python has no sys.stdout: each
 * script says it cannot write there in one line, never a traceback, and a
 * script that writes nothing there (ablate --check on a missing sweep) gives
 * its own error. */
Test(scripts_cli, a_closed_standard_output_is_one_line_not_a_traceback)
{
    tu_need_python("json");
    const char *d = scratch("scripts-closed");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "python3 scripts/induction_phase.py %s/good.log >&-", d);
    expect_error("induction_phase", 1, "cannot write standard output: Bad file descriptor", cmd);
    snprintf(cmd, sizeof cmd, "python3 scripts/plot_log.py %s/good.log --out %s/p >&-", d, d);
    expect_error("plot_log", 1, "cannot write standard output: Bad file descriptor", cmd);
    expect_error("ablate", 1, "cannot write standard output: Bad file descriptor",
                 "scripts/ablate.sh --help >&-");
    expect_error("induction_phase", 1, "cannot write standard output: Bad file descriptor",
                 "python3 scripts/induction_phase.py --help >&-");
    snprintf(cmd, sizeof cmd, "scripts/ablate.sh --check --out %s/nosweep >&-", d);
    expect_error("ablate", 1, "sweep.json: missing", cmd);
    snprintf(cmd, sizeof cmd, "python3 scripts/headcount.py eval %s/missing.ckpt %s/good.log >&-",
             d, d);
    char *out;
    int rc = tu_run(&out, "%s", cmd);
    cr_assert(rc == 1 && !strstr(out, "Traceback") && strncmp(out, "headcount: error: ", 18) == 0 &&
              strchr(out, '\n') == out + strlen(out) - 1, "%s: exit %d:\n%s", cmd, rc, out);
    free(out);
}

/* cli.write_file on a full disk: one line naming the file, exit 1, and its
 * temporary file gone (here path.tmp is a link to /dev/full, so the write fails
 * as on a full disk; the failed write removes the link, not /dev/full). */
Test(scripts_cli, a_failed_atomic_write_names_the_file_and_leaves_no_temporary)
{
    tu_need_python("json");
    const char *d = scratch("scripts-write");
    char cmd[1200], tmp[420], path[400];
    snprintf(path, sizeof path, "%s/out.csv", d);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_assert_eq(symlink("/dev/full", tmp), 0);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys; sys.path.insert(0, \"scripts\"); import cli; "
             "cli.run(\"ablate\", lambda argv: cli.write_file(\"%s\", \"a,b\\n\"))'",
             path);
    expect_error("ablate", 1, "out.csv: No space left", cmd);
    struct stat st;
    cr_assert_neq(lstat(tmp, &st), 0, "%s was left behind", tmp);
    cr_assert_neq(lstat(path, &st), 0, "%s was written", path);
    cr_assert_eq(stat("/dev/full", &st), 0);
}

/* plot_log --out: the rule of ./infer --report. */
Test(scripts_cli, plot_log_writes_only_into_a_new_empty_or_its_own_directory)
{
    tu_need_python("json");
    const char *d = scratch("scripts-plots");
    char cmd[1200], dir[400];
    snprintf(dir, sizeof dir, "%s/mine", d);
    cr_assert_eq(mkdir(dir, 0755), 0);
    write_text(dir, "loss.svg", "the user's own file\n");
    snprintf(cmd, sizeof cmd, "python3 scripts/plot_log.py %s/good.log --out %s", d, dir);
    expect_error("plot_log", 1, "mine holds 1 file that no earlier run", cmd);
    char path[500];
    snprintf(path, sizeof path, "%s/loss.svg", dir);
    char *kept = tu_read_text(path);
    cr_assert_str_eq(kept, "the user's own file\n", "the user's file was overwritten");
    free(kept);
    /* A file, a device, a path under a file: refused before anything is read. */
    const char *outs[][2] = {{"afile", "exists and is not a directory"},
                             {"/dev/null", "exists and is not a directory"},
                             {"afile/sub", "Not a directory"}};
    for (int k = 0; k < 3; k++) {
        snprintf(cmd, sizeof cmd, "python3 scripts/plot_log.py %s/good.log --out %s%s%s", d,
                 outs[k][0][0] == '/' ? "" : d, outs[k][0][0] == '/' ? "" : "/", outs[k][0]);
        expect_error("plot_log", 1, outs[k][1], cmd);
    }
    /* New, then again over its own output (marked), then with a file added: refused. */
    char *out;
    snprintf(dir, sizeof dir, "%s/plots", d);
    for (int k = 0; k < 2; k++) {
        int rc = tu_run(&out, "python3 scripts/plot_log.py %s/good.log --out %s", d, dir);
        cr_assert_eq(rc, 0, "run %d: %s", k, out);
        free(out);
    }
    snprintf(path, sizeof path, "%s/.headcount-plots", dir);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "no marker in %s", dir);
    write_text(dir, "notes.txt", "mine\n");
    snprintf(cmd, sizeof cmd, "python3 scripts/plot_log.py %s/good.log --out %s", d, dir);
    expect_error("plot_log", 1, "notes.txt", cmd);
    cr_assert_eq(tu_find_prefix(d, "plots.tmp.", NULL, 0), 0, "a temporary directory was left");
}

Test(scripts_cli, ablate_refuses_bad_heads_and_outputs_up_front)
{
    tu_need_python("json");
    const char *d = scratch("scripts-ablate");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "scripts/ablate.sh --quick --bin %s --heads '' --out %s/a",
             tu_bin(), d);
    expect_error("ablate", 2, "--heads '': expected whole numbers", cmd);
    const char *outs[][2] = {{"afile", "exists and is not a directory"},
                             {"/dev/null", "exists and is not a directory"},
                             {"afile/sub", "Not a directory"},
                             {"", "but no sweep.json"}};
    for (int k = 0; k < 4; k++) {
        snprintf(cmd, sizeof cmd, "scripts/ablate.sh --quick --bin %s --out %s%s%s", tu_bin(),
                 outs[k][0][0] == '/' ? "" : d, outs[k][0][0] == '/' || !outs[k][0][0] ? "" : "/",
                 outs[k][0]);
        expect_error("ablate", 2, outs[k][1], cmd);
    }
    snprintf(cmd, sizeof cmd, "scripts/ablate.sh --quick --bin %s --data %s/fifo --out %s/a",
             tu_bin(), d, d);
    expect_error("ablate", 1, "fifo: not a regular file", cmd);
    /* A LAMBDA train refuses (its range, an underflow to 0) is refused before any
     * run trains, with train's reason, and no sweep directory is made. */
    const char *gates[][2] = {{"1000", "expected a number in [0, 100], got '1000'"},
                              {"0.01 1e-400", "got '1e-400', which is too small"}};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "scripts/ablate.sh --quick --bin %s --steps 5 --head-gates '%s' "
                 "--out %s/g", tu_bin(), gates[k][0], d);
        expect_error("ablate", 2, gates[k][1], cmd);
        char g[400];
        snprintf(g, sizeof g, "%s/g", d);
        cr_assert_neq(access(g, F_OK), 0, "--head-gates '%s': %s was made", gates[k][0], g);
    }
}

/* 400 bytes of "abab..." pass the sweep's own checks (settings, the byte split)
 * but merge into 5 train tokens, fewer than a window: each run fails, and the
 * sweep says why in its own output, not only in the run's train.err. */
Test(scripts_cli, a_failed_ablation_run_shows_trains_error, .timeout = 120)
{
    tu_need_python("json");
    const char *d = tu_tmpdir("scripts-ablate-vocab");
    cr_assert_not_null(d);
    char data[400], text[402];
    for (int i = 0; i < 400; i++)
        text[i] = "ab"[i % 2];
    text[400] = '\n';
    snprintf(data, sizeof data, "%s/abab.txt", d);
    cr_assert_eq(tu_write_file(data, text, 401), 0);
    char *out;
    int rc = tu_run(&out, "scripts/ablate.sh --quick --bin %s --data %s "
                    "--vocab 300 --seeds 1 --heads 1 --arm width --jobs 1 --threads 1 --out %s/a",
                    tu_bin(), data, d);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "FAILED H01-D032-s1 (exit 1): train: error: "), "%s", out);
    cr_assert_not_null(strstr(out, "401 bytes leave 5 tokens for training, fewer than one window"),
                       "%s", out);
    free(out);
}

/* Needs torch (the model). */
Test(scripts_cli, headcount_py_bad_input_is_one_line_and_a_fifo_does_not_block, .timeout = 240)
{
    need_torch();
    char d[256];
    snprintf(d, sizeof d, "%s", scratch("scripts-headcount"));
    TuModel m;
    tu_model(&m, "scripts-headcount-model", 3000, 5, "--layers 1 --heads 2 --embd 8 --block 16 "
             "--batch 2 --steps 3 --eval-iters 1");
    char cmd[1500];
    write_text(d, "empty.txt", "");
    write_text(d, "one.txt", "a");
    write_text(d, "bin.txt", "\x01\x02");
    struct { int status; const char *args, *needle; } cases[] = {
        {1, "eval %s/missing.ckpt %s", "missing.ckpt: no such checkpoint file"},
        {1, "eval %s/fifo %s", "fifo: not a regular file (a FIFO, device or socket); a "
                               "checkpoint is a plain file"},
        {1, "eval %s/afile %s", "afile: 16 bytes is too short for a checkpoint"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char args[800];
        snprintf(args, sizeof args, cases[c].args, d, m.data);
        snprintf(cmd, sizeof cmd, TORCH_PY " scripts/headcount.py %s", args);
        expect_error("headcount", cases[c].status, cases[c].needle, cmd);
    }
    struct { const char *text, *needle; } texts[] = {
        {"fifo", "fifo: not a regular file"},
        {"empty.txt", "empty.txt: file is empty"},
        {"one.txt", "one.txt: 1 token(s); scoring needs at least 2"},
        {"bin.txt", "bin.txt: byte(s) 0x01, 0x02 not in the model's vocabulary"},
        {"missing.txt", "missing.txt: no such text file"},
    };
    for (size_t c = 0; c < sizeof texts / sizeof texts[0]; c++) {
        snprintf(cmd, sizeof cmd, TORCH_PY " scripts/headcount.py eval %s %s/%s", m.ckpt, d,
                 texts[c].text);
        expect_error("headcount", 1, texts[c].needle, cmd);
    }
    snprintf(cmd, sizeof cmd, TORCH_PY " scripts/headcount.py eval %s %s > /dev/full", m.ckpt,
             m.data);
    expect_error("headcount", 1, "cannot write standard output: No space left", cmd);
    snprintf(cmd, sizeof cmd, "env LC_ALL=C " TORCH_PY " scripts/headcount.py attention %s 'the "
             "cat' > /dev/full", m.ckpt);
    expect_error("headcount", 1, "cannot write standard output: No space left", cmd);
    snprintf(cmd, sizeof cmd, TORCH_PY " scripts/headcount.py attention %s ''", m.ckpt);
    expect_error("headcount", 2, "the text is empty", cmd);
    snprintf(cmd, sizeof cmd, TORCH_PY " scripts/headcount.py eval %s", m.ckpt);
    expect_error("headcount", 2, "required: file", cmd);
}
