/* ckpt: checkpoint writing and validated reading (see ckpt.h, docs/checkpoint.md).
 * The format is little-endian; this code assumes a little-endian host. */
#include "trainer/ckpt.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/errbuf.h"
#include "util/hash.h"
#include "util/sibling.h"
#include "trainer/limits.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ckpt.c writes the host's byte order and the format is little-endian"
#endif

#define STATE_MAGIC "HCSTATE1"
#define STATE_INTS 32
#define STATE_DOUBLES 32

/* The training state's two arrays (docs/checkpoint.md): the stored settings
 * take the slots of CKPT_STATE_SETTINGS, each with the range a reader accepts
 * (the values ./train's flags can give: trainer/limits.h); the run's position
 * takes the slots below. Writing, reading and checking are generated from these
 * lists. Slots nobody uses are written as zero and ignored. Two fields are
 * coded: accum is stored as 0 when it is 1 (files from before the field hold 0),
 * and best_val as 0 while there is no best (best_step -1). */
#define CKPT_STATE_SETTINGS(INT, REAL, SEED)                                               \
    INT(6, save_every, 0, LIMIT_STEPS_MAX)                                                \
    INT(11, allow_binary, 0, 1)                                                           \
    INT(14, vocab, 0, LIMIT_VOCAB_MAX)                                                    \
    INT(2, batch, 1, LIMIT_BATCH_MAX)                                                     \
    INT(1, steps, 1, LIMIT_STEPS_MAX)                                                     \
    REAL(0, lr, LIMIT_LR_MIN, LIMIT_LR_MAX)                                               \
    REAL(1, min_lr, 0, LIMIT_LR_MAX)                                                      \
    INT(3, warmup, 0, LIMIT_STEPS_MAX)                                                    \
    REAL(2, wd, 0, LIMIT_LR_MAX)                                                          \
    INT(16, pos_decay, 0, 1)                                                              \
    REAL(6, beta1, 0, LIMIT_BETA_MAX)                                                     \
    REAL(7, beta2, 0, LIMIT_BETA_MAX)                                                     \
    REAL(8, eps, LIMIT_EPS_MIN, 1)                                                        \
    REAL(3, clip, 0, LIMIT_CLIP_MAX)                                                      \
    REAL(4, dropout, 0, LIMIT_DROPOUT_MAX)                                                \
    REAL(10, head_dropout, 0, LIMIT_DROPOUT_MAX)                                          \
    REAL(11, head_gates, 0, LIMIT_HEAD_GATES_MAX)                                         \
    REAL(12, routing_balance, 0, LIMIT_ROUTE_BALANCE_MAX)                                   \
    INT(15, precision, 0, PRECISION_COUNT - 1)                                            \
    SEED(7, seed)                                                                         \
    REAL(5, val_frac, 0, LIMIT_VAL_FRAC_MAX)                                              \
    INT(4, eval_every, 0, LIMIT_STEPS_MAX)                                                \
    INT(5, eval_iters, 1, LIMIT_EVAL_ITERS_MAX)
#define STATE_INT_SLOTS(X)                                                                 \
    X(0, step, 0, LIMIT_STEPS_MAX)                                                        \
    X(8, batch_rng, INT64_MIN, INT64_MAX)                                                 \
    X(9, data_size, 0, INT64_MAX)                                                         \
    X(10, data_hash, INT64_MIN, INT64_MAX)                                                \
    X(12, best_step, -1, LIMIT_STEPS_MAX)                                                 \
    X(13, accum, 0, LIMIT_ACCUM_MAX)
#define STATE_DOUBLE_SLOTS(X)                                                              \
    X(9, best_val, -HUGE_VAL, HUGE_VAL)

#define TABLE_INT(i, f, lo, hi) {#f, 0, i, lo, hi},
#define TABLE_REAL(i, f, lo, hi) {#f, 1, i, lo, hi},
#define TABLE_SEED(i, f) {#f, 0, i, 1, 0},
const CkptSetting ckpt_settings[] = {CKPT_STATE_SETTINGS(TABLE_INT, TABLE_REAL, TABLE_SEED)};
const int ckpt_setting_count = (int)(sizeof ckpt_settings / sizeof ckpt_settings[0]);
#define NONE(...)

