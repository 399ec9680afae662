/* flags: the flag engine (see flags.h): parsing, --help lines, the mode check
 * and the resume rules over a program's rows. */
#include "app/common/flags.h"

#include <assert.h>
#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"

/* The getopt id of row i; the extra switches follow the rows, then --help and
 * --version. */
enum { ID_FIRST = 256 };

static void *value_of(void *values, const Flag *f)
{
    return (char *)values + f->at;
}

static const void *cvalue_of(const void *values, const Flag *f)
{
    return (const char *)values + f->at;
}

/* The size of the value a type holds. */
static size_t value_size(FlagType t)
{
    switch (t) {
    case FLAG_LONG: return sizeof(long);
    case FLAG_REAL:
    case FLAG_F32: return sizeof(double);
    case FLAG_SEED: return sizeof(uint64_t);
    case FLAG_PATH:
    case FLAG_TEXT:
    case FLAG_NAME: return sizeof(const char *);
    case FLAG_PATHS: return sizeof(FlagPaths);
    case FLAG_CHOICE:
    case FLAG_SWITCH: return sizeof(int);
    }
    return 0;
}

void flags_defaults(const FlagTable *t, void *values)
{
    for (int i = 0; i < t->n; i++) {
        const Flag *f = &t->rows[i];
        void *v = value_of(values, f);
        switch (f->type) {
        case FLAG_LONG: *(long *)v = (long)f->def; break;
        case FLAG_REAL:
        case FLAG_F32: *(double *)v = f->def; break;
        case FLAG_SEED: *(uint64_t *)v = (uint64_t)f->def; break;
        case FLAG_PATH:
        case FLAG_TEXT:
        case FLAG_NAME: *(const char **)v = f->def_str; break;
        case FLAG_PATHS: memset(v, 0, sizeof(FlagPaths)); break;
        case FLAG_CHOICE:
        case FLAG_SWITCH: *(int *)v = (int)f->def; break;
        }
    }
}

void flags_format(const Flag *f, const void *values, char *buf, size_t len)
{
    const void *v = cvalue_of(values, f);
    switch (f->type) {
    case FLAG_LONG: snprintf(buf, len, "%ld", *(const long *)v); break;
    case FLAG_REAL:
    case FLAG_F32: cli_format_double(buf, len, *(const double *)v); break;
    case FLAG_SEED: snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)v); break;
    case FLAG_PATH:
    case FLAG_TEXT:
    case FLAG_NAME:
        snprintf(buf, len, "%s", *(const char *const *)v ? *(const char *const *)v : "none");
        break;
    case FLAG_PATHS: {
        const FlagPaths *p = v;
        snprintf(buf, len, "%s", p->n ? p->path[0] : "none");
        break;
    }
    case FLAG_CHOICE: snprintf(buf, len, "%s", f->names[*(const int *)v]); break;
    case FLAG_SWITCH: snprintf(buf, len, "%s", *(const int *)v ? "on" : "off"); break;
    }
}

int flags_same(const Flag *f, const void *a, const void *b)
{
    const void *x = cvalue_of(a, f), *y = cvalue_of(b, f);
    switch (f->type) {
    case FLAG_LONG: return *(const long *)x == *(const long *)y;
    case FLAG_REAL: return *(const double *)x == *(const double *)y;
    case FLAG_F32: return (float)*(const double *)x == (float)*(const double *)y;
    case FLAG_SEED: return *(const uint64_t *)x == *(const uint64_t *)y;
    case FLAG_PATH:
    case FLAG_TEXT:
    case FLAG_NAME: {
        const char *p = *(const char *const *)x, *q = *(const char *const *)y;
        return p == q || (p && q && strcmp(p, q) == 0);
    }
    case FLAG_PATHS: return memcmp(x, y, sizeof(FlagPaths)) == 0;
    case FLAG_CHOICE:
    case FLAG_SWITCH: return *(const int *)x == *(const int *)y;
    }
    return 0;
}

/* A row's names as "a, b or c". */
static void name_list(const Flag *f, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; f->names[i] && k < len; i++) {
        const char *sep = i == 0 ? "" : f->names[i + 1] ? ", " : " or ";
        k += (size_t)snprintf(buf + k, len - k, "%s%s", sep, f->names[i]);
    }
}

/* The index of arg in the row's names; a name outside them is a usage error. */
static int name_index(const Flag *f, const char *arg)
{
    for (int k = 0; f->names[k]; k++)
        if (strcmp(arg, f->names[k]) == 0)
            return k;
    char list[256];
    name_list(f, list, sizeof list);
    cli_usage_error("--%s '%s': expected %s", f->flag, arg, list);
}

