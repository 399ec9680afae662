/* fuzz_ckpt: a libFuzzer target for the checkpoint reader (model/ckpt.c).
 *
 * Each input is written to an in-memory file (memfd; a temporary file where
 * memfd is missing) and loaded with ckpt_load twice: asking for the training
 * state and not. The sanitizers catch memory errors and undefined behaviour;
 * the target itself traps when a load breaks the reader's contract: a failure
 * without a message or with something left allocated, or a success with a
 * non-finite value, a parameter count that disagrees with the dimensions, or
 * state claimed without its moments. scripts/fuzz.sh builds and runs it with
 * -malloc_limit_mb, so an allocation sized from a header rather than from the
 * file's real length is reported too. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/ckpt.h"

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

/* Checks one load's outcome; traps on a broken contract. */
static void check(int rc, const Model *m, const TrainState *ts, int want_state, int has,
                  const char *err)
{
    if (rc != 0) {
        if (err[0] == '\0' || m->params != NULL || has != 0 ||
            (want_state && (ts->adam_m || ts->adam_v)))
            __builtin_trap();
        return;
    }
    if (m->table.total != config_param_count(&m->cfg))
        __builtin_trap();
    for (size_t i = 0; i < m->table.total; i++)
        if (!isfinite(m->params[i]))
            __builtin_trap();
    if (has && (!want_state || !ts->adam_m || !ts->adam_v))
        __builtin_trap();
    if (has)
        for (size_t i = 0; i < m->table.total; i++)
            if (!isfinite(ts->adam_m[i]) || !isfinite(ts->adam_v[i]))
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    for (int want_state = 1; want_state >= 0; want_state--) {
        Model m;
        Tokenizer tok;
        TrainState ts;
        long steps = -1;
        int has = -1;
        char err[2000] = "";
        int rc = ckpt_load(path, &m, &tok, &steps, want_state ? &ts : NULL, &has, err,
                           sizeof err);
        check(rc, &m, &ts, want_state, has, err);
        if (rc == 0) {
            if (has)
                ckpt_state_free(&ts);
            model_free(&m);
        }
    }
    return 0;
}
