/* Checkpoint tests (trainer/ckpt): a save -> load round trip keeps every parameter
 * bit and the loss bits; a params-only file loads without a checksum; and the
 * loader refuses damaged or hostile files with a message naming the file instead
 * of crashing or allocating what the header claims: every truncation, random byte
 * flips, bad header fields, overflowing dimensions, non-finite values. Saving is
 * atomic: a crash between write and rename leaves the old file intact, and a
 * save into a missing directory leaves nothing behind. The byte offsets used
 * here are the ones docs/checkpoint.md documents. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trainer/ckpt.h"
#include "model/evaluate.h"
#include "util/hash.h"
#include "tests/testutil.h"

/* Format v1 layout (docs/checkpoint.md). */
#define HDR_BYTES 1024
#define VOCAB_AT 1024
#define PARAMS_AT 1280
#define STATE_INTS_AT 8      /* from the start of the state section */
#define STATE_DOUBLES_AT 264
#define STATE_PATH_AT 520
#define STATE_ADAM_AT 1032

/* Tiny on purpose (D != C/H to cover head_size): every truncation point is tried. */
static const Config TINY = {.V = 5, .T = 4, .L = 1, .H = 2, .C = 4, .D = 3};
static const unsigned char TINY_VOCAB[5] = {'\n', ' ', 'a', 'b', 'c'};

typedef struct {
    Model m;
    Tokenizer tok;
    TrainState ts;
    float *adam_m, *adam_v; /* the moments ts points at */
    char dir[256], path[400];
} Fix;

static void fix_init(Fix *f, const char *name)
{
    char err[300];
    memset(f, 0, sizeof *f);
    const char *d = tu_tmpdir(name);
    cr_assert_not_null(d);
    snprintf(f->dir, sizeof f->dir, "%s", d);
    snprintf(f->path, sizeof f->path, "%s/model.ckpt", f->dir);
    cr_assert_eq(model_init(&f->m, &TINY, err, sizeof err), 0, "%s", err);
    params_init(&f->m.table, f->m.params, 42);
    cr_assert_eq(tok_from_vocab(&f->tok, TINY_VOCAB, TINY.V, err, sizeof err), 0, "%s", err);
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
    ts->val_frac = 0.1; ts->beta1 = 0.9; ts->beta2 = 0.99; ts->eps = 1e-8;
    snprintf(ts->data_path, sizeof ts->data_path, "data/some file.txt");
}

static void fix_free(Fix *f)
{
    model_free(&f->m);
    free(f->adam_m);
    free(f->adam_v);
}

static void fix_save(Fix *f, const char *path, int with_state)
{
    char err[600];
    int rc = ckpt_save(path, &f->m, &f->tok, with_state ? f->ts.step : 7,
                       with_state ? &f->ts : NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "ckpt_save: %s", err);
}

/* Writes b[0..n) over path in place (no O_TRUNC): ext4 flushes a file truncated
 * to zero and rewritten, which would make thousands of variants slow. */
static void put_bytes(const char *path, const unsigned char *b, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(fd, 0, "cannot open %s", path);
    cr_assert_eq(pwrite(fd, b, n, 0), (ssize_t)n);
    cr_assert_eq(ftruncate(fd, (off_t)n), 0);
    close(fd);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    unsigned char *b = tu_read_file(path, n);
    cr_assert_not_null(b, "cannot read %s", path);
    return b;
}

static void put_i32(unsigned char *b, size_t at, int32_t v) { memcpy(b + at, &v, 4); }
static void put_i64(unsigned char *b, size_t at, int64_t v) { memcpy(b + at, &v, 8); }
static void put_f64(unsigned char *b, size_t at, double v) { memcpy(b + at, &v, 8); }
static void put_f32(unsigned char *b, size_t at, float v) { memcpy(b + at, &v, 4); }

/* Recomputes the trailing FNV-1a checksum of a file with training state, so a
 * test reaches the check after it instead of the checksum check. */
static void reseal(unsigned char *b, size_t n)
{
    uint64_t h = hash_fnv1a(HASH_FNV_INIT, b, n - 8);
    memcpy(b + n - 8, &h, 8);
}

/* ckpt_load must fail, with a message naming the file and containing `needle`,
 * and leave nothing to free; with_ts also asks for the settings, and loading the
 * same file into a Trainer must fail the same way, its buffers released. */
