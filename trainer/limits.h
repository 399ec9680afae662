/* limits: the ranges of the training settings a checkpoint stores.
 *
 * ./train checks its flags against these, and the checkpoint reader checks the
 * values it loads against the same numbers, so a setting that no flag could
 * have produced is refused on resume too. Architecture limits are in config.h. */
#ifndef HEADCOUNT_LIMITS_H
#define HEADCOUNT_LIMITS_H

#include "data/bpe.h"

#define LIMIT_VOCAB_MAX TOK_VOCAB_MAX   /* --vocab */
#define LIMIT_STEPS_MAX 100000000L      /* --steps, --warmup, --eval-every, --save-every */
#define LIMIT_BATCH_MAX 65536L          /* --batch */
#define LIMIT_EVAL_ITERS_MAX 100000L    /* --eval-iters (at least 1) */
#define LIMIT_LR_MIN 1e-9               /* --lr */
#define LIMIT_LR_MAX 10.0               /* --lr, --min-lr, --wd */
#define LIMIT_CLIP_MAX 1e6              /* --clip */
#define LIMIT_DROPOUT_MAX 0.95          /* --dropout, --head-dropout */
#define LIMIT_VAL_FRAC_MAX 0.9          /* --val-frac */
#define LIMIT_BETA_MAX 0.9999999        /* --beta1, --beta2 */
#define LIMIT_EPS_MIN 1e-30             /* --eps, up to 1 */
#define LIMIT_ACCUM_MAX 4096L           /* micro-batches per step (--accum times ranks) */
#define LIMIT_HEAD_GATES_MAX 100.0      /* --head-gates */
#define LIMIT_ROUTE_BALANCE_MAX 100.0   /* --routing-balance */
#define LIMIT_POS_STD_MAX 10.0          /* --pos-std (a fresh run's init; not stored) */

#endif
