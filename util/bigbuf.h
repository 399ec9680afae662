/* bigbuf: zeroed float buffers for the large, long-lived arrays (parameters,
 * gradients, Adam moments, activations), backed by 2 MiB pages where the kernel
 * allows it.
 *
 * A training step streams through hundreds of MiB of these arrays; on 4 KiB pages
 * the address translations miss the TLB on every new page (NANO's step ran 5-6 %
 * faster on 2 MiB pages, docs/matmul.md). The values are those of calloc; only how
 * the memory is mapped differs. Free with bigbuf_free. */
#ifndef HEADCOUNT_BIGBUF_H
#define HEADCOUNT_BIGBUF_H

#include <stddef.h>

/* n zeroed floats (n = 0: one) starting on a 64-byte boundary, or NULL when out of
 * memory. */
float *bigbuf_alloc(size_t n);

void bigbuf_free(float *p);

#endif
