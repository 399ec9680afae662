/* settings: the table of ./train's settings, generated from TRAIN_SETTINGS, and
 * the copies between a run's values and the structs that hold them (see
 * settings.h). */
#include "trainer/settings.h"

#include <string.h>

#include "trainer/adamw.h"
#include "trainer/ckpt.h"
#include "trainer/trainer.h"

#define ROW_RUN(ID, field, ctype, ...)                                                        \
    [SETTING_##ID] = {.key = #field, .at = offsetof(TrainSettings, field),                    \
                      .size = sizeof(ctype), __VA_ARGS__},
#define ROW_STORED(ID, field, ctype, ...)                                                     \
    [SETTING_##ID] = {.key = #field, .at = offsetof(TrainSettings, field),                    \
                      .size = sizeof(ctype), .stored = 1,                                     \
                      .state_at = offsetof(TrainState, field), __VA_ARGS__},
#define ROW_STEP(ID, field, ctype, ...)                                                       \
    [SETTING_##ID] = {.key = #field, .at = offsetof(TrainSettings, field),                    \
                      .size = sizeof(ctype), .stored = 1, .step = 1,                          \
                      .state_at = offsetof(TrainState, field),                                \
                      .hyper_at = offsetof(TrainHyper, field), __VA_ARGS__},
const Setting settings_table[SETTING_COUNT] = {TRAIN_SETTINGS(ROW_RUN, ROW_STORED, ROW_STEP)};

static void *value_at(TrainSettings *v, const Setting *s)
{
    return (char *)v + s->at;
}

static const void *cvalue_at(const TrainSettings *v, const Setting *s)
{
    return (const char *)v + s->at;
}

void settings_defaults(TrainSettings *v)
{
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        void *p = value_at(v, s);
        switch (s->type) {
        case SET_LONG: *(long *)p = (long)s->def; break;
        case SET_REAL:
        case SET_F32: *(double *)p = s->def; break;
        case SET_SEED: *(uint64_t *)p = (uint64_t)s->def; break;
        case SET_PATH:
        case SET_NAME: *(const char **)p = s->def_str; break;
        case SET_SWITCH:
        case SET_CHOICE: *(int *)p = (int)s->def; break;
        }
    }
}

double settings_min(const Setting *s)
{
    return s->zero_off && s->lo > 0 ? 0 : s->lo;
}

/* A stored field has the value's own C type in both structs, except that an F32
 * setting is stored as the float32 the optimizer uses. */
void settings_store(const TrainSettings *v, TrainState *ts)
{
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        if (!s->stored)
            continue;
        char *p = (char *)ts + s->state_at;
        if (s->type == SET_F32)
            *(double *)p = (double)(float)*(const double *)cvalue_at(v, s);
        else
            memcpy(p, cvalue_at(v, s), s->size);
    }
}

void settings_load_one(const TrainState *ts, const Setting *s, TrainSettings *v)
{
    if (s->stored)
        memcpy(value_at(v, s), (const char *)ts + s->state_at, s->size);
}

void settings_config(const TrainSettings *v, Config *cfg)
{
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        if (s->resume == RES_ARCH)
            *(int *)((char *)cfg + s->cfg_at) = (int)*(const long *)cvalue_at(v, s);
    }
}

void settings_hyper(const TrainSettings *v, TrainHyper *hp)
{
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        const void *x = cvalue_at(v, s);
        if (s->to_adam)
            *(float *)((char *)&hp->adam + s->adam_at) = (float)*(const double *)x;
        if (!s->step)
            continue;
        char *p = (char *)hp + s->hyper_at;
        switch (s->type) {
        case SET_REAL:
        case SET_F32: *(float *)p = (float)*(const double *)x; break;
        case SET_LONG: *(long *)p = *(const long *)x; break;
        case SET_SEED: *(uint64_t *)p = *(const uint64_t *)x; break;
        default: break;
        }
    }
}
