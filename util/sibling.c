/* sibling: a file's companion name within the limit on one name (see sibling.h). */
#include "util/sibling.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/hash.h"

enum { HASH_CHARS = 17 }; /* "~" and 16 hex digits */

int sibling_path(const char *path, const char *suffix, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir = (size_t)(base - path), name = strlen(base), tail = strlen(suffix);
    int n;
    if (name + tail <= SIBLING_NAME_MAX) {
        n = snprintf(buf, len, "%s%s", path, suffix);
    } else {
        if (tail + HASH_CHARS >= SIBLING_NAME_MAX) {
            errno = ENAMETOOLONG;
            return -1;
        }
        size_t keep = SIBLING_NAME_MAX - tail - HASH_CHARS;
        while (keep > 0 && ((unsigned char)base[keep] & 0xC0) == 0x80)
            keep--; /* not inside a UTF-8 sequence */
        uint64_t h = hash_fnv1a(HASH_FNV_INIT, base, name);
        n = snprintf(buf, len, "%.*s%.*s~%016" PRIx64 "%s", (int)dir, path, (int)keep, base, h,
                     suffix);
    }
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}
