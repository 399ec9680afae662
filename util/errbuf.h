/* errbuf: how library code reports a problem without printing.
 *
 * Functions in model/ and data/ that can fail take (char *err, size_t errlen) and
 * return 0 on success or -1 on failure, having written one human-readable line
 * (no trailing newline) naming the file or flag, what was expected and what was
 * found. Only main() prints it. err may be NULL when the caller does not care. */
#ifndef HEADCOUNT_ERRBUF_H
#define HEADCOUNT_ERRBUF_H

#include <stddef.h>

/* printf-style; always returns -1 so callers can write `return err_set(...)`. */
int err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Describes byte b readably for messages, its code first and then what it
 * looks like: "0x61 (a)", "0x27 (')", "0x20 (space)", "0x0a (newline)", "0x00".
 * buf needs ERR_BYTE_LEN bytes. */
#define ERR_BYTE_LEN 32
const char *err_byte(unsigned char b, char buf[ERR_BYTE_LEN]);

#endif
