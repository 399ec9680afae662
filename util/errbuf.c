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

const char *err_byte(unsigned char b, char buf[8])
{
    if (b == '\n')
        snprintf(buf, 8, "'\\n'");
    else if (b == '\t')
        snprintf(buf, 8, "'\\t'");
    else if (b == '\r')
        snprintf(buf, 8, "'\\r'");
    else if (b >= 0x20 && b < 0x7f)
        snprintf(buf, 8, "'%c'", b);
    else
        snprintf(buf, 8, "0x%02x", b);
    return buf;
}
