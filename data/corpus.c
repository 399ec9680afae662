/* corpus: file loading, validation, tokenization and the train/val split. */
#include "data/corpus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/conllu.h"
#include "data/induction.h"
#include "data/synth.h"
#include "util/errbuf.h"
#include "util/hash.h"

static void set_name(TextFile *f, const char *name)
{
    snprintf(f->name, sizeof f->name, "%s", name);
}

const CorpusSourceRow corpus_sources[CORPUS_SOURCES] = {
    [CORPUS_SOURCE_FILE] = {NULL, 0, NULL},
    [CORPUS_SOURCE_TEXT] = {CORPUS_BUILTIN_NAME, SYNTH_DEFAULT_BYTES, textfile_builtin},
    [CORPUS_SOURCE_INDUCTION] = {INDUCTION_CORPUS_NAME, INDUCTION_DEFAULT_BYTES,
                                 induction_textfile},
};

CorpusSource corpus_source_of(const char *data_path)
{
    for (int s = 0; s < CORPUS_SOURCES; s++)
        if (corpus_sources[s].name && strcmp(data_path, corpus_sources[s].name) == 0)
            return (CorpusSource)s;
    return CORPUS_SOURCE_FILE;
}

/* A CoNLL-U file's bytes are replaced by its sentences' text, one a line
 * (data/conllu.h), and f->note says what was read. */
static int conllu_text(TextFile *f, char *err, size_t errlen)
{
    Conllu c;
    if (conllu_parse(&c, f->bytes, f->n, f->name, err, errlen)) {
        textfile_free(f);
        return -1;
    }
    free(f->bytes);
    f->bytes = (unsigned char *)c.text;
    f->n = c.ntext;
    c.text = NULL;
    char what[400];
    conllu_describe(&c, what, sizeof what);
    snprintf(f->note, sizeof f->note, "%s: CoNLL-U, training on its sentences' text, one a line "
             "(%zu bytes): %s", f->name, f->n, what);
    conllu_free(&c);
    return 0;
}

int textfile_read(TextFile *f, const char *path, int allow_binary, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    struct stat st;
    if (stat(path, &st) != 0)
        return err_set(err, errlen, "%s: %s", path,
                       errno == ENOENT ? "no such file" : strerror(errno));
    if (S_ISDIR(st.st_mode))
        return err_set(err, errlen, "%s: is a directory, expected a text file", path);
    if (!S_ISREG(st.st_mode))
        return err_set(err, errlen, "%s: not a regular file (a FIFO, device or socket)", path);
    if (st.st_size == 0)
        return err_set(err, errlen, "%s: file is empty", path);
    if ((uint64_t)st.st_size > CORPUS_MAX_BYTES)
        return err_set(err, errlen, "%s: file is %lld bytes, more than the %zu-byte limit", path,
                       (long long)st.st_size, CORPUS_MAX_BYTES);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    size_t n = (size_t)st.st_size;
    f->bytes = malloc(n);
    if (!f->bytes) {
        fclose(fp);
        return err_set(err, errlen, "%s: out of memory reading %zu bytes", path, n);
    }
    size_t got = fread(f->bytes, 1, n, fp);
    int rerr = ferror(fp);
    fclose(fp);
    if (got != n || rerr) {
        textfile_free(f);
        return err_set(err, errlen, "%s: read %zu of %zu bytes%s", path, got, n,
                       rerr ? " (read error)" : " (file changed while reading?)");
    }
    f->n = n;
    if (!allow_binary) {
        size_t nul = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (f->bytes[i] == 0 && nul++ == 0)
                first = i;
        if (nul) {
            textfile_free(f);
            return err_set(err, errlen,
                           "%s: looks binary (%zu NUL bytes, the first at offset %zu); "
                           "headcount trains on text; pass --allow-binary to use it anyway",
                           path, nul, first);
        }
    }
    set_name(f, path);
    if (conllu_is_path(path) && conllu_text(f, err, errlen))
        return -1;
    f->hash = hash_fnv1a(HASH_FNV_INIT, f->bytes, f->n);
    return 0;
}

int textfile_builtin(TextFile *f, size_t nbytes, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->bytes = malloc(nbytes ? nbytes : 1);
    if (!f->bytes)
        return err_set(err, errlen, "out of memory generating the built-in corpus");
    synth_generate((char *)f->bytes, nbytes, CORPUS_BUILTIN_SEED);
    f->n = nbytes;
    f->hash = hash_fnv1a(HASH_FNV_INIT, f->bytes, nbytes);
    set_name(f, CORPUS_BUILTIN_NAME);
    return 0;
}

void textfile_free(TextFile *f)
{
    free(f->bytes);
    f->bytes = NULL;
    f->n = 0;
}

TextfileMatch textfile_reopen(TextFile *f, const char *data_path, uint64_t size, uint64_t hash,
                              int allow_binary, char *err, size_t errlen)
{
    CorpusSource source = corpus_source_of(data_path);
    const CorpusSourceRow *row = &corpus_sources[source];
    int rc = row->generate ? row->generate(f, (size_t)size, err, errlen)
                           : textfile_read(f, data_path, allow_binary, err, errlen);
    if (rc) {
        struct stat st;
        int missing = !row->generate && stat(data_path, &st) != 0 && errno == ENOENT;
        return missing ? TEXTFILE_MISSING : TEXTFILE_UNREADABLE;
    }
    return f->n == size && f->hash == hash ? TEXTFILE_SAME : TEXTFILE_CHANGED;
}

