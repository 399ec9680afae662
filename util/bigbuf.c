/* bigbuf: see bigbuf.h. calloc, then madvise(MADV_HUGEPAGE) on the whole 2 MiB
 * pages inside the block: a large calloc gets fresh pages straight from mmap without
 * writing them, so the first touch (in the first step) faults in huge pages where the
 * system's transparent huge pages are set to "madvise" or "always". Where the advice
 * is refused or unknown the buffer is the plain calloc one: nothing depends on it. */
#include "util/bigbuf.h"

#include <stdint.h>
#include <stdlib.h>

#ifdef __linux__
#include <sys/mman.h>
#endif

enum { HUGE_PAGE = 2 << 20 };

float *bigbuf_alloc(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p && n * sizeof(float) >= 2 * (size_t)HUGE_PAGE) {
        uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        uintptr_t hi = ((uintptr_t)p + n * sizeof(float)) & ~(uintptr_t)(HUGE_PAGE - 1);
        if (hi > lo)
            (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
#endif
    return p;
}

void bigbuf_free(float *p)
{
    free(p);
}
