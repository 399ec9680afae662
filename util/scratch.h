/* scratch: per-thread working memory for the matmul kernels' packed panels.
 *
 * The kernels copy blocks of their operands into contiguous buffers of up to 512 KiB
 * (docs/matmul.md). Kept on the stack, those buffers crashed any thread whose stack
 * was smaller than about 600 KiB (OMP_STACKSIZE=400K, or `ulimit -s 256` for the
 * main thread); here each thread keeps its own buffers on the heap instead, made on
 * its first call and reused by every later one, and freed when the thread ends. The
 * values computed do not depend on where the buffers live. */
#ifndef HEADCOUNT_SCRATCH_H
#define HEADCOUNT_SCRATCH_H

#include <stddef.h>

/* Independent buffers a caller may hold at once. */
enum { SCRATCH_SLOTS = 6 };

/* The calling thread's buffer `slot` (0 .. SCRATCH_SLOTS-1), at least n floats,
 * 64-byte aligned, contents undefined; valid until the thread's next call for the same
 * slot. Never NULL: when memory runs out it prints one line and exits with status 1. */
float *scratch_floats(int slot, size_t n);

#endif
