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
#include "tests/ckpt_fixture.h"
#include "tests/testutil.h"

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

/* Every test damages copies of one saved fixture (Damaged, below). Most are
 * tables, a row (Damage) per damaged file: its edits to a fresh copy, and what
 * the refusal must say. An edit's offset counts from a place in the file
 * (docs/checkpoint.md): its start, the parameters, the training state, the
 * state's ints, doubles or Adam moments, or its end. */
typedef enum { FROM_FILE, FROM_PARAMS, FROM_STATE, FROM_INTS, FROM_DOUBLES, FROM_ADAM_M,
               FROM_ADAM_V, FROM_END, FROM_COUNT } From;
/* What an edit writes at its offset: v as an int32, int64, double, float or
 * uint16, as one byte, or xor'ed into one byte; APPEND adds a zero byte at the
 * end instead. NONE (0) ends a row's edits. */
typedef enum { NONE, I32, I64, F64, F32, U16, BYTE, XOR, APPEND } Put;
typedef struct {
    Put put;
    From from;
    long at;
    double v;
} Edit;
/* A row's flags: TS asks the loaders for the settings too (and so also tries
 * ckpt_load_trainer); RESEAL recomputes the checksum after the edits, so the
 * check behind it (not the checksum) speaks. */
enum { TS = 1, RESEAL = 2 };
typedef struct {
    const char *needle;
    int flags;
    Edit edit[4];
} Damage;
/* Header int i (docs/checkpoint.md: 0 magic, 1 version, V=2 T=3 L=4 H=5 C=6 D=9,
 * 7 flags, 8 steps, 10 merges, 11..255 reserved) set to v. */
#define HDR(i, v) {I32, FROM_FILE, 4 * (i), (v)}
/* Vocabulary entry i's byte set to v; the uint16 at byte `at` of the merges set to v. */
#define VOCAB(i, v) {BYTE, FROM_FILE, VOCAB_AT + (i), (v)}
#define MERGE_U16(at, v) {U16, FROM_FILE, MERGES_AT + (at), (v)}

/* The fixture a test damages: TINY (format 1) or TINY_MERGES (format 2), saved
 * without or with its training state. */
typedef enum { PLAIN, PLAIN_STATE, MERGES, MERGES_STATE, ROUTED_STATE } Start;
#define START(merges, with_state) ((Start)(2 * !!(merges) + !!(with_state)))

typedef struct {
    Fix f;
    unsigned char *good, *b;   /* the saved file and the copy to damage (one byte more) */
    size_t n, from[FROM_COUNT];
} Damaged;

static void damaged_init(Damaged *d, const char *name, Start start)
{
    if (start == MERGES || start == MERGES_STATE)
        fix_init_merges(&d->f, name);
    else if (start == ROUTED_STATE)
        fix_init_routed(&d->f, name);
    else
        fix_init(&d->f, name);
    fix_save(&d->f, d->f.path, start != PLAIN && start != MERGES);
    d->good = slurp(d->f.path, &d->n);
    d->b = malloc(d->n + 1);
    cr_assert_not_null(d->b);
    size_t P = d->f.m.table.total, params = PARAMS_AT + 4 * (size_t)d->f.tok.nmerges,
           S = params + 4 * P;
    d->from[FROM_FILE] = 0;
    d->from[FROM_PARAMS] = params;
    d->from[FROM_STATE] = S;
    d->from[FROM_INTS] = S + STATE_INTS_AT;
    d->from[FROM_DOUBLES] = S + STATE_DOUBLES_AT;
    d->from[FROM_ADAM_M] = S + STATE_ADAM_AT;
    d->from[FROM_ADAM_V] = S + STATE_ADAM_AT + 4 * P;
    d->from[FROM_END] = d->n;
}

static void damaged_free(Damaged *d)
{
    free(d->b);
    free(d->good);
    fix_free(&d->f);
}

/* The saved file with c's edits must be refused with c's needle. */
static void damaged_refuse(Damaged *d, const Damage *c)
{
    unsigned char *b = d->b;
    size_t len = d->n;
    memcpy(b, d->good, len);
    for (int j = 0; j < 4 && c->edit[j].put != NONE; j++) {
        const Edit *e = &c->edit[j];
        size_t at = (size_t)((long)d->from[e->from] + e->at);
        switch (e->put) {
        case I32: put_i32(b, at, (int32_t)e->v); break;
        case I64: put_i64(b, at, (int64_t)e->v); break;
        case F64: put_f64(b, at, e->v); break;
        case F32: put_f32(b, at, (float)e->v); break;
        case U16: put_u16(b, at, (uint16_t)e->v); break;
        case BYTE: b[at] = (unsigned char)e->v; break;
        case XOR: b[at] ^= (unsigned char)e->v; break;
        case APPEND: b[len++] = 0; break;
        case NONE: break;
        }
    }
    if (c->flags & RESEAL)
        reseal(b, len);
    write_and_refuse(d->f.path, b, len, c->flags & TS, c->needle);
}

