/* Checkpoint tests (trainer/ckpt): a save -> load round trip keeps every parameter
 * bit and the loss bits, into a model or into a Trainer (its moments and step
 * too); a params-only file loads without a checksum. Saving is atomic: a crash
 * between write and rename leaves the old file intact, and a save into a
 * missing directory leaves nothing behind. The refusals of damaged or hostile
 * files are in test_ckpt_damage.c; the fixture is tests/ckpt_fixture.h. */
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

static double eval_loss(const Model *m)
{
    char err[300];
    Activations a;
    cr_assert_eq(acts_init(&a, &m->cfg, 2, m->cfg.T, 0, err, sizeof err), 0, "%s", err);
    TokenId ids[23];
    Rng rng;
    rng_init(&rng, 3, 0);
    for (size_t i = 0; i < 23; i++)
        ids[i] = (TokenId)rng_below(&rng, (uint64_t)m->cfg.V);
    double loss;
    cr_assert_eq(eval_sequence(m, &a, ids, 23, NULL, &loss, NULL, NULL, err, sizeof err),
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
    cr_assert_eq(memcmp(tok.bytes, f.tok.bytes, sizeof tok.bytes), 0);
    cr_assert_eq(memcmp(tok.id, f.tok.id, sizeof tok.id), 0);
    cr_assert_eq(has, 1);
    cr_assert_eq(steps, 30);
    cr_assert(ts.adam_m == NULL && ts.adam_v == NULL, "ckpt_load kept the moments");
    cr_assert(ts.step == 30 && ts.steps == 100 && ts.batch == 4 && ts.warmup == 10 &&
              ts.eval_every == 10 && ts.eval_iters == 2 && ts.save_every == 10 &&
              ts.best_step == 20 && ts.allow_binary == 0);
    cr_assert(ts.seed == f.ts.seed && ts.batch_rng == f.ts.batch_rng &&
              ts.data_size == 12345 && ts.data_hash == 99);
    double got[11] = {ts.lr, ts.min_lr, ts.wd, ts.clip, ts.dropout, ts.val_frac, ts.beta1,
                      ts.beta2, ts.eps, ts.best_val, ts.head_dropout};
    double want[11] = {f.ts.lr, f.ts.min_lr, f.ts.wd, f.ts.clip, f.ts.dropout, f.ts.val_frac,
                       f.ts.beta1, f.ts.beta2, f.ts.eps, f.ts.best_val, f.ts.head_dropout};
    cr_assert_eq(memcmp(got, want, sizeof got), 0, "a training setting changed in the round trip");
    cr_assert_str_eq(ts.data_path, "data/some file.txt");
    double a = eval_loss(&f.m), b = eval_loss(&m);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "loss %.17g before save, %.17g after load", a, b);
    model_free(&m);
    tok_free(&tok);
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
    tok_free(&tok);
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
    tok_free(&tok);
    /* A trainer loaded from it starts its optimizer afresh: zero moments. */
    Trainer t;
    has = 7;
    cr_assert_eq(ckpt_load_trainer(f.path, &t, &tok, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has == 0 && t.step == 7);
    cr_assert_eq(memcmp(t.model.params, f.m.params, n - PARAMS_AT), 0);
    for (size_t i = 0; i < t.model.table.total; i++)
        cr_assert(t.adam_m[i] == 0.0f && t.adam_v[i] == 0.0f, "moment %zu not zero", i);
    trainer_free(&t);
    tok_free(&tok);
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
    tok_free(&tok);
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
    tok_free(&tok);
    /* The complete new file waits in the save's own path.tmp.XXXXXX; nothing
     * removes it later (the program did not create it in this process), and a
     * writability check does not touch it. */
    cr_assert_eq(tu_find_prefix(f.dir, "model.ckpt.tmp.", tmp, sizeof tmp), 1,
                 "expected exactly one leftover model.ckpt.tmp.XXXXXX");
    cr_assert_eq(ckpt_load(tmp, &m, &tok, &steps, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(steps, 31);
    cr_assert_eq(m.params[0], f.m.params[0] + 1.0f);
    model_free(&m);
    tok_free(&tok);
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

/* A tokenizer with merges makes a version 2 file laid out as docs/checkpoint.md
 * says (merge count in header int 10, the merges as uint16 pairs after the byte
 * alphabet, everything after shifted by 4M); it loads back with the same
 * tokenizer, parameters and loss bits, with and without training state, and
 * saving what was loaded gives the same bytes. */
Test(ckpt, a_file_with_merges_is_version_2_and_round_trips_bit_for_bit)
{
    Fix f;
    fix_init_merges(&f, "ckpt-merges-roundtrip");
    size_t P = f.m.table.total, M = TINY_NMERGES;
    for (int with_state = 0; with_state <= 1; with_state++) {
        fix_save(&f, f.path, with_state);
        size_t n;
        unsigned char *b = slurp(f.path, &n);
        cr_assert_eq(n, PARAMS_AT + 4 * M + 4 * P + (with_state ? 1040 + 8 * P : 0));
        int32_t version, V, merges;
        memcpy(&version, b + 4, 4);
        memcpy(&V, b + 8, 4);
        memcpy(&merges, b + 40, 4);
        cr_assert(version == 2 && V == 8 && merges == 3, "version %d V %d M %d", version, V,
                  merges);
        cr_assert_eq(memcmp(b + VOCAB_AT, TINY_VOCAB, 5), 0);
        for (size_t k = 0; k < M; k++) {
            uint16_t lr[2];
            memcpy(lr, b + MERGES_AT + 4 * k, 4);
            cr_assert(lr[0] == TINY_MERGES[k].left && lr[1] == TINY_MERGES[k].right,
                      "merge %zu stored as (%u, %u)", k, lr[0], lr[1]);
        }
        cr_assert_eq(memcmp(b + PARAMS_AT + 4 * M, f.m.params, 4 * P), 0,
                     "the parameters do not follow the merges");
        Model m;
        Tokenizer tok;
        TrainState ts;
        long steps;
        int has;
        char err[2000], again[500];
        cr_assert_eq(ckpt_load(f.path, &m, &tok, &steps, &ts, &has, err, sizeof err), 0, "%s",
                     err);
        cr_assert_eq(has, with_state);
        cr_assert(tok.V == 8 && tok.nbytes == 5 && tok.nmerges == 3);
        cr_assert_eq(memcmp(tok.merges, TINY_MERGES, sizeof TINY_MERGES), 0);
        size_t len;
        const unsigned char *p = tok_piece(&tok, 6, &len);
        cr_assert(len == 3 && memcmp(p, "abc", 3) == 0, "token 6 is not \"abc\"");
        cr_assert_eq(memcmp(m.params, f.m.params, 4 * P), 0, "parameter bits differ");
        double x = eval_loss(&f.m), y = eval_loss(&m);
        cr_assert_eq(memcmp(&x, &y, sizeof x), 0, "loss %.17g before save, %.17g after", x, y);
        snprintf(again, sizeof again, "%s/again.ckpt", f.dir);
        cr_assert_eq(ckpt_save(again, &m, &tok, steps, with_state ? &f.ts : NULL, err,
                               sizeof err), 0, "%s", err);
        size_t n2;
        unsigned char *b2 = slurp(again, &n2);
        cr_assert(n2 == n && memcmp(b, b2, n) == 0, "saving the loaded model changed bytes");
        free(b2);
        free(b);
        model_free(&m);
        tok_free(&tok);
    }
    fix_free(&f);
}

/* A model with head gates: header flag bit 1, gates.log_alpha (L x H floats)
 * after lnf.b, the same parameter bits and loss after a load; a training state
 * whose head_gates disagrees with the header is refused, either way round. */
Test(ckpt, a_file_with_head_gates_flags_them_and_round_trips_bit_for_bit)
{
    Fix f;
    fix_init_gated(&f, "ckpt-gates-roundtrip");
    size_t P = f.m.table.total, G = (size_t)TINY.L * TINY.H;
    cr_assert_eq(P, config_param_count(&TINY) + G);
    for (size_t i = 0; i < G; i++)
        f.m.w.log_alpha[i] = 0.25f * (float)i - 1.0f;
    for (int with_state = 0; with_state <= 1; with_state++) {
        fix_save(&f, f.path, with_state);
        size_t n;
        unsigned char *b = slurp(f.path, &n);
        cr_assert_eq(n, PARAMS_AT + 4 * P + (with_state ? 1040 + 8 * P : 0));
        int32_t flags;
        memcpy(&flags, b + 28, 4);
        cr_assert_eq(flags, CKPT_FLAG_GATES | (with_state ? CKPT_FLAG_TRAIN_STATE : 0));
        cr_assert_eq(memcmp(b + PARAMS_AT + 4 * (P - G), f.m.w.log_alpha, 4 * G), 0,
                     "log_alpha is not the last tensor");
        Model m;
        Tokenizer tok;
        char err[2000];
        cr_assert_eq(ckpt_load(f.path, &m, &tok, NULL, NULL, NULL, err, sizeof err), 0, "%s",
                     err);
        cr_assert(m.cfg.gates && m.w.log_alpha);
        cr_assert_eq(memcmp(m.params, f.m.params, 4 * P), 0, "parameter bits differ");
        double x = eval_loss(&f.m), y = eval_loss(&m);
        cr_assert_eq(memcmp(&x, &y, sizeof x), 0, "loss %.17g before save, %.17g after", x, y);
        free(b);
        model_free(&m);
        tok_free(&tok);
    }
    char err[2000];
    Model m;
    Tokenizer tok;
    f.ts.head_gates = 0.0;
    fix_save(&f, f.path, 1);
    cr_assert_neq(ckpt_load(f.path, &m, &tok, NULL, NULL, NULL, err, sizeof err), 0);
    cr_assert(strstr(err, "head gates 0, but the header says the model has gates"), "%s", err);
    fix_free(&f);
    Fix plain;
    fix_init(&plain, "ckpt-gates-none");
    plain.ts.head_gates = 0.5;
    fix_save(&plain, plain.path, 1);
    cr_assert_neq(ckpt_load(plain.path, &m, &tok, NULL, NULL, NULL, err, sizeof err), 0);
    cr_assert(strstr(err, "head gates 0.5, but the header says the model has none"), "%s", err);
    fix_free(&plain);
}
