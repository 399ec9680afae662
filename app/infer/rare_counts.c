/* rare_counts: where the rare relation's token counts come from (rare_counts.h). */
#include "app/infer/rare_counts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/heads.h"
#include "data/corpus.h"
#include "data/induction.h"

/* Reads the training text ts names into f; 0, or -1 with the reason in why. */
static int read_training_text(TextFile *f, const TrainState *ts, char *why, size_t whylen)
{
    char err[1500];
    int rc;
    CorpusSource source = corpus_source_of(ts->data_path);
    if (source == CORPUS_SOURCE_TEXT) {
        rc = textfile_builtin(f, (size_t)ts->data_size, err, sizeof err);
    } else if (source == CORPUS_SOURCE_INDUCTION) {
        rc = induction_textfile(f, (size_t)ts->data_size, err, sizeof err);
    } else {
        struct stat sb;
        if (stat(ts->data_path, &sb) != 0) {
            snprintf(why, whylen, "%s is not there", ts->data_path);
            return -1;
        }
        if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size != ts->data_size) {
            snprintf(why, whylen, "%s is not the %llu-byte file trained on", ts->data_path,
                     (unsigned long long)ts->data_size);
            return -1;
        }
        rc = textfile_read(f, ts->data_path, 1, err, sizeof err);
    }
    if (rc) {
        snprintf(why, whylen, "%s", err);
        return -1;
    }
    if (f->n != ts->data_size || f->hash != ts->data_hash) {
        snprintf(why, whylen, "%s has changed since training (size or FNV-1a hash differ)",
                 ts->data_path);
        textfile_free(f);
        return -1;
    }
    return 0;
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
