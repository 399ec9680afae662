/* lexicon_gen: checks the word table (data/lexicon.tsv, docs/corpus.md "Where the
 * words come from") and writes it as the C source that defines data/lexicon.h's
 * arrays. The Makefile builds and runs it before the library:
 *
 *     lexicon_gen data/lexicon.tsv build/gen/lexicon_table.c
 *
 * A table that is missing, damaged or too small gets one line on stderr
 * ("lexicon_gen: error: FILE:LINE: what was expected, what was found") and exit 1,
 * and no output is written; usage errors exit 2. What a line must hold, and the
 * minimum sizes, come from data/lexicon.h; deriving the table is derive.py's. */
#include "data/lexicon.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (8u << 20) /* a table this large is not ours */
#define COLUMNS 6

static const char *const CLASS_NAMES[LEX_CLASS_COUNT] = {
#define X(id, name) name,
    LEX_CLASSES(X)
#undef X
};
static const char *const TAG_NAMES[LEX_TAG_COUNT] = {
#define X(id, name, classes) name,
    LEX_TAGS(X)
#undef X
};
static const unsigned TAG_CLASSES[LEX_TAG_COUNT] = {
#define X(id, name, classes) classes,
    LEX_TAGS(X)
#undef X
};

typedef struct {
    int cls;
    char word[LEX_MAX_WORD + 1], form1[LEX_MAX_WORD + 1], form2[LEX_MAX_WORD + 1];
    uint64_t tags;
    uint32_t freq;
    long line;
} Row;

typedef struct {
    const char *form;
    size_t row;
} Form;

static const char *g_path;

static void die(long line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "lexicon_gen: error: %s", g_path);
    if (line > 0)
        fprintf(stderr, ":%ld", line);
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static int is_word(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > LEX_MAX_WORD)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 'a' || s[i] > 'z')
            return 0;
    return 1;
}

/* A form column: "-" (none) or a word, as the class requires. */
static void parse_form(char *dst, const char *col, int cls, int want, const char *what,
                       long line)
{
    if (!want) {
        if (strcmp(col, "-") != 0)
            die(line, "column %s: expected '-' for a %s, found '%.40s'", what,
                CLASS_NAMES[cls], col);
        dst[0] = '\0';
        return;
    }
    if (!is_word(col))
        die(line, "column %s: expected a word of 1-%d letters a-z, found '%.40s'", what,
            LEX_MAX_WORD, col);
    strcpy(dst, col);
}

static uint64_t parse_tags(char *col, int cls, long line)
{
    uint64_t tags = 0;
    if (strcmp(col, "-") == 0)
        return 0;
    for (char *save = NULL, *t = strtok_r(col, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < LEX_TAG_COUNT && strcmp(TAG_NAMES[k], t) != 0)
            k++;
        if (k == LEX_TAG_COUNT)
            die(line, "column tags: unknown tag '%.40s'", t);
        if (!(TAG_CLASSES[k] & (1u << cls)))
            die(line, "column tags: tag '%s' does not apply to a %s", t, CLASS_NAMES[cls]);
        if (tags & (UINT64_C(1) << k))
            die(line, "column tags: tag '%s' twice", t);
        tags |= UINT64_C(1) << k;
    }
    return tags;
}