static void expect_refused(const char *path, int with_ts, const char *needle)
{
    Model m;
    Tokenizer tok;
    TrainState ts;
    int has = 7;
    long steps = -5;
    char err[2000] = "";
    int rc = ckpt_load(path, &m, &tok, &steps, with_ts ? &ts : NULL, &has, err, sizeof err);
    cr_assert_eq(rc, -1, "ckpt_load accepted a bad file (expected '%s')", needle);
    cr_assert(strstr(err, path), "message does not name the file: %s", err);
    cr_assert(strstr(err, needle), "expected '%s' in: %s", needle, err);
    cr_assert_null(m.params, "parameters left allocated on error");
    cr_assert_eq(has, 0);
    if (!with_ts)
        return;
    Trainer t;
    char terr[2000] = "";
    has = 7;
    rc = ckpt_load_trainer(path, &t, &tok, &ts, &has, terr, sizeof terr);
    cr_assert_eq(rc, -1, "ckpt_load_trainer accepted a bad file (expected '%s')", needle);
    cr_assert_str_eq(terr, err, "the two loaders disagree");
    cr_assert(t.model.params == NULL && t.grads.data == NULL && t.adam_m == NULL &&
              t.adam_v == NULL, "the trainer was left allocated on error");
    cr_assert_eq(has, 0);
}

static void write_and_refuse(const char *path, const unsigned char *b, size_t n, int with_ts,
                             const char *needle)
{
    put_bytes(path, b, n);
    expect_refused(path, with_ts, needle);
}

static double eval_loss(const Model *m)
{
    char err[300];
    Activations a;
    cr_assert_eq(acts_init(&a, &m->cfg, 2, m->cfg.T, 0, err, sizeof err), 0, "%s", err);
    uint8_t ids[23];
    Rng rng;
    rng_init(&rng, 3, 0);
    for (size_t i = 0; i < sizeof ids; i++)
        ids[i] = (uint8_t)rng_below(&rng, (uint64_t)m->cfg.V);
    double loss;
    cr_assert_eq(eval_sequence(m, &a, ids, sizeof ids, NULL, &loss, NULL, NULL, err, sizeof err),
                 0, "%s", err);
    acts_free(&a);
    return loss;
}

Test(ckpt, save_then_load_keeps_parameter_state_and_loss_bits)
{
    Fix f;
    fix_init(&f, "ckpt-roundtrip");
    fix_save(&f, f.path, 1);
    Model m;
    Tokenizer tok;
    TrainState ts;
    long steps;
    int has;
    char err[2000];
    cr_assert_eq(ckpt_load(f.path, &m, &tok, &steps, &ts, &has, err, sizeof err), 0, "%s", err);
    size_t P = f.m.table.total;
    cr_assert_eq(memcmp(&m.cfg, &f.m.cfg, sizeof m.cfg), 0);
    cr_assert_eq(m.table.total, P);
    cr_assert_eq(memcmp(m.params, f.m.params, P * sizeof(float)), 0, "parameter bits differ");
    cr_assert_eq(tok.V, f.tok.V);
    cr_assert_eq(memcmp(tok.vocab, f.tok.vocab, sizeof tok.vocab), 0);
    cr_assert_eq(memcmp(tok.id, f.tok.id, sizeof tok.id), 0);
    cr_assert_eq(has, 1);
    cr_assert_eq(steps, 30);
    cr_assert(ts.adam_m == NULL && ts.adam_v == NULL, "ckpt_load kept the moments");
    cr_assert(ts.step == 30 && ts.steps == 100 && ts.batch == 4 && ts.warmup == 10 &&
              ts.eval_every == 10 && ts.eval_iters == 2 && ts.save_every == 10 &&
              ts.best_step == 20 && ts.allow_binary == 0);
    cr_assert(ts.seed == f.ts.seed && ts.batch_rng == f.ts.batch_rng &&
              ts.data_size == 12345 && ts.data_hash == 99);
    double got[10] = {ts.lr, ts.min_lr, ts.wd, ts.clip, ts.dropout, ts.val_frac, ts.beta1,
                      ts.beta2, ts.eps, ts.best_val};
    double want[10] = {f.ts.lr, f.ts.min_lr, f.ts.wd, f.ts.clip, f.ts.dropout, f.ts.val_frac,
                       f.ts.beta1, f.ts.beta2, f.ts.eps, f.ts.best_val};
    cr_assert_eq(memcmp(got, want, sizeof got), 0, "a training setting changed in the round trip");
    cr_assert_str_eq(ts.data_path, "data/some file.txt");
    double a = eval_loss(&f.m), b = eval_loss(&m);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "loss %.17g before save, %.17g after load", a, b);
    model_free(&m);
    /* Into a trainer: the same parameters and settings, plus the moments and step. */
    Trainer t;
    TrainState ts2;
    has = 0;
    cr_assert_eq(ckpt_load_trainer(f.path, &t, &tok, &ts2, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has == 1 && t.step == 30 && ts2.step == 30 && ts2.batch_rng == f.ts.batch_rng);
    cr_assert_eq(memcmp(&t.model.cfg, &f.m.cfg, sizeof t.model.cfg), 0);
    cr_assert_eq(memcmp(t.model.params, f.m.params, P * sizeof(float)), 0, "parameter bits differ");
    cr_assert_eq(memcmp(t.adam_m, f.adam_m, P * sizeof(float)), 0, "first moment bits differ");
    cr_assert_eq(memcmp(t.adam_v, f.adam_v, P * sizeof(float)), 0, "second moment bits differ");
    trainer_free(&t);
    fix_free(&f);
}

