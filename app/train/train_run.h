/* train_run: the state of one ./train run (Run, by concept: its settings, data
 * and trainer, its files and locks (RunFiles), how it is asked to stop (RunStop)
 * and the loop's memory (RunLoop)) and the functions app/train/train_loop.c gives
 * train.c: signals, the training loop with its evaluations, logging and saves,
 * and the orderly ways a run stops. Setting a run up (data, model, resume,
 * output checks) and finishing it are in train.c. */
#ifndef HEADCOUNT_TRAIN_RUN_H
#define HEADCOUNT_TRAIN_RUN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "analysis/heads.h"
#include "app/train/train_options.h"
#include "data/corpus.h"
#include "app/train/dist.h"
#include "app/common/fileguard.h"
#include "analysis/planted.h"
#include "trainer/ckpt.h"
#include "trainer/trainer.h"

/* The run's files: the checkpoint it writes and the best one, the log, the locks
 * it holds on all three, and where the last good checkpoint is. */
typedef struct {
    char out[4200];         /* --out, a symlink there followed */
    char best[4200];        /* the --keep-best checkpoint, "" without --keep-best */
    GuardLock lock, best_lock, log_lock;
    int log_fd;             /* the log, -1 without one */
    int log_errno;          /* the first failed write to the log; 0 while all went well */
    off_t log_end;          /* the log's length after its last complete record */
    char *log_rec;          /* [log_cap] the record being built, log_len bytes so far */
    size_t log_len, log_cap;
    char log_tmp[4300];     /* a fresh log's temporary until its first record is in place */
    long last_saved;        /* step of this run's newest checkpoint at --out, -1 when none */
    long resumed_step;      /* the step resumed from, -1 for a fresh run */
} RunFiles;

/* How a run is asked to stop. The signal handler reaches it through the one
 * pointer run_watch_signals keeps. */
typedef struct {
    volatile sig_atomic_t signal; /* the first SIGINT/SIGTERM, 0 until then: the run saves
                                   * and stops after the step */
    const char *volatile lock_paths[3]; /* the held locks (checkpoint, best, log) or
                                         * NULL, removed by a second signal's exit */
} RunStop;

/* The training loop's working memory: the batches, the sum of a step's
 * micro-batches, and --heads-every's metrics. */
typedef struct {
    int *inputs, *targets;  /* [B*T] */
    long micro;             /* micro-batches per step, all ranks together: accum x size */
    float *acc;             /* [P] the step's summed gradient when micro > 1 */
    int *mb_in, *mb_tg;     /* [B*T] batches of other ranks' micro-batches, drawn and dropped */
    float *head_metrics;    /* [L*H*HEADS_QUICK_COUNT] for --heads-every */
    double *heads_jsd;      /* [L*H][L*H] for --heads-every: mean JSD of each pair of heads */
    uint64_t *token_counts; /* [V]: each token's count in the train split, for --heads-every */
    HeadsRelation heads_rel[HEADS_REL_COUNT]; /* --heads-every: the step's relations */
    PairScore heads_pairs[PAIRS_SETS];        /* and their minimal pairs (planted relations) */
    Planted planted;        /* --heads-every on the built-in corpus: its relations in the train split */
    size_t *heads_starts;   /* [B] where the measured batch's windows start, with planted relations */
    int *planted_key[HEADS_REL_COUNT], *planted_first[HEADS_REL_COUNT]; /* [B*T] per planted q */
    char heads_err[300];    /* why this step's head metrics failed; "" when they did not */
} RunLoop;

/* One ./train run: its settings, data, trainer and what a checkpoint stores, its
 * place among the MPI ranks, its files, how it stops, and the loop's memory. */
typedef struct {
    Options o;
    TextFile file;
    Corpus corpus;
    Trainer tr;             /* model, gradients, Adam moments, activations, steps done */
    TrainState ts;          /* the settings and data position a checkpoint stores */
    Dist dist;              /* this process's rank among dist.size (1 without MPI) */
    RunFiles files;
    RunStop stop;
    RunLoop loop;
} Run;

/* SIGINT/SIGTERM set r->stop.signal (a second one removes r->stop.lock_paths and
 * exits at once); SIGXFSZ is ignored so an over-large file is a write error. The
 * handler keeps r as the only run it stops; NULL lets go of it. */
void run_watch_signals(Run *r);
/* Removes what the run holds: a fresh log's temporary and the checkpoint locks
 * (safe to repeat). */
void run_release_files(Run *r);
/* run_release_files on the run run_watch_signals keeps, if any: for exits that
 * do not know it (a failure's, MPI's abort). */
void run_release_watched(void);
/* From now on, an exit (a failure's included) releases the watched run's files. */
void run_release_at_exit(void);
/* Only rank 0 writes files and prints progress. */
int run_lead(const Run *r);
/* Ends the process after an orderly stop that every rank reached together. */
void run_exit(Run *r, int code) __attribute__((noreturn));
/* Adds text to the log's current record; a record is written once its newline
 * is added, whole or not at all (see log_errno). */
void run_log(Run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Closes the log (fsync first when sync): 0, or -1 with log_errno set. */
int run_log_close(Run *r, int sync);
/* Saves --out at step done (rank 0), remembering it as the last good checkpoint. */
int run_save_out(Run *r, long done, char *err, size_t errlen);
/* Where the last good checkpoint is, as a sentence for messages. */
void run_last_good(const Run *r, char *buf, size_t len);
/* Mean loss over eval_iters fixed batches of a split; *bpb (when not NULL) gets
 * it in bits per byte of the batches' targets (eval_bpb). */
double run_estimate(Run *r, const TokenId *ids, size_t len, double *bpb);
/* The settings once on stderr and as the log's first record. */
void run_print_settings(Run *r);
/* Steps start .. steps - 1, with evaluations, periodic saves and stops. */
void run_train_loop(Run *r, long start);

#endif
