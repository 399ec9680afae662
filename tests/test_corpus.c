/* Corpus and tokenizer tests (data/corpus, data/tokenizer): every file the
 * trainer must refuse (missing, a directory, not a regular file, empty, binary,
 * too short for a train or a val window) gets a message naming the file and the
 * problem; bytes that are not UTF-8 are fine (the alphabet is bytes); the
 * byte-level tokenizer round-trips and names an unknown byte and its offset; the
 * split is by bytes, and merges are learned from the train bytes only; a
 * checkpoint's training text is read again and checked against its record. The
 * tokenizer's merges are tested in test_tokenizer.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/corpus.h"
#include "data/induction.h"
#include "data/tokenizer.h"
#include "util/hash.h"
#include "tests/testutil.h"

/* Writes n bytes to dir/name and returns the path (static buffer). */
static const char *put_file(const char *dir, const char *name, const void *data, size_t n)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(tu_write_file(path, data, n), 0, "cannot write %s", path);
    return path;
}

/* textfile_read must fail with a message naming path and containing needle. */
static void expect_read_fails(const char *path, int allow_binary, const char *needle)
{
    TextFile f;
    char err[1500] = "";
    cr_assert_eq(textfile_read(&f, path, allow_binary, err, sizeof err), -1,
                 "%s was accepted (expected '%s')", path, needle);
    cr_assert(strstr(err, path), "message does not name the file: %s", err);
    cr_assert(strstr(err, needle), "expected '%s' in: %s", needle, err);
    cr_assert_null(f.bytes);
}

/* corpus_prepare on these bytes must fail with a message containing needle. */
static void expect_prepare_fails(const char *dir, const void *data, size_t n, double val_frac,
                                 int T, const char *needle)
{
    const char *path = put_file(dir, "short.txt", data, n);
    TextFile f;
    Corpus c;
    char err[1500] = "";
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 0, val_frac, T, err, sizeof err), -1,
                 "%zu bytes with T=%d accepted (expected '%s')", n, T, needle);
    cr_assert(strstr(err, path), "message does not name the file: %s", err);
    cr_assert(strstr(err, needle), "expected '%s' in: %s", needle, err);
    cr_assert_null(c.ids);
    textfile_free(&f);
}

Test(corpus, missing_file_is_refused)
{
    const char *d = tu_tmpdir("corpus-missing");
    char path[400];
    snprintf(path, sizeof path, "%s/nope.txt", d);
    expect_read_fails(path, 0, "no such file");
}

Test(corpus, directory_is_refused)
{
    const char *d = tu_tmpdir("corpus-dir");
    expect_read_fails(d, 0, "is a directory");
}

Test(corpus, fifo_is_refused_as_not_a_regular_file)
{
    const char *d = tu_tmpdir("corpus-fifo");
    char path[400];
    snprintf(path, sizeof path, "%s/pipe", d);
    cr_assert_eq(mkfifo(path, 0600), 0);
    expect_read_fails(path, 0, "not a regular file");
}

Test(corpus, unreadable_file_is_refused)
{
    if (geteuid() == 0)
        cr_skip_test("running as root: file permissions do not stop reads");
    const char *d = tu_tmpdir("corpus-unreadable");
    const char *path = put_file(d, "secret.txt", "some text\n", 10);
    cr_assert_eq(chmod(path, 0), 0);
    expect_read_fails(path, 0, "cannot open");
}

Test(corpus, empty_file_is_refused)
{
    const char *d = tu_tmpdir("corpus-empty");
    expect_read_fails(put_file(d, "empty.txt", "", 0), 0, "file is empty");
}

Test(corpus, one_byte_file_reads_but_is_too_short_to_train)
{
    const char *d = tu_tmpdir("corpus-onebyte");
    const char *path = put_file(d, "one.txt", "x", 1);
    TextFile f;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.n, 1);
    cr_assert_eq(f.hash, hash_fnv1a(HASH_FNV_INIT, "x", 1));
    textfile_free(&f);
    expect_prepare_fails(d, "x", 1, 0.0, 1, "fewer than one window");
}

