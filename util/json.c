/* json: JSON strings (see json.h). */
#include "util/json.h"
#include "util/utf8.h"

#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* p is NUL-terminated: a sequence cut by the NUL is cut at the string's end. */
size_t json_utf8_len(const unsigned char *p)
{
    return utf8_char(p, strnlen((const char *)p, 4), NULL);
}

/* The JSON text for the character at p, in piece (at most 6 bytes, no NUL);
 * returns its length and sets *used to the bytes of p it stands for. */
static size_t json_piece(const unsigned char *p, char piece[8], size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    *used = 1;
    if (*p == '"' || *p == '\\') {
        piece[0] = '\\';
        piece[1] = (char)*p;
        return 2;
    }
    if (*p >= 0x20 && *p < 0x80 && *p != '<') {
        piece[0] = (char)*p;
        return 1;
    }
    size_t u = *p >= 0x80 ? json_utf8_len(p) : 0;
    if (u) {
        memcpy(piece, p, u);
        *used = u;
        return u;
    }
    memcpy(piece, "\\u00", 4);
    piece[4] = hex[*p >> 4];
    piece[5] = hex[*p & 15];
    return 6;
}

size_t json_string(char *buf, const char *s)
{
    size_t at = 0, used;
    char piece[8];
    if (buf)
        buf[at] = '"';
    at++;
    for (const unsigned char *p = (const unsigned char *)s; *p; p += used) {
        size_t w = json_piece(p, piece, &used);
        if (buf)
            memcpy(buf + at, piece, w);
        at += w;
    }
    if (buf) {
        buf[at] = '"';
        buf[at + 1] = '\0';
    }
    return at + 1;
}

void json_fput_string(FILE *f, const char *s)
{
    size_t used;
    char piece[8];
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p += used)
        fwrite(piece, 1, json_piece(p, piece, &used), f);
    fputc('"', f);
}

void json_fput_number(FILE *f, double v, int digits)
{
    if (isfinite(v))
        fprintf(f, "%.*g", digits, v);
    else
        fputs("null", f);
}

void json_fput_shortest(FILE *f, double v)
{
    if (!isfinite(v)) {
        fputs("null", f);
        return;
    }
    char buf[32];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}
