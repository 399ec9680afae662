/* train_options: ./train's command line over the settings table of
 * trainer/settings.h (TRAIN_SETTINGS, where every setting is declared once),
 * read through the flag engine (app/common/flags.h): --help, --print-settings,
 * the built-in corpora's recipes (RECIPES), parsing, the resume rules and the
 * settings as the log and the start-up line show them.
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

/* A row of a built-in corpus' recipe: the value a run on that corpus gives the
 * setting when its flag is not given (a number: the setting is a LONG or REAL).
 * "text" is the built-in text corpus (no --data, no --corpus), "induction"
 * --corpus induction; --data runs take the plain defaults. */
typedef struct {
    const char *corpus;
    int setting;            /* SETTING_x */
    double value;
} Recipe;

extern const Recipe train_recipes[];
extern const int train_recipe_count;

/* given[SETTING_x] says whether the command line set setting x;
 * given[GIVEN_PRINT_SETTINGS] whether it asked for --print-settings. */
enum { GIVEN_PRINT_SETTINGS = SETTING_COUNT, GIVEN_COUNT };

/* Parses argv into o (defaults first, then the built-in corpus' recipe for each
 * setting not given) and marks the flags given; --help, --version and
 * --print-settings (without --resume) print and exit 0, a bad value exits 2. */
void train_options_parse(int argc, char **argv, Options *o, unsigned char given[GIVEN_COUNT]);

/* --resume from checkpoint ckpt (cfg, ts) on `ranks` processes: applies every
 * setting's resume rule (trainer/settings.h, SetResume) through the flag engine,
 * taking the architecture, the training state, the data, the micro-batches a
 * step and the output from the checkpoint. A flag that contradicts the
 * checkpoint is a usage error naming both values, and so is --heads-every
 * (given, or kept from the checkpoint) without --log. */
void train_options_resume(Options *o, const unsigned char *given, const Config *cfg,
                          const TrainState *ts, long ranks, const char *ckpt);

/* --print-settings: the settings o holds as one JSON object on stdout, then
 * exit 0 (a failed write to stdout is exit 1). */
void train_options_print(const Options *o) __attribute__((noreturn));

/* The settings marked in_log as JSON members ("batch":12,"steps":2000,...), for
 * the log's settings record. */
void train_options_record(const Options *o, char *buf, size_t len);

/* The settings that have a name to say, as ", wd 0.1, clip 1, ...", for the
 * settings line on stderr. */
void train_options_say(const Options *o, char *buf, size_t len);

/* Whether the built-in corpus is the induction task (--corpus induction). */
int train_is_induction(const Options *o);

#endif
