/* The training log on a full disk: every record is in the file whole or not at
 * all, whether the run writes a fresh log or appends to one, and a resumed run
 * that appends first mends a log whose last record was cut short (or refuses a
 * file whose tail is not ours). A full disk is stood in for by `ulimit -f`,
 * which fails a write part-way exactly as a full disk does. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/progutil.h"
#include "tests/testutil.h"

/* Every line of the log at path is a whole record: it ends in a newline and
 * starts as our records do; returns the number of lines. */
static int expect_whole_records(const char *path)
{
    size_t n;
    unsigned char *b = tu_read_file(path, &n);
    cr_assert_not_null(b, "cannot read %s", path);
    cr_assert(n > 0 && b[n - 1] == '\n', "%s does not end in a complete line", path);
    int lines = 0;
    for (size_t i = 0; i < n;) {
        cr_assert(n - i > 10 && memcmp(b + i, "{\"type\":\"", 9) == 0,
                  "%s: line %d is not a record: %.40s", path, lines + 1, (const char *)b + i);
        const unsigned char *nl = memchr(b + i, '\n', n - i);
        cr_assert(nl[-1] == '}', "%s: line %d is cut short", path, lines + 1);
        i = (size_t)(nl - b) + 1;
        lines++;
    }
    free(b);
    return lines;
}

/* 8 blocks (4 or 8 KB, by shell) holds some 30 to 60 step records of TINY: the
 * write that crosses the limit is cut part-way, and the log must not keep the
 * part. */
Test(log_disk, a_full_disk_leaves_only_whole_records_in_a_fresh_log, .timeout = 60)
{
    Env e;
    env_init(&e, "log-full-fresh");
    char *out;
    int rc = tu_run(&out, "ulimit -f 8; %s/train " TINY " --steps 400 --save-every 0 --data %s "
                    "--out %s --log %s", tu_bin(), e.data, e.out, e.log);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "train: error: --log") && strstr(out, "File too large"), "%s", out);
    free(out);
    cr_assert_gt(expect_whole_records(e.log), 10);
}

/* Appending to a valid log on a full disk leaves it valid: the failed record is
 * cut, every earlier byte stays. */
Test(log_disk, a_full_disk_while_appending_keeps_the_log_whole, .timeout = 60)
{
    Env e;
    env_init(&e, "log-full-append");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s --log %s", tu_bin(),
                    e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* Pad the log with whole records to just under 4 KB, so the resumed run's
     * records cross the limit at once. */
    size_t n;
    char *log = (char *)tu_read_file(e.log, &n);
    cr_assert_not_null(log);
    char *padded = malloc(8000);
    memcpy(padded, log, n);
    static const char pad[] = "{\"type\":\"note\",\"text\":\"padding\"}\n";
    while (n + sizeof pad - 1 < 4000) {
        memcpy(padded + n, pad, sizeof pad - 1);
        n += sizeof pad - 1;
    }
    cr_assert_eq(tu_write_file(e.log, padded, n), 0);
    free(log);
    rc = tu_run(&out, "ulimit -f 8; %s/train --resume %s --steps 400 --save-every 0 --log %s",
                tu_bin(), e.out, e.log);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "File too large"), "%s", out);
    free(out);
    expect_whole_records(e.log);
    size_t m;
    char *after = (char *)tu_read_file(e.log, &m);
    cr_assert(m >= n && memcmp(after, padded, n) == 0, "the earlier records were changed");
    free(after);
    free(padded);
}

/* The log a run stopped mid-record left behind (as a full disk did before the
 * writes were checked): a resume with --log cuts the part with one note, then
 * appends whole records; a tail that is not the start of a record is refused
 * and left as it was. */
Test(log_disk, a_resume_mends_a_log_cut_mid_record_or_refuses_a_foreign_tail, .timeout = 60)
{
    Env e;
    env_init(&e, "log-mend");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s --log %s", tu_bin(),
                    e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    size_t n;
    char *log = (char *)tu_read_file(e.log, &n);
    int before = count_lines(log);
    char *cut = malloc(n + 32);
    memcpy(cut, log, n);
    memcpy(cut + n, "{\"type\":\"st", 11);
    cr_assert_eq(tu_write_file(e.log, cut, n + 11), 0);
    rc = tu_run(&out, "%s/train --resume %s --steps 6 --log %s", tu_bin(), e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "train: note: --log") && strstr(out, "incomplete record") &&
              strstr(out, "11 bytes"), "no note of what was cut:\n%s", out);
    free(out);
    cr_assert_gt(expect_whole_records(e.log), before);

    /* A tail that no run of ours wrote. */
    char *mended = (char *)tu_read_file(e.log, &n);
    cut = realloc(cut, n + 32);
    memcpy(cut, mended, n);
    memcpy(cut + n, "garbage", 7);
    cr_assert_eq(tu_write_file(e.log, cut, n + 7), 0);
    rc = tu_run(&out, "%s/train --resume %s --steps 8 --log %s", tu_bin(), e.out, e.log);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    const char *line = strstr(out, "train: error: --log");
    cr_assert(line && strstr(line, "does not end in a complete line") &&
              !strstr(line + 1, "train: error:") && !strstr(out, "step 7/"), "%s", out);
    free(out);
    size_t m;
    char *after = (char *)tu_read_file(e.log, &m);
    cr_assert(m == n + 7 && memcmp(after, cut, m) == 0, "the refused log was changed");
    free(after);
    free(mended);
    free(cut);
    free(log);
}
