/* schedule: the learning rate at each step.
 * Linear warm-up over the first `warmup` steps (step s gets lr (s+1)/warmup),
 * then cosine decay from lr to min_lr, reaching min_lr at the last step
 * (steps - 1). Steps are 0-based. */
#ifndef HEADCOUNT_SCHEDULE_H
#define HEADCOUNT_SCHEDULE_H

float schedule_lr(long step, long steps, long warmup, float lr, float min_lr);

#endif
