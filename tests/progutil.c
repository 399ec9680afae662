/* progutil: see progutil.h. */
#include "tests/progutil.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "data/synth.h"
#include "tests/testutil.h"


void env_init(Env *e, const char *name)
{
    const char *d = tu_tmpdir(name);
    cr_assert_not_null(d);
    snprintf(e->dir, sizeof e->dir, "%s", d);
    snprintf(e->data, sizeof e->data, "%s/data.txt", d);
    snprintf(e->out, sizeof e->out, "%s/out.ckpt", d);
    snprintf(e->log, sizeof e->log, "%s/run.log", d);
    char *text = malloc(DATA_BYTES);
    synth_generate(text, DATA_BYTES, 5);
    cr_assert_eq(tu_write_file(e->data, text, DATA_BYTES), 0);
    free(text);
}

int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

int has_line_starting(const char *s, const char *prefix)
{
    size_t k = strlen(prefix);
    for (const char *line = s; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, prefix, k) == 0)
            return 1;
    return 0;
}

/* needle within s[0..n) (memmem is a GNU extension). */
const char *find_in(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, needle, k) == 0)
            return s + i;
    return NULL;
}

double json_number(const char *line, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *at = strstr(line, k);
    cr_assert_not_null(at, "%s missing from %s", key, line);
    return strtod(at + strlen(k), NULL);
}

/* out without the lines a sanitizer adds ("==123==WARNING: ..."): they are not
 * the program's output (ASan warns before malloc returns NULL as asked). */
char *program_output(const char *out)
{
    char *res = malloc(strlen(out) + 1), *w = res;
    for (const char *line = out; *line;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) + 1 : strlen(line);
        int sanitizer = 0;
        if (strncmp(line, "==", 2) == 0) {
            size_t digits = strspn(line + 2, "0123456789");
            sanitizer = digits > 0 && strncmp(line + 2 + digits, "==", 2) == 0;
        }
        if (!sanitizer) {
            memcpy(w, line, ll);
            w += ll;
        }
        line += ll;
    }
    *w = '\0';
    return res;
}

/* One "PROG: error: ..." line containing needle (plus the "see --help" hint
 * after a usage error), the expected exit status, and no training output. */
void expect_error(const char *raw, int rc, int code, const char *prog, const char *needle)
{
    char head[64], hint[64];
    char *out = program_output(raw);
    snprintf(head, sizeof head, "%s: error: ", prog);
    snprintf(hint, sizeof hint, "%s: see '%s --help'\n", prog, prog);
    cr_assert_eq(rc, code, "exit %d, expected %d; output:\n%s", rc, code, raw);
    cr_assert_eq(strncmp(out, head, strlen(head)), 0, "no error line first:\n%s", raw);
    const char *nl = strchr(out, '\n');
    cr_assert_not_null(nl);
    cr_assert(find_in(out, (size_t)(nl - out), needle),
              "expected '%s' in the error line:\n%s", needle, raw);
    if (code == 2)
        cr_assert_str_eq(nl + 1, hint, "more than the error line and the hint:\n%s", raw);
    else
        cr_assert_eq(count_lines(out), 1, "more than one line:\n%s", raw);
    free(out);
}

void put_sentinel(const Env *e)
{
    cr_assert_eq(tu_write_file(e->out, "sentinel\n", 9), 0);
    unlink(e->log);
}

/* A refused run must leave the old --out as it was, no temporary and no log. */
void expect_nothing_written(const Env *e)
{
    size_t n;
    unsigned char *b = tu_read_file(e->out, &n);
    cr_assert(b && n == 9 && memcmp(b, "sentinel\n", 9) == 0, "%s was overwritten", e->out);
    free(b);
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s.tmp", e->out);
    cr_assert_neq(access(tmp, F_OK), 0, "%s was left behind", tmp);
    cr_assert_eq(tu_find_prefix(e->dir, "out.ckpt.tmp", tmp, sizeof tmp), 0, "%s was left behind",
                 tmp);
    cr_assert_neq(access(e->log, F_OK), 0, "a refused run wrote its log");
}

/* train with --data path (and extra flags) must fail with code and needle. */
void refuse_train(const Env *e, const char *extra, int code, const char *needle)
{
    char *out;
    put_sentinel(e);
    int rc = tu_run(&out, "%s/train " TINY " --steps 5 --out %s --log %s %s", tu_bin(), e->out,
                    e->log, extra);
    expect_error(out, rc, code, "train", needle);
    cr_assert(!has_line_starting(out, "step "), "training ran:\n%s", out);
    expect_nothing_written(e);
    free(out);
}

void make_file(const Env *e, const char *name, const void *data, size_t n, char *path,
                      size_t len)
{
    snprintf(path, len, "%s/%s", e->dir, name);
    cr_assert_eq(tu_write_file(path, data, n), 0);
}


/* Starts train in the background with stderr in errpath; returns its pid once
 * it has printed its first step (so the signal handlers are installed). */
pid_t start_train(const Env *e, const char *errpath)
{
    char bin[400];
    snprintf(bin, sizeof bin, "%s/train", tu_bin());
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        FILE *f = freopen(errpath, "w", stderr);
        if (!f || dup2(fileno(stderr), STDOUT_FILENO) < 0)
            _exit(99);
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execl(bin, bin, "--layers", "1", "--embd", "16", "--heads", "2", "--block", "16",
              "--batch", "4", "--threads", "1", "--steps", "100000000", "--eval-every", "0",
              "--data", e->data, "--out", e->out, "--log", e->log, (char *)NULL);
        _exit(98);
    }
    for (int i = 0; i < 4000; i++) {
        size_t n;
        char *text = (char *)tu_read_file(errpath, &n);
        int started = 0;
        if (text) {
            text[n] = '\0';
            started = strstr(text, "\nstep 1/") != NULL;
            free(text);
        }
        if (started)
            return pid;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_assert_fail("train did not start within 20 s");
    return -1;
}