static int popcount64(uint64_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* What a noun's or verb's tags must say. */
static void check_class_tags(const Row *r)
{
    const uint64_t kinds = LEX_TAG(ARTIFACT) | LEX_TAG(FOOD) | LEX_TAG(OBJECT) |
                           LEX_TAG(PLANT) | LEX_TAG(SUBSTANCE) | LEX_TAG(LOCATION);
    const uint64_t beings = LEX_TAG(PERSON) | LEX_TAG(ANIMAL);
    if (r->cls == LEX_NOUN) {
        if (popcount64(r->tags & (LEX_TAG(ANIMATE) | LEX_TAG(INANIMATE))) != 1)
            die(r->line, "noun '%s': expected exactly one of animate, inanimate", r->word);
        int animate = (r->tags & LEX_TAG(ANIMATE)) != 0;
        if (popcount64(r->tags & (animate ? beings : kinds)) != 1 ||
            (r->tags & (animate ? kinds : beings)))
            die(r->line, "noun '%s': expected one kind of %s (%s)", r->word,
                animate ? "animate noun" : "thing",
                animate ? "person, animal" : "artifact, food, object, plant, substance, location");
    } else if (r->cls == LEX_VERB) {
        if (!(r->tags & (LEX_TAG(INTRANS) | LEX_TAG(TRANS))))
            die(r->line, "verb '%s': expected intrans or trans among its tags", r->word);
    }
}

static void parse_row(Row *r, char *text, long line)
{
    char *col[COLUMNS];
    int n = 0;
    for (char *p = text;; p++) {
        if (n == COLUMNS)
            die(line, "expected %d tab-separated columns, found more", COLUMNS);
        col[n++] = p;
        p = strchr(p, '\t');
        if (!p)
            break;
        *p = '\0';
    }
    if (n != COLUMNS)
        die(line, "expected %d tab-separated columns, found %d", COLUMNS, n);
    r->line = line;
    r->cls = -1;
    for (int c = 0; c < LEX_CLASS_COUNT; c++)
        if (strcmp(col[0], CLASS_NAMES[c]) == 0)
            r->cls = c;
    if (r->cls < 0)
        die(line, "column class: expected noun, verb, adj, det, pron, prep, particle or "
                  "conj, found '%.40s'", col[0]);
    if (!is_word(col[1]))
        die(line, "column word: expected 1-%d letters a-z, found '%.40s'", LEX_MAX_WORD, col[1]);
    strcpy(r->word, col[1]);
    parse_form(r->form1, col[2], r->cls, r->cls == LEX_NOUN || r->cls == LEX_VERB, "form1",
               line);
    parse_form(r->form2, col[3], r->cls, r->cls == LEX_VERB, "form2", line);
    r->tags = parse_tags(col[4], r->cls, line);
    char *end;
    errno = 0;
    unsigned long long f = strtoull(col[5], &end, 10);
    if (col[5][0] < '0' || col[5][0] > '9' || *end != '\0' || errno || f < 1 || f > UINT32_MAX)
        die(line, "column freq: expected an integer 1-%lu, found '%.40s'",
            (unsigned long)UINT32_MAX, col[5]);
    r->freq = (uint32_t)f;
    check_class_tags(r);
}

/* Sorted by class, then freq falling, then word: the order data/lexicon.h promises. */
static void check_order(const Row *a, const Row *b)
{
    if (b->cls < a->cls)
        die(b->line, "class %s after %s: rows must be sorted by class (%s first)",
            CLASS_NAMES[b->cls], CLASS_NAMES[a->cls], CLASS_NAMES[0]);
    if (b->cls == a->cls && b->freq > a->freq)
        die(b->line, "freq %lu after %lu: a class's rows must be sorted by freq, falling",
            (unsigned long)b->freq, (unsigned long)a->freq);
    if (b->cls == a->cls && b->freq == a->freq && strcmp(b->word, a->word) <= 0)
        die(b->line, "'%s' after '%s' at the same freq: expected alphabetical order, "
                     "each word once", b->word, a->word);
}

static int form_cmp(const void *x, const void *y)
{
    const Form *a = x, *b = y;
    int c = strcmp(a->form, b->form);
    return c ? c : (a->row > b->row) - (a->row < b->row);
}

static int is_open(int cls)
{
    return cls == LEX_NOUN || cls == LEX_VERB || cls == LEX_ADJ;
}

/* No word twice in a class, and no open-class form shared with another entry. */
static void check_forms(const Row *rows, size_t n)
{
    Form *forms = malloc(3 * n * sizeof *forms);
    size_t k = 0;
    if (!forms)
        die(0, "out of memory for %zu rows", n);
    for (size_t i = 0; i < n; i++) {
        forms[k++] = (Form){rows[i].word, i};
        if (rows[i].form1[0] && strcmp(rows[i].form1, rows[i].word) != 0)
            forms[k++] = (Form){rows[i].form1, i};
        if (rows[i].form2[0] && strcmp(rows[i].form2, rows[i].word) != 0 &&
            strcmp(rows[i].form2, rows[i].form1) != 0)
            forms[k++] = (Form){rows[i].form2, i};
    }
    qsort(forms, k, sizeof *forms, form_cmp);
    for (size_t i = 1; i < k; i++) {
        const Row *a = &rows[forms[i - 1].row], *b = &rows[forms[i].row];
        if (strcmp(forms[i - 1].form, forms[i].form) != 0)
            continue;
        if (a->cls == b->cls && !is_open(a->cls))
            die(b->line, "%s '%s' again (line %ld)", CLASS_NAMES[b->cls], b->word, a->line);
        if (is_open(a->cls) || is_open(b->cls))
            die(b->line, "form '%s' of %s '%s' is also a form of %s '%s' (line %ld): each "
                         "open-class form must name one word", forms[i].form,
                CLASS_NAMES[b->cls], b->word, CLASS_NAMES[a->cls], a->word, a->line);
    }
    free(forms);
}

static void check_sizes(const Row *rows, size_t n, size_t start[LEX_CLASS_COUNT + 1])
{
    size_t count[LEX_CLASS_COUNT] = {0}, animate = 0, inanimate = 0, intrans = 0, trans = 0;
    for (size_t i = 0; i < n; i++) {
        count[rows[i].cls]++;
        animate += (rows[i].tags & LEX_TAG(ANIMATE)) && rows[i].cls == LEX_NOUN;
        inanimate += (rows[i].tags & LEX_TAG(INANIMATE)) && rows[i].cls == LEX_NOUN;
        intrans += (rows[i].tags & LEX_TAG(INTRANS)) != 0;
        trans += (rows[i].tags & LEX_TAG(TRANS)) != 0;
    }
    struct { const char *what; size_t have, need; } need[] = {
        {"nouns", count[LEX_NOUN], LEX_MIN_NOUNS},
        {"animate nouns", animate, LEX_MIN_ANIMATE},
        {"inanimate nouns", inanimate, LEX_MIN_INANIMATE},
        {"verbs", count[LEX_VERB], LEX_MIN_VERBS},
        {"intransitive verbs", intrans, LEX_MIN_INTRANS},
        {"transitive verbs", trans, LEX_MIN_TRANS},
        {"adjectives", count[LEX_ADJ], LEX_MIN_ADJS},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].have < need[i].need)
            die(0, "%zu %s, expected at least %zu (data/lexicon.h): truncated?",
                need[i].have, need[i].what, need[i].need);
    for (int c = 0; c < LEX_CLASS_COUNT; c++)
        if (!is_open(c) && count[c] < LEX_MIN_CLOSED)
            die(0, "%zu words of class %s, expected at least %d", count[c], CLASS_NAMES[c],
                LEX_MIN_CLOSED);
    start[0] = 0;
    for (int c = 0; c < LEX_CLASS_COUNT; c++)
        start[c + 1] = start[c] + count[c];
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(0, "cannot open: %s", strerror(errno));
    char *buf = malloc(MAX_BYTES + 1);
    if (!buf)
        die(0, "out of memory");
    size_t n = fread(buf, 1, MAX_BYTES + 1, f);
    if (ferror(f))
        die(0, "cannot read: %s", strerror(errno));
    fclose(f);
    if (n > MAX_BYTES)
        die(0, "larger than %u bytes: not a word table", MAX_BYTES);
    if (n == 0)
        die(0, "empty: expected the word table");
    if (buf[n - 1] != '\n')
        die(0, "does not end with a newline: truncated?");
    buf[n] = '\0';
    *len = n;
    return buf;
}

