/* flags: the one flag engine of ./train and ./infer. A program declares its flags
 * as rows (Flag, below) in a table (FlagTable) over a struct of values; from the
 * rows come the getopt_long parser with its range checks, the record of which
 * flags were given, the refusal of an empty path, the --help lines, the check
 * that a flag suits the chosen mode, and what --resume does with each flag.
 * ./train's rows are TRAIN_FLAGS (app/train/train_options.h), ./infer's
 * INFER_FLAGS (app/infer/infer_modes.h). What the flags mean, and the rules that
 * tie two flags together, stay with the programs. */
#ifndef HEADCOUNT_FLAGS_H
#define HEADCOUNT_FLAGS_H

#include <stddef.h>
#include <stdint.h>

/* How a flag's value is parsed, printed and held:
 *   LONG long, REAL double, F32 a double the program uses as a float32 (two
 *   values are the same when their floats are), SEED uint64_t;
 *   PATH a file name (never empty), PATHS one file name per use of a flag that
 *   may be repeated (a FlagPaths), TEXT any string, NAME a string from the
 *   row's names (the const char * of names held), CHOICE the int index of a
 *   name from the row's names, SWITCH an int set to 1, taking no value. */
typedef enum {
    FLAG_LONG, FLAG_REAL, FLAG_F32, FLAG_SEED, FLAG_PATH, FLAG_PATHS, FLAG_TEXT, FLAG_NAME,
    FLAG_CHOICE, FLAG_SWITCH
} FlagType;

/* What --resume does with a flag (flags_resume):
 *   RUN     nothing: it belongs to this invocation;
 *   AGREE   the value comes from the checkpoint, and a flag that gives another is a
 *           usage error naming both values and the row's resume_why;
 *   CHANGE  the value comes from the checkpoint unless the flag is given;
 *   FRESH   only a fresh run takes it: given with --resume, a usage error whose
 *           text is the row's resume_why and the checkpoint's path;
 *   EITHER  a switch that is on when the flag or the checkpoint turns it on. */
typedef enum {
    FLAG_RESUME_RUN, FLAG_RESUME_AGREE, FLAG_RESUME_CHANGE, FLAG_RESUME_FRESH,
    FLAG_RESUME_EITHER
} FlagResume;

/* The most values a PATHS flag takes. */
#define FLAG_PATHS_MAX 16

/* A PATHS flag's values in the order given. */
typedef struct {
    const char *path[FLAG_PATHS_MAX];
    int n;
} FlagPaths;

/* A row: one flag. A field the row leaves out is 0 (NULL, none). */
typedef struct {
    const char *flag;       /* long flag, without "--" */
    const char *alias;      /* an older long name the parser also takes, or NULL; --help
                             * names it on a line of its own under the row's */
    char short_flag;        /* or 0 */
    const char *key;        /* the value's name in JSON (./train's --print-settings, log) */
    FlagType type;
    size_t at;              /* offset of the value in the program's struct of values */
    double def;             /* default of a number, switch or CHOICE */
    const char *def_str;    /* default of a PATH, TEXT or NAME (NULL: none) */
    const char *const *names; /* NAME and CHOICE: the accepted values, NULL-terminated */
    double lo, hi;          /* the range a LONG, REAL or F32 takes */
    int zero_off;           /* 0, the default, means off or automatic: a LONG takes 0 too, and
                             * a REAL refuses a number that would be 0 only by underflow */
    int mode;               /* the mode this flag chooses (a bit), 0 for an option */
    int modes;              /* the modes it works in, refused in the others; 0: any */
    const char *why;        /* what a mode refusal adds after "--X needs --MODE ..." */
    int many;               /* PATHS: the modes that take it more than once */
    FlagResume resume;
    const char *resume_why; /* AGREE: why the checkpoint's value holds; FRESH: the refusal */
    int show_def;           /* --help shows the default value */
    const char *def_text;   /* the default as --help words it (before show_def) */
    const char *meta;       /* the value's name in --help ("" or NULL for a switch) */
    int section;            /* the --help group the program prints it under */
    const char *help;       /* --help text; a line break continues it on the next line,
                             * and one at its end puts the default on a line of its own */
    const char *more;       /* lines of --help after the default ('\n' between), or NULL */
    int in_log;             /* ./train: a key of the log's settings record */
    const char *say;        /* ./train: its name in the start-up settings line, or NULL */
} Flag;

/* A program's flags. --help (-h) and --version are the engine's: it calls usage,
 * or prints version, and exits 0. The program's other switches that hold no
 * value (./train's --print-settings) are named in extra: given[n + k] records
 * extra[k]. */
typedef struct {
    const Flag *rows;
    int n;
    const char *const *extra; /* NULL-terminated long names, or NULL */
    void (*usage)(void);      /* prints --help */
    const char *version;      /* the --version line */
    int default_mode;         /* the mode when no mode flag is given (0: no modes) */
} FlagTable;

/* The most rows and extra switches a table may have. */
#define FLAGS_MAX 64

/* Every row's value at its default (other fields of values are left alone). */
void flags_defaults(const FlagTable *t, void *values);

/* Parses argv into values (defaults first) and sets given[i] for each row or
 * extra switch given (given holds t->n + the extras, zeroed by the caller); a
 * bad value, an unknown option, a missing value or a stray argument is a usage
 * error (exit 2). */
void flags_parse(const FlagTable *t, int argc, char **argv, void *values, unsigned char *given);

/* The value as --help and messages print it: numbers in the fewest digits that
 * read back exactly, a path not given "none", a switch "on" or "off". */
void flags_format(const Flag *f, const void *values, char *buf, size_t len);

/* Whether the values of row f in a and b are the same (F32 as floats). */
int flags_same(const Flag *f, const void *a, const void *b);

/* The --help lines of the rows in section, defaults as values holds them. */
void flags_print_section(const FlagTable *t, int section, const void *values);

/* The mode the given mode flags choose (t->default_mode when none), after
 * refusing a flag that would do nothing in it: one given outside its modes
 * ("--X needs --MODE META"), or a PATHS flag repeated outside its many. */
int flags_check_modes(const FlagTable *t, const void *values, const unsigned char *given);

/* --resume over every row by its rule: have holds the checkpoint's values (the
 * rows it does not hold are never read), values the command line's; ckpt names
 * the checkpoint for FRESH's refusal. */
void flags_resume(const FlagTable *t, void *values, const void *have,
                  const unsigned char *given, const char *ckpt);

#endif
