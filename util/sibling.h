/* sibling: the path of a file that lives beside another and is named after it
 * (a checkpoint's temporary PATH.tmp.XXXXXX, its lock PATH.lock, a report's
 * DIR.tmp.XXXXXX), kept within the file system's limit on one name, so that a
 * legal name of up to NAME_MAX bytes can always be written. Knows nothing of
 * what the files are for. */
#ifndef HEADCOUNT_SIBLING_H
#define HEADCOUNT_SIBLING_H

#include <stddef.h>

/* The longest name (one path component) the sibling gets. */
#define SIBLING_NAME_MAX 255

/* buf = path followed by suffix when its last component stays within
 * SIBLING_NAME_MAX bytes; otherwise that component is cut (at a character's
 * start) to leave room for "~", 16 hex digits of the whole component's FNV-1a
 * hash and the suffix, so the same path always gives the same sibling and two
 * long names give two siblings. 0, or -1 with errno ENAMETOOLONG when the
 * result does not fit in len bytes or the suffix alone is too long. */
int sibling_path(const char *path, const char *suffix, char *buf, size_t len);

#endif