static Row *parse_all(char *buf, size_t len, size_t *nrows)
{
    size_t cap = 1024, n = 0;
    Row *rows = malloc(cap * sizeof *rows);
    long line = 0;
    if (!rows)
        die(0, "out of memory");
    for (char *p = buf; p < buf + len;) {
        char *nl = memchr(p, '\n', (size_t)(buf + len - p)); /* found: buf ends with one */
        *nl = '\0';
        line++;
        if (memchr(p, '\0', (size_t)(nl - p)) || memchr(p, '\r', (size_t)(nl - p)))
            die(line, "a NUL or carriage return byte: expected plain text with \\n line ends");
        if (p[0] == '\0')
            die(line, "empty line: expected a row or a '#' comment");
        if (p[0] != '#') {
            if (n == cap) {
                Row *more = realloc(rows, 2 * cap * sizeof *rows);
                if (!more)
                    die(0, "out of memory");
                rows = more;
                cap *= 2;
            }
            parse_row(&rows[n], p, line);
            if (n > 0)
                check_order(&rows[n - 1], &rows[n]);
            n++;
        }
        p = nl + 1;
    }
    *nrows = n;
    return rows;
}

/* The path as it may stand inside a C comment. */
static void put_path(FILE *f, const char *path)
{
    for (const char *p = path; *p; p++)
        fputc(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/",
                     *p) ? *p : '?', f);
}

