/* train_options: ./train's command line over the settings table of
 * trainer/settings.h (TRAIN_SETTINGS, where every setting is declared once):
 * the option ids, --help, --print-settings, parsing with range checks, the
 * resume rules and the settings as the log and the start-up line show them.
 * Setting up and running the training is left to train.c and app/train/train_loop.c. */
#ifndef HEADCOUNT_TRAIN_OPTIONS_H
#define HEADCOUNT_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "trainer/ckpt.h"
#include "trainer/settings.h"

/* The values of a run's settings, as the command line gives them. */
typedef TrainSettings Options;

/* Option ids: given[id] says whether the command line set it. The settings come
 * first, in the table's order (OPT_x = OPT_FIRST + 1 + SETTING_x), then the
 * program's own flags. */
enum {
    OPT_FIRST = 256,
#define OPT_ID(ID, field, ctype, ...) OPT_##ID,
    TRAIN_SETTINGS(OPT_ID, OPT_ID, OPT_ID)
#undef OPT_ID
    OPT_HELP, OPT_VERSION, OPT_PRINT_SETTINGS, OPT_COUNT
};

/* Parses argv into o (defaults first) and marks the flags given; --help,
 * --version and --print-settings print and exit 0, a bad value exits 2. */
void train_options_parse(int argc, char **argv, Options *o, unsigned char given[OPT_COUNT]);

/* --resume: takes from the checkpoint every setting it fixes (ARCH, KEEP, and
 * CHANGE ones not given); a given flag that disagrees with an ARCH or KEEP value
 * is a usage error naming both values. */
void train_options_resume(Options *o, const unsigned char *given, const Config *c,
                          const TrainState *ts);

/* The settings marked in_log as JSON members ("batch":12,"steps":2000,...), for
 * the log's settings record. */
void train_options_record(const Options *o, char *buf, size_t len);

/* The settings that have a name to say, as ", wd 0.1, clip 1, ...", for the
 * settings line on stderr. */
void train_options_say(const Options *o, char *buf, size_t len);

/* Whether the built-in corpus is the induction task (--corpus induction). */
int train_is_induction(const Options *o);

#endif