Test(corpus, nul_bytes_are_refused_unless_binary_is_allowed)
{
    const char *d = tu_tmpdir("corpus-nul");
    const unsigned char data[] = {'a', 'b', 0, 'c', 0, 0, 'd'};
    const char *path = put_file(d, "bin.dat", data, sizeof data);
    expect_read_fails(path, 0, "3 NUL bytes, the first at offset 2");
    expect_read_fails(path, 0, "--allow-binary");
    TextFile f;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.n, sizeof data);
    cr_assert_eq(memcmp(f.bytes, data, sizeof data), 0);
    Corpus c;
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 0, 0.0, 2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.tok.V, 5);
    cr_assert_eq(c.tok.bytes[0], 0);
    cr_assert_eq(c.ids[2], 0);
    corpus_free(&c);
    textfile_free(&f);
}

Test(corpus, bytes_that_are_not_utf8_are_ordinary_tokens)
{
    const char *d = tu_tmpdir("corpus-latin1");
    /* Latin-1 "caf\xe9", a lone continuation byte, an overlong form, 0xff. */
    const unsigned char data[] = {'c', 'a', 'f', 0xe9, '\n', 0x80, 0xc0, 0xaf, 0xff, 'a', '\n'};
    const char *path = put_file(d, "latin1.txt", data, sizeof data);
    TextFile f;
    Corpus c;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 0, 0.0, 4, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.tok.V, 9);
    cr_assert_eq(c.tok.bytes[c.tok.V - 1], 0xff);
    for (size_t i = 0; i < sizeof data; i++)
        cr_assert_eq(c.tok.bytes[c.ids[i]], data[i], "byte %zu did not round-trip", i);
    corpus_free(&c);
    textfile_free(&f);
}

Test(corpus, too_short_for_a_train_window_names_the_sizes)
{
    const char *d = tu_tmpdir("corpus-shorttrain");
    /* 10 bytes, val 0.1: 9 train bytes, a window of T + 1 = 10. */
    expect_prepare_fails(d, "abcdefghij", 10, 0.1, 9, "leave 9 for training");
    expect_prepare_fails(d, "abcdefghij", 10, 0.1, 9, "block + 1 = 10");
}

Test(corpus, too_short_for_a_val_window_names_the_sizes)
{
    const char *d = tu_tmpdir("corpus-shortval");
    char text[101];
    for (int i = 0; i < 100; i++)
        text[i] = (char)('a' + i % 26);
    /* 100 bytes, val 0.1: 90 train (fits T + 1 = 17), 10 val (does not). */
    expect_prepare_fails(d, text, 100, 0.1, 16, "leave 10 for validation");
    expect_prepare_fails(d, text, 100, 0.1, 16, "--val-frac 0.1");
    /* The same file trains without a val split. */
    const char *path = put_file(d, "ok.txt", text, 100);
    TextFile f;
    Corpus c;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 0, 0.0, 16, err, sizeof err), 0, "%s", err);
    cr_assert(c.ntrain == 100 && c.nval == 0);
    corpus_free(&c);
    textfile_free(&f);
}

Test(corpus, split_is_by_position_and_exact)
{
    const char *d = tu_tmpdir("corpus-split");
    char text[1000];
    for (int i = 0; i < 1000; i++)
        text[i] = (char)('a' + (i * 7) % 26);
    const char *path = put_file(d, "text.txt", text, sizeof text);
    TextFile f;
    Corpus c;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 0, 0.25, 8, err, sizeof err), 0, "%s", err);
    cr_assert(c.n == 1000 && c.ntrain == 750 && c.nval == 250);
    cr_assert_str_eq(f.name, path);
    corpus_free(&c);
    textfile_free(&f);
}

