/* Nothing lost, on ./infer's side: its outputs (--explore, --explore-json,
 * --report DIR) get ./train's guarantees. Each output is checked against every
 * input, the training data its checkpoint names included, by identity; --report
 * writes only where there is nothing, into an empty directory or over its own
 * earlier report; every file is written whole and renamed into place, so a size
 * limit leaves the earlier file as it was; FIFOs and devices are refused before
 * anything is opened (as checkpoints too); and bad flag values are one line. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/progutil.h"
#include "tests/testutil.h"

#define TEXT "The old mouse went twice. The boys" /* built-in corpus bytes */

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

/* The programs' directory as an absolute path, for commands run elsewhere. */
static const char *bin_abs(char buf[4096])
{
    cr_assert_not_null(realpath(tu_bin(), buf));
    return buf;
}

static void expect_file(const char *path, const char *text)
{
    size_t n;
    unsigned char *b = tu_read_file(path, &n);
    cr_assert(b && n == strlen(text) && memcmp(b, text, n) == 0, "%s was changed", path);
    free(b);
}

static void expect_same_bytes(const char *path, const unsigned char *want, size_t n)
{
    size_t m;
    unsigned char *b = tu_read_file(path, &m);
    cr_assert(b && m == n && memcmp(b, want, n) == 0, "%s was changed", path);
    free(b);
}

/* An error after the work began (notes and stdout around it): the exit status,
 * and one "infer: error:" line, holding needle. */
static void expect_late_error(const char *out, int rc, int code, const char *needle)
{
    cr_assert_eq(rc, code, "exit %d, expected %d:\n%s", rc, code, out);
    const char *line = strstr(out, "infer: error: ");
    cr_assert_not_null(line, "no error line:\n%s", out);
    size_t len = strcspn(line, "\n");
    cr_assert(find_in(line, len, needle), "expected '%s' in the error line:\n%s", needle, out);
    cr_assert_null(strstr(line + len, "infer: error: "), "more than one error:\n%s", out);
}

static void expect_absent(const char *path)
{
    cr_assert_neq(access(path, F_OK), 0, "%s was left behind", path);
}

/* Row 2: a directory of the user's (or the working directory) is not a report's. */
Test(infer_outputs, a_report_directory_holding_user_files_is_refused_naming_them, .timeout = 60)
{
    Env e;
    model(&e, "io-report-user");
    char dir[400], path[500], *out;
    snprintf(dir, sizeof dir, "%s/mine", e.dir);
    cr_assert_eq(mkdir(dir, 0777), 0);
    const char *names[] = {"heads.csv", "summary.json", "index.html"};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        cr_assert_eq(tu_write_file(path, "user's\n", 7), 0);
    }
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --report %s", tu_bin(), e.out, e.data,
                    dir);
    expect_error(out, rc, 2, "infer", "no earlier report of ./infer wrote there");
    for (int k = 0; k < 3; k++) {
        cr_assert(strstr(out, names[k]), "%s is not named:\n%s", names[k], out);
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        expect_file(path, "user's\n");
    }
    free(out);
    snprintf(path, sizeof path, "%s/heatmaps", dir);
    expect_absent(path);
    /* The working directory: its files are not a report's. */
    char bin[4096];
    rc = tu_run(&out, "cd %s && %s/infer --ckpt "
                "../out.ckpt --heads ../data.txt --report .", dir, bin_abs(bin));
    expect_error(out, rc, 2, "infer", "no earlier report");
    free(out);
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        expect_file(path, "user's\n");
    }
}

/* The other side of row 2: a new or empty directory gets a report, which a
 * second run replaces as a whole. */
Test(infer_outputs, a_report_replaces_its_own_earlier_report_and_fills_an_empty_dir,
     .timeout = 60)
{
    Env e;
    model(&e, "io-report-own");
    char dir[400], empty[400], path[500], *out;
    snprintf(dir, sizeof dir, "%s/rep", e.dir);
    snprintf(empty, sizeof empty, "%s/empty", e.dir);
    cr_assert_eq(mkdir(empty, 0777), 0);
    for (int k = 0; k < 2; k++) {
        int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --report %s --prune-curve", tu_bin(),
                        e.out, e.data, dir);
        cr_assert_eq(rc, 0, "run %d:\n%s", k, out);
        free(out);
    }
    snprintf(path, sizeof path, "%s/heads.csv", dir);
    cr_assert_eq(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/.headcount-report", dir);
    cr_assert_eq(access(path, F_OK), 0, "no marker");
    /* The second run had no --prune-curve: the earlier report's prune.csv goes. */
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --report %s", tu_bin(), e.out, e.data,
                    dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/prune.csv", dir);
    expect_absent(path);
    cr_assert_eq(tu_find_prefix(e.dir, "rep.", NULL, 0), 0, "a temporary directory was left");
    rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --report %s", tu_bin(), e.out, e.data, empty);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/index.html", empty);
    cr_assert_eq(access(path, F_OK), 0);
}

