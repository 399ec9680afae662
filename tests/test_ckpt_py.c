/* Checkpoint tests, the two readers side by side: trainer/ckpt.c (ckpt_load) and
 * scripts/checkpoint.py (the reader headcount.py builds its model from) over one
 * set of files must accept and refuse the same files with the same message. The
 * set: valid files of both versions, with and without training state, and the
 * ways test_ckpt_damage.c damages them (truncations, trailing bytes, random byte
 * flips, every header field, the alphabet, the merges, non-finite parameters and
 * moments, every slot of the training state behind a valid checksum), crafted
 * headers that claim huge models, repeated merges, merges whose pieces grow past
 * TOK_PIECES_MAX, and paths that are missing, a directory, a FIFO or a device.
 * Also: the Python reader's table of stored settings is trainer/ckpt.c's.
 * Skipped where python3 is missing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trainer/ckpt.h"
#include "tests/ckpt_fixture.h"
#include "tests/testutil.h"

/* The files both readers see: dir/NNNNN.ckpt written by corpus_add, or any path
 * given to corpus_path, listed one per line in dir/list. */
typedef struct {
    char dir[256], list_path[320];
    FILE *list;
    int n;
} Corpus;

static void corpus_init(Corpus *c, const char *name)
{
    const char *d = tu_tmpdir(name);
    cr_assert_not_null(d);
    snprintf(c->dir, sizeof c->dir, "%s", d);
    snprintf(c->list_path, sizeof c->list_path, "%s/list", c->dir);
    c->list = fopen(c->list_path, "w");
    cr_assert_not_null(c->list);
    c->n = 0;
}

static void corpus_path(Corpus *c, const char *path)
{
    fprintf(c->list, "%s\n", path);
    c->n++;
}

static void corpus_add(Corpus *c, const unsigned char *b, size_t n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%05d.ckpt", c->dir, c->n);
    cr_assert_eq(tu_write_file(path, b, n), 0, "cannot write %s", path);
    corpus_path(c, path);
}

/* The size refusal's parenthesis lists the header's dimensions; its wording is
 * the C reader's to fix (a merge count it drops), so only the rest is compared. */
static void without_dims(char *msg)
{
    char *open = strstr(msg, " implies ") ? strstr(msg, " (V=") : NULL;
    char *close = open ? strchr(open, ')') : NULL;
    if (open && close)
        memmove(open, close + 1, strlen(close + 1) + 1);
}

/* Runs both readers over the corpus; every verdict and message must agree.
 * Returns the number of files both accepted through *accepted. */
static void compare_readers(Corpus *c, int *accepted)
{
    cr_assert_eq(fclose(c->list), 0);
    char *out;
    int rc = tu_run(&out, "python3 tests/ckpt_readers.py %s", c->list_path);
    cr_assert_eq(rc, 0, "%s", out);
    char *paths = tu_read_text(c->list_path);
    char *line = out, *path = paths;
    int ok = 0;
    for (int i = 0; i < c->n; i++) {
        char *eol = strchr(line, '\n'), *eop = strchr(path, '\n');
        cr_assert(eol && eop, "the Python reader printed %d lines for %d files", i, c->n);
        *eol = *eop = '\0';
        Model m;
        Tokenizer tok;
        TrainState ts;
        long steps;
        int has;
        char err[2000] = "";
        int loaded = ckpt_load(path, &m, &tok, &steps, &ts, &has, err, sizeof err) == 0;
        if (loaded) {
            model_free(&m);
            tok_free(&tok);
            cr_assert_str_eq(line, "ok", "%s: C loads it, Python: %s", path, line);
            ok++;
        } else {
            cr_assert(strncmp(line, "refused ", 8) == 0, "%s: C refuses it (%s), Python: %s",
                      path, err, line);
            char *py = line + 8;
            without_dims(py);
            without_dims(err);
            cr_assert_str_eq(py, err, "%s: the messages differ", path);
        }
        line = eol + 1;
        path = eop + 1;
    }
    free(paths);
    free(out);
    *accepted = ok;
}