Test(corpus, builtin_corpus_is_deterministic_and_named)
{
    TextFile a, b;
    char err[300];
    cr_assert_eq(textfile_builtin(&a, 5000, err, sizeof err), 0, "%s", err);
    cr_assert_eq(textfile_builtin(&b, 5000, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(a.bytes, b.bytes, 5000), 0);
    cr_assert_eq(a.hash, hash_fnv1a(HASH_FNV_INIT, a.bytes, 5000));
    cr_assert_str_eq(a.name, CORPUS_BUILTIN_NAME);
    textfile_free(&a);
    textfile_free(&b);
}

Test(tokenizer, encode_then_vocab_lookup_round_trips_and_vocab_reloads)
{
    const unsigned char text[] = "the cat (sat) on \"the\" mat.\n\tthe end\n";
    size_t n = sizeof text - 1;
    Tokenizer tok, again;
    cr_assert_eq(tok_build(&tok, text, n, NULL, 0), 0);
    for (int i = 1; i < tok.V; i++)
        cr_assert_gt(tok.bytes[i], tok.bytes[i - 1], "vocabulary not sorted");
    TokenId ids[64];
    char err[1500];
    cr_assert_eq(tok_encode(&tok, text, n, ids, "text", err, sizeof err), (long)n, "%s", err);
    for (size_t i = 0; i < n; i++) {
        cr_assert_lt(ids[i], tok.V);
        cr_assert_eq(tok.bytes[ids[i]], text[i], "byte %zu did not round-trip", i);
    }
    cr_assert_eq(tok_from_parts(&again, tok.bytes, tok.nbytes, NULL, 0, err, sizeof err), 0, "%s",
                 err);
    cr_assert(again.V == tok.V && again.nbytes == tok.nbytes && again.nmerges == 0);
    cr_assert_eq(memcmp(again.bytes, tok.bytes, sizeof tok.bytes), 0,
                 "a stored vocabulary reloads differently");
    cr_assert_eq(memcmp(again.id, tok.id, sizeof tok.id), 0);
    tok_free(&tok);
    tok_free(&again);
}

Test(tokenizer, unknown_byte_is_named_with_its_offset)
{
    Tokenizer tok;
    cr_assert_eq(tok_build(&tok, (const unsigned char *)"abc\n", 4, NULL, 0), 0);
    TokenId ids[16];
    char err[1500] = "";
    cr_assert_eq(tok_encode(&tok, (const unsigned char *)"abcab z", 7, ids, "prompt.txt", err,
                            sizeof err), -1);
    cr_assert(strstr(err, "prompt.txt: byte 0x20 (space) at offset 5"), "%s", err);
    cr_assert(strstr(err, "\"\\nabc\""), "the vocabulary is not shown: %s", err);
    const unsigned char bin[] = {'a', 0xfe};
    cr_assert_eq(tok_encode(&tok, bin, 2, ids, "x", err, sizeof err), -1);
    cr_assert(strstr(err, "byte 0xfe at offset 1"), "%s", err);
    cr_assert_eq(tok_encode(&tok, (const unsigned char *)"a'", 2, ids, "x", err, sizeof err), -1);
    cr_assert(strstr(err, "byte 0x27 (') at offset 1"), "%s", err);
    cr_assert(strstr(err, "the 4 bytes of the text it was trained on"), "no hint: %s", err);
    tok_free(&tok);
}

Test(tokenizer, bad_stored_vocabularies_are_refused)
{
    Tokenizer tok;
    char err[1500];
    const unsigned char v[4] = {'a', 'c', 'b', 'd'};
    cr_assert_eq(tok_from_parts(&tok, v, 0, NULL, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "size 0"), "%s", err);
    cr_assert_eq(tok_from_parts(&tok, v, 257, NULL, 0, err, sizeof err), -1);
    cr_assert_eq(tok_from_parts(&tok, v, 4, NULL, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "entry 2"), "%s", err);
}

/* Byte-level the byte split and the token split are the same place. */
Test(corpus, byte_level_split_counts_bytes_and_tokens_alike)
{
    const char *d = tu_tmpdir("corpus-bytesplit");
    char text[1000];
    for (int i = 0; i < 1000; i++)
        text[i] = (char)('a' + (i * 7) % 26);
    const char *path = put_file(d, "text.txt", text, sizeof text);
    TextFile f;
    Corpus c;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 0, 0.25, 8, err, sizeof err), 0, "%s", err);
    cr_assert(c.train_bytes == 750 && c.val_bytes == 250 && c.tok.nmerges == 0);
    for (size_t i = 0; i < 1000; i++)
        cr_assert_eq(c.tok.bytes[c.ids[i]], (unsigned char)text[i]);
    corpus_free(&c);
    textfile_free(&f);
}