Test(ckpt, params_only_file_has_no_checksum_and_loads)
{
    Fix f;
    fix_init(&f, "ckpt-paramsonly");
    fix_save(&f, f.path, 0);
    size_t n;
    unsigned char *b = slurp(f.path, &n);
    cr_assert_eq(n, PARAMS_AT + 4 * f.m.table.total, "params-only file has %zu bytes", n);
    int32_t flags;
    memcpy(&flags, b + 28, 4);
    cr_assert_eq(flags, 0);
    Model m;
    Tokenizer tok;
    TrainState ts;
    long steps;
    int has = 7;
    char err[2000];
    cr_assert_eq(ckpt_load(f.path, &m, &tok, &steps, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert_eq(has, 0);
    cr_assert_eq(steps, 7);
    cr_assert_eq(memcmp(m.params, f.m.params, n - PARAMS_AT), 0);
    model_free(&m);
    /* A trainer loaded from it starts its optimizer afresh: zero moments. */
    Trainer t;
    has = 7;
    cr_assert_eq(ckpt_load_trainer(f.path, &t, &tok, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has == 0 && t.step == 7);
    cr_assert_eq(memcmp(t.model.params, f.m.params, n - PARAMS_AT), 0);
    for (size_t i = 0; i < t.model.table.total; i++)
        cr_assert(t.adam_m[i] == 0.0f && t.adam_v[i] == 0.0f, "moment %zu not zero", i);
    trainer_free(&t);
    free(b);
    fix_free(&f);
}

Test(ckpt, file_with_state_loads_without_asking_for_state)
{
    Fix f;
    fix_init(&f, "ckpt-nostate");
    fix_save(&f, f.path, 1);
    Model m;
    Tokenizer tok;
    int has = 7;
    char err[2000];
    cr_assert_eq(ckpt_load(f.path, &m, &tok, NULL, NULL, &has, err, sizeof err), 0, "%s", err);
    cr_assert_eq(has, 0);
    cr_assert_eq(memcmp(m.params, f.m.params, f.m.table.total * sizeof(float)), 0);
    model_free(&m);
    fix_free(&f);
}

static void every_truncation_is_refused(int with_state)
{
    Fix f;
    fix_init(&f, with_state ? "ckpt-trunc-state" : "ckpt-trunc");
    fix_save(&f, f.path, with_state);
    size_t n;
    unsigned char *b = slurp(f.path, &n);
    char cut[500];
    snprintf(cut, sizeof cut, "%s/cut.ckpt", f.dir);
    put_bytes(cut, b, n);
    for (size_t len = n; len-- > 0;) {
        cr_assert_eq(truncate(cut, (off_t)len), 0);
        expect_refused(cut, 1, "truncated");
        if (len % 97 == 0)
            expect_refused(cut, 0, "truncated");
    }
    free(b);
    fix_free(&f);
}

Test(ckpt, every_truncation_with_state_is_refused) { every_truncation_is_refused(1); }
Test(ckpt, every_truncation_of_a_params_only_file_is_refused) { every_truncation_is_refused(0); }

Test(ckpt, trailing_bytes_are_refused)
{
    Fix f;
    fix_init(&f, "ckpt-trailing");
    fix_save(&f, f.path, 1);
    size_t n;
    unsigned char *b = slurp(f.path, &n);
    unsigned char *longer = calloc(n + 1, 1);
    memcpy(longer, b, n);
    write_and_refuse(f.path, longer, n + 1, 1, "trailing bytes");
    free(longer);
    free(b);
    fix_free(&f);
}

/* With state every flip must be caught (FNV-1a steps are bijections of the hash
 * for a fixed byte, so one changed byte always changes the sum). Without state
 * a flip in the parameters can load: then the values must be finite. */
static void random_flips(int with_state, int trials)
{
    Fix f;
    fix_init(&f, with_state ? "ckpt-flip-state" : "ckpt-flip");
    fix_save(&f, f.path, with_state);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n);
    char flip[500];
    snprintf(flip, sizeof flip, "%s/flip.ckpt", f.dir);
    Rng rng;
    rng_init(&rng, 2026, (uint64_t)with_state);
    int loaded = 0;
    for (int t = 0; t < trials; t++) {
        memcpy(b, good, n);
        int k = 1 + (int)rng_below(&rng, 3);
        for (int j = 0; j < k; j++)
            b[rng_below(&rng, n)] ^= (unsigned char)(1 + rng_below(&rng, 255));
        if (memcmp(b, good, n) == 0)
            continue;
        put_bytes(flip, b, n);
        Model m;
        Tokenizer tok;
        TrainState ts;
        char err[2000] = "";
        int rc = ckpt_load(flip, &m, &tok, NULL, t % 2 ? &ts : NULL, NULL, err, sizeof err);
        if (with_state)
            cr_assert_eq(rc, -1, "trial %d: a damaged file with state loaded", t);
        if (rc == 0) {
            loaded++;
            for (size_t i = 0; i < m.table.total; i++)
                cr_assert(isfinite(m.params[i]), "trial %d: loaded a non-finite value", t);
            model_free(&m);
        } else {
            cr_assert(strstr(err, flip), "trial %d: message does not name the file: %s", t, err);
        }
    }
    if (!with_state)
        cr_assert_gt(loaded, 0, "no flip in the parameters loaded: the test lost its reach");
    free(b);
    free(good);
    fix_free(&f);
}

Test(ckpt, random_byte_flips_in_a_file_with_state_are_all_caught) { random_flips(1, 3000); }
Test(ckpt, random_byte_flips_without_state_load_or_fail_cleanly) { random_flips(0, 3000); }

typedef struct {
    const char *what;
    int field[4];       /* header int indices to set; -1 ends */
    int32_t value[4];
    const char *needle;
} HeaderCase;

/* V=2 T=3 L=4 H=5 C=6 D=9 are header ints; 7 flags, 8 steps, 10..255 reserved. */
static const HeaderCase HEADER_CASES[] = {
    {"wrong magic", {0, -1}, {0x46464952}, "not a headcount checkpoint"},
    {"wrong version", {1, -1}, {2}, "version 2"},
    {"version 0", {1, -1}, {0}, "version 0"},
    {"unknown flag bit", {7, -1}, {2}, "unknown flags"},
    {"sign bit flag", {7, -1}, {INT32_MIN}, "unknown flags"},
    {"reserved 10", {10, -1}, {1}, "reserved"},
    {"reserved 255", {255, -1}, {-1}, "reserved"},
    {"negative steps", {8, -1}, {-1}, "negative step"},
    {"negative V", {2, -1}, {-1}, "bad dimensions"},
    {"V 257", {2, -1}, {257}, "bad dimensions"},
    {"zero T", {3, -1}, {0}, "bad dimensions"},
    {"negative L", {4, -1}, {-5}, "bad dimensions"},
    {"negative H", {5, -1}, {-2}, "bad dimensions"},
    {"negative C", {6, -1}, {INT32_MIN}, "bad dimensions"},
    {"zero D", {9, -1}, {0}, "bad dimensions"},
    {"C 2^31-1", {2, 6, 4, -1}, {256, INT32_MAX, 64}, "bad dimensions"},
    {"T 2^31-1", {3, -1}, {INT32_MAX}, "bad dimensions"},
    {"H*D overflow", {5, 9, -1}, {256, 4096}, "attention width"},
    {"P over 2^30", {2, 3, 4, 6}, {256, 4096, 64, 8192}, "parameters"},
};

Test(ckpt, bad_header_fields_are_refused)
{
    Fix f;
    fix_init(&f, "ckpt-header");
    fix_save(&f, f.path, 0);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n);
    for (size_t c = 0; c < sizeof HEADER_CASES / sizeof HEADER_CASES[0]; c++) {
        const HeaderCase *hc = &HEADER_CASES[c];
        memcpy(b, good, n);
        for (int j = 0; j < 4 && hc->field[j] >= 0; j++)
            put_i32(b, 4 * (size_t)hc->field[j], hc->value[j]);
        write_and_refuse(f.path, b, n, 1, hc->needle);
    }
    free(b);
    free(good);
    fix_free(&f);
}

/* A header within every limit that claims ~0.8 G parameters on a 2 KB file:
 * refused from the file size before anything is allocated. Outside the
 * sanitizers the address space is capped so an allocation would fail loudly. */
Test(ckpt, huge_valid_dimensions_are_refused_before_allocating)
{
    Fix f;
    fix_init(&f, "ckpt-huge");
    fix_save(&f, f.path, 0);
    size_t n;
    unsigned char *b = slurp(f.path, &n);
    int32_t dims[][2] = {{2, 256}, {3, 4096}, {4, 64}, {5, 16}, {6, 1024}, {9, 64}};
    for (size_t i = 0; i < 6; i++)
        put_i32(b, 4 * (size_t)dims[i][0], dims[i][1]);
    for (int i = 5; i < 256; i++)
        b[VOCAB_AT + i] = (unsigned char)i;
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit lim = {(rlim_t)1 << 30, (rlim_t)1 << 30};
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
#endif
    write_and_refuse(f.path, b, n, 1, "implies");
    b[28] = 1;
    write_and_refuse(f.path, b, n, 1, "with training state");
    free(b);
    fix_free(&f);
}

Test(ckpt, bad_vocabulary_is_refused)
{
    Fix f;
    fix_init(&f, "ckpt-vocab");
    fix_save(&f, f.path, 0);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n);
    memcpy(b, good, n);
    b[VOCAB_AT + 1] = b[VOCAB_AT + 2];
    write_and_refuse(f.path, b, n, 1, "not strictly ascending");
    memcpy(b, good, n);
    b[VOCAB_AT + 200] = 'x';
    write_and_refuse(f.path, b, n, 1, "padding");
    free(b);
    free(good);
    fix_free(&f);
}

