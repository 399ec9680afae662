/* The flag engine (app/common/flags) on a small table of its own: parsing fills
 * the values and the given record (long and short forms, --x=v, defaults for
 * the rest), a value outside its range or an empty path is a usage error (exit
 * 2), the mode check returns the chosen mode and refuses a flag outside its
 * modes, and each resume rule does what flags.h says. ./train and ./infer are
 * tested through their programs (test_infer_flags, test_settings,
 * test_train_refusals, test_outputs_*). */
#include <criterion/criterion.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"
#include "app/common/flags.h"

typedef struct {
    long n;
    double x, f;
    const char *path, *name;
    int on, pick;
    FlagPaths many;
} Vals;

enum { MODE_A = 1, MODE_B = 2 };
static const char *const NAMES[] = {"red", "green", "blue", NULL};

static const Flag ROWS[] = {
    {.flag = "n", .short_flag = 'n', .type = FLAG_LONG, .at = offsetof(Vals, n), .def = 5,
     .lo = 1, .hi = 10, .zero_off = 1, .resume = FLAG_RESUME_AGREE, .resume_why = "fixed",
     .help = "a count"},
    {.flag = "x", .type = FLAG_REAL, .at = offsetof(Vals, x), .def = 0.5, .lo = 0, .hi = 1,
     .resume = FLAG_RESUME_CHANGE, .help = "a fraction"},
    {.flag = "f", .type = FLAG_F32, .at = offsetof(Vals, f), .def = 0.1, .lo = 0, .hi = 1,
     .resume = FLAG_RESUME_AGREE, .resume_why = "fixed", .help = "a float"},
    {.flag = "path", .type = FLAG_PATH, .at = offsetof(Vals, path), .mode = MODE_B,
     .meta = "FILE", .help = "mode B"},
    {.flag = "name", .type = FLAG_NAME, .at = offsetof(Vals, name), .names = NAMES,
     .def_str = "red", .resume = FLAG_RESUME_FRESH, .resume_why = "only starts a run from ",
     .help = "a colour"},
    {.flag = "on", .type = FLAG_SWITCH, .at = offsetof(Vals, on), .modes = MODE_B,
     .resume = FLAG_RESUME_EITHER, .help = "a switch"},
    {.flag = "pick", .type = FLAG_CHOICE, .at = offsetof(Vals, pick), .names = NAMES,
     .def = 2, .help = "an index"},
    {.flag = "many", .type = FLAG_PATHS, .at = offsetof(Vals, many), .many = MODE_B,
     .help = "paths"},
};
enum { NROWS = sizeof ROWS / sizeof ROWS[0] };
static const char *const EXTRA[] = {"dry", NULL};

static void no_usage(void)
{
}

static const FlagTable T = {.rows = ROWS, .n = NROWS, .extra = EXTRA, .usage = no_usage,
                            .version = "test 1", .default_mode = MODE_A};

/* A test of a usage error: the message goes to a memory stream, not to the
 * terminal of whoever runs `make test`, and the exit hook checks that it names
 * want before it exits 2 (any other exit code fails the test's .exit_code). */
static char *error_text;
static size_t error_len;
static FILE *error_stream;
static const char *error_want;

static void exit_checking_the_message(int code)
{
    fflush(error_stream);
    if (code != 2 || !error_text || !strstr(error_text, error_want) ||
        !strstr(error_text, "error: ")) {
        fprintf(stderr, "flags: exit %d with \"%s\", expected a usage error naming %s\n", code,
                error_text ? error_text : "", error_want);
        exit(1);
    }
    exit(2);
}

static void expect_usage_error(const char *want)
{
    error_stream = open_memstream(&error_text, &error_len);
    cr_assert_not_null(error_stream);
    error_want = want;
    cli_set_error_stream(error_stream);
    cli_set_exit(exit_checking_the_message);
}

/* Parses the NULL-terminated arguments after a program name. */
static void parse(Vals *v, unsigned char *given, const char *const *args)
{
    char *argv[32] = {"prog"};
    int argc = 1;
    while (args[argc - 1])
        argv[argc] = (char *)args[argc - 1], argc++;
    optind = 1;
    memset(given, 0, NROWS + 1);
    flags_parse(&T, argc, argv, v, given);
}

Test(flags, parsing_fills_values_and_given_and_leaves_the_rest_at_defaults)
{
    Vals v;
    unsigned char given[NROWS + 1];
    const char *args[] = {"-n", "7", "--x=0.25", "--name", "blue", "--pick", "green", "--dry",
                          "--many", "a", "--many", "b", NULL};
    parse(&v, given, args);
    cr_assert_eq(v.n, 7);
    cr_assert_eq(v.x, 0.25);
    cr_assert_eq(v.f, 0.1);
    cr_assert_str_eq(v.name, "blue");
    cr_assert_eq(v.pick, 1);
    cr_assert_eq(v.on, 0);
    cr_assert_null(v.path);
    cr_assert_eq(v.many.n, 2);
    cr_assert_str_eq(v.many.path[1], "b");
    const unsigned char want[NROWS + 1] = {1, 1, 0, 0, 1, 0, 1, 1, 1};
    cr_assert_arr_eq(given, want, sizeof want);
    const char *zero[] = {"--n", "0", NULL};
    parse(&v, given, zero);
    cr_assert_eq(v.n, 0, "a zero_off flag takes 0");
}