/* Row 3: the checkpoint's training text, by every spelling. */
Test(infer_outputs, the_training_data_is_never_an_explorer_output, .timeout = 60)
{
    Env e;
    model(&e, "io-data");
    char sym[400], hard[400], dotted[400], *out;
    snprintf(sym, sizeof sym, "%s/link.txt", e.dir);
    snprintf(hard, sizeof hard, "%s/hard.txt", e.dir);
    snprintf(dotted, sizeof dotted, "%s/./data.txt", e.dir);
    cr_assert_eq(symlink("data.txt", sym), 0);
    cr_assert_eq(link(e.data, hard), 0);
    size_t n;
    unsigned char *before = tu_read_file(e.data, &n);
    const char *spellings[] = {e.data, dotted, sym, hard};
    for (int k = 0; k < 4; k++) {
        int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --text '%s'", tu_bin(), e.out,
                        spellings[k], TEXT);
        expect_error(out, rc, 2, "infer", "the training data of --ckpt");
        free(out);
        char page[400];
        snprintf(page, sizeof page, "%s/p.html", e.dir);
        rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --text '%s'", tu_bin(),
                    e.out, page, spellings[k], TEXT);
        expect_error(out, rc, 2, "infer", "--explore-json");
        free(out);
        expect_absent(page);
        expect_same_bytes(e.data, before, n);
    }
    free(before);
}

/* Rows 4 and 5: `ulimit -f 8` (4 KB under sh) is far below a page; the earlier
 * page, JSON and report are left as they were, with the reason and no kill. */
Test(infer_outputs, a_file_size_limit_keeps_the_earlier_files_and_says_why, .timeout = 60)
{
    Env e;
    model(&e, "io-fsize");
    char page[400], json[400], rep[400], *out;
    snprintf(page, sizeof page, "%s/p.html", e.dir);
    snprintf(json, sizeof json, "%s/p.json", e.dir);
    snprintf(rep, sizeof rep, "%s/rep", e.dir);
    cr_assert_eq(tu_write_file(page, "earlier page\n", 13), 0);
    cr_assert_eq(tu_write_file(json, "earlier json\n", 13), 0);
    int rc = tu_run(&out, "ulimit -f 8; %s/infer --ckpt %s "
                    "--explore %s --explore-json %s --text '%s'", tu_bin(), e.out, page, json,
                    TEXT);
    expect_late_error(out, rc, 1, "File too large");
    free(out);
    expect_file(page, "earlier page\n");
    expect_file(json, "earlier json\n");
    rc = tu_run(&out, "ulimit -f 5; %s/infer --ckpt %s "
                "--heads %s --report %s", tu_bin(), e.out, e.data, rep);
    expect_late_error(out, rc, 1, "File too large"); /* a kill by SIGXFSZ is exit 153 */
    cr_assert(strstr(out, "infer: error: --report"), "%s", out);
    free(out);
    expect_absent(rep);
    cr_assert_eq(tu_find_prefix(e.dir, "p.html.", NULL, 0), 0, "a temporary was left");
    cr_assert_eq(tu_find_prefix(e.dir, "p.json.", NULL, 0), 0, "a temporary was left");
    cr_assert_eq(tu_find_prefix(e.dir, "rep.", NULL, 0), 0, "a temporary was left");
}

/* Row 6 (./infer's half): opening a FIFO for writing waits for a reader forever. */
Test(infer_outputs, a_fifo_as_an_output_is_refused_at_once, .timeout = 60)
{
    Env e;
    model(&e, "io-fifo");
    char fifo[400], rep[400], inrep[500], page[400], *out;
    snprintf(fifo, sizeof fifo, "%s/fifo", e.dir);
    snprintf(rep, sizeof rep, "%s/rep", e.dir);
    snprintf(inrep, sizeof inrep, "%s/heads.csv", rep);
    snprintf(page, sizeof page, "%s/p.html", e.dir);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    cr_assert_eq(mkdir(rep, 0777), 0);
    cr_assert_eq(mkfifo(inrep, 0666), 0);
    /* timeout: a program that opens the FIFO blocks there for ever */
    int rc = tu_run(&out, "timeout 20 %s/infer --ckpt %s --explore %s --text '%s'", tu_bin(), e.out,
                    fifo, TEXT);
    expect_error(out, rc, 2, "infer", "not a regular file");
    free(out);
    rc = tu_run(&out, "timeout 20 %s/infer --ckpt %s --explore %s --explore-json %s --text '%s'",
                tu_bin(), e.out, page, fifo, TEXT);
    expect_error(out, rc, 2, "infer", "not a regular file");
    free(out);
    expect_absent(page);
    rc = tu_run(&out, "timeout 20 %s/infer --ckpt %s "
                "--heads %s --report %s", tu_bin(), e.out, e.data, rep);
    expect_error(out, rc, 2, "infer", "heads.csv");
    free(out);
}

