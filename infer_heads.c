/* infer_heads: attention-head analysis driver (in progress: see issue 4). */
#include <stdio.h>

#include "cli.h"
#include "infer.h"

int infer_heads(const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    (void)o; (void)m; (void)tok;
    cli_fail("head analysis is not implemented yet");
}
