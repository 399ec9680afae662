/* json: every string the programs write into JSON is valid UTF-8 and valid JSON,
 * whatever bytes it holds: escapes for quotes, backslashes, control bytes and
 * '<', well-formed UTF-8 kept, every other byte as \u00XX; and numbers, with
 * null for what JSON cannot hold. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* json_string and json_fput_string of s must both give want. */
static void expect_json(const char *s, const char *want)
{
    size_t n = json_string(NULL, s);
    cr_assert_eq(n, strlen(want), "length %zu for %s, want %zu", n, want, strlen(want));
    char *buf = malloc(n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(json_string(buf, s), n);
    cr_assert_str_eq(buf, want);
    free(buf);
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    cr_assert_not_null(f);
    json_fput_string(f, s);
    cr_assert_eq(fclose(f), 0);
    cr_assert_str_eq(mem, want);
    free(mem);
}

Test(json, plain_text_and_the_escapes_json_requires)
{
    expect_json("", "\"\"");
    expect_json("data.txt", "\"data.txt\"");
    expect_json("a\"b\\c", "\"a\\\"b\\\\c\"");
    expect_json("tab\there\nnl\x01", "\"tab\\u0009here\\u000anl\\u0001\"");
    expect_json("</script>", "\"\\u003c/script>\"");
}

Test(json, well_formed_utf8_is_kept_as_it_is)
{
    expect_json("caf\xc3\xa9", "\"caf\xc3\xa9\"");                 /* U+00E9 */
    expect_json("\xe2\x82\xac", "\"\xe2\x82\xac\"");               /* U+20AC */
    expect_json("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");       /* U+1F600 */
    expect_json("\xc2\x80", "\"\xc2\x80\"");                       /* U+0080, the first */
    expect_json("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");       /* U+10FFFF, the last */
}

Test(json, bytes_outside_utf8_become_u00xx_of_the_byte)
{
    expect_json("caf\xe9.txt", "\"caf\\u00e9.txt\"");              /* Latin-1 */
    expect_json("\xc3", "\"\\u00c3\"");                            /* cut at the end */
    expect_json("\xc3z", "\"\\u00c3z\"");                          /* cut by a letter */
    expect_json("\xc0\xaf", "\"\\u00c0\\u00af\"");                 /* overlong '/' */
    expect_json("\xe0\x80\xaf", "\"\\u00e0\\u0080\\u00af\"");      /* overlong, 3 bytes */
    expect_json("\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\"");      /* a surrogate */
    expect_json("\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\""); /* past U+10FFFF */
    expect_json("\xff\xfe", "\"\\u00ff\\u00fe\"");
    expect_json("\x80", "\"\\u0080\"");                            /* a lone continuation */
}

/* json_fput_number of v with `digits` significant digits must give want. */
static void expect_number(double v, int digits, const char *want)
{
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    cr_assert_not_null(f);
    json_fput_number(f, v, digits);
    cr_assert_eq(fclose(f), 0);
    cr_assert_str_eq(mem, want, "%.17g with %d digits", v, digits);
    free(mem);
}

Test(json, numbers_have_their_digits_and_no_nan_or_infinity)
{
    expect_number(0.1234567891234, 6, "0.123457");
    expect_number(0.1234567891234, 10, "0.1234567891");
    expect_number(-2.5, 6, "-2.5");
    expect_number(3e-7, 6, "3e-07");
    expect_number(12345678, 6, "1.23457e+07");
    expect_number(NAN, 6, "null");
    expect_number(INFINITY, 10, "null");
    expect_number(-INFINITY, 6, "null");
}

/* The fewest digits that read back as the same double: what a person typed. */
static void expect_shortest(double v, const char *want)
{
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    cr_assert_not_null(f);
    json_fput_shortest(f, v);
    cr_assert_eq(fclose(f), 0);
    cr_assert_str_eq(mem, want, "%.17g gave %s, want %s", v, mem, want);
    if (isfinite(v))
        cr_assert_eq(strtod(mem, NULL), v, "%s does not read back as %.17g", mem, v);
    free(mem);
}

Test(json, shortest_numbers_read_back_exactly_with_the_fewest_digits)
{
    expect_shortest(0.1, "0.1");
    expect_shortest(1e-8, "1e-08");
    expect_shortest(0.99, "0.99");
    expect_shortest(5e-3, "0.005");
    expect_shortest(1.0 / 3.0, "0.3333333333333333");
    expect_shortest(0.1 + 0.2, "0.30000000000000004");
    expect_shortest(-2.5, "-2.5");
    expect_shortest(0, "0");
    expect_shortest(NAN, "null");
}