Test(flags, a_value_past_its_range_is_a_usage_error, .exit_code = 2)
{
    expect_usage_error("--n");
    Vals v;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--n", "11", NULL};
    parse(&v, given, args);
}

Test(flags, an_empty_path_is_a_usage_error, .exit_code = 2)
{
    expect_usage_error("--path");
    Vals v;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--path", "", NULL};
    parse(&v, given, args);
}

Test(flags, a_name_outside_the_list_is_a_usage_error, .exit_code = 2)
{
    expect_usage_error("pink");
    Vals v;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--name", "pink", NULL};
    parse(&v, given, args);
}

Test(flags, the_mode_is_the_mode_flag_given_or_the_default)
{
    Vals v;
    unsigned char given[NROWS + 1];
    const char *none[] = {NULL};
    parse(&v, given, none);
    cr_assert_eq(flags_check_modes(&T, &v, given), MODE_A);
    const char *b[] = {"--path", "p", "--on", "--many", "a", "--many", "b", NULL};
    parse(&v, given, b);
    cr_assert_eq(flags_check_modes(&T, &v, given), MODE_B);
}

Test(flags, a_flag_outside_its_modes_is_a_usage_error, .exit_code = 2)
{
    expect_usage_error("--on");
    Vals v;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--on", NULL};
    parse(&v, given, args);
    flags_check_modes(&T, &v, given);
}

Test(flags, a_repeated_flag_outside_its_many_modes_is_a_usage_error, .exit_code = 2)
{
    expect_usage_error("--many");
    Vals v;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--many", "a", "--many", "b", NULL};
    parse(&v, given, args);
    flags_check_modes(&T, &v, given);
}

Test(flags, resume_takes_agree_and_change_values_and_turns_either_on)
{
    Vals v, have;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--x", "0.75", "--f", "0.30000001", NULL};
    parse(&v, given, args);
    have = v;
    have.n = 9;
    have.x = 0.125;
    have.f = (double)(float)0.3; /* the same float as 0.30000001: agrees */
    have.on = 1;
    flags_resume(&T, &v, &have, given, "run.ckpt");
    cr_assert_eq(v.n, 9, "AGREE not given: the checkpoint's");
    cr_assert_eq(v.x, 0.75, "CHANGE given: the flag's");
    cr_assert_eq(v.f, (double)(float)0.3, "AGREE: the checkpoint's value");
    cr_assert_eq(v.on, 1, "EITHER: on in the checkpoint");
    const char *none[] = {NULL};
    parse(&v, given, none);
    flags_resume(&T, &v, &have, given, "run.ckpt");
    cr_assert_eq(v.x, 0.125, "CHANGE not given: the checkpoint's");
}

Test(flags, resume_refuses_a_flag_that_contradicts_the_checkpoint, .exit_code = 2)
{
    expect_usage_error("--n");
    Vals v, have;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--n", "3", NULL};
    parse(&v, given, args);
    have = v;
    have.n = 4;
    flags_resume(&T, &v, &have, given, "run.ckpt");
}

Test(flags, resume_refuses_a_fresh_only_flag, .exit_code = 2)
{
    expect_usage_error("--name");
    Vals v, have;
    unsigned char given[NROWS + 1];
    const char *args[] = {"--name", "red", NULL};
    parse(&v, given, args);
    have = v;
    flags_resume(&T, &v, &have, given, "run.ckpt");
}

Test(flags, values_print_in_the_fewest_digits_and_f32_compares_as_float)
{
    Vals a, b;
    unsigned char given[NROWS + 1];
    const char *none[] = {NULL};
    parse(&a, given, none);
    b = a;
    char buf[64];
    flags_format(&ROWS[1], &a, buf, sizeof buf);
    cr_assert_str_eq(buf, "0.5");
    flags_format(&ROWS[3], &a, buf, sizeof buf);
    cr_assert_str_eq(buf, "none");
    flags_format(&ROWS[5], &a, buf, sizeof buf);
    cr_assert_str_eq(buf, "off");
    flags_format(&ROWS[6], &a, buf, sizeof buf);
    cr_assert_str_eq(buf, "blue");
    b.f = 0.1 + 1e-12;
    cr_assert(flags_same(&ROWS[2], &a, &b), "one float32 apart from nothing");
    b.x = 0.5 + 1e-12;
    cr_assert(!flags_same(&ROWS[1], &a, &b));
}
