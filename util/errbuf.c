/* errbuf: message formatting for library errors (see errbuf.h). */
#include "util/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int err_set(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *err_byte(unsigned char b, char buf[ERR_BYTE_LEN])
{
    const char *name = b == '\n' ? "newline" : b == '\t' ? "tab" : b == '\r' ? "carriage return"
                     : b == ' ' ? "space" : NULL;
    if (name)
        snprintf(buf, ERR_BYTE_LEN, "0x%02x (%s)", b, name);
    else if (b > 0x20 && b < 0x7f)
        snprintf(buf, ERR_BYTE_LEN, "0x%02x (%c)", b, b);
    else
        snprintf(buf, ERR_BYTE_LEN, "0x%02x", b);
    return buf;
}