/* The tokenizer: a copy of tok, the byte-level one of f, or the 256 byte
 * values with merges learned from the train bytes; CORPUS_STOPPED when *stop
 * turned non-zero while they were learned. */
static int make_tokenizer(Tokenizer *out, const TextFile *f, const Tokenizer *tok, int vocab,
                          size_t train_bytes, const volatile int *stop, char *err, size_t errlen)
{
    if (tok)
        return tok_copy(out, tok, err, errlen);
    if (vocab == 0)
        return tok_build(out, f->bytes, f->n, err, errlen);
    if (vocab < TOK_BPE_VOCAB_MIN) {
        err_set(err, errlen, "--vocab %d is too small: a byte-pair vocabulary holds the 256 "
                "byte values and at least one merge; give --vocab %d or more", vocab,
                TOK_BPE_VOCAB_MIN);
        return CORPUS_VOCAB_TOO_SMALL;
    }
    if (tok_build_all_bytes(out, err, errlen))
        return -1;
    char why[600];
    int rc = tok_learn_until(out, f->bytes, train_bytes, vocab, stop, why, sizeof why);
    if (rc) {
        tok_free(out);
        if (rc > 0)
            return CORPUS_STOPPED;
        return err_set(err, errlen, "%s: learning the merges: %s", f->name, why);
    }
    if (stop && *stop) {
        tok_free(out);
        return CORPUS_STOPPED;
    }
    return 0;
}

/* tok_encode of bytes[0..n), in slices of at least 4 MiB that end on a chunk
 * boundary (the ids are those of one call: chunks are cut left to right, each
 * from its own start), checking *stop before each slice: the number of ids, -1
 * with a message, or -2 when stopped. */
static long encode_until(const Tokenizer *tok, const unsigned char *bytes, size_t n,
                         TokenId *ids, const char *what, const volatile int *stop, char *err,
                         size_t errlen)
{
    if (!stop || !tok->enc)
        return tok_encode(tok, bytes, n, ids, what, err, errlen);
    long total = 0;
    for (size_t i = 0; i < n;) {
        if (*stop)
            return -2;
        size_t end = i;
        while (end < n && end - i < ((size_t)4 << 20))
            end += bpe_chunk_len(bytes + end, n - end);
        long k = tok_encode(tok, bytes + i, end - i, ids + total, what, err, errlen);
        if (k < 0)
            return -1;
        total += k;
        i = end;
    }
    return total;
}

size_t corpus_train_bytes(size_t n, double val_frac)
{
    return (size_t)((double)n * (1.0 - val_frac));
}

int corpus_prepare(Corpus *c, const TextFile *f, const Tokenizer *tok, int vocab,
                   double val_frac, int T, char *err, size_t errlen)
{
    return corpus_prepare_until(c, f, tok, vocab, val_frac, T, NULL, err, errlen);
}

int corpus_prepare_until(Corpus *c, const TextFile *f, const Tokenizer *tok, int vocab,
                         double val_frac, int T, const volatile int *stop, char *err,
                         size_t errlen)
{
    memset(c, 0, sizeof *c);
    size_t n = f->n, window = (size_t)T + 1;
    size_t train_bytes = corpus_train_bytes(n, val_frac);
    size_t val_bytes = n - train_bytes;
    int rc = make_tokenizer(&c->tok, f, tok, vocab, train_bytes, stop, err, errlen);
    if (rc)
        return rc;
    int merged = c->tok.nmerges > 0;
    /* Byte-level the counts are bytes, as in the message's file size. */
    const char *unit = merged ? "tokens" : "bytes", *counted = merged ? " tokens" : "";
    c->ids = malloc(n ? n * sizeof(TokenId) : 1);
    if (!c->ids) {
        corpus_free(c);
        return err_set(err, errlen, "%s: out of memory tokenizing", f->name);
    }
    if (tok_check(&c->tok, f->bytes, n, f->name, err, errlen)) {
        corpus_free(c);
        return -1;
    }
    long ntrain = encode_until(&c->tok, f->bytes, train_bytes, c->ids, f->name, stop, err,
                               errlen);
    long nval = ntrain < 0 ? ntrain
                           : encode_until(&c->tok, f->bytes + train_bytes, val_bytes,
                                          c->ids + ntrain, f->name, stop, err, errlen);
    if (ntrain == -2 || nval == -2) {
        corpus_free(c);
        return CORPUS_STOPPED;
    }
    if ((size_t)ntrain < window) {
        err_set(err, errlen,
                "%s: %zu bytes leave %ld%s for training, fewer than one window of "
                "block + 1 = %zu %s; use a longer file or a smaller --block",
                f->name, n, ntrain, counted, window, unit);
        corpus_free(c);
        return -1;
    }
    if (val_frac > 0.0 && (size_t)nval < window) {
        err_set(err, errlen,
                "%s: %zu bytes leave %ld%s for validation (--val-frac %g), fewer than one "
                "window of block + 1 = %zu %s; use a longer file, a larger --val-frac "
                "or a smaller --block", f->name, n, nval, counted, val_frac, window, unit);
        corpus_free(c);
        return -1;
    }
    c->ntrain = (size_t)ntrain;
    c->nval = (size_t)nval;
    c->n = c->ntrain + c->nval;
    c->train_bytes = train_bytes;
    c->val_bytes = val_bytes;
    return 0;
}

void corpus_free(Corpus *c)
{
    free(c->ids);
    c->ids = NULL;
    tok_free(&c->tok);
}
