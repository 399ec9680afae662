/* bigbuf: zeroed, writable, line-aligned buffers of every size, the huge-page advice
 * included. */
#include <criterion/criterion.h>

#include <stddef.h>
#include <stdint.h>

#include "util/bigbuf.h"

Test(bigbuf, buffers_of_any_size_start_zeroed_aligned_and_take_writes)
{
    /* 0 (one float), small heap blocks, and blocks past 4 MiB, which get the advice,
     * with a size that is not a whole number of 2 MiB pages. */
    static const size_t sizes[] = { 0, 1, 1000, (size_t)1 << 20, ((size_t)3 << 20) + 12345 };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s] ? sizes[s] : 1;
        float *p = bigbuf_alloc(sizes[s]);
        cr_assert_not_null(p, "bigbuf_alloc(%zu)", sizes[s]);
        cr_assert_eq((uintptr_t)p % 64, 0, "bigbuf_alloc(%zu) is not on a 64-byte line",
                     sizes[s]);
        size_t nonzero = 0;
        for (size_t i = 0; i < n; i++)
            nonzero += p[i] != 0.0f;
        cr_assert_eq(nonzero, 0, "bigbuf_alloc(%zu): %zu floats not zero", sizes[s], nonzero);
        for (size_t i = 0; i < n; i++)
            p[i] = (float)(i % 97);
        cr_assert_eq(p[n - 1], (float)((n - 1) % 97));
        bigbuf_free(p);
    }
    bigbuf_free(NULL);
}
