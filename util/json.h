/* json: the one writer of JSON strings (and of the reports' numbers) for every
 * JSON file and line the programs write (the training log, --print-settings,
 * the heads report, the explorer).
 *
 * A string is written between double quotes with '"' and '\\' escaped, control
 * bytes (below 0x20) and '<' as \u00XX (so a string can sit inside an HTML
 * <script> element), well-formed UTF-8 kept as it is, and every byte that is not
 * part of a well-formed UTF-8 character (a Latin-1 file name, a cut sequence, an
 * overlong form, a surrogate) as \u00XX with the byte's value. The output is
 * therefore always valid UTF-8 and valid JSON, whatever bytes a path holds;
 * docs/checkpoint.md ("Files") says what a reader sees. */
#ifndef HEADCOUNT_JSON_H
#define HEADCOUNT_JSON_H

#include <stddef.h>
#include <stdio.h>

/* The length of s as a JSON string, quotes included; when buf is not NULL, the
 * string itself is written there with a NUL after it (buf needs the returned
 * length + 1 bytes: call once with NULL to size it). */
size_t json_string(char *buf, const char *s);

/* s as a JSON string on f (check f's error state as for any other write). */
void json_fput_string(FILE *f, const char *s);

/* v as a JSON number with `digits` significant digits on f, or null when v is
 * not finite (JSON has no NaN or infinity). */
void json_fput_number(FILE *f, double v, int digits);

/* v with the fewest significant digits (1 to 17) that read back as exactly v
 * (0.1, not 0.10000000000000001), or null when v is not finite: for settings a
 * person types and a script reads back. */
void json_fput_shortest(FILE *f, double v);

/* The length of the well-formed UTF-8 character of two to four bytes at p (NUL-
 * terminated), else 0: the rule above, for writers of other text formats (the
 * report's HTML writes such a byte as &#xXX;, the same reading). */
size_t json_utf8_len(const unsigned char *p);

#endif
