/* config: dimension validation and the parameter count (see config.h). */
#include "model/config.h"

#include <stdint.h>

#include "util/errbuf.h"

const char *const precision_names[PRECISION_COUNT + 1] = {"fp32", "bf16", NULL};

static int check_range(const char *name, int v, int lo, int hi, char *err, size_t errlen)
{
    if (v < lo || v > hi)
        return err_set(err, errlen, "%s must be in [%d, %d], got %d", name, lo, hi, v);
    return 0;
}

/* Computed in uint64 from validated ints, so no product can overflow. */
static uint64_t param_count_u64(const Config *c)
{
    uint64_t V = (uint64_t)c->V, T = (uint64_t)c->T, C = (uint64_t)c->C;
    uint64_t A = (uint64_t)c->H * (uint64_t)c->D;
    uint64_t per_layer = 2 * C                 /* ln1 */
                         + 3 * A * C + 3 * A   /* qkv */
                         + C * A + C           /* proj */
                         + 2 * C               /* ln2 */
                         + 4 * C * C + 4 * C   /* fc */
                         + C * 4 * C + C;      /* fcproj */
    uint64_t gates = c->gates ? (uint64_t)c->L * (uint64_t)c->H : 0;
    uint64_t router = c->route_k ? (uint64_t)c->L * (uint64_t)c->H * (C + 1) : 0;
    return V * C + T * C + (uint64_t)c->L * per_layer + 2 * C + gates + router;
}

int config_validate(const Config *c, char *err, size_t errlen)
{
    if (check_range("vocabulary size V", c->V, 1, CONFIG_MAX_VOCAB, err, errlen) ||
        check_range("block size T", c->T, 1, CONFIG_MAX_BLOCK, err, errlen) ||
        check_range("layers L", c->L, 1, CONFIG_MAX_LAYERS, err, errlen) ||
        check_range("heads H", c->H, 1, CONFIG_MAX_HEADS, err, errlen) ||
        check_range("embedding width C", c->C, 1, CONFIG_MAX_EMBD, err, errlen) ||
        check_range("head size D", c->D, 1, CONFIG_MAX_HEAD_SIZE, err, errlen) ||
        check_range("head gates", c->gates, 0, 1, err, errlen) ||
        check_range("routed heads K", c->route_k, 0, c->H, err, errlen))
        return -1;
    if ((uint64_t)c->H * (uint64_t)c->D > CONFIG_MAX_EMBD * 2ULL)
        return err_set(err, errlen, "attention width H*D = %d*%d exceeds %d", c->H, c->D,
                       CONFIG_MAX_EMBD * 2);
    uint64_t n = param_count_u64(c);
    if (n > CONFIG_MAX_PARAMS)
        return err_set(err, errlen, "model has %llu parameters, more than the limit %zu",
                       (unsigned long long)n, CONFIG_MAX_PARAMS);
    return 0;
}

int config_head_size(int C, int H)
{
    return C % H == 0 ? C / H : 0;
}

size_t config_param_count(const Config *c)
{
    return (size_t)param_count_u64(c);
}
