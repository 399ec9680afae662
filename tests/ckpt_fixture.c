/* ckpt_fixture: see ckpt_fixture.h. */
#include "tests/ckpt_fixture.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/hash.h"
#include "tests/testutil.h"

const Config TINY = {.V = 5, .T = 4, .L = 1, .H = 2, .C = 4, .D = 3};
const unsigned char TINY_VOCAB[5] = {'\n', ' ', 'a', 'b', 'c'};
/* "ab" (5), "abc" (6), " a" (7). */
const BpeMerge TINY_MERGES[TINY_NMERGES] = {{2, 3}, {5, 4}, {1, 2}};

static void fix_setup(Fix *f, const char *name, const Config *cfg, int nmerges)
{
    char err[300];
    memset(f, 0, sizeof *f);
    const char *d = tu_tmpdir(name);
    cr_assert_not_null(d);
    snprintf(f->dir, sizeof f->dir, "%s", d);
    snprintf(f->path, sizeof f->path, "%s/model.ckpt", f->dir);
    cr_assert_eq(model_init(&f->m, cfg, err, sizeof err), 0, "%s", err);
    params_init(&f->m.table, f->m.params, 42);
    cr_assert_eq(tok_from_parts(&f->tok, TINY_VOCAB, 5, TINY_MERGES, nmerges, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(f->tok.V, cfg->V);
    size_t P = f->m.table.total;
    TrainState *ts = &f->ts;
    f->adam_m = malloc(P * sizeof(float));
    f->adam_v = malloc(P * sizeof(float));
    cr_assert(f->adam_m && f->adam_v);
    Rng rng;
    rng_init(&rng, 7, 0);
    tu_fill(f->adam_m, P, &rng, -1e-3f, 1e-3f);
    tu_fill(f->adam_v, P, &rng, 0.0f, 1e-6f);
    ts->adam_m = f->adam_m;
    ts->adam_v = f->adam_v;
    ts->step = 30; ts->steps = 100; ts->batch = 4; ts->warmup = 10; ts->eval_every = 10;
    ts->eval_iters = 2; ts->save_every = 10; ts->seed = 0xfedcba9876543210ULL;
    ts->batch_rng = 0x0123456789abcdefULL; ts->data_size = 12345; ts->data_hash = 99;
    ts->allow_binary = 0; ts->best_step = 20; ts->best_val = 1.25;
    ts->lr = 1e-3; ts->min_lr = 1e-4; ts->wd = 0.1; ts->clip = 1.0; ts->dropout = 0.1;
    ts->val_frac = 0.1; ts->beta1 = 0.9; ts->beta2 = 0.99; ts->eps = 1e-8; ts->head_dropout = 0.2;
    snprintf(ts->data_path, sizeof ts->data_path, "data/some file.txt");
}

void fix_init(Fix *f, const char *name)
{
    fix_setup(f, name, &TINY, 0);
}

void fix_init_merges(Fix *f, const char *name)
{
    Config cfg = TINY;
    cfg.V = 5 + TINY_NMERGES;
    fix_setup(f, name, &cfg, TINY_NMERGES);
}

void fix_init_gated(Fix *f, const char *name)
{
    Config cfg = TINY;
    cfg.gates = 1;
    fix_setup(f, name, &cfg, 0);
    f->ts.head_gates = 0.01;
}

void fix_init_routed(Fix *f, const char *name)
{
    Config cfg = TINY;
    cfg.route_k = 1;
    fix_setup(f, name, &cfg, 0);
    f->ts.routing_balance = 0.01;
}

void fix_free(Fix *f)
{
    model_free(&f->m);
    tok_free(&f->tok);
    free(f->adam_m);
    free(f->adam_v);
}

void fix_save(Fix *f, const char *path, int with_state)
{
    char err[600];
    int rc = ckpt_save(path, &f->m, &f->tok, with_state ? f->ts.step : 7,
                       with_state ? &f->ts : NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "ckpt_save: %s", err);
}

/* Writes b[0..n) over path in place (no O_TRUNC): ext4 flushes a file truncated
 * to zero and rewritten, which would make thousands of variants slow. */
void put_bytes(const char *path, const unsigned char *b, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(fd, 0, "cannot open %s", path);
    cr_assert_eq(pwrite(fd, b, n, 0), (ssize_t)n);
    cr_assert_eq(ftruncate(fd, (off_t)n), 0);
    close(fd);
}

unsigned char *slurp(const char *path, size_t *n)
{
    unsigned char *b = tu_read_file(path, n);
    cr_assert_not_null(b, "cannot read %s", path);
    return b;
}

void put_i32(unsigned char *b, size_t at, int32_t v) { memcpy(b + at, &v, 4); }
void put_u16(unsigned char *b, size_t at, uint16_t v) { memcpy(b + at, &v, 2); }
void put_i64(unsigned char *b, size_t at, int64_t v) { memcpy(b + at, &v, 8); }
void put_f64(unsigned char *b, size_t at, double v) { memcpy(b + at, &v, 8); }
void put_f32(unsigned char *b, size_t at, float v) { memcpy(b + at, &v, 4); }

void reseal(unsigned char *b, size_t n)
{
    uint64_t h = hash_fnv1a(HASH_FNV_INIT, b, n - 8);
    memcpy(b + n - 8, &h, 8);
}
