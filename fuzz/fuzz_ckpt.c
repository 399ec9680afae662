/* fuzz_ckpt: a libFuzzer target for the checkpoint reader (trainer/ckpt.c).
 *
 * Each input is written to an in-memory file (memfd; a temporary file where
 * memfd is missing) and loaded with ckpt_load twice: asking for the training
 * state and not. The sanitizers catch memory errors and undefined behaviour;
 * the target itself traps when a load breaks the reader's contract: a failure
 * without a message or with something left allocated, or a success with a
 * non-finite value, a parameter count that disagrees with the dimensions, or
 * state claimed without its moments. scripts/fuzz.sh builds and runs it with
 * -malloc_limit_mb, so an allocation sized from a header rather than from the
 * file's real length is reported too.
 *
 * A mutated file almost never carries a valid checksum, so most inputs would stop
 * there. Every input with the training-state flag is therefore also loaded a
 * second time with its checksum recomputed (FNV-1a over all bytes but the last
 * 8), which takes the fuzzer into the checks that come after the checksum
 * (finite moments, step agreement, the settings' ranges). The first time such a
 * check rejects an input, the target says so on stderr, once per kind, which is
 * how a run shows it got there. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trainer/ckpt.h"
#include "util/hash.h"

static int fd = -1;
static char path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
#ifdef MFD_CLOEXEC
    fd = memfd_create("fuzz_ckpt", MFD_CLOEXEC);
    if (fd >= 0) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        return 0;
    }
#endif
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/fuzz_ckpt.XXXXXX", dir && *dir ? dir : "/tmp");
    fd = mkstemp(path);
    if (fd < 0) {
        perror("fuzz_ckpt: cannot create a scratch file");
        abort();
    }
    return 0;
}

/* Checks one load's outcome; traps on a broken contract. With t (a load into a
 * trainer, settings asked for), its moments must be there and finite too. */
static void check(int rc, const Model *m, const Trainer *t, int has, const char *err)
{
    if (rc != 0) {
        if (err[0] == '\0' || m->params != NULL || has != 0 ||
            (t && (t->adam_m || t->adam_v || t->grads.data)))
            __builtin_trap();
        return;
    }
    if (m->table.total != config_param_count(&m->cfg))
        __builtin_trap();
    for (size_t i = 0; i < m->table.total; i++)
        if (!isfinite(m->params[i]))
            __builtin_trap();
    if (has && !t)
        __builtin_trap();
    if (t)
        for (size_t i = 0; i < m->table.total; i++)
            if (!isfinite(t->adam_m[i]) || !isfinite(t->adam_v[i]))
                __builtin_trap();
}

/* The checks after the checksum, by a word of their message; each is announced
 * the first time it rejects an input. */
static const char *const LATE_CHECKS[] = {"impossible settings", "Adam first moment",
                                          "Adam second moment", "header says"};
static int late_seen[sizeof LATE_CHECKS / sizeof LATE_CHECKS[0]];
static int late_passed;

static void note_late(int rc, const char *err)
{
    if (rc == 0 && !late_passed) {
        late_passed = 1;
        fprintf(stderr, "fuzz_ckpt: an input with a recomputed checksum loaded fully\n");
    }
    for (size_t k = 0; rc != 0 && k < sizeof LATE_CHECKS / sizeof LATE_CHECKS[0]; k++)
        if (strstr(err, LATE_CHECKS[k]) && !late_seen[k]) {
            late_seen[k] = 1;
            fprintf(stderr, "fuzz_ckpt: past the checksum, rejected by: %s\n", err);
        }
}

static void load_all(const uint8_t *data, size_t size, int fixed)
{
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    for (int want_state = 1; want_state >= 0; want_state--) {
        Model m;
        Trainer t;
        Tokenizer tok;
        TrainState ts;
        long steps = -1;
        int has = -1, rc;
        char err[2000] = "";
        if (want_state)
            rc = ckpt_load_trainer(path, &t, &tok, &ts, &has, err, sizeof err);
        else
            rc = ckpt_load(path, &m, &tok, &steps, NULL, &has, err, sizeof err);
        check(rc, want_state ? &t.model : &m, want_state ? &t : NULL, has, err);
        if (fixed && want_state)
            note_late(rc, err);
        if (rc == 0)
            tok_free(&tok);
        if (rc == 0 && want_state)
            trainer_free(&t);
        else if (rc == 0)
            model_free(&m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_all(data, size, 0);
    /* Header (1024) + vocabulary (256) + the state's trailing checksum (8), and
     * flag bit 0 (header int 7, little-endian) set. */
    if (size < 1288 || !(data[28] & 1))
        return 0;
    uint8_t *copy = malloc(size);
    if (!copy)
        abort();
    memcpy(copy, data, size);
    uint64_t sum = hash_fnv1a(HASH_FNV_INIT, copy, size - 8);
    memcpy(copy + size - 8, &sum, 8);
    if (memcmp(copy, data, size) != 0)
        load_all(copy, size, 1);
    free(copy);
    return 0;
}
