/* ckpt: checkpoint files, formats 1 and 2 (docs/checkpoint.md describes every
 * byte). Format 1 is a byte-level model; format 2 adds the tokenizer's merges.
 *
 * A checkpoint holds the header, the byte alphabet, the merges (format 2) and
 * the parameters; when
 * flag bit 0 is set, also the training state needed for an exact resume (Adam
 * moments, step, batch RNG, settings, the data file's size and hash) and a
 * checksum over the whole file. Writing is atomic: a temporary file of its own,
 * path.tmp.XXXXXX (created exclusively, never a fixed name that another process
 * or a symlink could own), is written, flushed, fsynced and renamed over path, so
 * a crash leaves the previous file intact.
 * Reading validates everything (magic, version, dimensions, exact length,
 * vocabulary, finite values, checksum) before trusting a byte. */
#ifndef HEADCOUNT_CKPT_H
#define HEADCOUNT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer.h"
#include "model/gpt.h"
#include "trainer/trainer.h"

#define CKPT_MAGIC 20261122
#define CKPT_VERSION 1           /* byte-level: no merges */
#define CKPT_VERSION_MERGES 2    /* with byte-pair merges after the byte alphabet */
#define CKPT_HEADER_INTS 256
#define CKPT_FLAG_TRAIN_STATE 1
#define CKPT_FLAG_GATES 2        /* the model has head gates: gates.log_alpha follows lnf.b */
#define CKPT_FLAG_ROUTE 4        /* the model routes tokens to K heads (header int 11):
                                    router.w and router.b come last among the tensors */
#define CKPT_PATH_MAX 512

/* Everything an exact resume needs besides the parameters: the settings a
 * resumed run keeps or continues from (./train's flags of the same names say
 * what each one does; their slots and the ranges a reader accepts are
 * CKPT_STATE_SETTINGS in ckpt.c), then the position of the run. beta1, beta2
 * and eps hold the float32 the optimizer uses, widened. */
typedef struct TrainState TrainState;
struct TrainState {
    long save_every, vocab, batch, steps, warmup, eval_every, eval_iters;
    double lr, min_lr, wd, beta1, beta2, eps, clip, dropout, head_dropout, head_gates;
    double routing_balance; /* 0 in a model without routing */
    double val_frac;
    int allow_binary, pos_decay, precision; /* switches and a Precision */
    uint64_t seed;
    long step;              /* steps completed (also header field 8) */
    uint64_t batch_rng;     /* the batch sampler's Rng state */
    uint64_t data_size, data_hash;
    long best_step;         /* step of best_val, -1 when none */
    long accum;             /* micro-batches summed per step (--accum x ranks), >= 1 */
    double best_val;        /* best estimated val loss so far (valid when best_step >= 0) */
    char data_path[CKPT_PATH_MAX];
    /* The moments ckpt_save writes ([table.total] each): the Trainer's, borrowed;
     * nothing here allocates or frees them, and ckpt_load leaves them NULL. */
    const float *adam_m, *adam_v;
};

/* A stored setting as the training state's arrays hold it (docs/checkpoint.md):
 * its name (the TrainState field), which array (int64 or double), its slot, and
 * the range a reader accepts (a seed takes any value: lo > hi). */
typedef struct {
    const char *key;
    int real;
    int slot;
    double lo, hi;
} CkptSetting;

extern const CkptSetting ckpt_settings[];
extern const int ckpt_setting_count;

/* 0 when every stored setting has a slot of its own in the training state's
 * arrays, none shared with another setting or with the run's position; else -1
 * with the first clash. */
int ckpt_state_slots_check(char *err, size_t errlen);

/* Writes m and tok (and ts, when not NULL) to path atomically. Refuses
 * non-finite values. steps_trained goes into header field 8. */
int ckpt_save(const char *path, const Model *m, const Tokenizer *tok, long steps_trained,
              const TrainState *ts, char *err, size_t errlen);

/* ckpt_save with a call between the complete, fsynced temporary and the rename
 * (before_rename(tmp, ctx), when not NULL): how tests simulate a crash at the one
 * moment a new checkpoint exists only as its temporary. */
int ckpt_save_hooked(const char *path, const Model *m, const Tokenizer *tok,
                     long steps_trained, const TrainState *ts,
                     void (*before_rename)(const char *tmp, void *ctx), void *ctx, char *err,
                     size_t errlen);

/* Loads path into a fresh model (model_init inside) and tokenizer (the
 * caller's to tok_free, like the model). If ts is not
 * NULL and the file has training state, fills ts's settings and position and
 * sets *has_state = 1; else *has_state = 0. The Adam moments are checked (the
 * checksum covers them, and they must be finite) but not kept. has_state and
 * steps_trained may be NULL. On error nothing needs freeing. */
int ckpt_load(const char *path, Model *m, Tokenizer *tok, long *steps_trained, TrainState *ts,
              int *has_state, char *err, size_t errlen);
/* The same into a fresh Trainer (trainer_init_zeroed inside; trainer_prepare is
 * the caller's next call): its parameters, its own Adam moments (zero when the
 * file has no training state), its step (the header's) and its batch position. ts, when not NULL,
 * gets the settings; *has_state as above (may be NULL). On error nothing needs
 * freeing. */
int ckpt_load_trainer(const char *path, Trainer *t, Tokenizer *tok, TrainState *ts,
                      int *has_state, char *err, size_t errlen);

/* 0 if a checkpoint can be written at path (checked before training so a bad
 * --out fails at once), else -1 with the reason: path must not be a directory or
 * an existing non-regular file (a device, a FIFO), and a file must be creatable in
 * its directory, which is found out by creating and removing a temporary file of
 * its own (path.tmp.XXXXXX). No other file is touched. */
int ckpt_check_writable(const char *path, char *err, size_t errlen);

/* Creates a fresh temporary file beside path (path.tmp.XXXXXX, O_EXCL, mode 0666
 * less the umask) and returns its descriptor with its name in tmp, or -1 with
 * errno set. Used for every file that is replaced atomically. */
int ckpt_tmp_create(const char *path, char *tmp, size_t tmplen);

#endif
