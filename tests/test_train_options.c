/* ./train's options (app/train/train_options) against docs/settings.md's table:
 * every value the table shows, for --data and for each built-in corpus'
 * recipe, is the one `./train --print-settings` prints for that run; every
 * setting a recipe changes is in the table; and every recipe value is one its
 * flag accepts. So README, --help and --print-settings cannot disagree with
 * what the first command (`./train`, the built-in recipe) uses. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"
#include "app/train/train_options.h"

/* The runs the table's value columns stand for, in its order (--print-settings
 * reads no file, so data.txt need not exist). */
static const Flag ROWS[OPT_COUNT] = {TRAIN_FLAGS(TRAIN_FLAG_ROW)};

static const char *const RUNS[] = {"--data data.txt", "", "--corpus induction"};
enum { NRUNS = 3, NCELLS = 5, CELL_MAX = 300 };

/* The --print-settings object of a run with flags (malloc'd). */
static char *settings_of(const char *flags)
{
    char *out;
    int rc = tu_run(&out, "%s/train %s --print-settings", tu_bin(), flags);
    cr_assert_eq(rc, 0, "train %s --print-settings: %s", flags, out);
    return out;
}

/* The JSON text of key's value in a --print-settings object, into buf. */
static void json_value(const char *json, const char *key, char *buf, size_t len)
{
    char want[80];
    snprintf(want, sizeof want, "\"%s\":", key);
    const char *p = strstr(json, want);
    cr_assert_not_null(p, "--print-settings has no %s: %s", key, json);
    p += strlen(want);
    size_t n = strcspn(p, ",}");
    cr_assert_lt(n, len);
    memcpy(buf, p, n);
    buf[n] = '\0';
}

/* Numbers as a person types them: the fewest digits that read back exactly. */
Test(train_options, print_settings_writes_numbers_with_their_fewest_digits)
{
    char *json = settings_of("--data data.txt --lr 3e-4");
    cr_assert(strstr(json, "\"wd\":0.1,"), "%s", json);
    cr_assert(strstr(json, "\"beta2\":0.99,"), "%s", json);
    cr_assert(strstr(json, "\"lr\":0.0003,"), "%s", json);
    cr_assert(strstr(json, "\"eps\":1e-08,"), "%s", json);
    cr_assert_null(strstr(json, "0000000000"), "%s", json);
    free(json);
}

/* HEADCOUNT_TEST_STEPS, the README walk's cap (tests/readme_check.sh): a run takes at
 * most that many steps and says so; a bad value is a usage error. */
Test(train_options, the_test_step_cap_caps_steps_and_says_so)
{
    char *out;
    int rc = tu_run(&out, "HEADCOUNT_TEST_STEPS=7 %s/train --steps 500 --print-settings", tu_bin());
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"steps\":7,"), "%s", out);
    cr_assert(strstr(out, "HEADCOUNT_TEST_STEPS=7: 7 steps, not 500"), "%s", out);
    free(out);
    rc = tu_run(&out, "HEADCOUNT_TEST_STEPS=900 %s/train --steps 500 --print-settings", tu_bin());
    cr_assert(rc == 0 && strstr(out, "\"steps\":500,") && !strstr(out, "note"), "%s", out);
    free(out);
    rc = tu_run(&out, "HEADCOUNT_TEST_STEPS=x %s/train --print-settings", tu_bin());
    cr_assert(rc == 2 && strstr(out, "HEADCOUNT_TEST_STEPS: expected"), "%s", out);
    free(out);
}

static const Flag *setting_of_flag(const char *word)
{
    const char *name = word + strspn(word, "-");
    for (int i = 0; i < OPT_COUNT; i++) {
        const Flag *s = &ROWS[i];
        if (name[1] ? strcmp(s->flag, name) == 0 || (s->alias && strcmp(s->alias, name) == 0)
                    : s->short_flag == name[0])
            return s;
    }
    cr_assert_fail("docs/settings.md's table names %s, which ./train does not have", word);
    return NULL;
}

/* Whether README's word for a value says what --print-settings printed: a
 * number, a `name`, FILE (the path --data gave), none, off, bytes (vocab 0) or
 * C/H (head size 0: the width over the heads). */
static void expect_same(const char *word, const char *json, const Flag *s, const char *run)
{
    char want[CELL_MAX];
    size_t n = strlen(word);
    if (word[0] == '`' && n > 2 && word[n - 1] == '`')
        snprintf(want, sizeof want, "\"%.*s\"", (int)(n - 2), word + 1);
    else if (strcmp(word, "FILE") == 0)
        snprintf(want, sizeof want, "\"data.txt\"");
    else if (strcmp(word, "none") == 0)
        snprintf(want, sizeof want, "null");
    else if (strcmp(word, "off") == 0)
        snprintf(want, sizeof want, "false");
    else if (strcmp(word, "bytes") == 0 || strcmp(word, "C/H") == 0)
        snprintf(want, sizeof want, "0");
    else {
        char *end;
        double v = strtod(word, &end);
        cr_assert(end != word && *end == '\0', "docs/settings.md's table: '%s' (for --%s) is not "
                  "a value this test reads", word, s->flag);
        cr_assert_eq(strtod(json, NULL), v, "README shows --%s %s for `./train %s`; "
                     "--print-settings says %s", s->flag, word, run, json);
        return;
    }
    cr_assert_str_eq(json, want, "README shows --%s %s for `./train %s`; --print-settings "
                     "says %s", s->flag, word, run, json);
}

