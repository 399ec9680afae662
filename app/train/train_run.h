/* train_run: the state of one ./train run (Run, by concept: its settings, data
 * and trainer, its files and locks (RunFiles), how it is asked to stop (RunStop)
 * and the loop's memory (RunLoop)) and the steps train.c's main takes with it:
 * setting it up (train_setup.c: data, model fresh or resumed, buffers,
 * --dump-val), its files (train_files.c: output checks, locks, the log), the
 * loop with its evaluations, logging, saves and orderly stops (train_loop.c),
 * and its end (train_finish.c). */
#ifndef HEADCOUNT_TRAIN_RUN_H
#define HEADCOUNT_TRAIN_RUN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "analysis/heads_measure.h"
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
    HeadsMeasured heads;    /* --heads-every: the step's head metrics, mean JSD of each pair
                             * of heads, relations and their minimal pairs (planted ones) */
    uint64_t *token_counts; /* [V]: each token's count in the train split, for --heads-every */
    Planted planted;        /* --heads-every on the built-in corpus: its relations in the train split */
    size_t *heads_starts;   /* [B] where the measured batch's windows start, with planted relations */
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

/* train_setup.c. A fresh run: its data (the --data file or the built-in corpus,
 * encoded and split), its model (config_validate, a memory check) and trainer. */
void run_setup_fresh(Run *r);
/* Reads the checkpoint to resume and takes its settings (train_options_resume);
 * the data is loaded later (run_load_resumed_data), once the outputs are known
 * to be safe to write. */
void run_open_resume(Run *r, const unsigned char *given, Tokenizer *tok);
/* A resumed run's data (the checkpoint's, unchanged, or --data's), encoded with
 * the checkpoint's tokenizer tok. */
void run_load_resumed_data(Run *r, const unsigned char *given, const Tokenizer *tok);
/* --print-settings with --resume: the resumed run's settings, once the
 * checkpoint, the flags and the data have passed a real resume's checks; exits. */
void run_print_resumed_settings(Run *r, const unsigned char *given) __attribute__((noreturn));
/* The trainer's step settings and activations, the batches, and the buffers of
 * --heads-every and of summed micro-batches. */
void run_alloc_buffers(Run *r);
/* Every rank must train on the same bytes; a rank that does not is an error. */
void run_check_same_data(const Run *r);
/* --dump-val: writes the validation split and returns the exit status. */
int run_dump_val(Run *r, const unsigned char *given);
/* Error exits: releases the locks, then ends every rank (dist_abort). */
void run_abort(int code) __attribute__((noreturn));

/* train_files.c. Before anything is written: every output checked against
 * every input, the checkpoints and the log locked, leftovers reported. */
void run_claim_outputs(Run *r);
/* With --keep-best, names the best checkpoint (files.best) after --out:
 * x.ckpt -> x.best.ckpt, anything else -> anything.best. */
void run_name_best(Run *r);
/* Opens the log: a resumed run's mended and appended to, a fresh run's a
 * temporary beside it until run_place_log. */
void run_open_log(Run *r);
/* A fresh log's first record is written: fsync it and rename it into place. */
void run_place_log(Run *r);

/* train_finish.c. After the last step (from step start, trained in train_s of
 * the t0-started run): the final save, evaluation and summary. */
void run_finish(Run *r, long start, double t0, double train_s);
/* Frees what the run holds, tok (the resumed checkpoint's tokenizer) included. */
void run_free(Run *r, Tokenizer *tok);

#endif
