/* config: the model's dimensions and the limits they must respect.
 *
 * V vocabulary (bytes and merged tokens: at most CONFIG_MAX_VOCAB, which is
 * data/bpe.h's TOK_VOCAB_MAX; trainer/ckpt.c checks that the two agree),
 * T block size, L layers, H heads, C channels (residual width), D head size
 * (attention width is H*D, which need not equal C). The limits keep every size
 * computation far from overflow, so a checkpoint header that passes
 * config_validate can be trusted for sizes. gates says whether the model has
 * learned head gates (model/gates.h): one more parameter per layer and head.
 * route_k > 0 routes each token to K of the H heads of every layer (mixture of
 * heads, model/route.h), through a router of H (C + 1) parameters per layer;
 * 0 is plain attention, every head for every token. */
#ifndef HEADCOUNT_CONFIG_H
#define HEADCOUNT_CONFIG_H

#include <stddef.h>

#define CONFIG_MAX_VOCAB 32768
#define CONFIG_MAX_BLOCK 4096
#define CONFIG_MAX_LAYERS 64
#define CONFIG_MAX_HEADS 256
#define CONFIG_MAX_EMBD 8192
#define CONFIG_MAX_HEAD_SIZE 4096
/* At most 2^30 parameters (4 GiB of floats): a laptop cannot train more anyway. */
#define CONFIG_MAX_PARAMS ((size_t)1 << 30)

typedef struct {
    int V, T, L, H, C, D;
    int gates;  /* 0 or 1: the model has a log_alpha per layer and head */
    int route_k; /* 0 (off) or K in [1, H]: heads each token uses per layer */
} Config;

/* 0 if every dimension is in range and the parameter count fits; else -1 with a message. */
int config_validate(const Config *cfg, char *err, size_t errlen);

/* The head size of C channels over H heads when none is given: C / H, or 0 when
 * H does not divide C (H >= 1). */
int config_head_size(int C, int H);

/* Number of float parameters (valid only for a validated config). */
size_t config_param_count(const Config *cfg);

/* The arithmetic of the model's large products (the four linear layers of a block and
 * the logits, forward and backward): fp32, or bf16 (their operands rounded to
 * bfloat16, products summed in float32: kernels/bf16.h). Everything else is float32
 * in both. */
typedef enum { PRECISION_FP32, PRECISION_BF16, PRECISION_COUNT } Precision;

/* Their names (flags, logs), in the enum's order, then NULL. */
extern const char *const precision_names[PRECISION_COUNT + 1];

#endif
