/* conllu: the CoNLL-U reader (data/conllu.h says what it accepts and builds). */
#include "data/conllu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/errbuf.h"

#define NFIELDS 10
#define REL_MAX 64 /* bytes of a DEPREL, subtype included */

/* A token of the surface: a multiword token, or a word outside one. */
typedef struct {
    const unsigned char *form;
    size_t len;
    uint32_t w0, w1;  /* its words, 0-based in the sentence, inclusive */
    uint32_t line;
    int space_after;
} Unit;

/* A word as read, before the sentence is complete. */
typedef struct {
    const unsigned char *form;
    size_t len;
    uint32_t head, rel, line;
} Pending;

/* The sentence being read and the file's reading state. */
typedef struct {
    const char *name;
    size_t line;
    int crlf;                /* -1: not known yet, 0: LF, 1: CRLF */
    size_t crlf_line;        /* the line that decided it */
    const unsigned char *text; /* the sentence's `# text`, trimmed; NULL: none */
    size_t text_len, text_line;
    Pending *w;
    size_t nw, capw;
    Unit *u;
    size_t nu, capu;
    uint32_t mwt_end;        /* the last word of the open multiword token; 0: none */
    int tokens;              /* a token line has been read in this sentence */
    unsigned char *state;    /* [nw + 1] the cycle check's marks */
    size_t capstate;
    size_t capsent, capword;
} Reader;

int conllu_is_path(const char *path)
{
    size_t n = strlen(path), k = strlen(".conllu");
    return n > k && strcmp(path + n - k, ".conllu") == 0;
}

/* Up to 40 bytes of p, readable: printable ASCII as is, the rest as \xNN. */
static const char *excerpt(char *buf, size_t cap, const unsigned char *p, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && i < 40 && o + 5 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, p[i] >= 0x20 && p[i] < 0x7f ? "%c" : "\\x%02x",
                              p[i]);
    if (len > 40 && o + 4 < cap)
        o += (size_t)snprintf(buf + o, cap - o, "...");
    buf[o < cap ? o : cap - 1] = 0;
    return buf;
}

static int line_err(char *err, size_t errlen, const Reader *r, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int line_err(char *err, size_t errlen, const Reader *r, size_t line, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_set(err, errlen, "%s:%zu: %s", r->name, line, msg);
}

/* Makes room for need items of size bytes in *p (capacity *cap); -1 when out of memory. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* A whole field of digits as a number no larger than max; -1 otherwise. */
static long parse_num(const unsigned char *s, size_t len, long max)
{
    if (len == 0 || len > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= max ? v : -1;
}

static int has_space_after_no(const unsigned char *misc, size_t len)
{
    const char *key = "SpaceAfter=No";
    size_t k = strlen(key);
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && misc[e] != '|')
            e++;
        if (e - i == k && memcmp(misc + i, key, k) == 0)
            return 1;
        i = e + 1;
    }
    return 0;
}

static long rel_index(Conllu *c, const unsigned char *s, size_t len)
{
    for (size_t i = 0; i < c->nrel; i++)
        if (strlen(c->rel_name[i]) == len && memcmp(c->rel_name[i], s, len) == 0)
            return (long)i;
    char **names = realloc(c->rel_name, (c->nrel + 1) * sizeof *names);
    if (!names)
        return -1;
    c->rel_name = names;
    char *name = malloc(len + 1);
    if (!name)
        return -1;
    memcpy(name, s, len);
    name[len] = 0;
    c->rel_name[c->nrel] = name;
    return (long)c->nrel++;
}

/* `# text = ...`: the text, trimmed; 0 when the comment is something else. */
static int text_comment(const unsigned char *p, size_t len, const unsigned char **text,
                        size_t *tlen)
{
    size_t i = 1;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (len - i < 4 || memcmp(p + i, "text", 4) != 0)
        return 0;
    i += 4;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i >= len || p[i] != '=')
        return 0;
    i++;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    size_t e = len;
    while (e > i && (p[e - 1] == ' ' || p[e - 1] == '\t'))
        e--;
    *text = p + i;
    *tlen = e - i;
    return 1;
}