/* Row 12: a device or a FIFO is not a checkpoint, whichever program reads it. */
Test(infer_outputs, a_device_or_fifo_as_a_checkpoint_is_not_a_regular_file, .timeout = 60)
{
    Env e;
    env_init(&e, "io-ckpt-dev");
    char fifo[400], *out;
    snprintf(fifo, sizeof fifo, "%s/fifo", e.dir);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    const char *paths[] = {"/dev/zero", "/dev/urandom", fifo};
    for (int k = 0; k < 3; k++) {
        int rc = tu_run(&out, "timeout 20 %s/infer --ckpt %s --eval %s", tu_bin(), paths[k],
                        e.data);
        expect_error(out, rc, 1, "infer", "not a regular file");
        free(out);
        rc = tu_run(&out, "timeout 20 %s/train --resume %s --steps 9", tu_bin(), paths[k]);
        expect_error(out, rc, 1, "train", "not a regular file");
        free(out);
    }
}

/* Row 13, infer's half: an empty --heads file is one line, no warning first; an
 * empty path is a usage error. */
Test(infer_outputs, an_empty_heads_file_or_path_is_one_clear_error, .timeout = 60)
{
    Env e;
    model(&e, "io-empty");
    char empty[400], *out;
    make_file(&e, "empty.txt", "", 0, empty, sizeof empty);
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s", tu_bin(), e.out, empty);
    expect_error(out, rc, 1, "infer", "file is empty");
    free(out);
    const char *flags[] = {"--heads ''", "--explore '' --text ab", "--eval ''",
                           "--heads data.txt --report ''"};
    char bin[4096];
    for (int k = 0; k < 4; k++) {
        rc = tu_run(&out, "cd %s && %s/infer --ckpt out.ckpt %s", e.dir, bin_abs(bin), flags[k]);
        expect_error(out, rc, 2, "infer", "the path is empty");
        free(out);
    }
    rc = tu_run(&out, "%s/infer --ckpt ''", tu_bin());
    expect_error(out, rc, 2, "infer", "--ckpt '': the path is empty");
    free(out);
}

/* Row 14, infer's half. */
Test(infer_outputs, a_mask_with_an_empty_item_or_a_repeated_head_is_refused, .timeout = 60)
{
    Env e;
    model(&e, "io-mask");
    char *out;
    const char *masks[] = {"''", "0.0,", "0.0,0.0", "0.0,,0.1", ",0.0"};
    const char *needles[] = {"no head given", "ends with a comma", "listed twice",
                             "expected layer.head", "expected layer.head"};
    for (int k = 0; k < 5; k++) {
        int rc = tu_run(&out, "%s/infer --ckpt %s --eval %s --mask %s", tu_bin(), e.out, e.data,
                        masks[k]);
        expect_error(out, rc, 2, "infer", needles[k]);
        free(out);
    }
    int rc = tu_run(&out, "%s/infer --ckpt %s --eval %s --mask 0.0,0.1", tu_bin(), e.out, e.data);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* Row 15: a report that fails (here on a byte the model does not know) leaves no
 * directory behind, nor an empty heatmaps/. */
Test(infer_outputs, a_failed_report_leaves_nothing_behind, .timeout = 60)
{
    Env e;
    model(&e, "io-report-fail");
    char bad[400], rep[400], *out;
    make_file(&e, "bad.txt", "The old \x01 mouse", 16, bad, sizeof bad);
    snprintf(rep, sizeof rep, "%s/rep", e.dir);
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --report %s", tu_bin(), e.out, bad, rep);
    expect_error(out, rc, 1, "infer", "0x01");
    free(out);
    expect_absent(rep);
    cr_assert_eq(tu_find_prefix(e.dir, "rep", NULL, 0), 0, "a report directory was left");
}

/* The explorer's help says which bytes of a long text it shows. */
Test(infer_outputs, help_says_a_sample_is_explored_by_its_last_block)
{
    char *out;
    int rc = tu_run(&out, "%s/infer --help", tu_bin());
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "(their first block-size bytes)") &&
              strstr(out, "(its last block-size bytes"), "%s", out);
    free(out);
}