Test(ckpt, non_finite_parameters_are_refused_naming_the_tensor)
{
    Fix f;
    fix_init(&f, "ckpt-nan");
    fix_save(&f, f.path, 0);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n);
    const ParamTable *t = &f.m.table;
    for (int k = 0; k < t->n; k++) {
        memcpy(b, good, n);
        size_t at = t->spec[k].offset + t->spec[k].count - 1;
        put_f32(b, PARAMS_AT + 4 * at, k % 2 ? NAN : -INFINITY);
        char needle[64];
        snprintf(needle, sizeof needle, "%s[%zu] is not finite", t->spec[k].name,
                 t->spec[k].count - 1);
        write_and_refuse(f.path, b, n, 1, needle);
    }
    free(b);
    free(good);
    fix_free(&f);
}

Test(ckpt, damaged_training_state_is_refused)
{
    Fix f;
    fix_init(&f, "ckpt-state");
    fix_save(&f, f.path, 1);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n);
    size_t P = f.m.table.total, S = PARAMS_AT + 4 * P;
    struct { const char *needle; size_t at; int kind; double v; } cases[] = {
        {"checksum mismatch", n - 1, 0, 0},
        {"bad marker", S + 7, 1, '2'},
        {"not terminated", S + STATE_PATH_AT + CKPT_PATH_MAX - 1, 1, 'x'},
        {"training setting 0 is not finite", S + STATE_DOUBLES_AT, 2, NAN},
        {"training setting 9 is not finite", S + STATE_DOUBLES_AT + 72, 2, INFINITY},
        {"impossible settings", S + STATE_INTS_AT + 16, 3, 0},        /* batch 0 */
        {"impossible settings", S + STATE_INTS_AT + 8, 3, 29},        /* steps < step */
        {"impossible settings", S + STATE_DOUBLES_AT + 32, 2, 1.0},   /* dropout 1 */
        {"impossible settings", S + STATE_DOUBLES_AT + 40, 2, -0.5},  /* val_frac < 0 */
        {"header says 30 steps", S + STATE_INTS_AT, 3, 31},
        {"Adam first moment", S + STATE_ADAM_AT + 4, 4, NAN},
        {"Adam second moment", S + STATE_ADAM_AT + 4 * P, 4, INFINITY},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(b, good, n);
        switch (cases[c].kind) {
        case 0: b[cases[c].at] ^= 0x10; break;
        case 1: b[cases[c].at] = (unsigned char)cases[c].v; break;
        case 2: put_f64(b, cases[c].at, cases[c].v); break;
        case 3: put_i64(b, cases[c].at, (int64_t)cases[c].v); break;
        case 4: put_f32(b, cases[c].at, (float)cases[c].v); break;
        }
        if (cases[c].kind != 0)
            reseal(b, n);
        write_and_refuse(f.path, b, n, c % 2, cases[c].needle);
    }
    free(b);
    free(good);
    fix_free(&f);
}

