/* utf8: the one reading of a UTF-8 character, for every writer that keeps
 * well-formed UTF-8 as it is and escapes every other byte: the JSON strings
 * (util/json.h, and through it the report's HTML) and the tokenizer's readable
 * labels (data/tokenizer.h). What a writer does with a byte this rejects, and
 * which characters it escapes anyway (the labels escape the C1 controls), is
 * the writer's own. */
#ifndef HEADCOUNT_UTF8_H
#define HEADCOUNT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length, 2 to 4, of the well-formed UTF-8 character that starts p[0..n):
 * a code point from U+0080 to U+10FFFF, not a surrogate (U+D800 to U+DFFF), in
 * its shortest form; its code point goes to *cp (when cp is not NULL). 0 for
 * anything else: n = 0, an ASCII byte, a lone continuation byte, a lead byte
 * past 0xf4, an overlong form, a surrogate, a code point past U+10FFFF, or a
 * sequence cut by the end (n) or by a byte that is not a continuation. */
size_t utf8_char(const unsigned char *p, size_t n, uint32_t *cp);

#endif
