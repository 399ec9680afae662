/* bigbuf: see bigbuf.h. calloc, then madvise(MADV_HUGEPAGE) on the whole 2 MiB
 * pages inside the block: a large calloc gets fresh pages straight from mmap without
 * writing them, so the first touch (in the first step) faults in huge pages where the
 * system's transparent huge pages are set to "madvise" or "always". Where the advice
 * is refused or unknown the buffer is the plain calloc one: nothing depends on it.
 * The block returned starts on a 64-byte line: calloc's own pointer is kept in the
 * line before it, for bigbuf_free. */
#include "util/bigbuf.h"

#include <stdint.h>
#include <stdlib.h>

#ifdef __linux__
#include <sys/mman.h>
#endif

enum { HUGE_PAGE = 2 << 20, LINE = 64 };

float *bigbuf_alloc(size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(float);
    if (bytes > SIZE_MAX - 2 * LINE)
        return NULL;
    char *raw = calloc(1, bytes + 2 * LINE);
    if (!raw)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + 2 * LINE - 1) & ~(uintptr_t)(LINE - 1));
    ((char **)p)[-1] = raw;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= 2 * (size_t)HUGE_PAGE) {
        uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
        if (hi > lo)
            (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
#endif
    return (float *)p;
}

void bigbuf_free(float *p)
{
    if (p)
        free(((char **)p)[-1]);
}