/* One fixture saved (format 1 or 2, with or without state; routed) and its damages. */
static void add_damaged(Corpus *c, int merges, int with_state, int routed)
{
    Fix f;
    if (merges)
        fix_init_merges(&f, "ckpt-py-fix");
    else if (routed)
        fix_init_routed(&f, "ckpt-py-fix");
    else
        fix_init(&f, "ckpt-py-fix");
    fix_save(&f, f.path, with_state);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n + 16);
    cr_assert_not_null(b);
    const size_t M = merges ? TINY_NMERGES : 0, P = f.m.table.total;
    const size_t W = PARAMS_AT + 4 * M, S = W + 4 * P;
    corpus_add(c, good, n);
    for (size_t len = 0; len < n; len += 1 + len / 8) /* truncations */
        corpus_add(c, good, len);
    memcpy(b, good, n);
    b[n] = 0;
    corpus_add(c, b, n + 1);                          /* a trailing byte */
    Rng rng;
    rng_init(&rng, 31, (uint64_t)(4 * routed + 2 * merges + with_state));
    for (int t = 0; t < 150; t++) {                   /* 1 to 3 bytes changed */
        memcpy(b, good, n);
        for (int k = 1 + (int)rng_below(&rng, 3); k > 0; k--)
            b[rng_below(&rng, n)] ^= (unsigned char)(1 + rng_below(&rng, 255));
        corpus_add(c, b, n);
    }
    /* Every header int that means something, and reserved ones, at telling values. */
    static const int32_t values[] = {INT32_MIN, -1, 0, 1, 2, 3, 5, 8, 257, 32769, INT32_MAX};
    static const int fields[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 100, 255};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            memcpy(b, good, n);
            put_i32(b, 4 * (size_t)fields[i], values[v]);
            if (with_state)
                reseal(b, n);
            corpus_add(c, b, n);
        }
    /* The alphabet (a repeat, a descent, padding) and each merge's ids. */
    for (int i = 0; i < 8; i++) {
        memcpy(b, good, n);
        b[VOCAB_AT + i] = i ? good[VOCAB_AT + i - 1] : 0xff;
        if (with_state)
            reseal(b, n);
        corpus_add(c, b, n);
    }
    for (size_t k = 0; k < 2 * M; k++)
        for (int v = 0; v < 10; v++) {
            memcpy(b, good, n);
            put_u16(b, MERGES_AT + 2 * k, (uint16_t)(v == 9 ? 65535 : v));
            if (with_state)
                reseal(b, n);
            corpus_add(c, b, n);
        }
    /* A NaN (either sign) or an infinity in each tensor. */
    for (int k = 0; k < f.m.table.n; k++) {
        memcpy(b, good, n);
        size_t at = f.m.table.spec[k].offset + (size_t)k % f.m.table.spec[k].count;
        put_f32(b, W + 4 * at, k % 3 == 0 ? NAN : k % 3 == 1 ? -NAN : INFINITY);
        if (with_state)
            reseal(b, n);
        corpus_add(c, b, n);
    }
    if (with_state) {
        /* Every int and double slot of the state at values in and out of range. */
        static const int64_t ints[] = {INT64_MIN, -2, -1, 0, 1, 2, 29, 30, 31, 4097, 32769,
                                       65537, 100001, 100000001, INT64_MAX};
        static const double reals[] = {-0.5, -0.0, 0.0, 1e-31, 5e-5, 0.5, 0.95, 0.96, 1.0,
                                       11.0, 1e7, NAN, -INFINITY};
        for (int slot = 0; slot < 32; slot++) {
            for (size_t v = 0; v < sizeof ints / sizeof ints[0]; v++) {
                memcpy(b, good, n);
                put_i64(b, S + STATE_INTS_AT + 8 * (size_t)slot, ints[v]);
                reseal(b, n);
                corpus_add(c, b, n);
            }
            for (size_t v = 0; v < sizeof reals / sizeof reals[0]; v++) {
                memcpy(b, good, n);
                put_f64(b, S + STATE_DOUBLES_AT + 8 * (size_t)slot, reals[v]);
                reseal(b, n);
                corpus_add(c, b, n);
            }
        }
        size_t marks[] = {S, S + 7, S + STATE_PATH_AT + CKPT_PATH_MAX - 1};
        for (size_t i = 0; i < 3; i++) {
            memcpy(b, good, n);
            b[marks[i]] ^= 0x41;
            reseal(b, n);
            corpus_add(c, b, n);
        }
        for (int k = 0; k < 4; k++) {                 /* the moments: either, first and last */
            memcpy(b, good, n);
            put_f32(b, S + STATE_ADAM_AT + 4 * (k / 2 ? P : 0) + 4 * (k % 2 ? P - 1 : 0),
                    k % 2 ? NAN : -INFINITY);
            reseal(b, n);
            corpus_add(c, b, n);
        }
        memcpy(b, good, n);                           /* a NaN in each moment: the first */
        put_f32(b, S + STATE_ADAM_AT + 8, NAN);
        put_f32(b, S + STATE_ADAM_AT + 4 * P + 8, NAN);
        reseal(b, n);
        corpus_add(c, b, n);
    }
    free(b);
    free(good);
    fix_free(&f);
}

