/* scratch: see scratch.h. */
#include "util/scratch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    float *p[SCRATCH_SLOTS];
    size_t n[SCRATCH_SLOTS];
} Scratch;

/* The thread's buffers, found quickly through a thread-local pointer; the key only
 * frees them when the thread ends (the main thread's last until the process does). */
static _Thread_local Scratch *mine;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void scratch_release(void *v)
{
    Scratch *s = v;
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        free(s->p[i]);
    free(s);
}

static void key_create(void)
{
    if (pthread_key_create(&key, scratch_release) != 0) {
        fputs("headcount: cannot create the kernels' per-thread workspace\n", stderr);
        exit(1);
    }
}

static void out_of_memory(size_t n)
{
    fprintf(stderr, "headcount: out of memory for a kernel's workspace (%zu floats)\n", n);
    exit(1);
}

float *scratch_floats(int slot, size_t n)
{
    if (!mine) {
        pthread_once(&key_once, key_create);
        mine = calloc(1, sizeof *mine);
        if (!mine || pthread_setspecific(key, mine) != 0)
            out_of_memory(n);
    }
    if (mine->n[slot] < n) {
        size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
        free(mine->p[slot]);
        mine->p[slot] = aligned_alloc(64, bytes ? bytes : 64);
        mine->n[slot] = mine->p[slot] ? n : 0;
        if (!mine->p[slot])
            out_of_memory(n);
    }
    return mine->p[slot];
}