/* With a vocabulary size the bytes are split first and the merges come from
 * the train bytes alone: val repeats "xq" pairs (and train never does), so no
 * token joins x and q, though the pair is the file's most frequent. Each part
 * decodes back to its own bytes, and the merges are exactly those learned from
 * the train prefix by itself. */
Test(corpus, merges_are_learned_from_the_train_bytes_only)
{
    const char *d = tu_tmpdir("corpus-bpe-split");
    enum { N = 4000 };
    char *text = malloc(N);
    for (int i = 0; i < N; i++)
        text[i] = " the cat sat on the mat and the dog ran"[i % 39];
    size_t ntrain = (size_t)((double)N * (1.0 - 0.25));
    for (size_t i = ntrain; i < N; i++)
        text[i] = "xq"[i % 2];
    text[5] = 'x';      /* x and q occur in train, never side by side there */
    text[9] = 'q';
    const char *path = put_file(d, "text.txt", text, N);
    TextFile f;
    Corpus c;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 300, 0.25, 8, err, sizeof err), 0, "%s", err);
    cr_assert(c.train_bytes == ntrain && c.val_bytes == N - ntrain);
    cr_assert_eq(c.tok.nbytes, 256, "a byte-pair vocabulary starts from every byte value");
    cr_assert_gt(c.tok.nmerges, 5);
    for (int k = 0; k < c.tok.nmerges; k++) {
        size_t len;
        const unsigned char *p = tok_piece(&c.tok, c.tok.nbytes + k, &len);
        for (size_t i = 0; i + 1 < len; i++)
            cr_assert(!((p[i] == 'x' && p[i + 1] == 'q') || (p[i] == 'q' && p[i + 1] == 'x')),
                      "merge %d (\"%.*s\") was learned from val", k, (int)len, p);
    }
    unsigned char *back = malloc(N);
    cr_assert_eq(tok_decode(&c.tok, c.ids, c.ntrain, back), ntrain);
    cr_assert_eq(memcmp(back, text, ntrain), 0, "the train tokens are not the train bytes");
    cr_assert_eq(tok_decode(&c.tok, c.ids + c.ntrain, c.nval, back), N - ntrain);
    cr_assert_eq(memcmp(back, text + ntrain, N - ntrain), 0, "the val tokens are not val");
    Tokenizer alone;
    cr_assert_eq(tok_build_all_bytes(&alone, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tok_learn(&alone, f.bytes, ntrain, 300, err, sizeof err), 0, "%s", err);
    cr_assert(alone.nmerges == c.tok.nmerges &&
              memcmp(alone.merges, c.tok.merges, sizeof *alone.merges * alone.nmerges) == 0,
              "the corpus learned other merges than the train prefix gives");
    tok_free(&alone);
    free(back);
    corpus_free(&c);
    textfile_free(&f);
    free(text);
}

