/* infer_input: the texts ./infer reads from a file or standard input ("-"),
 * for --prompt-file and --text-file (see infer_modes.h). */
#include "app/infer/infer_modes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"

void infer_read_input(TextFile *f, const char *path, const char *flag)
{
    char err[1500];
    if (strcmp(path, "-") != 0) {
        if (textfile_read(f, path, 1, err, sizeof err))
            cli_fail("--%s %s", flag, err);
        return;
    }
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "<stdin>");
    size_t cap = 4096;
    f->bytes = malloc(cap);
    for (;;) {
        if (!f->bytes)
            cli_fail("out of memory reading standard input");
        size_t got = fread(f->bytes + f->n, 1, cap - f->n, stdin);
        f->n += got;
        if (got == 0)
            break;
        if (f->n == cap) {
            if (cap > CORPUS_MAX_BYTES)
                cli_fail("--%s -: standard input is larger than %zu bytes", flag,
                         CORPUS_MAX_BYTES);
            cap *= 2;
            f->bytes = realloc(f->bytes, cap);
        }
    }
    if (ferror(stdin))
        cli_fail("--%s -: reading standard input failed", flag);
}