static void refuse_each(const char *name, Start start, const Damage *cases, size_t n)
{
    Damaged d;
    damaged_init(&d, name, start);
    for (size_t c = 0; c < n; c++)
        damaged_refuse(&d, &cases[c]);
    damaged_free(&d);
}

#define REFUSE_EACH(name, start, cases) \
    refuse_each(name, start, cases, sizeof cases / sizeof cases[0])

static void every_truncation_is_refused(int with_state, int merges)
{
    Damaged d;
    char name[64];
    snprintf(name, sizeof name, "ckpt-trunc%s%s", with_state ? "-state" : "", merges ? "-v2" : "");
    damaged_init(&d, name, START(merges, with_state));
    char cut[500];
    snprintf(cut, sizeof cut, "%s/cut.ckpt", d.f.dir);
    put_bytes(cut, d.good, d.n);
    for (size_t len = d.n; len-- > 0;) {
        cr_assert_eq(truncate(cut, (off_t)len), 0);
        expect_refused(cut, 1, "truncated");
        if (len % 97 == 0)
            expect_refused(cut, 0, "truncated");
    }
    damaged_free(&d);
}

Test(ckpt, every_truncation_with_state_is_refused) { every_truncation_is_refused(1, 0); }
Test(ckpt, every_truncation_of_a_params_only_file_is_refused) { every_truncation_is_refused(0, 0); }
Test(ckpt, every_truncation_of_a_file_with_merges_is_refused) { every_truncation_is_refused(1, 1); }

/* With state every flip must be caught (FNV-1a steps are bijections of the hash
 * for a fixed byte, so one changed byte always changes the sum). Without state
 * a flip in the parameters can load: then the values must be finite. */
static void random_flips(int with_state, int trials, int merges)
{
    Damaged d;
    char name[64];
    snprintf(name, sizeof name, "ckpt-flip%s%s", with_state ? "-state" : "", merges ? "-v2" : "");
    damaged_init(&d, name, START(merges, with_state));
    const unsigned char *good = d.good;
    unsigned char *b = d.b;
    size_t n = d.n;
    char flip[500];
    snprintf(flip, sizeof flip, "%s/flip.ckpt", d.f.dir);
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
    damaged_free(&d);
}

Test(ckpt, random_byte_flips_in_a_file_with_state_are_all_caught) { random_flips(1, 3000, 0); }
Test(ckpt, random_byte_flips_without_state_load_or_fail_cleanly) { random_flips(0, 3000, 0); }
Test(ckpt, random_byte_flips_in_a_file_with_merges_are_all_caught) { random_flips(1, 2000, 1); }
Test(ckpt, random_byte_flips_in_merges_without_state_load_or_fail_cleanly)
{
    random_flips(0, 2000, 1);
}

static const Damage TRAILING[] = {
    {"trailing bytes", TS, {{APPEND, FROM_END, 0, 0}}},
};

Test(ckpt, trailing_bytes_are_refused) { REFUSE_EACH("ckpt-trailing", PLAIN_STATE, TRAILING); }

/* Format 2: the merge count in the header against the file, merges naming
 * tokens that do not exist yet, a version 1 header over merges, and the
 * vocabulary before them; each resealed, so the check itself (not the
 * checksum) speaks. */
static const Damage BAD_MERGES[] = {
    {"merge 0 joins tokens 5 and 3", TS | RESEAL, {MERGE_U16(0, 5)}}, /* itself */
    {"merge 1 joins tokens 5 and 6", TS | RESEAL, {MERGE_U16(6, 6)}}, /* itself */
    {"merge 2 joins tokens 9 and 2", TS | RESEAL, {MERGE_U16(8, 9)}}, /* beyond V */
    {"only tokens below 7", TS | RESEAL, {MERGE_U16(10, 65535)}},
    {"D=3, 2 merges, with training state) implies", TS | RESEAL, {HDR(10, 2)}}, /* M = 2: size */
    {"0 merges in a version 2", TS | RESEAL, {HDR(10, 0)}},
    {"reserved: a version 1 checkpoint has no merges", TS | RESEAL, {HDR(1, 1)}},
    {"not strictly ascending at entry 4", TS | RESEAL, {VOCAB(4, 'a')}},
    {"padding byte 5", TS | RESEAL, {VOCAB(5, 'z')}},
};

