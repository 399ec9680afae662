/* ckpt_fixture: what the checkpoint tests (test_ckpt.c, test_ckpt_damage.c)
 * share: the format's byte offsets as docs/checkpoint.md documents them, a tiny
 * model with a full training state saved in a scratch directory, and reading,
 * overwriting and resealing a file's bytes. */
#ifndef HEADCOUNT_CKPT_FIXTURE_H
#define HEADCOUNT_CKPT_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "trainer/ckpt.h"

/* Format v1 layout (docs/checkpoint.md); in format 2 the merges come at
 * MERGES_AT, 4 bytes each, and everything after moves on by 4M. */
#define HDR_BYTES 1024
#define VOCAB_AT 1024
#define PARAMS_AT 1280
#define MERGES_AT 1280
#define STATE_INTS_AT 8      /* from the start of the state section */
#define STATE_DOUBLES_AT 264
#define STATE_PATH_AT 520
#define STATE_ADAM_AT 1032

/* Tiny on purpose (D != C/H to cover head_size): every truncation point is tried. */
extern const Config TINY;
extern const unsigned char TINY_VOCAB[5];
#define TINY_NMERGES 3
extern const BpeMerge TINY_MERGES[TINY_NMERGES];

typedef struct {
    Model m;
    Tokenizer tok;
    TrainState ts;
    float *adam_m, *adam_v; /* the moments ts points at */
    char dir[256], path[400];
} Fix;

/* A model (params_init seed 42), its tokenizer, moments and settings, with
 * f->path (model.ckpt) in a fresh directory f->dir. */
void fix_init(Fix *f, const char *name);
/* The same with TINY_MERGES (V = 8): a format-2 checkpoint. */
void fix_init_merges(Fix *f, const char *name);
/* The same with head gates (Config.gates, training state head_gates 0.01). */
void fix_init_gated(Fix *f, const char *name);
/* The same routed to K = 1 of its 2 heads (Config.route_k; router.w (2, 4) and
 * router.b (1, 2), the last 40 bytes of the parameters; routing_balance 0.01). */
void fix_init_routed(Fix *f, const char *name);
void fix_free(Fix *f);
/* Saves f to path, with its training state or without (then 7 steps). */
void fix_save(Fix *f, const char *path, int with_state);

/* Writes b[0..n) over path in place (no O_TRUNC). */
void put_bytes(const char *path, const unsigned char *b, size_t n);
/* The whole file (malloc'd); the test fails when it cannot be read. */
unsigned char *slurp(const char *path, size_t *n);
/* v's bytes at b + at, as the format stores them (little-endian). */
void put_i32(unsigned char *b, size_t at, int32_t v);
void put_u16(unsigned char *b, size_t at, uint16_t v);
void put_i64(unsigned char *b, size_t at, int64_t v);
void put_f64(unsigned char *b, size_t at, double v);
void put_f32(unsigned char *b, size_t at, float v);
/* Recomputes the trailing FNV-1a checksum of a file of n bytes with training
 * state, so that a damaged file reaches the check after the checksum's. */
void reseal(unsigned char *b, size_t n);

#endif