/* An empty node's line (ID N.M, the N-th word's): checked and counted. */
static int empty_node(Conllu *c, Reader *r, const unsigned char *id, size_t len,
                      const unsigned char *dot, char *err, size_t errlen)
{
    char ex[200];
    long a = parse_num(id, (size_t)(dot - id), CONLLU_MAX_WORDS);
    long b = parse_num(dot + 1, len - (size_t)(dot - id) - 1, CONLLU_MAX_WORDS);
    if (a < 0 || b < 1)
        return line_err(err, errlen, r, r->line, "ID \"%s\" is not an empty node's N.M",
                        excerpt(ex, sizeof ex, id, len));
    if ((size_t)a != r->nw)
        return line_err(err, errlen, r, r->line, "empty node %s follows word %zu; it must "
                        "follow word %ld", excerpt(ex, sizeof ex, id, len), r->nw, a);
    c->empty++;
    return 0;
}

/* A multiword token's line (ID N-M): the surface unit of words N..M to come. */
static int multiword(Conllu *c, Reader *r, const unsigned char *const *f, const size_t *fl,
                     const unsigned char *dash, char *err, size_t errlen)
{
    char ex[200];
    uint32_t next = (uint32_t)r->nw + 1;
    long a = parse_num(f[0], (size_t)(dash - f[0]), CONLLU_MAX_WORDS);
    long b = parse_num(dash + 1, fl[0] - (size_t)(dash - f[0]) - 1, CONLLU_MAX_WORDS);
    if (a < 1 || b < 1)
        return line_err(err, errlen, r, r->line, "ID \"%s\" is not a multiword token's N-M",
                        excerpt(ex, sizeof ex, f[0], fl[0]));
    if (r->mwt_end)
        return line_err(err, errlen, r, r->line, "multiword token %ld-%ld starts inside "
                        "the one ending at word %u", a, b, r->mwt_end);
    if ((uint32_t)a != next || b <= a)
        return line_err(err, errlen, r, r->line, "multiword token %ld-%ld: expected %u-M "
                        "with M > %u (the next word is %u)", a, b, next, next, next);
    if (grow((void **)&r->u, &r->capu, r->nu + 1, sizeof *r->u))
        return err_set(err, errlen, "%s: out of memory", r->name);
    r->u[r->nu++] = (Unit){f[1], fl[1], (uint32_t)a - 1, (uint32_t)b - 1, (uint32_t)r->line,
                           !has_space_after_no(f[9], fl[9])};
    r->mwt_end = (uint32_t)b;
    c->multiword++;
    return 0;
}

/* A word's line (an integer ID): its form, HEAD and DEPREL, and its own unit
 * unless a multiword token holds it. */
static int word(Conllu *c, Reader *r, const unsigned char *const *f, const size_t *fl, char *err,
                size_t errlen)
{
    char ex[200];
    uint32_t next = (uint32_t)r->nw + 1;
    long w = parse_num(f[0], fl[0], CONLLU_MAX_WORDS);
    if (w < 1)
        return line_err(err, errlen, r, r->line, "ID \"%s\" is not a word number (1 to %d), "
                        "N-M or N.M", excerpt(ex, sizeof ex, f[0], fl[0]), CONLLU_MAX_WORDS);
    if ((uint32_t)w != next)
        return line_err(err, errlen, r, r->line, "word %ld where word %u was expected (IDs "
                        "count 1, 2, 3... in each sentence)", w, next);
    long head = parse_num(f[6], fl[6], CONLLU_MAX_WORDS);
    if (head < 0)
        return line_err(err, errlen, r, r->line, "HEAD \"%s\" is not a word number (0 for the "
                        "root)", excerpt(ex, sizeof ex, f[6], fl[6]));
    if (fl[7] > REL_MAX || (fl[7] == 1 && f[7][0] == '_'))
        return line_err(err, errlen, r, r->line, "DEPREL \"%s\" is not a relation",
                        excerpt(ex, sizeof ex, f[7], fl[7]));
    long rel = rel_index(c, f[7], fl[7]);
    if (rel < 0 || grow((void **)&r->w, &r->capw, r->nw + 1, sizeof *r->w))
        return err_set(err, errlen, "%s: out of memory", r->name);
    r->w[r->nw++] = (Pending){f[1], fl[1], (uint32_t)head, (uint32_t)rel, (uint32_t)r->line};
    if (r->mwt_end) {
        if ((uint32_t)w == r->mwt_end)
            r->mwt_end = 0;
        return 0;
    }
    if (grow((void **)&r->u, &r->capu, r->nu + 1, sizeof *r->u))
        return err_set(err, errlen, "%s: out of memory", r->name);
    r->u[r->nu++] = (Unit){f[1], fl[1], (uint32_t)w - 1, (uint32_t)w - 1, (uint32_t)r->line,
                           !has_space_after_no(f[9], fl[9])};
    return 0;
}

