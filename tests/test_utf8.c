/* utf8: known answers for the one UTF-8 reader (util/utf8.h) that the JSON
 * strings and the tokenizer's labels share: each length's first and last code
 * point, and every way a sequence can fail (a lone continuation, an overlong
 * form, a surrogate, past U+10FFFF, cut short, a bad continuation); every code
 * point through an encoder written here; every lead byte with the bytes after it
 * against the definition; and json_utf8_len's NUL-terminated reading of the
 * same rule. What each writer does with the characters it keeps (the labels escape
 * the C1 controls, JSON does not) is tested with the writer (test_json.c,
 * test_tokenizer.c). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "util/json.h"
#include "util/utf8.h"

typedef struct {
    const char *bytes;
    size_t n;           /* how much of bytes the reader may see */
    size_t len;         /* the answer: the character's length, or 0 */
    uint32_t cp;        /* its code point when len > 0 */
    const char *what;
} Utf8Case;

static const Utf8Case CASES[] = {
    {"\xc2\x80", 2, 2, 0x80, "U+0080, the first two-byte character"},
    {"\xc2\x85", 2, 2, 0x85, "U+0085, a C1 control"},
    {"\xc3\xa9", 2, 2, 0xe9, "U+00E9"},
    {"\xdf\xbf", 2, 2, 0x7ff, "U+07FF, the last two-byte character"},
    {"\xe0\xa0\x80", 3, 3, 0x800, "U+0800, the first three-byte character"},
    {"\xe2\x82\xac", 3, 3, 0x20ac, "U+20AC"},
    {"\xed\x9f\xbf", 3, 3, 0xd7ff, "U+D7FF, just below the surrogates"},
    {"\xee\x80\x80", 3, 3, 0xe000, "U+E000, just above the surrogates"},
    {"\xef\xbf\xbf", 3, 3, 0xffff, "U+FFFF, the last three-byte character"},
    {"\xf0\x90\x80\x80", 4, 4, 0x10000, "U+10000, the first four-byte character"},
    {"\xf0\x9f\x98\x80", 4, 4, 0x1f600, "U+1F600"},
    {"\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff, "U+10FFFF, the last"},
    {"\xc3\xa9z", 3, 2, 0xe9, "a character followed by more text"},
    {"a", 1, 0, 0, "ASCII is not this reader's"},
    {"\x7f", 1, 0, 0, "DEL"},
    {"", 0, 0, 0, "nothing to read"},
    {"\x80", 1, 0, 0, "a lone continuation byte"},
    {"\xbf\xbf", 2, 0, 0, "continuation bytes only"},
    {"\xc0\xaf", 2, 0, 0, "overlong '/', two bytes"},
    {"\xc1\xbf", 2, 0, 0, "overlong U+007F"},
    {"\xe0\x80\xaf", 3, 0, 0, "overlong '/', three bytes"},
    {"\xe0\x9f\xbf", 3, 0, 0, "overlong U+07FF"},
    {"\xf0\x80\x80\xaf", 4, 0, 0, "overlong '/', four bytes"},
    {"\xf0\x8f\xbf\xbf", 4, 0, 0, "overlong U+FFFF"},
    {"\xed\xa0\x80", 3, 0, 0, "U+D800, the first surrogate"},
    {"\xed\xbf\xbf", 3, 0, 0, "U+DFFF, the last surrogate"},
    {"\xf4\x90\x80\x80", 4, 0, 0, "U+110000, past the last"},
    {"\xf5\x80\x80\x80", 4, 0, 0, "lead byte 0xf5"},
    {"\xf8\x88\x80\x80\x80", 5, 0, 0, "a five-byte form"},
    {"\xfe", 1, 0, 0, "0xfe"},
    {"\xff", 1, 0, 0, "0xff"},
    {"\xc3\xa9", 1, 0, 0, "two bytes cut after one"},
    {"\xe2\x82\xac", 2, 0, 0, "three bytes cut after two"},
    {"\xe2\x82\xac", 1, 0, 0, "three bytes cut after one"},
    {"\xf0\x9f\x98\x80", 3, 0, 0, "four bytes cut after three"},
    {"\xf0\x9f\x98\x80", 1, 0, 0, "four bytes cut after one"},
    {"\xc3(", 2, 0, 0, "a letter for the continuation"},
    {"\xc3\xc3\xa9", 3, 0, 0, "a lead byte for the continuation"},
    {"\xe2(\xac", 3, 0, 0, "a bad second byte of three"},
    {"\xe2\x82(", 3, 0, 0, "a bad third byte of three"},
    {"\xf0\x9f\x98(", 4, 0, 0, "a bad fourth byte of four"},
};

Test(utf8, known_answers)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const Utf8Case *c = &CASES[i];
        uint32_t cp = 0xdeadbeef;
        size_t len = utf8_char((const unsigned char *)c->bytes, c->n, &cp);
        cr_assert_eq(len, c->len, "%s: length %zu, want %zu", c->what, len, c->len);
        if (c->len)
            cr_assert_eq(cp, c->cp, "%s: U+%04X, want U+%04X", c->what, cp, c->cp);
        else
            cr_assert_eq(cp, 0xdeadbeef, "%s: a rejected sequence set the code point", c->what);
        cr_assert_eq(utf8_char((const unsigned char *)c->bytes, c->n, NULL), c->len,
                     "%s: without a code point to set", c->what);
    }
}