Test(corpus, a_vocabulary_of_256_or_fewer_is_its_own_error)
{
    const char *d = tu_tmpdir("corpus-bpe-small");
    const char *text = "the quick brown fox jumps over the lazy dog, again and again\n";
    const char *path = put_file(d, "text.txt", text, strlen(text));
    TextFile f;
    Corpus c;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 10, 0.0, 4, err, sizeof err),
                 CORPUS_VOCAB_TOO_SMALL);
    cr_assert(strstr(err, "--vocab 10 is too small: a byte-pair vocabulary holds the 256 byte "
                          "values and at least one merge; give --vocab 257 or more"), "%s", err);
    cr_assert_null(c.ids);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 256, 0.0, 4, err, sizeof err),
                 CORPUS_VOCAB_TOO_SMALL);
    cr_assert_null(c.ids);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 257, 0.0, 4, err, sizeof err), 0, "%s", err);
    cr_assert(c.tok.nbytes == 256 && c.tok.nmerges == 1 && c.tok.V == 257);
    corpus_free(&c);
    textfile_free(&f);
}

/* Known answer: a vocabulary learned from text with no apostrophe, digit, '?'
 * or '!' encodes "it's, 3 cats?!" as the pieces below and decodes them back to
 * the same 14 bytes. Each unseen byte is its own token, whose id is the byte's
 * value (token i < 256 is byte i); " cats" is a merge learned, while "it"
 * without a space before it never occurs in the text and stays two bytes. */
Test(corpus, a_bpe_vocabulary_encodes_bytes_its_text_never_held)
{
    const char *d = tu_tmpdir("corpus-bpe-any-text");
    enum { N = 3000 };
    char *text = malloc(N);
    const char *line_of_text = "the cat sat, it sat on the mat. the cats ran.\n";
    for (int i = 0; i < N; i++)
        text[i] = line_of_text[i % strlen(line_of_text)];
    const char *path = put_file(d, "text.txt", text, N);
    TextFile f;
    Corpus c;
    char err[1500];
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(corpus_prepare(&c, &f, NULL, 300, 0.1, 8, err, sizeof err), 0, "%s", err);
    const char *line = "it's, 3 cats?!";
    static const char *const want[] = {"i", "t", "'", "s", ",", " ", "3", " cats", "?", "!"};
    size_t n = strlen(line), nwant = sizeof want / sizeof *want;
    TokenId ids[14];
    long k = tok_encode(&c.tok, (const unsigned char *)line, n, ids, "the line", err, sizeof err);
    cr_assert_eq(k, (long)nwant, "%ld tokens: %s", k, k < 0 ? err : "");
    for (size_t i = 0; i < nwant; i++) {
        size_t len;
        const unsigned char *p = tok_piece(&c.tok, ids[i], &len);
        cr_assert(len == strlen(want[i]) && memcmp(p, want[i], len) == 0,
                  "token %zu is \"%.*s\", expected \"%s\"", i, (int)len, p, want[i]);
        if (len == 1 && strchr("'3?!", p[0]))
            cr_assert_eq(ids[i], p[0], "the unseen byte 0x%02x is token %u", p[0], ids[i]);
    }
    unsigned char back[14];
    cr_assert_eq(tok_decode(&c.tok, ids, (size_t)k, back), n);
    cr_assert_eq(memcmp(back, line, n), 0, "decoded \"%.*s\"", (int)n, back);
    corpus_free(&c);
    textfile_free(&f);
    free(text);
}

/* textfile_reopen gives back the text a checkpoint recorded (path, size, hash)
 * while it is unchanged, says CHANGED (holding what it read) once a byte or the
 * size differs, MISSING when the file is gone and UNREADABLE for a directory;
 * a built-in corpus's name is generated again at the recorded size. */
