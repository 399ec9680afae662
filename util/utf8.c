/* utf8: one UTF-8 character (see utf8.h). */
#include "util/utf8.h"

size_t utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    size_t len = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (len == 0 || len > n || p[0] > 0xf4)
        return 0;
    uint32_t c = p[0] & (0x7f >> len);
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[k] & 0x3f);
    }
    /* The least code point each length may carry: below it the form is overlong. */
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    if (cp)
        *cp = c;
    return len;
}