/* Values no flag of ./train could produce (trainer/limits.h), behind a valid
 * checksum: the reader holds them to the flags' ranges, naming the field. */
Test(ckpt, stored_settings_outside_the_flags_ranges_are_refused)
{
    Fix f;
    fix_init(&f, "ckpt-ranges");
    fix_save(&f, f.path, 1);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n);
    size_t P = f.m.table.total, S = PARAMS_AT + 4 * P, I = S + STATE_INTS_AT,
           R = S + STATE_DOUBLES_AT;
    struct { const char *needle; size_t at; int real; double v; } cases[] = {
        {"eval_iters 0 outside", I + 5 * 8, 0, 0},
        {"batch 65537 outside", I + 2 * 8, 0, 65537},
        {"steps 100000001 outside", I + 1 * 8, 0, 100000001},
        {"warmup -1 outside", I + 3 * 8, 0, -1},
        {"allow_binary 2 outside", I + 11 * 8, 0, 2},
        {"best_step 31 after step 30", I + 12 * 8, 0, 31},
        {"lr 0 outside", R + 0 * 8, 1, 0},
        {"lr 11 outside", R + 0 * 8, 1, 11},
        {"min_lr 0.01 above lr", R + 1 * 8, 1, 0.01},
        {"clip 1e+07 outside", R + 3 * 8, 1, 1e7},
        {"dropout 0.96 outside", R + 4 * 8, 1, 0.96},
        {"val_frac 0.95 outside", R + 5 * 8, 1, 0.95},
        {"beta1 1 outside", R + 6 * 8, 1, 1.0},
        {"eps 0 outside", R + 8 * 8, 1, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(b, good, n);
        if (cases[c].real)
            put_f64(b, cases[c].at, cases[c].v);
        else
            put_i64(b, cases[c].at, (int64_t)cases[c].v);
        reseal(b, n);
        write_and_refuse(f.path, b, n, 1, cases[c].needle);
    }
    free(b);
    free(good);
    fix_free(&f);
}