void expect_resume_matches(const Env *e, const char *flags, const char *refused,
                           const char *needle)
{
    char *out, whole[400], part[400];
    snprintf(whole, sizeof whole, "%s/whole.ckpt", e->dir);
    snprintf(part, sizeof part, "%s/part.ckpt", e->dir);
    int rc = tu_run(&out, "%s/train %s --steps 6 --data %s --out %s", tu_bin(), flags, e->data,
                    whole);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train %s --steps 3 --data %s --out %s", tu_bin(), flags, e->data, part);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --resume %s --steps 6 %s", tu_bin(), part, refused);
    expect_error(out, rc, 2, "train", needle);
    free(out);
    rc = tu_run(&out, "%s/train --resume %s --steps 6", tu_bin(), part);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    size_t na, nb;
    unsigned char *x = tu_read_file(whole, &na), *y = tu_read_file(part, &nb);
    cr_assert(x && y && na == nb && memcmp(x, y, na) == 0, "3 + 3 resumed steps differ from 6");
    free(x);
    free(y);
}

int same_files(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    cr_assert(x && y, "missing %s or %s", a, b);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

char *log_without_timings(const char *path)
{
    char *text = tu_read_text(path);
    char *res = calloc(strlen(text) + 1, 1), *w = res;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        const char *cut = find_in(line, ll, ",\"ms\":");
        if (!cut)
            cut = find_in(line, ll, ",\"train_seconds\":");
        if (!find_in(line, ll, "\"type\":\"settings\"")) {
            size_t keep = cut ? (size_t)(cut - line) : ll;
            memcpy(w, line, keep);
            w += keep;
            *w++ = '\n';
        }
        line += ll + (end ? 1 : 0);
    }
    free(text);
    return res;
}

void train_two_by_four(const Env *e, const char *ckpt, const char *log, const char *extra)
{
    char *out;
    int rc = tu_run(&out, "%s/train " TWO_BY_FOUR " --data %s --out %s --log %s %s", tu_bin(),
                    e->data, ckpt, log, extra);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

void expect_option_threads(const Env *e, const char *on, const char *zero, const char *record,
                           char ck[4][400], char lg[4][400])
{
    char extra[4][300];
    snprintf(extra[0], sizeof extra[0], "%s --threads 1", on);
    snprintf(extra[1], sizeof extra[1], "%s --threads 2", on);
    snprintf(extra[2], sizeof extra[2], "%s --threads 1", zero);
    snprintf(extra[3], sizeof extra[3], "--threads 2");
    for (int i = 0; i < 4; i++) {
        snprintf(ck[i], 400, "%s/r%d.ckpt", e->dir, i);
        snprintf(lg[i], 400, "%s/r%d.log", e->dir, i);
        train_two_by_four(e, ck[i], lg[i], extra[i]);
    }
    cr_assert(same_files(ck[0], ck[1]), "%s: 1 and 2 threads differ", on);
    char *a = log_without_timings(lg[0]), *b = log_without_timings(lg[1]);
    cr_assert_str_eq(a, b, "%s: the logs of 1 and 2 threads differ", on);
    free(a);
    free(b);
    cr_assert(same_files(ck[2], ck[3]), "%s differs from no flag", zero);
    char *log = tu_read_text(lg[0]);
    cr_assert(strstr(log, record), "no %s in %s", record, log);
    free(log);
}

void expect_option_resumes(const Env *e, const char *flags, const char *refused, Model *m,
                           Tokenizer *tok, TrainState *ts)
{
    char needle[200], path[400], err[2000];
    snprintf(needle, sizeof needle, "%s contradicts the checkpoint", refused);
    expect_resume_matches(e, flags, refused, needle);
    snprintf(path, sizeof path, "%s/part.ckpt", e->dir);
    int has;
    cr_assert_eq(ckpt_load(path, m, tok, NULL, ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has, "%s has no training state", path);
}

void refuse_values(const Env *e, const char *flag, const char *const *bad, size_t n,
                   const char *needle)
{
    char extra[700];
    for (size_t i = 0; i < n; i++) {
        snprintf(extra, sizeof extra, "--data %s '%s=%s'", e->data, flag, bad[i]);
        refuse_train(e, extra, 2, needle);
    }
}

void expect_eval_matches_train(const Env *e, const char *extra, char *val, size_t len)
{
    train_two_by_four(e, e->out, e->log, extra);
    char *out;
    snprintf(val, len, "%s/val.txt", e->dir);
    int rc = tu_run(&out, "%s/train --data %s --dump-val %s", tu_bin(), e->data, val);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char *log = tu_read_text(e->log);
    const char *fin = strstr(log, "{\"type\":\"final\"");
    const char *jv = fin ? strstr(fin, "\"val_loss\":") : NULL;
    cr_assert_not_null(jv, "%s", log);
    char want[32];
    snprintf(want, sizeof want, "%.*s", (int)strcspn(jv + 11, ",}"), jv + 11);
    free(log);
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s", tu_bin(), e->out, val);
    cr_assert_eq(rc, 0, "%s", out);
    char got[32] = "";
    cr_assert_eq(sscanf(out, "eval loss %31s", got), 1, "%s", out);
    cr_assert_str_eq(got, want, "infer --eval %s, train's final val loss %s", got, want);
    free(out);
}