#define SLOT_ENUM(i, f, lo, hi) SLOT_##f = i,
enum { STATE_INT_SLOTS(SLOT_ENUM) };
enum { STATE_DOUBLE_SLOTS(SLOT_ENUM) };
#define VOCAB_BYTES 256
#define HEADER_BYTES (CKPT_HEADER_INTS * 4)
#define MERGE_BYTES 4   /* uint16 left, uint16 right */
/* Header int 10: the number of merges (format 2; 0 in format 1). */
#define HDR_MERGES 10
/* Header int 11: K, the heads each token is routed to, with CKPT_FLAG_ROUTE (else 0). */
#define HDR_ROUTE_K 11

/* The model layer keeps its own copy of the vocabulary limit and of the token
 * id type (model/ cannot include data/): they must be data/bpe.h's. */
_Static_assert(CONFIG_MAX_VOCAB == TOK_VOCAB_MAX, "model/config.h's vocabulary limit is bpe.h's");
_Static_assert(sizeof(TokenId) == sizeof(uint16_t) && (TokenId)-1 == UINT16_MAX,
               "model/evaluate.h reads token ids as uint16_t");
_Static_assert(sizeof(BpeMerge) == MERGE_BYTES, "a merge is stored as two uint16");

int ckpt_state_slots_check(char *err, size_t errlen)
{
    const char *ints[STATE_INTS] = {0}, *reals[STATE_DOUBLES] = {0};
#define OWN_INT(i, f, lo, hi) ints[i] = #f;
#define OWN_DOUBLE(i, f, lo, hi) reals[i] = #f;
    STATE_INT_SLOTS(OWN_INT)
    STATE_DOUBLE_SLOTS(OWN_DOUBLE)
    for (int k = 0; k < ckpt_setting_count; k++) {
        const CkptSetting *s = &ckpt_settings[k];
        int n = s->real ? STATE_DOUBLES : STATE_INTS;
        const char **used = s->real ? reals : ints;
        if (s->slot < 0 || s->slot >= n)
            return err_set(err, errlen, "%s: slot %d outside the %d of its array", s->key,
                           s->slot, n);
        if (used[s->slot])
            return err_set(err, errlen, "%s: %s slot %d is %s's too", s->key,
                           s->real ? "double" : "int", s->slot, used[s->slot]);
        used[s->slot] = s->key;
    }
    return 0;
}

/* Bytes of the training-state section for P parameters, checksum included. */
static uint64_t state_bytes(uint64_t P)
{
    return 8 + STATE_INTS * 8 + STATE_DOUBLES * 8 + CKPT_PATH_MAX + 2 * 4 * P + 8;
}

/* ---- writing ---- */

typedef struct {
    FILE *fp;
    uint64_t hash;
    int failed;
} Writer;

static void put(Writer *w, const void *p, size_t n)
{
    if (w->failed)
        return;
    if (fwrite(p, 1, n, w->fp) != n)
        w->failed = 1;
    w->hash = hash_fnv1a(w->hash, p, n);
}

static int first_nonfinite(const float *x, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) {
            *at = i;
            return 1;
        }
    return 0;
}

/* Names the tensor holding flat index i, for messages. */
static void describe_index(const ParamTable *t, size_t i, char *buf, size_t len)
{
    for (int k = 0; k < t->n; k++)
        if (i >= t->spec[k].offset && i < t->spec[k].offset + t->spec[k].count) {
            snprintf(buf, len, "%s[%zu]", t->spec[k].name, i - t->spec[k].offset);
            return;
        }
    snprintf(buf, len, "#%zu", i);
}

static int check_finite(const ParamTable *t, const float *x, const char *path, const char *what,
                        char *err, size_t errlen)
{
    size_t at;
    if (first_nonfinite(x, t->total, &at)) {
        char where[64];
        describe_index(t, at, where, sizeof where);
        return err_set(err, errlen, "%s: %s %s is not finite (%g)", path, what, where,
                       (double)x[at]);
    }
    return 0;
}