static void put_form(FILE *f, const char *s)
{
    if (s[0])
        fprintf(f, "\"%s\"", s);
    else
        fputs("NULL", f);
}

static void write_table(const char *out, const Row *rows, size_t n,
                        const size_t start[LEX_CLASS_COUNT + 1])
{
    size_t len = strlen(out);
    char *tmp = malloc(len + 5);
    if (!tmp)
        die(0, "out of memory");
    memcpy(tmp, out, len);
    memcpy(tmp + len, ".tmp", 5);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        g_path = tmp;
        die(0, "cannot write: %s", strerror(errno));
    }
    fputs("/* Generated from ", f);
    put_path(f, g_path);
    fputs(" by scripts/lexicon/lexicon_gen.c; do not edit. */\n"
          "#include \"data/lexicon.h\"\n\n"
          "const LexEntry LEX_ENTRIES[] = {\n", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "    {\"%s\", ", rows[i].word);
        put_form(f, rows[i].form1);
        fputs(", ", f);
        put_form(f, rows[i].form2);
        fprintf(f, ", UINT64_C(0x%llx), %luu},\n", (unsigned long long)rows[i].tags,
                (unsigned long)rows[i].freq);
    }
    fprintf(f, "};\nconst size_t LEX_ENTRY_COUNT = %zu;\n", n);
    fputs("const size_t LEX_CLASS_START[LEX_CLASS_COUNT + 1] = {", f);
    for (int c = 0; c <= LEX_CLASS_COUNT; c++)
        fprintf(f, "%s%zu", c ? ", " : "", start[c]);
    fputs("};\nconst char *const LEX_CLASS_NAMES[LEX_CLASS_COUNT] = {", f);
    for (int c = 0; c < LEX_CLASS_COUNT; c++)
        fprintf(f, "%s\"%s\"", c ? ", " : "", CLASS_NAMES[c]);
    fputs("};\nconst char *const LEX_TAG_NAMES[LEX_TAG_COUNT] = {\n", f);
    for (int k = 0; k < LEX_TAG_COUNT; k++)
        fprintf(f, "    \"%s\",\n", TAG_NAMES[k]);
    fputs("};\n", f);
    if (ferror(f) | fclose(f)) {
        remove(tmp);
        g_path = out;
        die(0, "cannot write: %s", strerror(errno));
    }
    if (rename(tmp, out) != 0) {
        remove(tmp);
        g_path = out;
        die(0, "cannot rename %s into place: %s", tmp, strerror(errno));
    }
    free(tmp);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: lexicon_gen TABLE.tsv OUT.c\n");
        return 2;
    }
    g_path = argv[1];
    size_t len, n;
    char *buf = read_all(argv[1], &len);
    Row *rows = parse_all(buf, len, &n);
    size_t start[LEX_CLASS_COUNT + 1];
    check_sizes(rows, n, start);
    check_forms(rows, n);
    write_table(argv[2], rows, n, start);
    free(rows);
    free(buf);
    return 0;
}
