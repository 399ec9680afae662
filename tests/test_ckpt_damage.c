/* Checkpoint tests (trainer/ckpt), the loader's refusals: damaged or hostile
 * files get a message naming the file instead of a crash or an allocation of
 * what the header claims, from ckpt_load and ckpt_load_trainer alike: every
 * truncation, trailing bytes, random byte flips, bad header fields, overflowing
 * dimensions, a bad vocabulary, non-finite values, a damaged training state,
 * settings outside the flags' ranges, a missing file. The byte offsets used here
 * are the ones docs/checkpoint.md documents (tests/ckpt_fixture.h). */
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
#include "tests/ckpt_fixture.h"
#include "tests/testutil.h"

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

static void every_truncation_is_refused(int with_state, int merges)
{
    Fix f;
    if (merges)
        fix_init_merges(&f, with_state ? "ckpt-trunc-state-v2" : "ckpt-trunc-v2");
    else
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

Test(ckpt, every_truncation_with_state_is_refused) { every_truncation_is_refused(1, 0); }
Test(ckpt, every_truncation_of_a_params_only_file_is_refused) { every_truncation_is_refused(0, 0); }
Test(ckpt, every_truncation_of_a_file_with_merges_is_refused) { every_truncation_is_refused(1, 1); }

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
static void random_flips(int with_state, int trials, int merges)
{
    Fix f;
    if (merges)
        fix_init_merges(&f, with_state ? "ckpt-flip-state-v2" : "ckpt-flip-v2");
    else
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
            cr_assert_eq(tok.V, m.cfg.V, "trial %d: the tokenizer and the model disagree", t);
            model_free(&m);
            tok_free(&tok);
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

Test(ckpt, random_byte_flips_in_a_file_with_state_are_all_caught) { random_flips(1, 3000, 0); }
Test(ckpt, random_byte_flips_without_state_load_or_fail_cleanly) { random_flips(0, 3000, 0); }
Test(ckpt, random_byte_flips_in_a_file_with_merges_are_all_caught) { random_flips(1, 2000, 1); }
Test(ckpt, random_byte_flips_in_merges_without_state_load_or_fail_cleanly)
{
    random_flips(0, 2000, 1);
}

/* Format 2: the merge count in the header against the file, merges naming
 * tokens that do not exist yet, and a version 1 header over merges; each
 * refused with the file resealed, so the check itself (not the checksum)
 * speaks. */
Test(ckpt, bad_merges_are_refused)
{
    Fix f;
    fix_init_merges(&f, "ckpt-merges");
    fix_save(&f, f.path, 1);
    size_t n;
    unsigned char *good = slurp(f.path, &n);
    unsigned char *b = malloc(n);
    struct {
        size_t at;      /* a uint16 of the merges, or a header int (at < 1024) */
        int value;
        const char *needle;
    } cases[] = {
        {MERGES_AT + 0, 5, "merge 0 joins tokens 5 and 3"},        /* itself */
        {MERGES_AT + 6, 6, "merge 1 joins tokens 5 and 6"},        /* itself */
        {MERGES_AT + 8, 9, "merge 2 joins tokens 9 and 2"},        /* beyond V */
        {MERGES_AT + 10, 65535, "only tokens below 7"},
        {4 * 10, 2, "D=3, 2 merges, with training state) implies"}, /* M = 2: size */
        {4 * 10, 0, "0 merges in a version 2"},
        {4 * 1, 1, "reserved: a version 1 checkpoint has no merges"},
        {VOCAB_AT + 4, 'a', "not strictly ascending at entry 4"},
        {VOCAB_AT + 5, 'z', "padding byte 5"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(b, good, n);
        if (cases[c].at < HDR_BYTES)
            put_i32(b, cases[c].at, cases[c].value);
        else if (cases[c].at < MERGES_AT)
            b[cases[c].at] = (unsigned char)cases[c].value;
        else {
            uint16_t v = (uint16_t)cases[c].value;
            memcpy(b + cases[c].at, &v, 2);
        }
        reseal(b, n);
        write_and_refuse(f.path, b, n, 1, cases[c].needle);
    }
    free(b);
    free(good);
    fix_free(&f);
}

typedef struct {
    const char *what;
    int field[4];       /* header int indices to set; -1 ends */
    int32_t value[4];
    const char *needle;
} HeaderCase;

/* V=2 T=3 L=4 H=5 C=6 D=9 are header ints; 7 flags, 8 steps, 10 merges (0 in
 * version 1), 11..255 reserved. */
static const HeaderCase HEADER_CASES[] = {
    {"wrong magic", {0, -1}, {0x46464952}, "not a headcount checkpoint"},
    {"wrong version", {1, -1}, {3}, "version 3"},
    {"version 2 without merges", {1, -1}, {2}, "0 merges in a version 2"},
    {"version 2, all merges", {1, 10, -1}, {2, 5}, "5 merges in a version 2"},
    {"version 0", {1, -1}, {0}, "version 0"},
    {"unknown flag bit", {7, -1}, {4}, "unknown flags"},
    {"gates flag on a file without gates", {7, -1}, {2}, "implies"},
    {"sign bit flag", {7, -1}, {INT32_MIN}, "unknown flags"},
    {"reserved 10", {10, -1}, {1}, "reserved"},
    {"reserved 255", {255, -1}, {-1}, "reserved"},
    {"negative steps", {8, -1}, {-1}, "negative step"},
    {"negative V", {2, -1}, {-1}, "bad dimensions"},
    {"V 257", {2, -1}, {257}, "bad dimensions"},
    {"V over the limit", {2, -1}, {TOK_VOCAB_MAX + 1}, "bad dimensions"},
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
        {"head_dropout 1 outside", R + 10 * 8, 1, 1.0},
        {"head_dropout -0.1 outside", R + 10 * 8, 1, -0.1},
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
