/* The head analysis and the explorer end to end on a byte-pair model: a tiny
 * ./train --vocab run on a text whose tokens hold quotes, commas, backslashes
 * and bytes that are not UTF-8, then ./infer --heads --report and --explore
 * with --explore-json. Every token label written (tokens.csv, heads.json, the
 * SVG heatmaps, the explorer's pieces) is read back through its format's
 * quoting and must be tok_label_bytes of the bytes written beside it; the
 * explorer shows the first block of tokens of its text; --heads-every logs
 * token relations; a byte-pair model still finds the built-in corpus and its
 * planted relations. The token-level definitions are tested on hand-worked
 * vocabularies in test_heads.c. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads.h"
#include "data/tokenizer.h"
#include "tests/testutil.h"

/* One line of the text; 150 of them. Its chunks ("a", " \"", "b", "\",", " \\\\",
 * " \xff\xfe" "c", ...) become tokens after a few dozen merges. */
#define LINE "a \"b\", \\\\ \xff\xfe" "c. \"b\", dd \\\\ \xff\xfe" "c.\n"
#define BLOCK 32

/* A trained byte-pair model (setup): its directory, training text (also in bytes[n]),
 * checkpoint and --heads report directory. */
typedef struct {
    char dir[300], text[400], ckpt[400], rep[400];
    unsigned char *bytes;
    size_t n;
} BpeModel;

