/* train: trains a headcount model on a text file (or the built-in corpus).
 *
 * The whole program: read the flags (app/train/train_options), check before
 * anything is written that every output is safe to write (train_files), build
 * the trainer fresh or from a checkpoint (train_setup), run the loop
 * (train_loop) and finish (train_finish: the final save, the whole-split
 * evaluation, the summary). The maths is in model/, the data in data/.
 * Checkpoints carry the training state, so --resume continues bit-exactly. */
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/common/cli.h"
#include "app/train/dist.h"
#include "app/train/train_options.h"
#include "app/train/train_run.h"

int main(int argc, char **argv)
{
    cli_prog = "train";
    cli_hold_std_fds();
    cli_bounded_spin_openmp(argv);
    /* On the heap: its path buffers would take tens of KiB of the main thread's
     * stack, which the kernels' frames need (tests/test_train.c runs it small). */
    Run *r = calloc(1, sizeof *r);
    if (!r)
        cli_fail("out of memory");
    r->files.lock.fd = r->files.best_lock.fd = r->files.log_lock.fd = r->files.log_fd = -1;
    r->files.last_saved = r->files.resumed_step = -1;
    if (dist_init(&r->dist, &argc, &argv))
        cli_fail("cannot start MPI");
    if (r->dist.size > 1) {
        /* Rank 0 speaks for the job; the others report only their errors. */
        static char prog[32];
        cli_set_exit(run_abort);
        if (!run_lead(r)) {
            snprintf(prog, sizeof prog, "train[rank %d]", r->dist.rank);
            cli_prog = prog;
            int fd = dup(STDERR_FILENO);
            FILE *err = fd >= 0 ? fdopen(fd, "w") : NULL;
            if (err && freopen("/dev/null", "w", stderr))
                cli_set_error_stream(err);
        }
    }
    unsigned char given[GIVEN_COUNT] = {0};
    train_options_parse(argc, argv, &r->o, given);
    Bf16Path bf16_path = cli_bf16_path();
    if (r->o.threads)
        omp_set_num_threads((int)r->o.threads);
    run_watch_signals(r);
    if (given[GIVEN_PRINT_SETTINGS])
        run_print_resumed_settings(r, given); /* a fresh run's were printed by the parser */
    if (r->o.dump_val) {
        int rc = run_lead(r) ? run_dump_val(r, given) : 0;
        dist_finish(&r->dist);
        run_watch_signals(NULL);
        free(r);
        return rc;
    }
    run_release_at_exit();
    Tokenizer tok;
    memset(&tok, 0, sizeof tok);
    if (r->o.resume)
        run_open_resume(r, given, &tok);
    r->loop.micro = r->o.accum * r->dist.size;
    run_claim_outputs(r);
    if (r->o.resume)
        run_load_resumed_data(r, given, &tok);
    else
        run_setup_fresh(r);
    run_check_same_data(r);
    run_alloc_buffers(r);
    run_open_log(r);
    long start = r->tr.step;
    run_print_settings(r);
    r->tr.model.bf16_path = bf16_path;
    if (r->tr.model.precision == PRECISION_BF16 && run_lead(r))
        cli_say_bf16(bf16_path);
    run_place_log(r);
    if (dist_any(&r->dist, r->stop.signal)) {
        int sig = r->stop.signal ? r->stop.signal : SIGINT;
        const char *how = sig == SIGINT ? "interrupted" : "terminated";
        if (r->files.log_fd >= 0)
            fprintf(stderr, "train: %s before the first step; no checkpoint was written, and "
                    "the log %s holds this run's settings record\n", how, r->o.log);
        else
            fprintf(stderr, "train: %s before the first step; nothing was written\n", how);
        run_log_close(r, 1);
        run_exit(r, 128 + sig);
    }
    double t0 = cli_now();
    run_train_loop(r, start);
    run_finish(r, start, t0, cli_now() - t0);
    dist_finish(&r->dist);
    run_free(r, &tok);
    run_release_files(r);
    run_watch_signals(NULL);
    free(r);
    return 0;
}