Test(ckpt, missing_file_and_directory_are_refused)
{
    Fix f;
    fix_init(&f, "ckpt-missing");
    expect_refused(f.path, 1, "no such checkpoint file");
    expect_refused(f.dir, 1, "is a directory");
    fix_free(&f);
}

Test(ckpt, saving_non_finite_values_is_refused_and_keeps_the_old_file)
{
    Fix f;
    fix_init(&f, "ckpt-savenan");
    fix_save(&f, f.path, 1);
    size_t n0, n1;
    unsigned char *before = slurp(f.path, &n0);
    char err[600], tmp[500];
    snprintf(tmp, sizeof tmp, "%s.tmp", f.path);
    f.m.params[3] = NAN;
    cr_assert_eq(ckpt_save(f.path, &f.m, &f.tok, 30, &f.ts, err, sizeof err), -1);
    cr_assert(strstr(err, "refusing to save"), "%s", err);
    f.m.params[3] = 0.5f;
    f.adam_v[1] = INFINITY;
    cr_assert_eq(ckpt_save(f.path, &f.m, &f.tok, 30, &f.ts, err, sizeof err), -1);
    cr_assert(strstr(err, "Adam second moment"), "%s", err);
    unsigned char *after = slurp(f.path, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "the old checkpoint changed");
    cr_assert_neq(access(tmp, F_OK), 0, "a temporary file was left behind");
    cr_assert_eq(tu_find_prefix(f.dir, "model.ckpt.tmp", NULL, 0), 0,
                 "a temporary file was left behind");
    free(before);
    free(after);
    fix_free(&f);
}