/* Splits a table line into its cells at the pipes that are not escaped (\|). */
static int split_cells(const char *line, char cells[][CELL_MAX], int max)
{
    int n = -1;
    size_t k = 0;
    for (const char *p = line; *p && *p != '\n'; p++) {
        if (*p == '|' && (p == line || p[-1] != '\\')) {
            if (n >= 0) {
                while (k && cells[n][k - 1] == ' ')
                    k--;
                cells[n][k] = '\0';
            }
            if (++n == max)
                return n;
            k = 0;
            while (p[1] == ' ')
                p++;
            continue;
        }
        if (n >= 0 && k + 1 < CELL_MAX)
            cells[n][k++] = *p;
    }
    return n;
}

/* The flags of a flag cell ("`-L, -H, --head-size`", "`--log FILE`, `--keep-best`",
 * "`-d, --data FILE`"): their settings, in order. */
static int cell_flags(const char *cell, const Flag **out, int max)
{
    char buf[CELL_MAX];
    size_t k = 0;
    for (const char *p = cell; *p && k + 1 < sizeof buf; p++)
        if (*p != '`')
            buf[k++] = *p;
    buf[k] = '\0';
    int n = 0;
    for (char *item = strtok(buf, ","); item && n < max; item = strtok(NULL, ",")) {
        item += strspn(item, " ");
        item[strcspn(item, " ")] = '\0';
        const Flag *st = setting_of_flag(item);
        if (!n || out[n - 1] != st) /* "-d, --data": one flag, short and long */
            out[n++] = st;
    }
    return n;
}

Test(train_options, readme_settings_table_shows_what_each_run_uses)
{
    char *readme = tu_read_text("docs/settings.md");
    cr_assert_not_null(readme, "docs/settings.md (the tests run from the repository root)");
    const char *at = strstr(readme, "| flag | `--data FILE` |");
    cr_assert_not_null(at, "docs/settings.md has no settings table with a `--data FILE` column");
    char *json[NRUNS];
    for (int r = 0; r < NRUNS; r++)
        json[r] = settings_of(RUNS[r]);
    int shown[OPT_COUNT] = {0}, checked = 0;
    at = strchr(at, '\n') + 1;   /* the header's separator line */
    for (at = strchr(at, '\n') + 1; *at == '|'; at = strchr(at, '\n') + 1) {
        char cells[NCELLS + 1][CELL_MAX];
        cr_assert_eq(split_cells(at, cells, NCELLS + 1), NCELLS, "%.80s", at);
        const Flag *s[8];
        int nflags = cell_flags(cells[0], s, 8);
        for (int r = 0; r < NRUNS; r++) {
            /* A blank recipe cell: as with --data. */
            char words[CELL_MAX];
            snprintf(words, sizeof words, "%s", cells[1 + r][0] ? cells[1 + r] : cells[1]);
            int k = 0;
            for (char *w = strtok(words, ","); w; w = strtok(NULL, ","), k++) {
                w += strspn(w, " ");
                cr_assert_lt(k, nflags, "%s: more values than flags in '%s'", cells[0], words);
                char got[CELL_MAX];
                json_value(json[r], s[k]->key, got, sizeof got);
                expect_same(w, got, s[k], RUNS[r]);
                shown[s[k] - ROWS] = 1;
                checked++;
            }
            cr_assert_eq(k, nflags, "%s: %d values for %d flags", cells[0], k, nflags);
        }
    }
    cr_assert_geq(checked, 3 * 25, "the table's values were not all read");
    /* Every setting a recipe changes is in the table, and its value is one the
     * flag accepts. */
    for (int r = 1; r < NRUNS; r++)
        for (int i = 0; i < OPT_COUNT; i++) {
            const Flag *st = &ROWS[i];
            char plain[CELL_MAX], recipe[CELL_MAX];
            json_value(json[0], st->key, plain, sizeof plain);
            json_value(json[r], st->key, recipe, sizeof recipe);
            if (strcmp(plain, recipe) == 0 || st->type == FLAG_PATH || st->type == FLAG_NAME)
                continue;
            cr_assert(shown[i], "`./train %s` sets --%s %s, which docs/settings.md's table "
                      "does not show", RUNS[r], st->flag, recipe);
            char *out;
            int rc = tu_run(&out, "%s/train %s --%s %s --print-settings", tu_bin(), RUNS[r],
                            st->flag, recipe);
            cr_assert_eq(rc, 0, "the recipe's --%s %s is not a value the flag takes: %s",
                         st->flag, recipe, out);
            free(out);
        }
    for (int r = 0; r < NRUNS; r++)
        free(json[r]);
    free(readme);
}