/* A parameters-only file built from nothing: header fields h (pairs of index
 * and value, ending with index -1), alphabet 0..nbytes-1, the merges, and P zero
 * parameters, where P is what the dimensions give, or 100 when they are out of
 * range or claim more than 1000 (such a file is refused before its size matters). */
static void add_crafted(Corpus *c, const int32_t *h, int nbytes, const uint16_t *merges, int M)
{
    Config cfg = {0};
    int *dim[10] = {[2] = &cfg.V, [3] = &cfg.T, [4] = &cfg.L, [5] = &cfg.H, [6] = &cfg.C,
                    [9] = &cfg.D};
    for (int i = 0; h[i] >= 0; i += 2)
        *dim[h[i]] = h[i + 1];
    char why[200];
    size_t P = 100;
    if (config_validate(&cfg, why, sizeof why) == 0 && config_param_count(&cfg) <= 1000)
        P = config_param_count(&cfg);
    size_t n = PARAMS_AT + 4 * (size_t)M + 4 * P;
    unsigned char *b = calloc(n, 1);
    cr_assert_not_null(b);
    put_i32(b, 0, CKPT_MAGIC);
    put_i32(b, 4, M ? 2 : 1);
    put_i32(b, 40, M);
    for (int i = 0; h[i] >= 0; i += 2)
        put_i32(b, 4 * (size_t)h[i], h[i + 1]);
    for (int i = 0; i < nbytes; i++)
        b[VOCAB_AT + i] = (unsigned char)i;
    for (int i = 0; i < 2 * M; i++)
        put_u16(b, MERGES_AT + 2 * (size_t)i, merges[i]);
    corpus_add(c, b, n);
    free(b);
}

