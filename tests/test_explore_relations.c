/* Command-line tests of the explorer's relations (./infer --explore-json, the
 * program in $HEADCOUNT_BIN) on whole lines of the built-in corpus, whose
 * relations the generator knows: each relation's query/key pairs are the
 * generator's, its sentence for a reader is its heads_rel_table row's, the sentences
 * are the text's lines, each head's role and the clearest serving head follow
 * the rule of docs/heads.md ("Types") from the JSON's own numbers, and the
 * --heads table shows the same roles. The model (2 layers of 4 gated heads,
 * byte level) is trained for 800 steps at 3 times the default learning rate:
 * enough for a head of layer 1 to serve a planted relation on this text (the
 * test fails, saying so, where none does). */
#define _GNU_SOURCE   /* memmem */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads.h"
#include "data/corpus.h"
#include "data/synth.h"
#include "tests/testutil.h"
#include "util/json.h"

enum { T = 64 };

/* The text of JSON member `"name":` inside [p, end): a pointer just past it. */
static const char *member(const char *p, const char *end, const char *name)
{
    char key[128];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *hit = strstr(p, key);
    return hit && (!end || hit < end) ? hit + strlen(key) : NULL;
}

/* Appends to buf (size cap). */
static void cat(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* One head of the JSON's "heads" list, as the checks need it. */
typedef struct {
    char id[16], role[32], type[32];
    int serves[HEADS_REL_COUNT];
    double att[HEADS_REL_COUNT];   /* mean attention on each relation's key */
} JHead;

static void read_quoted(char *out, size_t cap, const char *p)
{
    cr_assert(p && *p == '"');
    const char *e = strchr(p + 1, '"');
    cr_assert(e && (size_t)(e - p - 1) < cap);
    memcpy(out, p + 1, (size_t)(e - p - 1));
    out[e - p - 1] = '\0';
}

/* The bytes of the explorer JSON's "tokens" (the window's tokens, each an
 * array of byte values) into out; returns how many. */
static size_t window_bytes(unsigned char *out, size_t cap, const char *json)
{
    const char *p = strstr(json, "\"tokens\":[");
    cr_assert_not_null(p);
    p += strlen("\"tokens\":[");
    size_t n = 0;
    while (*p == '[') {
        p++;
        while (*p != ']') {
            char *end;
            long b = strtol(p, &end, 10);
            cr_assert(end != p && n < cap);
            out[n++] = (unsigned char)b;
            p = *end == ',' ? end + 1 : end;
        }
        p++;
        if (*p == ',')
            p++;
    }
    return n;
}

static int read_heads(JHead *h, int max, const char *json)
{
    const char *p = strstr(json, "\"heads\":[");
    cr_assert_not_null(p);
    int n = 0;
    while ((p = strstr(p, "{\"id\":")) && n < max) {
        const char *end = strstr(p + 1, "{\"id\":");
        JHead *x = &h[n++];
        memset(x, 0, sizeof *x);
        read_quoted(x->id, sizeof x->id, p + 6);
        read_quoted(x->role, sizeof x->role, member(p, end, "role"));
        read_quoted(x->type, sizeof x->type, member(p, end, "type"));
        const char *sv = member(p, end, "serves"), *sv_end = strchr(sv, ']');
        for (int q = 0; q < HEADS_REL_COUNT; q++) {
            char quoted[64];
            snprintf(quoted, sizeof quoted, "\"%s\"", heads_rel_table[q].name);
            const char *hit = strstr(sv, quoted);
            x->serves[q] = hit && hit < sv_end;
            /* The attention fields come before "attends", "cost" and the rest. */
            const char *a = member(p, member(p, end, "attends"), heads_rel_table[q].name);
            x->att[q] = a ? strtod(a, NULL) : -1.0;
        }
        p += 6;
    }
    return n;
}

/* The expected "query_key" of planted relation kind k of the window: the
 * generator's relations in it at byte level ([query - at, key - at], rows below
 * T, the last relation of a row kept). A query on the first byte of the word
 * it decides (the "m" of "men", which "man" shares) is that word's own row,
 * so the row is the byte before (heads_planted_to_tokens). */
static void planted_pairs(char *buf, size_t cap, const SynthRelation *rel, size_t n, size_t at,
                          int kind)
{
    int key[T];
    for (int i = 0; i < T; i++)
        key[i] = -1;
    for (size_t r = 0; r < n; r++) {
        if ((int)rel[r].kind != kind || rel[r].key < at || rel[r].query >= at + T)
            continue;
        size_t row = rel[r].query - at;
        if (rel[r].form_len > 0 && rel[r].form == rel[r].query)
            row--;
        if (rel[r].key - at < row)
            key[row] = (int)(rel[r].key - at);
    }
    snprintf(buf, cap, "[");
    const char *sep = "";
    for (int i = 0; i < T; i++)
        if (key[i] >= 0) {
            cat(buf, cap, "%s[%d,%d]", sep, i, key[i]);
            sep = ",";
        }
    cat(buf, cap, "]");
}

/* The timeout guards against a hang only: under AddressSanitizer (scripts/test_asan.sh)
 * the training alone takes about 110 s of one core (22x the plain build's 5 s), and the
 * whole test came within its former 300 s on a loaded 2-core host. */
Test(explore_relations, relations_sentences_and_roles_on_the_corpus_own_lines, .timeout = 900)
{
    const char *dir = tu_tmpdir("explore-relations");
    cr_assert_not_null(dir);
    char ckpt[600], val[600], text[600], json[600], html[600], *out;
    snprintf(ckpt, sizeof ckpt, "%s/m.ckpt", dir);
    snprintf(val, sizeof val, "%s/val.txt", dir);
    snprintf(text, sizeof text, "%s/lines.txt", dir);
    snprintf(json, sizeof json, "%s/p.json", dir);
    snprintf(html, sizeof html, "%s/p.html", dir);
    int rc = tu_run(&out, "%s/train --vocab 0 --steps 800 --lr 3e-3 "
                    "-L 2 -H 4 -C 32 "
                    "-T 64 --eval-every 0 --eval-iters 2 --threads 1 --head-gates 0.001 --out %s",
                    tu_bin(), ckpt);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --dump-val %s --out %s/unused.ckpt", tu_bin(), val, dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* The validation split's second line on, N bytes: the explorer's window is
     * its first T tokens, and --heads --windows 1 reads those and the next. */
    enum { N = 300 };
    size_t nval;
    unsigned char *v = tu_read_file(val, &nval);
    cr_assert_not_null(v);
    const unsigned char *nl = memchr(v, '\n', nval);
    cr_assert(nl && nl + 1 + N < v + nval);
    const unsigned char *piece = nl + 1;
    cr_assert_eq(tu_write_file(text, piece, N), 0);
    char *corpus = malloc(SYNTH_DEFAULT_BYTES);
    cr_assert_not_null(corpus);
    size_t total = synth_generate_relations(corpus, SYNTH_DEFAULT_BYTES, CORPUS_BUILTIN_SEED, NULL, 0);
    SynthRelation *rel = malloc(total * sizeof *rel);
    cr_assert_not_null(rel);
    synth_generate_relations(corpus, SYNTH_DEFAULT_BYTES, CORPUS_BUILTIN_SEED, rel, total);
    const char *found = memmem(corpus, SYNTH_DEFAULT_BYTES, piece, N);
    cr_assert_not_null(found, "the validation text is not in the built-in corpus");
    size_t at = (size_t)(found - corpus);

    rc = tu_run(&out, "%s/infer --ckpt %s --threads 1 --explore %s "
                "--explore-json %s --text-file %s", tu_bin(), ckpt, html, json, text);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char *j = tu_read_text(json);
    const char *rels = strstr(j, "\"relations\":{");
    cr_assert_not_null(rels);

    /* Every relation: "planted", its sentence, its pairs. */
    char want[8000], about[1000];
    int planted_pairs_seen = 0;
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        json_string(about, heads_rel_table[q].about);
        snprintf(want, sizeof want, "\"%s\":{\"planted\":%s,\"about\":%s,\"named\":\"%s\","
                 "\"query_key\":", heads_rel_table[q].name, q >= HEADS_REL_TEXT ? "true" : "false",
                 about, heads_rel_table[q].named_by_key ? "key-next" : "query-key");
        const char *p = strstr(rels, want);
        cr_assert_not_null(p, "no %s", want);
        p += strlen(want);
        if (q == HEADS_REL_PREV) {
            snprintf(want, sizeof want, "[");
            for (int i = 1; i < T; i++)
                cat(want, sizeof want, "%s[%d,%d]", i > 1 ? "," : "", i, i - 1);
            cat(want, sizeof want, "]");
        } else if (q == HEADS_REL_RARE) {
            snprintf(want, sizeof want, "null");
        } else if (q < HEADS_REL_TEXT) {
            continue;   /* bracket and copy: their keys are tested in test_explore.c */
        } else {
            int kind = -1;
            for (int k = 0; k < SYNTH_REL_KINDS; k++)
                if (k != SYNTH_REL_BRACKET && (int)heads_rel_of_synth(k) == q)
                    kind = k;
            cr_assert_geq(kind, 0, "no generator kind for %s", heads_rel_table[q].name);
            planted_pairs(want, sizeof want, rel, total, at, kind);
            planted_pairs_seen += strlen(want) > 2;
        }
        cr_assert_eq(strncmp(p, want, strlen(want)), 0, "%s: %.200s, want %s",
                     heads_rel_table[q].name, p, want);
    }
    cr_assert_gt(planted_pairs_seen, 0, "the window holds no planted relation");

    /* The sentences: the text's sentences in the window (a line, or each of a
     * line's two, split after the mark a space follows), each understood when the
     * text holds it whole (up to its newline or mark), cut when it runs past the
     * window. */
    snprintf(want, sizeof want, "\"sentences\":[");
    for (size_t a = 0, b; a < T; a = b) {
        const unsigned char *e = NULL;
        for (size_t i = a; i < N && !e; i++)
            if (piece[i] == '\n' || ((piece[i] == '.' || piece[i] == '!' || piece[i] == '?') &&
                                     i + 1 < N && piece[i + 1] == ' '))
                e = piece + i;
        b = e ? (size_t)(e - piece) + 1 : N;
        cat(want, sizeof want, "%s{\"first\":%zu,\"end\":%zu,\"understood\":%s,\"cut\":%s}",
            a ? "," : "", a, b < T ? b : T, e ? "true" : "false", b > T ? "true" : "false");
    }
    cat(want, sizeof want, "]");
    cr_assert_not_null(strstr(j, want), "want %s, got %.300s", want, strstr(j, "\"sentences\""));

    free(j);

    /* Roles, serving lists and the clearest serving head, from the JSON's numbers,
     * on a small word model (1,024 tokens, 900 steps: its heads serve relations
     * on this text, where the byte model's and the recipe's 1,536 do not yet). */
    char wckpt[600];
    snprintf(wckpt, sizeof wckpt, "%s/w.ckpt", dir);
    rc = tu_run(&out, "%s/train --vocab 1024 --steps 900 -L 2 -H 4 "
                "-C 32 -T 64 "
                "--eval-every 0 --eval-iters 2 --threads 1 --head-gates 0.001 --out %s", tu_bin(),
                wckpt);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    /* The first piece, from a line start of the validation split on, whose
     * window some head serves a relation on (a small model serves few). The
     * explorer reads that window as a file of its T tokens and a newline, the
     * file --heads reads below (its one window, which starts anywhere before
     * the file's last T tokens, is then the explorer's): both find the same
     * relations there, by parsing, where the piece itself would be found in
     * the corpus, with the relations of a sentence the window cuts. */
    JHead h[8];
    int serving = 0;
    unsigned char wb[N + 1];
    for (const unsigned char *start = piece; !serving && start + N < v + nval;) {
        cr_assert_eq(tu_write_file(text, start, N), 0);
        for (int pass = 0; pass < 2; pass++) {
            rc = tu_run(&out, "%s/infer --ckpt %s --threads 1 --explore %s "
                        "--explore-json %s --text-file %s", tu_bin(), wckpt, html, json, text);
            cr_assert_eq(rc, 0, "%s", out);
            free(out);
            j = tu_read_text(json);
            if (pass == 0) {
                size_t nwb = window_bytes(wb, N, j);
                wb[nwb++] = '\n';
                cr_assert_eq(tu_write_file(text, wb, nwb), 0);
                free(j);
            }
        }
        cr_assert_eq(read_heads(h, 8, j), 8);
        for (int k = 0; k < 8; k++)
            for (int q = 0; q < HEADS_REL_COUNT; q++)
                serving += h[k].serves[q];
        if (!serving) {
            free(j);
            start = memchr(start, '\n', (size_t)(v + nval - start));
            cr_assert(start && start - piece < 4000, "no head serves a relation on 4,000 bytes");
            start++;
        }
    }
    rels = strstr(j, "\"relations\":{");
    cr_assert_not_null(rels);
    int best = -1, best_q = -1;
    serving = 0;
    for (int k = 0; k < 8; k++) {
        int role = -1;
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (h[k].serves[q] && (role < 0 || h[k].att[q] > h[k].att[role]))
                role = q;
        serving += role >= 0;
        cr_assert_str_eq(h[k].role, role >= 0 ? heads_rel_table[role].name : h[k].type, "%s",
                         h[k].id);
        if (role >= 0 && (best < 0 || h[k].att[role] > h[best].att[best_q])) {
            best = k;
            best_q = role;
        }
    }
    cr_assert_gt(serving, 0, "no head serves a relation on this text: nothing to check");
    snprintf(want, sizeof want, "\"clearest\":{\"head\":\"%s\",\"layer\":%d,\"relation\":\"%s\"",
             h[best].id, best / 4, heads_rel_table[best_q].name);
    cr_assert_not_null(strstr(j, want), "want %s, got %.200s", want, strstr(j, "\"clearest\""));
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const char *p = member(rels, NULL, heads_rel_table[q].name);
        snprintf(want, sizeof want, "[");
        for (int k = 0, n = 0; k < 8; k++)
            if (h[k].serves[q])
                cat(want, sizeof want, "%s\"%s\"", n++ ? "," : "", h[k].id);
        cat(want, sizeof want, "]");
        const char *sv = member(p, NULL, "serves");
        cr_assert_eq(strncmp(sv, want, strlen(want)), 0, "%s served by %.60s, want %s",
                     heads_rel_table[q].name, sv, want);
    }

    /* The --heads table on the same window (the file the explorer read last)
     * names the same roles: a head that serves shows the relation (its type in
     * brackets when they differ). */
    rc = tu_run(&out, "%s/infer --ckpt %s --threads 1 --heads %s "
                "--windows 1", tu_bin(), wckpt, text);
    cr_assert_eq(rc, 0, "%s", out);
    for (int k = 0; k < 8; k++) {
        char line[64];
        snprintf(line, sizeof line, "\n%-7.15s ", h[k].id);
        const char *p = strstr(out, line);
        cr_assert_not_null(p, "no table row for %s:\n%s", h[k].id, out);
        p += strlen(line);
        if (strcmp(h[k].role, h[k].type) == 0)
            snprintf(want, sizeof want, "%s ", h[k].type);
        else
            snprintf(want, sizeof want, "%s (%s) ", h[k].role, h[k].type);
        cr_assert_eq(strncmp(p, want, strlen(want)), 0, "%s: the table says '%.30s', want '%s'",
                     h[k].id, p, want);
    }
    free(out);
    free(j);
    free(rel);
    free(corpus);
    free(v);
}