Test(corpus, reopen_finds_the_recorded_text_or_says_what_changed)
{
    const char *d = tu_tmpdir("corpus-reopen");
    const char text[] = "the cat sat on the mat\n";
    size_t n = sizeof text - 1;
    uint64_t hash = hash_fnv1a(HASH_FNV_INIT, text, n);
    char path[512], err[1600];
    snprintf(path, sizeof path, "%s", put_file(d, "train.txt", text, n));
    TextFile f;
    cr_assert_eq(textfile_reopen(&f, path, n, hash, 0, err, sizeof err), TEXTFILE_SAME, "%s", err);
    cr_assert_eq(f.n, n);
    cr_assert_eq(memcmp(f.bytes, text, n), 0);
    textfile_free(&f);

    put_file(d, "train.txt", "the cat sat on the rug\n", n);
    cr_assert_eq(textfile_reopen(&f, path, n, hash, 0, err, sizeof err), TEXTFILE_CHANGED);
    cr_assert_eq(f.n, n);
    textfile_free(&f);
    put_file(d, "train.txt", text, n - 1);
    cr_assert_eq(textfile_reopen(&f, path, n, hash, 0, err, sizeof err), TEXTFILE_CHANGED);
    cr_assert_eq(f.n, n - 1);
    textfile_free(&f);

    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(textfile_reopen(&f, path, n, hash, 0, err, sizeof err), TEXTFILE_MISSING);
    cr_assert_not_null(strstr(err, "no such file"), "%s", err);
    cr_assert_eq(textfile_reopen(&f, d, n, hash, 0, err, sizeof err), TEXTFILE_UNREADABLE);
    cr_assert_not_null(strstr(err, "is a directory"), "%s", err);

    TextFile b;
    cr_assert_eq(textfile_builtin(&b, 5000, err, sizeof err), 0, "%s", err);
    cr_assert_eq(textfile_reopen(&f, CORPUS_BUILTIN_NAME, b.n, b.hash, 0, err, sizeof err),
                 TEXTFILE_SAME, "%s", err);
    cr_assert_eq(memcmp(f.bytes, b.bytes, b.n), 0);
    textfile_free(&f);
    cr_assert_eq(textfile_reopen(&f, CORPUS_BUILTIN_NAME, b.n, b.hash ^ 1, 0, err, sizeof err),
                 TEXTFILE_CHANGED);
    textfile_free(&f);
    textfile_free(&b);
}

/* Every built-in corpus's row: its recorded name reads back as its source, and
 * its generator makes the same text the named generator does; any other path
 * is a file. */
Test(corpus, each_built_in_corpus_row_names_itself_and_generates_its_text)
{
    char err[1500];
    cr_assert_eq(corpus_source_of("input.txt"), CORPUS_SOURCE_FILE);
    cr_assert_null(corpus_sources[CORPUS_SOURCE_FILE].generate);
    for (int s = 0; s < CORPUS_SOURCES; s++) {
        const CorpusSourceRow *row = &corpus_sources[s];
        if (!row->name)
            continue;
        cr_assert_eq(corpus_source_of(row->name), s, "%s", row->name);
        cr_assert_gt(row->default_bytes, 0, "%s", row->name);
        TextFile a, b;
        cr_assert_eq(row->generate(&a, 3000, err, sizeof err), 0, "%s", err);
        int rc = s == CORPUS_SOURCE_TEXT ? textfile_builtin(&b, 3000, err, sizeof err)
                                         : induction_textfile(&b, 3000, err, sizeof err);
        cr_assert_eq(rc, 0, "%s", err);
        cr_assert_eq(a.n, 3000);
        cr_assert_eq(a.hash, b.hash, "%s", row->name);
        cr_assert_str_eq(a.name, row->name);
        textfile_free(&a);
        textfile_free(&b);
    }
    cr_assert_str_eq(corpus_sources[CORPUS_SOURCE_TEXT].name, CORPUS_BUILTIN_NAME);
    cr_assert_str_eq(corpus_sources[CORPUS_SOURCE_INDUCTION].name, INDUCTION_CORPUS_NAME);
}