/* One token line's ten fields. */
static int token_line(Conllu *c, Reader *r, const unsigned char *p, size_t len, char *err,
                      size_t errlen)
{
    const unsigned char *f[NFIELDS];
    size_t fl[NFIELDS], k = 0, start = 0;
    char ex[200];
    for (size_t i = 0; i <= len; i++)
        if (i == len || p[i] == '\t') {
            if (k < NFIELDS) {
                f[k] = p + start;
                fl[k] = i - start;
            }
            k++;
            start = i + 1;
        }
    if (k != NFIELDS)
        return line_err(err, errlen, r, r->line, "expected 10 tab-separated fields (ID FORM "
                        "LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC), found %zu: \"%s\"; is this "
                        "a CoNLL-U file?", k, excerpt(ex, sizeof ex, p, len));
    for (size_t j = 0; j < NFIELDS; j++)
        if (fl[j] == 0)
            return line_err(err, errlen, r, r->line, "field %zu is empty (CoNLL-U writes _ for "
                            "a missing value): \"%s\"", j + 1, excerpt(ex, sizeof ex, p, len));
    r->tokens = 1;
    const unsigned char *dash = memchr(f[0], '-', fl[0]), *dot = memchr(f[0], '.', fl[0]);
    if (dot)
        return empty_node(c, r, f[0], fl[0], dot, err, errlen);
    if (dash)
        return multiword(c, r, f, fl, dash, err, errlen);
    return word(c, r, f, fl, err, errlen);
}

/* Every HEAD names a word of the sentence, and following heads from any word
 * reaches the root (marks: 0 unseen, 1 on the path being walked, 2 done). */
static int check_tree(Reader *r, char *err, size_t errlen)
{
    size_t n = r->nw;
    for (size_t i = 0; i < n; i++)
        if (r->w[i].head > n)
            return line_err(err, errlen, r, r->w[i].line, "HEAD %u names no word: the sentence "
                            "has %zu", r->w[i].head, n);
    if (grow((void **)&r->state, &r->capstate, n + 1, 1))
        return err_set(err, errlen, "%s: out of memory", r->name);
    memset(r->state, 0, n + 1);
    for (size_t i = 1; i <= n; i++) {
        size_t j = i;
        while (j != 0 && r->state[j] == 0) {
            r->state[j] = 1;
            j = r->w[j - 1].head;
        }
        if (j != 0 && r->state[j] == 1)
            return line_err(err, errlen, r, r->w[j - 1].line, "the tree has a cycle through "
                            "word %zu (following its HEAD leads back to it)", j);
        for (j = i; j != 0 && r->state[j] == 1; j = r->w[j - 1].head)
            r->state[j] = 2;
    }
    return 0;
}

/* The words of unit u get their spans from the unit's span [s, s + u->len). */
static void split_unit(Conllu *c, const Reader *r, const Unit *u, size_t s)
{
    size_t sum = 0, at = 0;
    for (uint32_t k = u->w0; k <= u->w1; k++)
        sum += r->w[k].len;
    int spelt = sum == u->len;
    for (uint32_t k = u->w0; spelt && k <= u->w1; at += r->w[k].len, k++)
        spelt = memcmp(u->form + at, r->w[k].form, r->w[k].len) == 0;
    if (u->w1 > u->w0 && !spelt)
        c->multiword_unsplit++;
    at = s;
    for (uint32_t k = u->w0; k <= u->w1; k++) {
        ConlluWord *w = &c->word[c->nword + k];
        size_t len = spelt ? r->w[k].len : k == u->w0 ? u->len : 0;
        if (!spelt && k > u->w0)
            at = s + u->len;
        w->start = at;
        w->end = at + len;
        at += len;
    }
}

/* The bytes of the whitespace character at t[0..n): ASCII space or tab, or
 * in UTF-8 the no-break space U+00A0, U+2000-U+200B, U+202F or U+3000 (treebank
 * texts keep such spaces between tokens); 0 for anything else. */