static void crash_before_rename(const char *tmp, void *ctx)
{
    (void)tmp;
    (void)ctx;
    abort();
}

/* The child saves new parameters over a good file with the crash hook set, so
 * it aborts after writing path.tmp and before the rename. */
Test(ckpt, a_save_interrupted_before_rename_leaves_the_old_file_intact)
{
    Fix f;
    fix_init(&f, "ckpt-crash");
    fix_save(&f, f.path, 1);
    size_t n0, n1;
    unsigned char *before = slurp(f.path, &n0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct rlimit nocore = {0, 0};
        setrlimit(RLIMIT_CORE, &nocore);

        f.ts.step = 31;
        for (size_t i = 0; i < f.m.table.total; i++)
            f.m.params[i] += 1.0f;
        char err[600];
        ckpt_save_hooked(f.path, &f.m, &f.tok, 31, &f.ts, crash_before_rename, NULL, err,
                         sizeof err);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
              "the crash hook did not abort the save (status 0x%x)", status);
    unsigned char *after = slurp(f.path, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "the old checkpoint changed");
    Model m;
    Tokenizer tok;
    long steps;
    char err[2000], tmp[500];
    cr_assert_eq(ckpt_load(f.path, &m, &tok, &steps, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(steps, 30);
    cr_assert_eq(memcmp(m.params, f.m.params, f.m.table.total * sizeof(float)), 0);
    model_free(&m);
    /* The complete new file waits in the save's own path.tmp.XXXXXX; nothing
     * removes it later (the program did not create it in this process), and a
     * writability check does not touch it. */
    cr_assert_eq(tu_find_prefix(f.dir, "model.ckpt.tmp.", tmp, sizeof tmp), 1,
                 "expected exactly one leftover model.ckpt.tmp.XXXXXX");
    cr_assert_eq(ckpt_load(tmp, &m, &tok, &steps, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(steps, 31);
    cr_assert_eq(m.params[0], f.m.params[0] + 1.0f);
    model_free(&m);
    cr_assert_eq(ckpt_check_writable(f.path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(access(tmp, F_OK), 0, "the leftover was deleted");
    cr_assert_eq(tu_find_prefix(f.dir, "model.ckpt.tmp.", NULL, 0), 1,
                 "the writability check left a file of its own");
    free(before);
    free(after);
    fix_free(&f);
}

Test(ckpt, saving_into_a_missing_directory_fails_and_leaves_nothing)
{
    Fix f;
    fix_init(&f, "ckpt-nodir");
    char path[600], missing[500], err[600];
    snprintf(missing, sizeof missing, "%s/no-such-dir", f.dir);
    snprintf(path, sizeof path, "%s/model.ckpt", missing);
    cr_assert_eq(ckpt_save(path, &f.m, &f.tok, f.ts.step, &f.ts, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot create") && strstr(err, missing), "%s", err);
    cr_assert_eq(ckpt_check_writable(path, err, sizeof err), -1);
    cr_assert(strstr(err, "directory does not exist"), "%s", err);
    cr_assert_neq(access(missing, F_OK), 0, "the missing directory was created");
    fix_free(&f);
}

Test(ckpt, saving_over_a_directory_fails_and_leaves_no_temporary)
{
    Fix f;
    fix_init(&f, "ckpt-overdir");
    char err[600], tmp[500];
    cr_assert_eq(mkdir(f.path, 0755), 0);
    cr_assert_eq(ckpt_save(f.path, &f.m, &f.tok, 1, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot rename"), "%s", err);
    snprintf(tmp, sizeof tmp, "%s.tmp", f.path);
    cr_assert_neq(access(tmp, F_OK), 0, "a temporary file was left behind");
    cr_assert_eq(tu_find_prefix(f.dir, "model.ckpt.tmp", NULL, 0), 0,
                 "a temporary file was left behind");
    cr_assert_eq(ckpt_check_writable(f.path, err, sizeof err), -1);
    cr_assert(strstr(err, "is a directory"), "%s", err);
    fix_free(&f);
}
