/* util/sibling: a file's companion name is the name and its suffix while that
 * fits in one name (NAME_MAX bytes); a longer one is cut, with a hash of the
 * whole name, to exactly the limit, the same for the same name and different
 * for different ones, never cutting a UTF-8 character in two. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util/sibling.h"

static const char *last(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

Test(sibling, short_names_keep_their_suffix_and_long_ones_fit_with_a_hash)
{
    char buf[1200], again[1200], other[1200], path[600];
    cr_assert_eq(sibling_path("dir/out.ckpt", ".tmp.XXXXXX", buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "dir/out.ckpt.tmp.XXXXXX");
    memcpy(path, "dir/", 4);
    memset(path + 4, 'b', 255);
    path[259] = '\0';
    cr_assert_eq(sibling_path(path, ".tmp.XXXXXX", buf, sizeof buf), 0);
    cr_assert_eq(strlen(last(buf)), SIBLING_NAME_MAX, "%s", buf);
    cr_assert_eq(strncmp(buf, "dir/bbbb", 8), 0, "%s", buf);
    cr_assert_str_eq(buf + strlen(buf) - 11, ".tmp.XXXXXX");
    cr_assert_eq(sibling_path(path, ".tmp.XXXXXX", again, sizeof again), 0);
    cr_assert_str_eq(buf, again);
    path[200] = 'c'; /* the same first bytes are kept: the hash tells them apart */
    cr_assert_eq(sibling_path(path, ".tmp.XXXXXX", other, sizeof other), 0);
    cr_assert_str_neq(buf, other);
    /* 127 two-byte characters: the cut falls at a character's start. */
    char utf[300] = "";
    for (int i = 0; i < 127; i++)
        strcat(utf, "\xc3\xa9");
    cr_assert_eq(sibling_path(utf, ".lock", buf, sizeof buf), 0);
    const char *tilde = strrchr(buf, '~');
    cr_assert_not_null(tilde);
    cr_assert_eq((tilde - buf) % 2, 0, "a character cut in two: %s", buf);
    cr_assert_leq(strlen(buf), SIBLING_NAME_MAX);
    errno = 0;
    cr_assert_eq(sibling_path(path, ".tmp.XXXXXX", buf, 40), -1);
    cr_assert_eq(errno, ENAMETOOLONG);
}