Test(ckpt, bad_merges_are_refused) { REFUSE_EACH("ckpt-merges", MERGES_STATE, BAD_MERGES); }

static const Damage BAD_HEADERS[] = {
    {"not a headcount checkpoint", TS, {HDR(0, 0x46464952)}},     /* wrong magic */
    {"version 3", TS, {HDR(1, 3)}},
    {"0 merges in a version 2", TS, {HDR(1, 2)}},                 /* version 2, no merges */
    {"5 merges in a version 2", TS, {HDR(1, 2), HDR(10, 5)}},     /* version 2, all merges */
    {"version 0", TS, {HDR(1, 0)}},
    {"unknown flags", TS, {HDR(7, 8)}},                           /* an unknown flag bit */
    {"header field 11 is 0 with the routing flag set", TS, {HDR(7, 4)}}, /* routing, no K */
    {"header field 11 is 1 with the routing flag clear", TS, {HDR(11, 1)}}, /* K, no routing */
    {"implies", TS, {HDR(7, 2)}},                                 /* gates, but no gates */
    {"unknown flags", TS, {HDR(7, INT32_MIN)}},                   /* the sign bit */
    {"reserved", TS, {HDR(10, 1)}},
    {"reserved", TS, {HDR(255, -1)}},
    {"negative step", TS, {HDR(8, -1)}},
    {"bad dimensions", TS, {HDR(2, -1)}},                         /* negative V */
    {"bad dimensions", TS, {HDR(2, 257)}},
    {"bad dimensions", TS, {HDR(2, TOK_VOCAB_MAX + 1)}},          /* V over the limit */
    {"bad dimensions", TS, {HDR(3, 0)}},                          /* zero T */
    {"bad dimensions", TS, {HDR(4, -5)}},                         /* negative L */
    {"bad dimensions", TS, {HDR(5, -2)}},                         /* negative H */
    {"bad dimensions", TS, {HDR(6, INT32_MIN)}},                  /* negative C */
    {"bad dimensions", TS, {HDR(9, 0)}},                          /* zero D */
    {"bad dimensions", TS, {HDR(2, 256), HDR(6, INT32_MAX), HDR(4, 64)}}, /* C 2^31-1 */
    {"bad dimensions", TS, {HDR(3, INT32_MAX)}},                  /* T 2^31-1 */
    {"attention width", TS, {HDR(5, 256), HDR(9, 4096)}},         /* H*D overflows */
    {"parameters", TS, {HDR(2, 256), HDR(3, 4096), HDR(4, 64), HDR(6, 8192)}}, /* P over 2^30 */
};

Test(ckpt, bad_header_fields_are_refused) { REFUSE_EACH("ckpt-header", PLAIN, BAD_HEADERS); }

/* A routed model (fix_init_routed): its router travels like every tensor, so a
 * flipped byte of router.w or router.b breaks the checksum and a non-finite one
 * behind a valid checksum is named; its header's K must be 1..H with the flag. */
static const Damage BAD_ROUTER[] = {
    {"checksum mismatch", TS, {{XOR, FROM_STATE, -40 + 1, 0x01}}},      /* router.w[0][0] */
    {"checksum mismatch", TS, {{XOR, FROM_STATE, -4 + 2, 0x01}}},       /* router.b[0][1] */
    {"router.w", TS | RESEAL, {{F32, FROM_STATE, -40 + 4 * 5, NAN}}},   /* router.w[1][1] */
    {"router.b", TS | RESEAL, {{F32, FROM_STATE, -8, INFINITY}}},       /* router.b[0][0] */
    {"header field 11 is 0 with the routing flag set", TS, {HDR(11, 0)}},
    {"routed heads K must be in [0, 2], got 3", TS, {HDR(11, 3)}},
    {"header field 11 is 1 with the routing flag clear", TS, {HDR(7, 1)}},
};

Test(ckpt, a_damaged_router_is_refused) { REFUSE_EACH("ckpt-router", ROUTED_STATE, BAD_ROUTER); }

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

static const Damage BAD_VOCABULARY[] = {
    {"not strictly ascending", TS, {VOCAB(1, 'a')}}, /* entry 2's byte */
    {"padding", TS, {VOCAB(200, 'x')}},
};

Test(ckpt, bad_vocabulary_is_refused) { REFUSE_EACH("ckpt-vocab", PLAIN, BAD_VOCABULARY); }

