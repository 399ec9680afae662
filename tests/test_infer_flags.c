/* ./infer's flag table (INFER_FLAGS in app/infer/infer_modes.h) against the program built
 * from it: every declared flag is in --help, a number past its range is one
 * usage error naming the flag, and a flag that needs a mode is refused without
 * it, naming the mode flag. The sampling, heads and explorer tests cover what
 * the flags do. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/infer/infer_modes.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

#define ROW(ID, field, ctype, ...) {__VA_ARGS__},
static const Flag ROWS[] = {INFER_FLAGS(ROW)};
#undef ROW
enum { NROWS = sizeof ROWS / sizeof ROWS[0] };

Test(infer_flags, every_declared_flag_is_in_help)
{
    char *out;
    cr_assert_eq(tu_run(&out, "%s/infer --help", tu_bin()), 0);
    for (int i = 0; i < NROWS; i++) {
        char want[80];
        snprintf(want, sizeof want, "--%s", ROWS[i].flag);
        cr_assert(ROWS[i].help && ROWS[i].help[0], "--%s has no help", ROWS[i].flag);
        cr_assert(strstr(out, want), "--help does not mention %s", want);
        if (ROWS[i].short_flag) {
            snprintf(want, sizeof want, "-%c, --%s", ROWS[i].short_flag, ROWS[i].flag);
            cr_assert(strstr(out, want), "--help does not show %s", want);
        }
    }
    free(out);
}

Test(infer_flags, a_number_past_its_range_is_a_usage_error)
{
    for (int i = 0; i < NROWS; i++) {
        const Flag *f = &ROWS[i];
        if (f->type != FLAG_LONG && f->type != FLAG_REAL)
            continue;
        cr_assert((f->lo <= f->def && f->def <= f->hi) || (f->zero_off && f->def == 0),
                  "--%s: default %g outside [%g, %g]", f->flag, f->def, f->lo, f->hi);
        char *out, needle[80];
        int rc = f->type == FLAG_LONG
                     ? tu_run(&out, "%s/infer --ckpt none.ckpt --%s %ld", tu_bin(), f->flag,
                              (long)f->hi + 1)
                     : tu_run(&out, "%s/infer --ckpt none.ckpt --%s %g", tu_bin(), f->flag,
                              f->hi * 2 + 1);
        snprintf(needle, sizeof needle, "--%s", f->flag);
        expect_error(out, rc, 2, "infer", needle);
        free(out);
    }
}

Test(infer_flags, a_flag_outside_its_modes_is_refused)
{
    int checked = 0;
    for (int i = 0; i < NROWS; i++) {
        const Flag *f = &ROWS[i];
        if (!f->modes)
            continue;
        char *out, needle[120];
        const char *value = f->type == FLAG_SWITCH ? "" : f->type == FLAG_LONG ? "3" : "x";
        int rc = tu_run(&out, "%s/infer --ckpt none.ckpt --%s %s", tu_bin(), f->flag, value);
        snprintf(needle, sizeof needle, "--%s needs --", f->flag);
        expect_error(out, rc, 2, "infer", needle);
        free(out);
        checked++;
    }
    cr_assert_geq(checked, 6, "the report, windows, prune-curve, json and explorer flags");
}