/* Whether the number s reads as 0 only because it is too small for a double. */
static int underflows_to_zero(const char *s)
{
    errno = 0;
    double v = strtod(s, NULL);
    return v == 0 && errno == ERANGE;
}

/* One flag's value from its argument, checked against the row's range. */
static void parse_value(const Flag *f, void *values, const char *arg)
{
    void *v = value_of(values, f);
    if ((f->type == FLAG_PATH || f->type == FLAG_PATHS) && !arg[0])
        cli_usage_error("--%s '': the path is empty; give a file name", f->flag);
    switch (f->type) {
    case FLAG_LONG:
        /* A zero_off flag takes 0 too: its default, or off (--vocab 0: bytes). */
        *(long *)v = f->zero_off && strcmp(arg, "0") == 0
                         ? 0
                         : cli_long(f->flag, arg, (long)f->lo, (long)f->hi);
        break;
    case FLAG_REAL:
    case FLAG_F32:
        *(double *)v = cli_double(f->flag, arg, f->lo, f->hi);
        /* Where 0 means off (--head-gates 0: no gates), a number too small for a
         * double (1e-400) must not turn the feature off unasked. */
        if (f->zero_off && *(double *)v == 0 && underflows_to_zero(arg))
            cli_usage_error("--%s: expected a number in [%g, %g], got '%s', which is too small "
                            "for a double and would be 0 (off)", f->flag, f->lo, f->hi, arg);
        break;
    case FLAG_SEED: *(uint64_t *)v = cli_u64(f->flag, arg); break;
    case FLAG_PATH:
    case FLAG_TEXT: *(const char **)v = arg; break;
    case FLAG_PATHS: {
        FlagPaths *list = v;
        if (list->n == FLAG_PATHS_MAX)
            cli_usage_error("--%s given more than %d times", f->flag, FLAG_PATHS_MAX);
        list->path[list->n++] = arg;
        break;
    }
    case FLAG_NAME: *(const char **)v = f->names[name_index(f, arg)]; break;
    case FLAG_CHOICE: *(int *)v = name_index(f, arg); break;
    case FLAG_SWITCH: *(int *)v = 1; break;
    }
}

void flags_parse(const FlagTable *t, int argc, char **argv, void *values, unsigned char *given)
{
    static struct option longs[2 * FLAGS_MAX + 3];
    static CliShort shorts[FLAGS_MAX + 1];
    static char shortopts[3 * FLAGS_MAX + 4];
    int nextra = 0;
    while (t->extra && t->extra[nextra])
        nextra++;
    assert(t->n + nextra <= FLAGS_MAX);
    const int id_help = ID_FIRST + t->n + nextra, id_version = id_help + 1;
    size_t nshorts = 0, k = 0;
    int nl = 0;
    shortopts[k++] = ':';
    for (int i = 0; i < t->n; i++) {
        const Flag *f = &t->rows[i];
        int arg = f->type == FLAG_SWITCH ? no_argument : required_argument;
        longs[nl++] = (struct option){f->flag, arg, 0, ID_FIRST + i};
        if (f->alias)
            longs[nl++] = (struct option){f->alias, arg, 0, ID_FIRST + i};
        if (f->short_flag) {
            shorts[nshorts++] = (CliShort){f->short_flag, ID_FIRST + i};
            shortopts[k++] = f->short_flag;
            if (arg == required_argument)
                shortopts[k++] = ':';
        }
    }
    for (int e = 0; e < nextra; e++)
        longs[nl++] = (struct option){t->extra[e], no_argument, 0, ID_FIRST + t->n + e};
    longs[nl++] = (struct option){"help", no_argument, 0, id_help};
    longs[nl++] = (struct option){"version", no_argument, 0, id_version};
    longs[nl] = (struct option){0, 0, 0, 0};
    shorts[nshorts++] = (CliShort){'h', id_help};
    shortopts[k++] = 'h';
    shortopts[k] = '\0';
    flags_defaults(t, values);
    int c;
    while ((c = cli_next_option(argc, argv, shortopts, longs, shorts, nshorts)) != -1) {
        if (c == id_help || c == id_version) {
            if (c == id_help)
                t->usage();
            else
                printf("%s\n", t->version);
            cli_close_stdout();
            exit(0);
        }
        if (c < ID_FIRST || c >= id_help)
            cli_usage_error("unknown option '%s'", argv[optind - 1]);
        given[c - ID_FIRST] = 1;
        if (c < ID_FIRST + t->n)
            parse_value(&t->rows[c - ID_FIRST], values, optarg);
    }
    if (optind < argc)
        cli_usage_error("unexpected argument '%s' (flags take the form --name value)",
                        argv[optind]);
}