static void add_special_paths(Corpus *c)
{
    char p[400];
    snprintf(p, sizeof p, "%s/missing.ckpt", c->dir);
    corpus_path(c, p);
    snprintf(p, sizeof p, "%s/a-dir", c->dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    corpus_path(c, p);
    snprintf(p, sizeof p, "%s/fifo", c->dir);
    cr_assert_eq(mkfifo(p, 0644), 0);
    corpus_path(c, p);                                /* must not block either reader */
    corpus_path(c, "/dev/null");
    snprintf(p, sizeof p, "%s/short", c->dir);
    cr_assert_eq(tu_write_file(p, "HC", 2), 0);
    corpus_path(c, p);
}

Test(ckpt_py, both_readers_accept_and_refuse_the_same_files_with_the_same_message,
     .timeout = 240)
{
    tu_need_python("struct");
    Corpus c;
    corpus_init(&c, "ckpt-py");
    for (int merges = 0; merges < 2; merges++)
        for (int with_state = 0; with_state < 2; with_state++)
            add_damaged(&c, merges, with_state, 0);
    add_damaged(&c, 0, 1, 1); /* a routed model: flag bit 2, K in header int 11, its router */
    /* Dimensions within every limit that claim up to 2^30 parameters in 2 KB, and
     * ones past the parameter limit. */
    int32_t huge[] = {2, 256, 3, 4096, 4, 64, 5, 16, 6, 1024, 9, 64, -1};
    add_crafted(&c, huge, 256, NULL, 0);
    int32_t big_l[] = {2, 16, 3, 8, 4, 64, 5, 16, 6, 1024, 9, 64, -1};
    add_crafted(&c, big_l, 16, NULL, 0);
    int32_t over[] = {2, 16, 3, 8, 4, 64, 5, 256, 6, 8192, 9, 64, -1};
    add_crafted(&c, over, 16, NULL, 0);
    /* V = 4 T = 1 L = 1 H = 1 C = 1 D = 1: a real small model over 2 bytes and 2
     * merges, and the same with a merge repeated. */
    int32_t small[] = {2, 4, 3, 1, 4, 1, 5, 1, 6, 1, 9, 1, -1};
    uint16_t two[] = {0, 1, 2, 0}, again[] = {0, 1, 0, 1};
    add_crafted(&c, small, 2, two, 2);
    add_crafted(&c, small, 2, again, 2);
    /* Merges that double a piece each time: 1 byte and 30 merges (V = 31) stand for
     * 2^31 bytes, over TOK_PIECES_MAX; 20 merges stay under it. */
    uint16_t dbl[60];
    for (int k = 0; k < 30; k++)
        dbl[2 * k] = dbl[2 * k + 1] = (uint16_t)k;
    int32_t d31[] = {2, 31, 3, 1, 4, 1, 5, 1, 6, 1, 9, 1, -1};
    add_crafted(&c, d31, 1, dbl, 30);
    int32_t d21[] = {2, 21, 3, 1, 4, 1, 5, 1, 6, 1, 9, 1, -1};
    add_crafted(&c, d21, 1, dbl, 20);
    add_special_paths(&c);
    int accepted;
    compare_readers(&c, &accepted);
    /* Four valid fixtures, the small model, 20 doubling merges, and the flips and
     * reserved settings slots that leave a file valid: the test reaches both sides. */
    cr_assert_geq(accepted, 6, "only %d of %d files loaded", accepted, c.n);
    cr_assert_geq(c.n - accepted, 1000, "only %d of %d files refused", c.n - accepted, c.n);
}

/* scripts/checkpoint.py lists the stored settings' slots and ranges itself
 * (STORED_SETTINGS): they must be trainer/ckpt.c's (ckpt_settings), row for row. */
Test(ckpt_py, the_python_table_of_stored_settings_is_the_c_one)
{
    tu_need_python("struct");
    char want[4000] = "";
    for (int k = 0; k < ckpt_setting_count; k++) {
        const CkptSetting *s = &ckpt_settings[k];
        if (s->lo > s->hi) /* the seed: any value */
            continue;
        size_t at = strlen(want);
        snprintf(want + at, sizeof want - at, "%s %s %d %g %g\n", s->key,
                 s->real ? "real" : "int", s->slot, s->lo, s->hi);
    }
    char *out;
    int rc = tu_run(&out, "python3 -c \"import sys; sys.path.insert(0, 'scripts'); "
                    "import checkpoint as c; print(''.join('%%s %%s %%d %%g %%g\\n' %% r "
                    "for r in c.STORED_SETTINGS), end='')\"");
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_str_eq(out, want);
    free(out);
}
