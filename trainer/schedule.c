/* schedule: warm-up then cosine decay (see schedule.h). */
#include "trainer/schedule.h"

#include <math.h>

float schedule_lr(long step, long steps, long warmup, float lr, float min_lr)
{
    if (step < warmup)
        return lr * (float)(step + 1) / (float)warmup;
    long span = steps - 1 - warmup;
    if (span <= 0)
        return min_lr;
    double ratio = (double)(step - warmup) / (double)span;
    if (ratio > 1.0)
        ratio = 1.0;
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * ratio));
    return (float)(min_lr + coeff * (lr - min_lr));
}
