/* infer_sample: text generation driver (in progress: see issue 3). */
#include <stdio.h>

#include "cli.h"
#include "infer.h"

int infer_sample(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    (void)o; (void)m; (void)tok;
    cli_fail("sampling is not implemented yet");
}