/* One row's lines of --help: the flag and its value's name, the help text with
 * each line break continuing at the help column, the default, and `more`. */
static void print_row(const Flag *f, const void *values)
{
    char left[64], def[96] = "", value[64];
    const char *meta = f->meta ? f->meta : "";
    if (f->mode)
        snprintf(left, sizeof left, "  --%s %s", f->flag, meta);
    else if (f->short_flag)
        snprintf(left, sizeof left, "  -%c, --%s%s%s", f->short_flag, f->flag, *meta ? " " : "",
                 meta);
    else
        snprintf(left, sizeof left, "      --%s%s%s", f->flag, *meta ? " " : "", meta);
    if (f->def_text)
        snprintf(def, sizeof def, "(default: %s)", f->def_text);
    else if (f->show_def) {
        flags_format(f, values, value, sizeof value);
        snprintf(def, sizeof def, "(default: %s)", value);
    }
    printf("%-24s ", left);
    for (const char *p = f->help; *p; p++) {
        putchar(*p);
        if (*p == '\n' && p[1])
            printf("%-24s ", "");
    }
    size_t n = strlen(f->help);
    int own_line = n && f->help[n - 1] == '\n';
    if (def[0] && own_line)
        printf("%-24s %s\n", "", def);
    else if (def[0])
        printf(" %s\n", def);
    else if (!own_line)
        printf("\n");
    for (const char *m = f->more; m && *m;) {      /* a line each, under the help */
        size_t len = strcspn(m, "\n");
        printf("%-24s %.*s\n", "", (int)len, m);
        m += len + (m[len] == '\n');
    }
    if (f->alias)
        printf("%-24s (--%s, its old name, still works)\n", "", f->alias);
}

void flags_print_section(const FlagTable *t, int section, const void *values)
{
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].section == section)
            print_row(&t->rows[i], values);
}

/* The mode flags of modes, as "--eval FILE or --heads FILE". */
static void needed_modes(const FlagTable *t, int modes, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n && k < len; i++)
        if (t->rows[i].mode & modes)
            k += (size_t)snprintf(buf + k, len - k, "%s--%s %s", k ? " or " : "",
                                  t->rows[i].flag, t->rows[i].meta);
}

int flags_check_modes(const FlagTable *t, const void *values, const unsigned char *given)
{
    int mode = 0;
    for (int i = 0; i < t->n; i++)
        if (given[i])
            mode |= t->rows[i].mode;
    if (!mode)
        mode = t->default_mode;
    for (int i = 0; i < t->n; i++) {
        const Flag *f = &t->rows[i];
        char need[200];
        const FlagPaths *list = f->type == FLAG_PATHS ? cvalue_of(values, f) : NULL;
        if (list && list->n > 1 && !(f->many & mode)) {
            needed_modes(t, f->many, need, sizeof need);
            cli_usage_error("--%s given %d times; only %s compares several", f->flag, list->n,
                            need);
        }
        if (given[i] && f->modes && !(f->modes & mode)) {
            needed_modes(t, f->modes, need, sizeof need);
            cli_usage_error("--%s needs %s%s", f->flag, need, f->why ? f->why : "");
        }
    }
    return mode;
}

void flags_resume(const FlagTable *t, void *values, const void *have,
                  const unsigned char *given, const char *ckpt)
{
    for (int i = 0; i < t->n; i++) {
        const Flag *f = &t->rows[i];
        void *v = value_of(values, f);
        const void *h = cvalue_of(have, f);
        switch (f->resume) {
        case FLAG_RESUME_RUN: break;
        case FLAG_RESUME_FRESH:
            if (given[i])
                cli_usage_error("--%s %s%s", f->flag, f->resume_why, ckpt);
            break;
        case FLAG_RESUME_EITHER:
            if (*(const int *)h)
                *(int *)v = 1;
            break;
        case FLAG_RESUME_AGREE:
            if (given[i] && !flags_same(f, values, have)) {
                char want[64], got[64];
                flags_format(f, values, want, sizeof want);
                flags_format(f, have, got, sizeof got);
                cli_usage_error("--%s %s contradicts the checkpoint (%s): %s", f->flag, want, got,
                                f->resume_why);
            }
            memcpy(v, h, value_size(f->type));
            break;
        case FLAG_RESUME_CHANGE:
            if (!given[i])
                memcpy(v, h, value_size(f->type));
            break;
        }
    }
}