static size_t space_len(const unsigned char *t, size_t n)
{
    if (n >= 1 && (t[0] == ' ' || t[0] == '\t'))
        return 1;
    if (n >= 2 && t[0] == 0xc2 && t[1] == 0xa0)
        return 2;
    if (n >= 3 && t[0] == 0xe2 && t[1] == 0x80 && (t[2] <= 0x8b || t[2] == 0xaf))
        return 3;
    if (n >= 3 && t[0] == 0xe3 && t[1] == 0x80 && t[2] == 0x80)
        return 3;
    return 0;
}

/* The sentence's text, appended to c->text with its words' spans. */
static int place_text(Conllu *c, Reader *r, char *err, size_t errlen)
{
    char ex[200], ex2[200];
    size_t base = c->ntext, pos = 0;
    if (!r->text) {
        c->joined++;
        for (size_t i = 0; i < r->nu; i++) {
            memcpy(c->text + c->ntext, r->u[i].form, r->u[i].len);
            split_unit(c, r, &r->u[i], c->ntext);
            c->ntext += r->u[i].len;
            if (i + 1 < r->nu && r->u[i].space_after)
                c->text[c->ntext++] = ' ';
        }
        return 0;
    }
    const unsigned char *t = r->text;
    size_t n = r->text_len;
    for (size_t i = 0; i < r->nu; i++) {
        const Unit *u = &r->u[i];
        for (size_t k; (k = space_len(t + pos, n - pos)) > 0;)
            pos += k;
        if (n - pos < u->len || memcmp(t + pos, u->form, u->len) != 0)
            return line_err(err, errlen, r, u->line, "FORM \"%s\" is not what the sentence's "
                            "# text (line %zu) reads there: \"%s\"",
                            excerpt(ex, sizeof ex, u->form, u->len), r->text_line,
                            excerpt(ex2, sizeof ex2, t + pos, n - pos));
        split_unit(c, r, u, base + pos);
        pos += u->len;
    }
    for (size_t k; (k = space_len(t + pos, n - pos)) > 0;)
        pos += k;
    if (pos < n)
        return line_err(err, errlen, r, r->text_line, "# text goes on after the sentence's last "
                        "token: \"%s\"", excerpt(ex, sizeof ex, t + pos, n - pos));
    memcpy(c->text + c->ntext, t, n);
    c->ntext += n;
    return 0;
}

/* The blank line (or the end of the file) after a sentence. */
static int end_sentence(Conllu *c, Reader *r, char *err, size_t errlen)
{
    if (!r->tokens) { /* comments alone (a document's header) are no sentence */
        r->text = NULL;
        return 0;
    }
    if (r->mwt_end)
        return line_err(err, errlen, r, r->line, "the sentence ends inside a multiword token "
                        "(it needs word %u)", r->mwt_end);
    if (r->nw == 0)
        return line_err(err, errlen, r, r->line, "the sentence ends without a word");
    if (check_tree(r, err, errlen))
        return -1;
    if (grow((void **)&c->sent, &r->capsent, c->nsent + 1, sizeof *c->sent) ||
        grow((void **)&c->word, &r->capword, c->nword + r->nw, sizeof *c->word))
        return err_set(err, errlen, "%s: out of memory", r->name);
    ConlluSentence *s = &c->sent[c->nsent];
    s->start = c->ntext;
    s->word0 = c->nword;
    s->nwords = (uint32_t)r->nw;
    s->line = (uint32_t)(r->text ? r->text_line : r->w[0].line);
    if (place_text(c, r, err, errlen))
        return -1;
    s->end = c->ntext;
    c->text[c->ntext++] = '\n';
    for (size_t i = 0; i < r->nw; i++) {
        ConlluWord *w = &c->word[c->nword + i];
        w->head = r->w[i].head;
        w->rel = r->w[i].rel;
        w->line = r->w[i].line;
    }
    c->nword += r->nw;
    c->nsent++;
    r->nw = r->nu = 0;
    r->tokens = 0;
    r->text = NULL;
    return 0;
}