/* json_utf8_len reads a NUL-terminated string: the same answers where the case's
 * bytes end at n, and a NUL in place of a continuation cuts the sequence. */
Test(utf8, json_utf8_len_reads_the_same_rule_up_to_the_nul)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const Utf8Case *c = &CASES[i];
        char s[8] = "";
        memcpy(s, c->bytes, c->n);
        cr_assert_eq(json_utf8_len((const unsigned char *)s), c->len, "%s", c->what);
    }
    cr_assert_eq(json_utf8_len((const unsigned char *)"\xe2\x82\0\xac"), 0u, "cut by a NUL");
    cr_assert_eq(json_utf8_len((const unsigned char *)"\xf0\0\x98\x80"), 0u, "cut by a NUL");
}

/* The shortest UTF-8 form of cp (U+0080 to U+10FFFF) in b; returns its length. */
static size_t encode(uint32_t cp, unsigned char b[4])
{
    if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    b[0] = (unsigned char)(0xf0 | cp >> 18);
    b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    b[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static int is_surrogate(uint32_t cp) { return cp >= 0xd800 && cp <= 0xdfff; }

Test(utf8, every_code_point_reads_back_and_no_shorter_view_of_it_does)
{
    unsigned char b[4];
    for (uint32_t cp = 0x80; cp <= 0x10ffff; cp++) {
        size_t len = encode(cp, b);
        uint32_t got = 0;
        size_t want = is_surrogate(cp) ? 0 : len;
        cr_assert_eq(utf8_char(b, len, &got), want, "U+%04X", cp);
        if (want)
            cr_assert_eq(got, cp, "U+%04X read as U+%04X", cp, got);
        cr_assert_eq(utf8_char(b, len - 1, &got), 0u, "U+%04X cut short", cp);
    }
}

/* The answer by the definition, for a lead byte x from 0x80 and the bytes after
 * it: the length when those are continuation bytes carrying a code point that
 * needs that length and is no surrogate and at most U+10FFFF, else 0. */
static size_t by_definition(const unsigned char *b, uint32_t *cp)
{
    size_t n = b[0] >= 0xf8 ? 0 : b[0] >= 0xf0 ? 4 : b[0] >= 0xe0 ? 3 : b[0] >= 0xc0 ? 2 : 0;
    if (n == 0)
        return 0;
    uint32_t v = b[0] & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < n; k++) {
        if (b[k] < 0x80 || b[k] > 0xbf)
            return 0;
        v = v * 64 + (b[k] - 0x80);
    }
    uint32_t least = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (v < least || v > 0x10ffff || is_surrogate(v))
        return 0;
    *cp = v;
    return n;
}

/* Every lead byte from 0x80 with every second byte, every third byte after the
 * three-byte leads, and for the four-byte leads a few third and fourth bytes
 * (the first and last continuation, a letter): as the definition reads them. */
Test(utf8, every_lead_and_following_byte_reads_as_defined)
{
    static const unsigned char few[3] = {0x80, 0xbf, 'A'};
    unsigned char b[4];
    for (unsigned x = 0x80; x < 256; x++)
        for (unsigned y = 0; y < 256; y++)
            for (unsigned z = 0; z < 256; z++)
                for (unsigned w = 0; w < 3; w++) {
                    if ((x < 0xe0 && (z > 0 || w > 0)) || (x < 0xf0 && w > 0) ||
                        (x >= 0xf0 && z >= 3))
                        continue;
                    b[0] = (unsigned char)x;
                    b[1] = (unsigned char)y;
                    b[2] = x >= 0xf0 ? few[z] : (unsigned char)z;
                    b[3] = few[w];
                    uint32_t cp = 0, want_cp = 0;
                    size_t want = by_definition(b, &want_cp);
                    size_t len = utf8_char(b, 4, &cp);
                    cr_assert_eq(len, want, "%02x %02x %02x %02x: length %zu, want %zu", b[0],
                                 b[1], b[2], b[3], len, want);
                    if (want)
                        cr_assert_eq(cp, want_cp, "%02x %02x %02x %02x", b[0], b[1], b[2],
                                     b[3]);
                }
}
