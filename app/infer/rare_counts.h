/* rare_counts: the token counts the rare relation ranks tokens by (docs/heads.md,
 * "Relations"): the training text's, when the checkpoint's training state
 * names a text that can be read again unchanged, else the analysed file's. The
 * counting itself is heads_token_counts (analysis/heads.h). */
#ifndef HEADCOUNT_RARE_COUNTS_H
#define HEADCOUNT_RARE_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer.h"
#include "trainer/ckpt.h"

/* Fills counts[tok->V]. With ts (NULL: no training state) naming the built-in
 * corpus, the built-in induction corpus or a file whose size and FNV-1a hash
 * are ts->data_size and ts->data_hash, encodes its train split (the first
 * (1 - ts->val_frac) of its bytes, as corpus_prepare splits) with tok, counts
 * its tokens and returns 1. Otherwise counts ids[n] (the analysed file) and
 * returns 0. Either way why receives one line saying which text was counted
 * and, for 0, why the training text was not (out of memory reading or
 * encoding it is such a reason). */
int rare_counts_load(uint64_t *counts, const TrainState *ts, const Tokenizer *tok,
                     const TokenId *ids, size_t n, char *why, size_t whylen);

#endif