/* Runs the command fmt... and requires exit 0. */
static void run_ok(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_ok(const char *what, const char *fmt, ...)
{
    char cmd[3000], *out;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = tu_run(&out, "%s", cmd);
    cr_assert_eq(rc, 0, "%s failed (%d):\n%s", what, rc, out);
    free(out);
}

/* Trains the byte-pair model of LINE x 150. */
static void setup(BpeModel *r, const char *name)
{
    const char *dir = tu_tmpdir(name);
    cr_assert_not_null(dir);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    size_t line = strlen(LINE);
    r->n = 150 * line;
    r->bytes = malloc(r->n + 1);
    for (size_t i = 0; i < r->n; i++)
        r->bytes[i] = (unsigned char)LINE[i % line];
    snprintf(r->text, sizeof r->text, "%s/text.txt", r->dir);
    snprintf(r->ckpt, sizeof r->ckpt, "%s/bpe.ckpt", r->dir);
    snprintf(r->rep, sizeof r->rep, "%s/report", r->dir);
    cr_assert_eq(tu_write_file(r->text, r->bytes, r->n), 0);
    run_ok("train --vocab", "%s/train --data %s --vocab 279 --steps 3 --layers 1 --embd 16 "
           "--heads 2 --block 32 --batch 4 --eval-iters 1 --threads 1 --out %s", tu_bin(),
           r->text, r->ckpt);
}

/* One RFC 4180 field at *p into out (room for len), leaving *p after it and its
 * comma. Returns 1 if it was quoted. */
static int csv_next(const char **p, char *out, size_t len)
{
    size_t k = 0;
    int quoted = **p == '"';
    if (quoted) {
        for ((*p)++; **p && !(**p == '"' && (*p)[1] != '"'); (*p)++) {
            if (**p == '"')
                (*p)++;
            cr_assert(k + 1 < len);
            out[k++] = **p;
        }
        cr_assert_eq(**p, '"', "an unclosed quoted field");
        (*p)++;
    } else {
        for (; **p && **p != ',' && **p != '\n'; (*p)++) {
            cr_assert(k + 1 < len);
            out[k++] = **p;
        }
    }
    out[k] = '\0';
    if (**p == ',')
        (*p)++;
    return quoted;
}

/* The JSON string at *p (at its opening quote) unescaped into out; \uXXXX only
 * below U+0080, which is all the writers use it for. */
static void json_string(const char **p, char *out, size_t len)
{
    size_t k = 0;
    cr_assert_eq(**p, '"');
    for ((*p)++; **p != '"'; (*p)++) {
        cr_assert(**p != '\0' && k + 1 < len);
        if (**p != '\\') {
            out[k++] = **p;
            continue;
        }
        (*p)++;
        if (**p == 'u') {
            unsigned v;
            cr_assert_eq(sscanf(*p + 1, "%4x", &v), 1);
            cr_assert(v < 0x80, "\\u%04x", v);
            out[k++] = (char)v;
            *p += 4;
        } else {
            cr_assert(**p == '"' || **p == '\\', "escape \\%c", **p);
            out[k++] = **p;
        }
    }
    (*p)++;
    out[k] = '\0';
}

/* The label tok_label_bytes gives bytes p[0..n). */
static const char *label_of(const unsigned char *p, size_t n, char *buf, size_t len)
{
    cr_assert(tok_label_bytes(p, n, buf, len) < len);
    return buf;
}

Test(heads_bpe, report_labels_tokens_with_their_text_in_every_file, .timeout = 120)
{
    BpeModel r;
    setup(&r, "heads-bpe-report");
    run_ok("infer --heads --report", "%s/infer --ckpt %s --heads %s --report %s --windows 4 "
           "-j 2", tu_bin(), r.ckpt, r.text, r.rep);
    char path[600];
    snprintf(path, sizeof path, "%s/summary.json", r.rep);
    char *sum = tu_read_text(path);
    int merges = -1;
    const char *m = strstr(sum, "\"merges\":");
    cr_assert_not_null(m, "summary.json has no merge count");
    cr_assert_eq(sscanf(m, "\"merges\":%d", &merges), 1);
    cr_assert(merges > 0, "the model is byte level: %d merges", merges);
    cr_assert_not_null(strstr(sum, "\"tokens_per_window\":32"));
    free(sum);

    /* tokens.csv: every label is its bytes' label; some need quoting. */
    snprintf(path, sizeof path, "%s/tokens.csv", r.rep);
    char *csv = tu_read_text(path);
    const char *p = strchr(csv, '\n');
    cr_assert_not_null(p);
    p++;
    int rows = 0, text_rows = 0, quoted = 0, comma = 0, backslash = 0, escaped = 0, space = 0;
    char labels[BLOCK][256];
    while (*p) {
        char part[16], pos[16], id[16], hex[256], label[256], want[256];
        unsigned char bytes[128];
        csv_next(&p, part, sizeof part);
        csv_next(&p, pos, sizeof pos);
        csv_next(&p, id, sizeof id);
        csv_next(&p, hex, sizeof hex);
        quoted += csv_next(&p, label, sizeof label);
        cr_assert_eq(*p, '\n', "row %d has more than 5 fields", rows);
        p++;
        size_t n = strlen(hex) / 2;
        for (size_t k = 0; k < n; k++) {
            unsigned v;
            cr_assert_eq(sscanf(hex + 2 * k, "%2x", &v), 1);
            bytes[k] = (unsigned char)v;
        }
        cr_assert_str_eq(label, label_of(bytes, n, want, sizeof want), "row %d (%s)", rows, hex);
        comma += strchr(label, ',') != NULL;
        backslash += strstr(label, "\\\\") != NULL;
        escaped += strstr(label, "\\xff") != NULL;
        space += strncmp(label, "\xe2\x90\xa3", 3) == 0;
        if (strcmp(part, "text") == 0) {
            cr_assert_eq(atoi(pos), text_rows);
            snprintf(labels[text_rows++], 256, "%s", label);
        }
        rows++;
    }
    cr_assert_eq(text_rows, BLOCK);
    cr_assert(rows > BLOCK, "no probe tokens");
    cr_assert(quoted && comma && backslash && escaped && space,
              "the pieces did not exercise the quoting: %d quoted, %d with a comma, %d with a "
              "backslash, %d with \\xff, %d with a leading space", quoted, comma, backslash,
              escaped, space);
    free(csv);

    /* heads.json's text window: the same labels, through JSON's escaping. */
    snprintf(path, sizeof path, "%s/heads.json", r.rep);
    char *js = tu_read_text(path);
    p = strstr(js, "\"text_window\":[");
    cr_assert_not_null(p);
    for (int t = 0; t < BLOCK; t++) {
        p = strstr(p, "\"text\":");
        cr_assert_not_null(p);
        p += 7;
        char s[256];
        json_string(&p, s, sizeof s);
        cr_assert_str_eq(s, labels[t], "text_window[%d]", t);
    }
    free(js);

    /* The heatmap's axes carry the labels, XML-escaped. */
    snprintf(path, sizeof path, "%s/heatmaps/text_L0_H0.svg", r.rep);
    char *svg = tu_read_text(path);
    cr_assert_not_null(strstr(svg, ">\xe2\x90\xa3" "dd</text>"), "no \" dd\" label in the SVG");
    cr_assert_not_null(strstr(svg, ">&quot;,</text>"), "no '\",' label in the SVG");
    cr_assert_not_null(strstr(svg, "rotate(-90)"), "word labels run up the columns");
    free(svg);
    free(r.bytes);
}

Test(heads_bpe, explorer_shows_the_first_block_of_tokens_with_their_text, .timeout = 120)
{
    BpeModel r;
    setup(&r, "heads-bpe-explore");
    char html[500], json[500];
    snprintf(html, sizeof html, "%s/page.html", r.dir);
    snprintf(json, sizeof json, "%s/weights.json", r.dir);
    run_ok("infer --explore", "%s/infer --ckpt %s --explore %s --explore-json %s --text-file %s",
           tu_bin(), r.ckpt, html, json, r.text);
    char *js = tu_read_text(json);
    cr_assert_not_null(strstr(js, "\"T\":32,"), "%.100s", js);
    /* tokens: the bytes of each token, in order: together the start of the text. */
    const char *p = strstr(js, "\"tokens\":[");
    cr_assert_not_null(p);
    p += 10;
    unsigned char shown[BLOCK * 16];
    size_t at = 0, start[BLOCK + 1] = {0};
    for (int t = 0; t < BLOCK; t++) {
        cr_assert_eq(*p, '[', "token %d is not an array of bytes", t);
        p++;
        while (*p != ']') {
            char *end;
            long v = strtol(p, &end, 10);
            cr_assert(end != p && v >= 0 && v < 256 && at < sizeof shown);
            shown[at++] = (unsigned char)v;
            p = *end == ',' ? end + 1 : end;
        }
        p += 2;   /* "]," or "]]" */
        start[t + 1] = at;
    }
    cr_assert(start[BLOCK] < r.n && memcmp(shown, r.bytes, at) == 0,
              "the tokens shown are not the text's first");
    /* pieces: each token's label. */
    p = strstr(js, "\"pieces\":[");
    cr_assert_not_null(p);
    p += 10;
    for (int t = 0; t < BLOCK; t++) {
        char s[256], want[256];
        json_string(&p, s, sizeof s);
        p++;
        cr_assert_str_eq(s, label_of(shown + start[t], start[t + 1] - start[t], want,
                                     sizeof want), "piece %d", t);
    }
    free(js);
    /* The page: the same data, and what it kept of the longer text. */
    char *page = tu_read_text(html);
    cr_assert_not_null(strstr(page, "\"kept\":\"first\""));
    const char *tt = strstr(page, "\"text_tokens\":");
    cr_assert_not_null(tt);
    cr_assert(atol(tt + 14) > BLOCK, "the text is longer than a block: %ld tokens", atol(tt + 14));
    cr_assert_not_null(strstr(page, "\"pieces\":[\"a\",\"\xe2\x90\xa3\\\"\",\"b\",\"\\\",\""),
                       "the first pieces are not a, \" \\\"\", b, \"\\\",\"");
    free(page);
    free(r.bytes);
}

Test(heads_bpe, training_log_scores_relations_on_tokens, .timeout = 120)
{
    BpeModel r;
    setup(&r, "heads-bpe-log");
    char log[500];
    snprintf(log, sizeof log, "%s/train.jsonl", r.dir);
    run_ok("train --heads-every", "%s/train --data %s --vocab 279 --steps 2 --layers 1 --embd 16 "
           "--heads 2 --block 32 --batch 4 --eval-every 0 --save-every 0 --heads-every 1 "
           "--threads 1 --log %s --out %s/log.ckpt", tu_bin(), r.text, log, r.dir);
    char *js = tu_read_text(log);
    const char *p = strstr(js, "{\"type\":\"heads\"");
    cr_assert_not_null(p, "no heads record");
    /* Every line of the text has a quoted "b" and repeats, so both the bracket and
     * the copy relation have token rows in any batch of 32-token windows. */
    const char *b = strstr(p, "\"bracket\":{\"best_head\":\"L0H");
    const char *c = strstr(p, "\"copy\":{\"best_head\":\"L0H");
    cr_assert(b && c, "a relation had no rows: %.400s", p);
    free(js);
    free(r.bytes);
}

Test(heads_bpe, the_built_in_corpus_keeps_its_planted_relations_on_byte_pairs, .timeout = 120)
{
    const char *dir = tu_tmpdir("heads-bpe-builtin");
    cr_assert_not_null(dir);
    char d[300], val[400], piece[400];
    snprintf(d, sizeof d, "%s", dir);
    snprintf(val, sizeof val, "%s/val.txt", d);
    snprintf(piece, sizeof piece, "%s/piece.txt", d);
    run_ok("train --vocab on the built-in corpus", "%s/train --vocab 512 --steps 2 --layers 1 "
           "--embd 16 --heads 2 --block 64 --batch 4 --eval-iters 1 --eval-every 0 --threads 2 "
           "--out %s/bi.ckpt && %s/train --dump-val %s --out %s/unused.ckpt && head -c 20000 %s > %s",
           tu_bin(), d, tu_bin(), val, d, val, piece);
    char cmd[2000], *out;
    snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s/bi.ckpt --heads %s "
             "--json --windows 4 -j 2 2>/dev/null", tu_bin(), d, piece);
    cr_assert_eq(tu_run(&out, "%s", cmd), 0, "%s", out);
    /* Found at the start of the validation split, with byte pairs, and every
     * planted relation has token rows. */
    cr_assert_not_null(strstr(out, "\"builtin_corpus\":true,\"parsed_sentences\":0,"
                                   "\"planted_dropped\":"), "%.300s", out);
    const char *m = strstr(out, "\"merges\":");
    cr_assert(m && atoi(m + 9) > 0, "no merges: %.200s", out);
    cr_assert_not_null(strstr(out, "\"probe_tokens\":\"word tokens"), "%.2000s", out);
    for (int q = HEADS_REL_TEXT; q < HEADS_REL_COUNT; q++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\":{", heads_rel_table[q].name);
        const char *r = strstr(out, key);
        cr_assert_not_null(r, "no %s relation", key);
        r = strstr(r, "\"rows\":");
        cr_assert(r && atoi(r + 7) > 0, "%s has no rows: %.300s", key, strstr(out, key));
    }
    free(out);
}