/* One line without its terminator (its \r removed in a CRLF file). */
static int read_line(Conllu *c, Reader *r, const unsigned char *p, size_t len, char *err,
                     size_t errlen)
{
    char ex[200];
    if (memchr(p, 0, len))
        return line_err(err, errlen, r, r->line, "a NUL byte: CoNLL-U is text");
    if (memchr(p, '\r', len))
        return line_err(err, errlen, r, r->line, "a carriage return inside the line");
    size_t blank = 0;
    while (blank < len && (p[blank] == ' ' || p[blank] == '\t'))
        blank++;
    if (blank == len)
        return end_sentence(c, r, err, errlen);
    if (p[0] == '#') {
        const unsigned char *t;
        size_t tl;
        if (r->tokens)
            return line_err(err, errlen, r, r->line, "a comment among the sentence's words "
                            "(comments go before them): \"%s\"", excerpt(ex, sizeof ex, p, len));
        if (text_comment(p, len, &t, &tl)) {
            if (r->text)
                return line_err(err, errlen, r, r->line, "a second # text line (the first is "
                                "line %zu)", r->text_line);
            r->text = t;
            r->text_len = tl;
            r->text_line = r->line;
        }
        return 0;
    }
    return token_line(c, r, p, len, err, errlen);
}

int conllu_parse(Conllu *c, const unsigned char *bytes, size_t n, const char *name, char *err,
                 size_t errlen)
{
    memset(c, 0, sizeof *c);
    Reader r = {.name = name, .crlf = -1};
    int rc = 0;
    c->text = malloc(n + 1); /* the text never outgrows the file: see place_text */
    if (!c->text)
        return err_set(err, errlen, "%s: out of memory for %zu bytes", name, n);
    for (size_t pos = 0; pos < n && rc == 0;) {
        r.line++;
        const unsigned char *e = memchr(bytes + pos, '\n', n - pos);
        size_t len = e ? (size_t)(e - (bytes + pos)) : n - pos;
        if (e) {
            int cr = len > 0 && bytes[pos + len - 1] == '\r';
            if (r.crlf < 0) {
                r.crlf = cr;
                r.crlf_line = r.line;
            } else if (cr != r.crlf) {
                rc = line_err(err, errlen, &r, r.line, "mixed line endings: this line ends in "
                              "%s, line %zu in %s", cr ? "CRLF" : "LF", r.crlf_line,
                              r.crlf ? "CRLF" : "LF");
                break;
            }
            len -= (size_t)cr;
        }
        rc = read_line(c, &r, bytes + pos, len, err, errlen);
        pos += len + (e ? 1 + (size_t)(r.crlf == 1) : 0);
    }
    if (rc == 0)
        rc = end_sentence(c, &r, err, errlen);
    if (rc == 0 && c->nsent == 0)
        rc = err_set(err, errlen, "%s: no sentence (no line of ten tab-separated fields); is "
                     "this a CoNLL-U file?", name);
    free(r.w);
    free(r.u);
    free(r.state);
    if (rc)
        conllu_free(c);
    return rc;
}

int conllu_read(Conllu *c, const char *path, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    struct stat st;
    if (stat(path, &st) != 0)
        return err_set(err, errlen, "%s: %s", path, errno == ENOENT ? "no such file"
                                                                    : strerror(errno));
    if (!S_ISREG(st.st_mode))
        return err_set(err, errlen, "%s: not a regular file", path);
    if ((unsigned long long)st.st_size > (1ull << 30))
        return err_set(err, errlen, "%s: %lld bytes, more than the 1 GiB limit", path,
                       (long long)st.st_size);
    size_t n = (size_t)st.st_size;
    unsigned char *b = malloc(n ? n : 1);
    if (!b)
        return err_set(err, errlen, "%s: out of memory for %zu bytes", path, n);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        free(b);
        return err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    }
    size_t got = fread(b, 1, n, fp);
    int bad = ferror(fp) || got != n;
    fclose(fp);
    if (bad) {
        free(b);
        return err_set(err, errlen, "%s: read %zu of %zu bytes", path, got, n);
    }
    int rc = conllu_parse(c, b, n, path, err, errlen);
    free(b);
    return rc;
}

void conllu_free(Conllu *c)
{
    for (size_t i = 0; i < c->nrel; i++)
        free(c->rel_name[i]);
    free(c->rel_name);
    free(c->text);
    free(c->sent);
    free(c->word);
    memset(c, 0, sizeof *c);
}

void conllu_describe(const Conllu *c, char *buf, size_t len)
{
    snprintf(buf, len, "%zu sentences, %zu words, %zu relations; %zu multiword tokens (%zu not "
             "spelt by their words), %zu empty nodes, %zu sentences without # text (tokens "
             "joined)", c->nsent, c->nword, c->nrel, c->multiword, c->multiword_unsplit,
             c->empty, c->joined);
}