/* The last value of each tensor in turn, alternately NaN and -inf. */
Test(ckpt, non_finite_parameters_are_refused_naming_the_tensor)
{
    Damaged d;
    damaged_init(&d, "ckpt-nan", PLAIN);
    const ParamTable *t = &d.f.m.table;
    for (int k = 0; k < t->n; k++) {
        size_t at = t->spec[k].offset + t->spec[k].count - 1;
        char needle[64];
        snprintf(needle, sizeof needle, "%s[%zu] is not finite", t->spec[k].name,
                 t->spec[k].count - 1);
        Damage c = {needle, TS, {{F32, FROM_PARAMS, 4 * (long)at, k % 2 ? NAN : -INFINITY}}};
        damaged_refuse(&d, &c);
    }
    damaged_free(&d);
}

/* The training state's marker, path, settings and moments, and the checksum
 * itself (the one edit not resealed); every other row also tries the Trainer. */
static const Damage BAD_STATES[] = {
    {"checksum mismatch", 0, {{XOR, FROM_END, -1, 0x10}}},
    {"bad marker", TS | RESEAL, {{BYTE, FROM_STATE, 7, '2'}}},
    {"not terminated", RESEAL, {{BYTE, FROM_STATE, STATE_PATH_AT + CKPT_PATH_MAX - 1, 'x'}}},
    {"training setting 0 is not finite", TS | RESEAL, {{F64, FROM_DOUBLES, 0, NAN}}},
    {"training setting 9 is not finite", RESEAL, {{F64, FROM_DOUBLES, 72, INFINITY}}},
    {"impossible settings", TS | RESEAL, {{I64, FROM_INTS, 16, 0}}},         /* batch 0 */
    {"impossible settings", RESEAL, {{I64, FROM_INTS, 8, 29}}},              /* steps < step */
    {"impossible settings", TS | RESEAL, {{F64, FROM_DOUBLES, 32, 1.0}}},    /* dropout 1 */
    {"impossible settings", RESEAL, {{F64, FROM_DOUBLES, 40, -0.5}}},        /* val_frac < 0 */
    {"header says 30 steps", TS | RESEAL, {{I64, FROM_INTS, 0, 31}}},
    {"Adam first moment", RESEAL, {{F32, FROM_ADAM_M, 4, NAN}}},
    {"Adam second moment", TS | RESEAL, {{F32, FROM_ADAM_V, 0, INFINITY}}},
};

Test(ckpt, damaged_training_state_is_refused)
{
    REFUSE_EACH("ckpt-state", PLAIN_STATE, BAD_STATES);
}

/* Values no flag of ./train could produce (trainer/limits.h), behind a valid
 * checksum: the reader holds them to the flags' ranges, naming the field. The
 * state's ints and doubles are 8 bytes each, in docs/checkpoint.md's order. */
#define INT_AT(i, v) {{I64, FROM_INTS, 8 * (i), (v)}}
#define REAL_AT(i, v) {{F64, FROM_DOUBLES, 8 * (i), (v)}}
static const Damage SETTINGS_OUT_OF_RANGE[] = {
    {"eval_iters 0 outside", TS | RESEAL, INT_AT(5, 0)},
    {"batch 65537 outside", TS | RESEAL, INT_AT(2, 65537)},
    {"steps 100000001 outside", TS | RESEAL, INT_AT(1, 100000001)},
    {"warmup -1 outside", TS | RESEAL, INT_AT(3, -1)},
    {"allow_binary 2 outside", TS | RESEAL, INT_AT(11, 2)},
    {"best_step 31 after step 30", TS | RESEAL, INT_AT(12, 31)},
    {"lr 0 outside", TS | RESEAL, REAL_AT(0, 0)},
    {"lr 11 outside", TS | RESEAL, REAL_AT(0, 11)},
    {"min_lr 0.01 above lr", TS | RESEAL, REAL_AT(1, 0.01)},
    {"clip 1e+07 outside", TS | RESEAL, REAL_AT(3, 1e7)},
    {"dropout 0.96 outside", TS | RESEAL, REAL_AT(4, 0.96)},
    {"head_dropout 1 outside", TS | RESEAL, REAL_AT(10, 1.0)},
    {"head_dropout -0.1 outside", TS | RESEAL, REAL_AT(10, -0.1)},
    {"val_frac 0.95 outside", TS | RESEAL, REAL_AT(5, 0.95)},
    {"beta1 1 outside", TS | RESEAL, REAL_AT(6, 1.0)},
    {"eps 0 outside", TS | RESEAL, REAL_AT(8, 0)},
};

Test(ckpt, stored_settings_outside_the_flags_ranges_are_refused)
{
    REFUSE_EACH("ckpt-ranges", PLAIN_STATE, SETTINGS_OUT_OF_RANGE);
}

Test(ckpt, missing_file_and_directory_are_refused)
{
    Fix f;
    fix_init(&f, "ckpt-missing");
    expect_refused(f.path, 1, "no such checkpoint file");
    expect_refused(f.dir, 1, "is a directory");
    fix_free(&f);
}