static void put_state(Writer *w, const TrainState *ts, size_t P)
{
    int64_t iv[STATE_INTS] = {0};
    double dv[STATE_DOUBLES] = {0};
    char path[CKPT_PATH_MAX] = {0};
#define PUT_INT(i, f, lo, hi) iv[i] = (int64_t)ts->f;
#define PUT_DOUBLE(i, f, lo, hi) dv[i] = ts->f;
    STATE_INT_SLOTS(PUT_INT)
    STATE_DOUBLE_SLOTS(PUT_DOUBLE)
#define PUT_SEED(i, f) iv[i] = (int64_t)ts->f;
    CKPT_STATE_SETTINGS(PUT_INT, PUT_DOUBLE, PUT_SEED)
    iv[SLOT_accum] = ts->accum > 1 ? ts->accum : 0;
    dv[SLOT_best_val] = ts->best_step >= 0 ? ts->best_val : 0.0;
    snprintf(path, sizeof path, "%s", ts->data_path);
    put(w, STATE_MAGIC, 8);
    put(w, iv, sizeof iv);
    put(w, dv, sizeof dv);
    put(w, path, sizeof path);
    put(w, ts->adam_m, P * sizeof(float));
    put(w, ts->adam_v, P * sizeof(float));
}

static int sync_dir_of(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int ckpt_tmp_create(const char *path, char *tmp, size_t tmplen)
{
    if (sibling_path(path, ".tmp.XXXXXX", tmp, tmplen))
        return -1;
    int fd = mkstemp(tmp); /* O_CREAT | O_EXCL: never an existing file or symlink */
    if (fd < 0)
        return -1;
    /* mkstemp makes the file 0600; a checkpoint gets the mode any new file would. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Writes the whole checkpoint to the open temporary fp; 0 or errno. */
static int write_all(FILE *fp, const Model *m, const Tokenizer *tok, long steps_trained,
                     const TrainState *ts)
{
    const ParamTable *t = &m->table;
    int32_t hdr[CKPT_HEADER_INTS] = {0};
    hdr[0] = CKPT_MAGIC; hdr[1] = tok->nmerges ? CKPT_VERSION_MERGES : CKPT_VERSION;
    hdr[2] = m->cfg.V; hdr[3] = m->cfg.T; hdr[4] = m->cfg.L; hdr[5] = m->cfg.H;
    hdr[6] = m->cfg.C;
    hdr[7] = (ts ? CKPT_FLAG_TRAIN_STATE : 0) | (m->cfg.gates ? CKPT_FLAG_GATES : 0) |
             (m->cfg.route_k ? CKPT_FLAG_ROUTE : 0);
    hdr[8] = (int32_t)steps_trained; hdr[9] = m->cfg.D; hdr[HDR_MERGES] = tok->nmerges;
    hdr[HDR_ROUTE_K] = m->cfg.route_k;
    unsigned char vocab[VOCAB_BYTES] = {0};
    memcpy(vocab, tok->bytes, (size_t)tok->nbytes);
    Writer w = {fp, HASH_FNV_INIT, 0};
    put(&w, hdr, sizeof hdr);
    put(&w, vocab, sizeof vocab);
    if (tok->nmerges)
        put(&w, tok->merges, (size_t)tok->nmerges * MERGE_BYTES);
    put(&w, m->params, t->total * sizeof(float));
    if (ts) {
        put_state(&w, ts, t->total);
        uint64_t sum = w.hash;
        put(&w, &sum, sizeof sum);
    }
    if (w.failed || fflush(fp) != 0 || fsync(fileno(fp)) != 0)
        return errno ? errno : EIO;
    return 0;
}

int ckpt_save(const char *path, const Model *m, const Tokenizer *tok, long steps_trained,
              const TrainState *ts, char *err, size_t errlen)
{
    return ckpt_save_hooked(path, m, tok, steps_trained, ts, NULL, NULL, err, errlen);
}

int ckpt_save_hooked(const char *path, const Model *m, const Tokenizer *tok,
                     long steps_trained, const TrainState *ts,
                     void (*before_rename)(const char *tmp, void *ctx), void *ctx, char *err,
                     size_t errlen)
{
    const ParamTable *t = &m->table;
    assert(!ts || ts->step == steps_trained);
    assert(tok->V == m->cfg.V);
    if (check_finite(t, m->params, path, "refusing to save: parameter", err, errlen))
        return -1;
    if (ts && (check_finite(t, ts->adam_m, path, "refusing to save: Adam first moment", err,
                            errlen) ||
               check_finite(t, ts->adam_v, path, "refusing to save: Adam second moment", err,
                            errlen)))
        return -1;
    if (ts && strlen(ts->data_path) >= CKPT_PATH_MAX)
        return err_set(err, errlen, "%s: the data path takes more than the %d bytes a "
                       "checkpoint stores", path, CKPT_PATH_MAX - 1);
    char tmp[4200];
    int fd = ckpt_tmp_create(path, tmp, sizeof tmp);
    if (fd < 0)
        return err_set(err, errlen, "%s: cannot create a temporary file beside it: %s", path,
                       strerror(errno));
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        return err_set(err, errlen, "%s: cannot write: %s", tmp, strerror(saved));
    }
    errno = 0;
    int failed = write_all(fp, m, tok, steps_trained, ts);
    if (fclose(fp) != 0 && !failed)
        failed = errno ? errno : EIO;
    if (failed) {
        unlink(tmp); /* ours: created above */
        return err_set(err, errlen, "%s: write failed: %s; the previous checkpoint (if any) is "
                       "untouched", tmp, strerror(failed));
    }
    if (before_rename)
        before_rename(tmp, ctx);
    if (rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        return err_set(err, errlen, "%s: cannot rename into place: %s", path, strerror(saved));
    }
    sync_dir_of(path);
    return 0;
}

int ckpt_check_writable(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return err_set(err, errlen, "%s: is a directory, expected a checkpoint file path", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return err_set(err, errlen, "%s: not a regular file (a FIFO, device or socket); a "
                       "checkpoint replaces its file, so it must be a plain file path", path);
    /* Its temporary is named to fit (sibling_path); the file's own name must. */
    const char *slash = strrchr(path, '/');
    size_t name = strlen(slash ? slash + 1 : path);
    if (name > SIBLING_NAME_MAX)
        return err_set(err, errlen, "%s: cannot write there: the file name is %zu bytes, more "
                       "than the %d a name may have", path, name, SIBLING_NAME_MAX);
    char tmp[4200];
    int fd = ckpt_tmp_create(path, tmp, sizeof tmp);
    if (fd < 0)
        return err_set(err, errlen, "%s: cannot write there: %s", path,
                       errno == ENOENT ? "directory does not exist" : strerror(errno));
    close(fd);
    unlink(tmp); /* ours: created just above */
    return 0;
}

/* ---- reading ---- */

typedef struct {
    FILE *fp;
    uint64_t hash;
} Reader;

static int get(Reader *r, void *p, size_t n)
{
    if (fread(p, 1, n, r->fp) != n)
        return -1;
    r->hash = hash_fnv1a(r->hash, p, n);
    return 0;
}

/* The stored settings must be values ./train's flags could have produced (the
 * ranges of CKPT_STATE_SETTINGS, which are ./train's), so whatever the checksum lets through is still
 * sane. */
static int check_settings(const int64_t *iv, const double *dv, char *why, size_t len)
{
#define RANGE(i, f, lo, hi) {#f, i, lo, hi},
    static const struct { const char *name; int i; int64_t lo, hi; } ints[] = {
        STATE_INT_SLOTS(RANGE)};
    static const struct { const char *name; int i; double lo, hi; } reals[] = {
        STATE_DOUBLE_SLOTS(RANGE)};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (iv[ints[k].i] < ints[k].lo || iv[ints[k].i] > ints[k].hi)
            return err_set(why, len, "%s %lld outside [%lld, %lld]", ints[k].name,
                           (long long)iv[ints[k].i], (long long)ints[k].lo,
                           (long long)ints[k].hi);
    for (size_t k = 0; k < sizeof reals / sizeof reals[0]; k++)
        if (!(dv[reals[k].i] >= reals[k].lo && dv[reals[k].i] <= reals[k].hi))
            return err_set(why, len, "%s %g outside [%g, %g]", reals[k].name, dv[reals[k].i],
                           reals[k].lo, reals[k].hi);
#define CHECK_INT(i, f, lo, hi)                                                           \
    if (iv[i] < (int64_t)(lo) || iv[i] > (int64_t)(hi))                                   \
        return err_set(why, len, "%s %lld outside [%lld, %lld]", #f, (long long)iv[i],      \
                       (long long)(lo), (long long)(hi));
#define CHECK_REAL(i, f, lo, hi)                                                          \
    if (!(dv[i] >= (lo) && dv[i] <= (hi)))                                                \
        return err_set(why, len, "%s %g outside [%g, %g]", #f, dv[i], (double)(lo),         \
                       (double)(hi));
    CKPT_STATE_SETTINGS(CHECK_INT, CHECK_REAL, NONE)
#define SLOT_OF(i, f, ...) SLOT_##f = i,
    enum { CKPT_STATE_SETTINGS(SLOT_OF, NONE, NONE) };
    enum { CKPT_STATE_SETTINGS(NONE, SLOT_OF, NONE) };
    if (iv[SLOT_step] > iv[SLOT_steps])
        return err_set(why, len, "step %lld beyond the run's %lld steps",
                       (long long)iv[SLOT_step], (long long)iv[SLOT_steps]);
    if (dv[SLOT_min_lr] > dv[SLOT_lr])
        return err_set(why, len, "min_lr %g above lr %g", dv[SLOT_min_lr], dv[SLOT_lr]);
    if (iv[SLOT_best_step] > iv[SLOT_step])
        return err_set(why, len, "best_step %lld after step %lld", (long long)iv[SLOT_best_step],
                       (long long)iv[SLOT_step]);
    return 0;
}

/* n floats of the file into dst, or, when dst is NULL, through a small buffer
 * that only feeds the checksum; *bad gets the first non-finite value's index
 * (or stays as it was), so that the caller can name it after the checksum. */
static int get_floats(Reader *r, float *dst, size_t n, size_t *bad, float *bad_value)
{
    float buf[4096];
    for (size_t at = 0; at < n;) {
        size_t k = dst ? n : (n - at < 4096 ? n - at : 4096);
        float *p = dst ? dst : buf;
        if (get(r, p, k * sizeof(float)))
            return -1;
        size_t i;
        if (*bad == SIZE_MAX && first_nonfinite(p, k, &i)) {
            *bad = at + i;
            *bad_value = p[i];
        }
        at += k;
    }
    return 0;
}

/* Reads the training state: settings into ts, the Adam moments into adam_m and
 * adam_v ([P] each) when they are not NULL, else only through the checksum. */
static int load_state(Reader *r, const char *path, const Model *m, TrainState *ts,
                      float *adam_m, float *adam_v, char *err, size_t errlen)
{
    char magic[8];
    int64_t iv[STATE_INTS];
    double dv[STATE_DOUBLES];
    if (get(r, magic, 8) || get(r, iv, sizeof iv) || get(r, dv, sizeof dv) ||
        get(r, ts->data_path, CKPT_PATH_MAX))
        return err_set(err, errlen, "%s: read error in the training state", path);
    if (memcmp(magic, STATE_MAGIC, 8) != 0)
        return err_set(err, errlen, "%s: training state section has a bad marker", path);
    if (ts->data_path[CKPT_PATH_MAX - 1] != '\0')
        return err_set(err, errlen, "%s: data path in the training state is not terminated", path);
    for (int i = 0; i < STATE_DOUBLES; i++)
        if (!isfinite(dv[i]))
            return err_set(err, errlen, "%s: training setting %d is not finite", path, i);
#define GET_INT(i, f, lo, hi) ts->f = (__typeof__(ts->f))iv[i];
#define GET_DOUBLE(i, f, lo, hi) ts->f = dv[i];
    STATE_INT_SLOTS(GET_INT)
    STATE_DOUBLE_SLOTS(GET_DOUBLE)
#define GET_SEED(i, f) ts->f = (uint64_t)iv[i];
    CKPT_STATE_SETTINGS(GET_INT, GET_DOUBLE, GET_SEED)
    ts->accum = iv[SLOT_accum] > 1 ? (long)iv[SLOT_accum] : 1;
    char why[160];
    if (check_settings(iv, dv, why, sizeof why))
        return err_set(err, errlen, "%s: training state holds impossible settings: %s", path,
                       why);
    if ((ts->head_gates > 0) != m->cfg.gates)
        return err_set(err, errlen, "%s: training state says head gates %g, but the header "
                       "says the model has %s", path, ts->head_gates,
                       m->cfg.gates ? "gates" : "none");
    size_t P = m->table.total, bad[2] = {SIZE_MAX, SIZE_MAX};
    float bad_value[2] = {0.0f, 0.0f};
    if (get_floats(r, adam_m, P, &bad[0], &bad_value[0]) ||
        get_floats(r, adam_v, P, &bad[1], &bad_value[1]))
        return err_set(err, errlen, "%s: read error in the Adam moments", path);
    uint64_t expect = r->hash, sum;
    if (fread(&sum, 1, sizeof sum, r->fp) != sizeof sum)
        return err_set(err, errlen, "%s: read error at the checksum", path);
    if (sum != expect)
        return err_set(err, errlen, "%s: checksum mismatch (stored %016llx, computed %016llx): "
                       "the file is damaged", path, (unsigned long long)sum,
                       (unsigned long long)expect);
    for (int k = 0; k < 2; k++) {
        if (bad[k] == SIZE_MAX)
            continue;
        char where[64];
        describe_index(&m->table, bad[k], where, sizeof where);
        return err_set(err, errlen, "%s: Adam %s moment %s is not finite (%g)", path,
                       k ? "second" : "first", where, (double)bad_value[k]);
    }
    return 0;
}

/* Checks the header fields that do not depend on the file length. */
static int check_header(const int32_t *h, const char *path, Config *cfg, char *err,
                        size_t errlen)
{
    if (h[0] != CKPT_MAGIC)
        return err_set(err, errlen, "%s: not a headcount checkpoint (magic %d, expected %d)",
                       path, h[0], CKPT_MAGIC);
    if (h[1] != CKPT_VERSION && h[1] != CKPT_VERSION_MERGES)
        return err_set(err, errlen, "%s: checkpoint version %d, this build reads versions %d "
                       "and %d", path, h[1], CKPT_VERSION, CKPT_VERSION_MERGES);
    if (h[7] & ~(CKPT_FLAG_TRAIN_STATE | CKPT_FLAG_GATES | CKPT_FLAG_ROUTE))
        return err_set(err, errlen, "%s: unknown flags 0x%x in the header", path, (unsigned)h[7]);
    if (h[8] < 0)
        return err_set(err, errlen, "%s: negative step count %d in the header", path, h[8]);
    int routed = (h[7] & CKPT_FLAG_ROUTE) != 0;
    if (routed ? h[HDR_ROUTE_K] < 1 : h[HDR_ROUTE_K] != 0)
        return err_set(err, errlen, "%s: header field %d is %d with the routing flag %s, "
                       "expected %s", path, HDR_ROUTE_K, h[HDR_ROUTE_K], routed ? "set" : "clear",
                       routed ? "K >= 1" : "0");
    for (int i = HDR_ROUTE_K + 1; i < CKPT_HEADER_INTS; i++)
        if (h[i] != 0)
            return err_set(err, errlen, "%s: header field %d is %d, expected 0 (reserved)",
                           path, i, h[i]);
    *cfg = (Config){.V = h[2], .T = h[3], .L = h[4], .H = h[5], .C = h[6], .D = h[9],
                    .gates = (h[7] & CKPT_FLAG_GATES) != 0, .route_k = h[HDR_ROUTE_K]};
    char why[200];
    if (config_validate(cfg, why, sizeof why))
        return err_set(err, errlen, "%s: bad dimensions in the header: %s", path, why);
    int M = h[HDR_MERGES];
    if (h[1] == CKPT_VERSION && M != 0)
        return err_set(err, errlen, "%s: header field %d is %d, expected 0 (reserved: a "
                       "version %d checkpoint has no merges)", path, HDR_MERGES, M, CKPT_VERSION);
    if (h[1] == CKPT_VERSION_MERGES && (M < 1 || M >= cfg->V || cfg->V - M > VOCAB_BYTES))
        return err_set(err, errlen, "%s: %d merges in a version %d checkpoint with V = %d: "
                       "expected 1 to V - 1 merges leaving 1 to %d bytes", path, M,
                       CKPT_VERSION_MERGES, cfg->V, VOCAB_BYTES);
    if (h[1] == CKPT_VERSION && cfg->V > VOCAB_BYTES)
        return err_set(err, errlen, "%s: bad dimensions in the header: V = %d in a version %d "
                       "checkpoint, which holds at most %d byte tokens", path, cfg->V,
                       CKPT_VERSION, VOCAB_BYTES);
    return 0;
}

/* Reads and checks the header, the byte alphabet and the merges (into tok),
 * and the file's size (size bytes) against what the header implies. On error
 * tok holds nothing to free. */
static int read_head(Reader *r, const char *path, uint64_t size, int32_t *hdr, Config *cfg,
                     Tokenizer *tok, char *err, size_t errlen)
{
    unsigned char vocab[VOCAB_BYTES];
    if (get(r, hdr, CKPT_HEADER_INTS * sizeof(int32_t)) || get(r, vocab, sizeof vocab))
        return err_set(err, errlen, "%s: read error in the header", path);
    if (check_header(hdr, path, cfg, err, errlen))
        return -1;
    uint64_t P = config_param_count(cfg);
    int M = hdr[HDR_MERGES], nbytes = cfg->V - M;
    int with_state = hdr[7] & CKPT_FLAG_TRAIN_STATE;
    uint64_t expect = HEADER_BYTES + VOCAB_BYTES + (uint64_t)M * MERGE_BYTES + 4 * P +
                      (with_state ? state_bytes(P) : 0);
    if (size != expect) {
        char merges[32] = "";
        if (M)
            snprintf(merges, sizeof merges, ", %d merges", M);
        return err_set(err, errlen, "%s: file is %llu bytes but its header (V=%d T=%d L=%d H=%d "
                       "C=%d D=%d%s%s) implies %llu: %s", path, (unsigned long long)size,
                       cfg->V, cfg->T, cfg->L, cfg->H, cfg->C, cfg->D, merges,
                       with_state ? ", with training state" : "", (unsigned long long)expect,
                       size < expect ? "truncated" : "trailing bytes");
    }
    BpeMerge *merges = M ? malloc((size_t)M * sizeof *merges) : NULL;
    if (M && !merges)
        return err_set(err, errlen, "%s: out of memory for %d merges", path, M);
    if (M && get(r, merges, (size_t)M * MERGE_BYTES)) {
        free(merges);
        return err_set(err, errlen, "%s: read error in the merges", path);
    }
    char why[1200];
    int bad = tok_from_parts(tok, vocab, nbytes, merges, M, why, sizeof why);
    free(merges);
    if (bad)
        return err_set(err, errlen, "%s: bad vocabulary: %s", path, why);
    for (int i = nbytes; i < VOCAB_BYTES; i++)
        if (vocab[i] != 0) {
            tok_free(tok);
            return err_set(err, errlen, "%s: vocabulary padding byte %d is not zero", path, i);
        }
    return 0;
}

/* ckpt_load and ckpt_load_trainer: with t, the model is t's (trainer_init_zeroed)
 * and the Adam moments go into t's own; without, m is a fresh model and the
 * moments only pass through the checksum. */
static int load_file(const char *path, Model *m, Trainer *t, Tokenizer *tok,
                     long *steps_trained, TrainState *ts, int *has_state, char *err,
                     size_t errlen)
{
    if (t) {
        memset(t, 0, sizeof *t);
        m = &t->model;
    }
    memset(m, 0, sizeof *m);
    if (has_state)
        *has_state = 0;
    if (ts)
        memset(ts, 0, sizeof *ts);
    memset(tok, 0, sizeof *tok);
    struct stat st;
    if (stat(path, &st) != 0)
        return err_set(err, errlen, "%s: %s", path,
                       errno == ENOENT ? "no such checkpoint file" : strerror(errno));
    if (S_ISDIR(st.st_mode))
        return err_set(err, errlen, "%s: is a directory, expected a checkpoint file", path);
    if (!S_ISREG(st.st_mode)) /* a FIFO would block in fopen, a device has no size */
        return err_set(err, errlen, "%s: not a regular file (a FIFO, device or socket); a "
                       "checkpoint is a plain file", path);
    uint64_t size = (uint64_t)st.st_size;
    if (size < HEADER_BYTES + VOCAB_BYTES)
        return err_set(err, errlen, "%s: %llu bytes is too short for a checkpoint (the header "
                       "and vocabulary alone take %d): truncated or not a checkpoint", path,
                       (unsigned long long)size, HEADER_BYTES + VOCAB_BYTES);
    Reader r = {fopen(path, "rb"), HASH_FNV_INIT};
    if (!r.fp)
        return err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    int32_t hdr[CKPT_HEADER_INTS];
    Config cfg;
    int rc = -1;
    if (read_head(&r, path, size, hdr, &cfg, tok, err, errlen))
        goto done;
    uint64_t P = config_param_count(&cfg);
    int with_state = hdr[7] & CKPT_FLAG_TRAIN_STATE;
    if (t ? trainer_init_zeroed(t, &cfg, err, errlen) : model_init(m, &cfg, err, errlen))
        goto done;
    if (get(&r, m->params, P * sizeof(float))) {
        err_set(err, errlen, "%s: read error in the parameters", path);
        goto done;
    }
    if (check_finite(&m->table, m->params, path, "parameter", err, errlen))
        goto done;
    if (with_state) {
        TrainState scratch;
        TrainState *dst = ts ? ts : &scratch;
        memset(&scratch, 0, sizeof scratch);
        /* The checksum is verified even when the caller wants only parameters. */
        int bad = load_state(&r, path, m, dst, t ? t->adam_m : NULL, t ? t->adam_v : NULL,
                             err, errlen);
        if (!bad && dst->step != hdr[8]) {
            err_set(err, errlen, "%s: header says %d steps, training state says %ld", path,
                    hdr[8], dst->step);
            bad = 1;
        }
        if (bad)
            goto done;
        if (has_state && (ts || t))
            *has_state = 1;
        if (t)
            t->batches.rng.state = dst->batch_rng;
        m->precision = (Precision)dst->precision;
    }
    if (steps_trained)
        *steps_trained = hdr[8];
    if (t)
        t->step = hdr[8];
    rc = 0;
done:
    fclose(r.fp);
    if (rc)
        tok_free(tok);
    if (rc && t)
        trainer_free(t);
    else if (rc)
        model_free(m);
    return rc;
}

int ckpt_load(const char *path, Model *m, Tokenizer *tok, long *steps_trained, TrainState *ts,
              int *has_state, char *err, size_t errlen)
{
    return load_file(path, m, NULL, tok, steps_trained, ts, has_state, err, errlen);
}

int ckpt_load_trainer(const char *path, Trainer *t, Tokenizer *tok, TrainState *ts,
                      int *has_state, char *err, size_t errlen)
{
    return load_file(path, NULL, t, tok, NULL, ts, has_state, err, errlen);
}

