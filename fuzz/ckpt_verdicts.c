/* ckpt_verdicts: trainer/ckpt.c's verdict on each file a list names, for the
 * differential fuzzer fuzz/fuzz_ckpt_py.py (scripts/fuzz.sh builds and runs it).
 *
 *     ckpt_verdicts LIST      LIST: one path per line
 *
 * prints one line per path, in order: "ok" when ckpt_load accepts the file
 * (settings asked for too), else "refused " and its message; exit 0, or 2 when
 * LIST cannot be read. */
#include <stdio.h>
#include <string.h>

#include "trainer/ckpt.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ckpt_verdicts LIST\n");
        return 2;
    }
    FILE *list = fopen(argv[1], "r");
    if (!list) {
        fprintf(stderr, "ckpt_verdicts: error: %s: cannot open\n", argv[1]);
        return 2;
    }
    char path[4200];
    while (fgets(path, sizeof path, list)) {
        path[strcspn(path, "\n")] = '\0';
        Model m;
        Tokenizer tok;
        TrainState ts;
        long steps;
        int has;
        char err[2000];
        if (ckpt_load(path, &m, &tok, &steps, &ts, &has, err, sizeof err) == 0) {
            model_free(&m);
            tok_free(&tok);
            puts("ok");
        } else {
            printf("refused %s\n", err);
        }
    }
    fclose(list);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