/* A user's own sentences, the documents' examples, typed into a file: the
 * ones the built-in corpus's grammar writes are parsed, and their planted
 * relations get rows and minimal pairs as the corpus's own would. */
Test(heads_bpe, the_documents_sentences_get_their_planted_relations, .timeout = 120)
{
    const char *dir = tu_tmpdir("heads-bpe-docs");
    cr_assert_not_null(dir);
    char d[300], text[400];
    snprintf(d, sizeof d, "%s", dir);
    snprintf(text, sizeof text, "%s/docs.txt", d);
    /* "The cat sat down." plants verb-modifier on bytes, but on tokens its row
     * would be its key ("sat" predicts "down"); "sat slowly down" gives it one. */
    const char *docs = "The cat sat on the mat. The tired cat slept on the warm mat.\n"
                       "The cat sat down. Apple released a new phone because it is tasty.\n"
                       "The cat sat slowly down.\n"
                       "It's a sentence the grammar does not write!\n";
    char buf[2048] = "";
    for (int k = 0; k < 6; k++)
        strcat(buf, docs);
    cr_assert_eq(tu_write_file(text, buf, strlen(buf)), 0);
    run_ok("train --vocab on the built-in corpus", "%s/train --vocab 512 --steps 2 --layers 1 "
           "--embd 16 --heads 2 --block 64 --batch 4 --eval-iters 1 --eval-every 0 --threads 2 "
           "--out %s/bi.ckpt", tu_bin(), d);
    char cmd[2000], *out;
    snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s/bi.ckpt --heads %s "
             "--json --windows 2 -j 2 2>/dev/null", tu_bin(), d, text);
    cr_assert_eq(tu_run(&out, "%s", cmd), 0, "%s", out);
    /* 5 of every 6 sentences parse: 30 of 36. */
    cr_assert_not_null(strstr(out, "\"builtin_corpus\":false,\"parsed_sentences\":30,"), "%.300s",
                       out);
    /* The sixth says why it is not understood: its first word, which no line
     * of the grammar starts with (each of its 6 copies is listed). */
    const char *nu = strstr(out, "\"not_understood\":{\"count\":6,\"listed\":[{\"sentence\":"
                                 "\"It's a sentence the grammar does not write!\",\"why\":\"`It's`: ");
    cr_assert_not_null(nu, "%.400s", strstr(out, "\"not_understood\""));
    cr_assert_not_null(strstr(nu, "nearest pattern: "), "%.400s", nu);
    static const char *const seen[] = {"determiner", "subject-verb", "adjective-verb",
                                       "verb-modifier", "place", "pronoun"};
    for (size_t q = 0; q < sizeof seen / sizeof seen[0]; q++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\":{", seen[q]);
        const char *r = strstr(out, key);
        cr_assert_not_null(r, "no %s relation", key);
        r = strstr(r, "\"rows\":");
        cr_assert(r && atoi(r + 7) > 0, "%s has no rows: %.300s", key, strstr(out, key));
    }
    free(out);
    /* The text table says the same, once per sentence up to five. */
    snprintf(cmd, sizeof cmd, "%s/infer --ckpt %s/bi.ckpt --heads %s --windows 2 -j 2 2>/dev/null",
             tu_bin(), d, text);
    cr_assert_eq(tu_run(&out, "%s", cmd), 0, "%s", out);
    cr_assert_not_null(strstr(out, "(6 of the file's sentences are not understood; the first "
                                   "ones, with why:)\n    \"It's a sentence the grammar does not "
                                   "write!\": `It's`: "), "%s", out);
    free(out);
}
