/* rare_counts: where the rare relation's token counts come from (rare_counts.h). */
#include "app/infer/rare_counts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads.h"
#include "data/corpus.h"

/* Reads the training text ts names into f; 0, or -1 with the reason in why. */
static int read_training_text(TextFile *f, const TrainState *ts, char *why, size_t whylen)
{
    char err[1500];
    switch (textfile_reopen(f, ts->data_path, ts->data_size, ts->data_hash, 1, err, sizeof err)) {
    case TEXTFILE_SAME:
        return 0;
    case TEXTFILE_MISSING:
        snprintf(why, whylen, "%s is not there", ts->data_path);
        return -1;
    case TEXTFILE_UNREADABLE:
        snprintf(why, whylen, "%s", err);
        return -1;
    case TEXTFILE_CHANGED:
        if (f->n != ts->data_size)
            snprintf(why, whylen, "%s is not the %llu-byte file trained on", ts->data_path,
                     (unsigned long long)ts->data_size);
        else
            snprintf(why, whylen, "%s has changed since training (size or FNV-1a hash differ)",
                     ts->data_path);
        textfile_free(f);
        return -1;
    }
    return -1;
}

/* The training text's train split, encoded and counted; 0, or -1 with why. */
static int count_training(uint64_t *counts, const TrainState *ts, const Tokenizer *tok,
                          char *why, size_t whylen)
{
    TextFile f;
    if (read_training_text(&f, ts, why, whylen))
        return -1;
    size_t train_bytes = corpus_train_bytes(f.n, ts->val_frac);
    TokenId *ids = malloc(train_bytes ? train_bytes * sizeof *ids : 1);
    char err[1500];
    long n = ids ? tok_encode(tok, f.bytes, train_bytes, ids, ts->data_path, err, sizeof err)
                 : -1;
    if (n >= 0) {
        heads_token_counts(counts, ids, (size_t)n, tok->V);
        snprintf(why, whylen, "the training text %s (its first %zu bytes, the train split: "
                 "%ld tokens)", ts->data_path, train_bytes, n);
    } else {
        snprintf(why, whylen, "%s", ids ? err : "out of memory encoding the training text");
    }
    free(ids);
    textfile_free(&f);
    return n >= 0 ? 0 : -1;
}

int rare_counts_load(uint64_t *counts, const TrainState *ts, const Tokenizer *tok,
                     const TokenId *ids, size_t n, char *why, size_t whylen)
{
    char reason[1600];
    if (!ts)
        snprintf(reason, sizeof reason, "the checkpoint has no training state");
    else if (count_training(counts, ts, tok, reason, sizeof reason) == 0) {
        snprintf(why, whylen, "%s", reason);
        return 1;
    }
    heads_token_counts(counts, ids, n, tok->V);
    snprintf(why, whylen, "the analysed file (%zu tokens): %s", n, reason);
    return 0;
}
