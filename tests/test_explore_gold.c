/* Command-line tests of the explorer on a treebank sentence (./infer --explore
 * --text-file FILE.conllu --sentence N, the program in $HEADCOUNT_BIN): the
 * window is the sentence's as --heads windows it, and --explore-json's "gold"
 * lists its dependencies with the words, directions and tokens worked out here
 * by hand from the rule of analysis/deps.h (a token is the word's its first
 * byte is in, the space before a word the word's), each head's attention on the
 * key word equal to the sum of the JSON's own attention row over the key's
 * tokens, and the best heads the largest; bad trees and sentences too long for
 * the context fail with one line and write nothing. --sentence TEXT picks the
 * sentence of that text (white space and then case aside, the first of
 * several with a note) and writes what its number writes; a text no sentence
 * has is a usage error naming the sentence that shares the most words. The model is a small
 * byte-pair one (--vocab) trained for a few steps: the numbers need not mean
 * anything, only agree. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/progutil.h"
#include "tests/testutil.h"

/* 80 letters, for a text longer than a message shows. */
#define LETTERS80 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

#define W(id, form, head, rel, misc) id "\t" form "\t_\tX\t_\t_\t" head "\t" rel "\t_\t" misc "\n"

/* Sentence 2 holds a multiword token (don't = do + n't) and a word the
 * vocabulary splits into several pieces (hippopotamus, never in training). */
static const char *TREE =
    "# text = The cat sat.\n" W("1", "The", "2", "det", "_") W("2", "cat", "3", "nsubj", "_")
    W("3", "sat", "0", "root", "SpaceAfter=No") W("4", ".", "3", "punct", "_") "\n"
    "# text = I don't like hippopotamus.\n" W("1", "I", "4", "nsubj", "_")
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n" W("2", "do", "4", "aux", "_")
    W("3", "n't", "4", "advmod", "_") W("4", "like", "0", "root", "_")
    W("5", "hippopotamus", "4", "obj", "SpaceAfter=No") W("6", ".", "4", "punct", "_") "\n";

/* Sentence 2's window: the newline that ends sentence 1, then its text. */
static const char *WINDOW = "\nI don't like hippopotamus.";

/* Its words' bytes in WINDOW, each with the space before it: I, do, n't, like,
 * hippopotamus, the full stop. */
static const int WORD_START[6] = {1, 2, 5, 8, 13, 26}, WORD_END[6] = {2, 5, 8, 13, 26, 27};

/* The expected dependencies in the sentence's word order: (dependent, head) as
 * 0-based words. */
static const struct {
    const char *rel, *dir, *dep, *head;
    int d, h;
} GOLD[5] = {
    {"nsubj", "head->dependent", "I", "like", 0, 3},
    {"aux", "head->dependent", "do", "like", 1, 3},
    {"advmod", "head->dependent", "n't", "like", 2, 3},
    {"obj", "dependent->head", "hippopotamus", "like", 4, 3},
    {"punct", "dependent->head", ".", "like", 5, 3},
};

/* A treebank to train on: one pattern with other words. */
static size_t training_treebank(char *buf, size_t cap)
{
    const char *nouns[] = {"cat", "dog", "bird", "fox"}, *verbs[] = {"sat", "ran", "slept"};
    size_t n = 0;
    for (int i = 0; i < 200; i++) {
        const char *no = nouns[i % 4], *ve = verbs[i % 3];
        n += (size_t)snprintf(buf + n, cap - n,
                              "# text = The %s %s.\n" W("1", "The", "2", "det", "_")
                              "2\t%s\t_\tX\t_\t_\t3\tnsubj\t_\t_\n"
                              "3\t%s\t_\tX\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
                              W("4", ".", "3", "punct", "_") "\n", no, ve, no, ve);
        cr_assert_lt(n, cap);
    }
    return n;
}

static void train_model(Env *e, char *tree, size_t cap)
{
    static char tb[32768];
    size_t n = training_treebank(tb, sizeof tb);
    char data[600];
    make_file(e, "train.conllu", tb, n, data, sizeof data);
    make_file(e, "t.conllu", TREE, strlen(TREE), tree, cap);
    char *out = NULL;
    int rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/train --data %s --vocab 280 --steps 20 --batch 4 "
                    "--block 32 --layers 2 --embd 16 --heads 2 --eval-iters 1 --out %s/m.ckpt "
                    "2>&1", tu_bin(), data, e->dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

/* Every number after p up to its closing bracket, brackets and commas skipped. */
static size_t numbers(const char *p, double *out, size_t cap)
{
    size_t n = 0;
    int depth = 0;
    for (; *p; p++) {
        if (*p == '[') {
            depth++;
        } else if (*p == ']') {
            if (--depth == 0)
                break;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            char *end;
            double v = strtod(p, &end);
            cr_assert_lt(n, cap);
            out[n++] = v;
            p = end - 1;
        }
    }
    return n;
}

/* The window's token byte offsets from "tokens" (each an array of bytes): off[t]
 * is token t's first byte, off[T] the end; the bytes go to text. */
static int token_offsets(const char *json, int *off, int cap, char *text, size_t tcap)
{
    const char *p = strstr(json, "\"tokens\":[");
    cr_assert_not_null(p);
    p += strlen("\"tokens\":[");
    int T = 0, at = 0;
    while (*p == '[') {
        cr_assert_lt(T, cap - 1);
        off[T++] = at;
        p++;
        while (*p != ']') {
            char *end;
            long b = strtol(p, &end, 10);
            cr_assert((size_t)at < tcap - 1);
            text[at++] = (char)b;
            p = *end == ',' ? end + 1 : end;
        }
        p++;
        if (*p == ',')
            p++;
    }
    off[T] = at;
    text[at] = '\0';
    return T;
}

/* A word's first and last token: the tokens whose first byte is in it. */
static void word_tokens(const int *off, int T, int w, int *first, int *last)
{
    *first = *last = -1;
    for (int t = 0; t < T; t++)
        if (off[t] >= WORD_START[w] && off[t] < WORD_END[w]) {
            if (*first < 0)
                *first = t;
            *last = t;
        }
}

Test(explore_gold, a_treebank_sentence_lists_its_gold_dependencies_on_its_tokens, .timeout = 120)
{
    Env e;
    env_init(&e, "explore_gold");
    char tree[600];
    train_model(&e, tree, sizeof tree);
    char *out = NULL;
    int rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/infer --ckpt %s/m.ckpt --explore %s/p.html "
                    "--explore-json %s/p.json --text-file %s --sentence 2 2>&1", tu_bin(), e.dir,
                    e.dir, e.dir, tree);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "5 gold dependencies"), "%s", out);
    free(out);
    char path[700];
    snprintf(path, sizeof path, "%s/p.json", e.dir);
    char *json = tu_read_text(path);
    cr_assert_not_null(json, "%s", path);

    /* The window is sentence 2's, newline first, with byte-pair pieces. */
    int off[64];
    char text[256];
    int T = token_offsets(json, off, 64, text, sizeof text);
    cr_assert_str_eq(text, WINDOW);
    int first, last;
    word_tokens(off, T, 4, &first, &last);
    cr_assert_gt(last, first, "hippopotamus is one token; the test needs it in pieces");
    int L = 2, H = 2, n = L * H;

    /* The model's own attention, [L][H][T][i+1]. */
    const char *att = strstr(json, "\n\"attention\":[");
    cr_assert_not_null(att);
    static double A[2 * 2 * 64 * 65];
    size_t na = numbers(att + strlen("\n\"attention\":"), A, sizeof A / sizeof A[0]);
    cr_assert_eq(na, (size_t)n * T * (T + 1) / 2);

    const char *g = strstr(json, "\"gold\":{");
    cr_assert_not_null(g, "no gold object");
    cr_assert(strstr(g, "\"sentence\":2,\"line\":7,\"words\":6,\"roots\":1,\"no_token\":0"),
              "%.200s", g);
    const char *p = strstr(g, "\"pairs\":[");
    cr_assert_not_null(p);
    for (int k = 0; k < 5; k++) {
        p = strstr(p, "{\"relation\":");
        cr_assert_not_null(p, "pair %d missing", k);
        char rel[32], dir[32], dep[32], head[32];
        unsigned did, hid;
        int q, k0, k1, bl, bh;
        int got = sscanf(p, "{\"relation\":\"%31[^\"]\",\"direction\":\"%31[^\"]\",\"dependent\":"
                         "\"%31[^\"]\",\"head\":\"%31[^\"]\",\"dependent_id\":%u,\"head_id\":%u,"
                         "\"query\":%d,\"key\":[%d,%d],\"best_head\":\"L%dH%d\"", rel, dir, dep,
                         head, &did, &hid, &q, &k0, &k1, &bl, &bh);
        cr_assert_eq(got, 11, "pair %d: %.200s", k, p);
        cr_assert_str_eq(rel, GOLD[k].rel);
        cr_assert_str_eq(dir, GOLD[k].dir);
        cr_assert_str_eq(dep, GOLD[k].dep);
        cr_assert_str_eq(head, GOLD[k].head);
        cr_assert_eq(did, (unsigned)GOLD[k].d + 1);
        cr_assert_eq(hid, (unsigned)GOLD[k].h + 1);
        /* The later word is the query (its last token), the earlier the key. */
        int qw = GOLD[k].d > GOLD[k].h ? GOLD[k].d : GOLD[k].h;
        int kw = GOLD[k].d > GOLD[k].h ? GOLD[k].h : GOLD[k].d;
        int f, l;
        word_tokens(off, T, qw, &f, &l);
        cr_assert_eq(q, l, "%s: query %d, expected %d", rel, q, l);
        word_tokens(off, T, kw, &f, &l);
        cr_assert(f >= 0 && k0 == f && k1 == l, "%s: key %d..%d, expected %d..%d", rel, k0, k1,
                  f, l);
        /* Each head's attention: its query row summed over the key's tokens. */
        const char *ap = strstr(p, "\"attention\":[");
        cr_assert_not_null(ap);
        double a[8];
        cr_assert_eq(numbers(ap + strlen("\"attention\":"), a, 8), (size_t)n);
        int best = 0;
        for (int h = 0; h < n; h++) {
            const double *row = A + (size_t)h * T * (T + 1) / 2 + (size_t)q * (q + 1) / 2;
            double s = 0.0;
            for (int j = k0; j <= k1; j++)
                s += row[j];
            cr_assert_float_eq(a[h], s, 2e-5, "%s head %d: %g, the row gives %g", rel, h, a[h], s);
            if (a[h] > a[best])
                best = h;
        }
        cr_assert_eq(bl * H + bh, best, "%s: best head L%dH%d", rel, bl, bh);
        p = ap;
    }
    const char *next = strstr(p, "{\"relation\":"), *rels = strstr(p, "\"relations\":[");
    cr_assert(rels && next > rels, "more than 5 pairs");
    /* One pair per relation here: each relation's best head and mean are its pair's. */
    const char *r = strstr(g, "\"relations\":[");
    cr_assert_not_null(r);
    for (int k = 0; k < 5; k++) {
        char want[128];
        snprintf(want, sizeof want, "{\"relation\":\"%s\",\"direction\":\"%s\",\"pairs\":1,",
                 GOLD[k].rel, GOLD[k].dir);
        r = strstr(r, want);
        cr_assert_not_null(r, "relation %s missing or out of order", GOLD[k].rel);
    }
    free(json);

    /* The page carries the gold view; a plain text's page does not. */
    snprintf(path, sizeof path, "%s/p.html", e.dir);
    char *page = tu_read_text(path);
    cr_assert(page && strstr(page, "\"gold\":{") && strstr(page, "function goldView"));
    free(page);
    rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/infer --ckpt %s/m.ckpt --explore %s/plain.html "
                "--explore-json %s/plain.json --text 'I do not like it.' 2>&1", tu_bin(), e.dir,
                e.dir, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/plain.html", e.dir);
    page = tu_read_text(path);
    cr_assert(page && !strstr(page, "\"gold\":") && !strstr(page, "goldView"));
    free(page);
}

Test(explore_gold, bad_trees_and_long_sentences_fail_with_one_line, .timeout = 120)
{
    Env e;
    env_init(&e, "explore_gold_bad");
    char tree[600], bad[600];
    train_model(&e, tree, sizeof tree);
    char *out = NULL;
    char html[700];
    snprintf(html, sizeof html, "%s/bad.html", e.dir);
    /* A cycle. */
    const char *cyc = "# text = a b\n" W("1", "a", "2", "x", "_") W("2", "b", "1", "y", "_");
    make_file(&e, "cycle.conllu", cyc, strlen(cyc), bad, sizeof bad);
    int rc = tu_run(&out, "%s/infer --ckpt %s/m.ckpt --explore %s --text-file %s 2>&1", tu_bin(),
                    e.dir, html, bad);
    expect_error(out, rc, 1, "infer", "cycle.conllu:2: the tree has a cycle through word 1");
    free(out);
    /* No such sentence. */
    rc = tu_run(&out, "%s/infer --ckpt %s/m.ckpt --explore %s --text-file %s --sentence 3 2>&1",
                tu_bin(), e.dir, html, tree);
    expect_error(out, rc, 1, "infer", "--sentence 3: ");
    free(out);
    /* A sentence longer than the context of 32 tokens. */
    static char lng[8192];
    size_t n = (size_t)snprintf(lng, sizeof lng, "# text =");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(lng + n, sizeof lng - n, " w%d", i);
    n += (size_t)snprintf(lng + n, sizeof lng - n, "\n");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(lng + n, sizeof lng - n, "%d\tw%d\t_\tX\t_\t_\t%d\tdep\t_\t_\n",
                              i + 1, i, i ? 1 : 0);
    n += (size_t)snprintf(lng + n, sizeof lng - n, "\n");
    make_file(&e, "long.conllu", lng, n, bad, sizeof bad);
    rc = tu_run(&out, "%s/infer --ckpt %s/m.ckpt --explore %s --text-file %s 2>&1", tu_bin(),
                e.dir, html, bad);
    expect_error(out, rc, 1, "infer", "longer than the model's context of 32 tokens");
    free(out);
    /* --sentence names a treebank's sentence: with a plain text it is a usage error. */
    rc = tu_run(&out, "%s/infer --ckpt %s/m.ckpt --explore %s --text 'a b c' --sentence 2 2>&1",
                tu_bin(), e.dir, html);
    expect_error(out, rc, 2, "infer", "--sentence 2 picks a sentence of a CoNLL-U --text-file");
    free(out);
    struct stat st;
    cr_assert_neq(stat(html, &st), 0, "a failed run wrote %s", html);
}

/* A treebank to pick sentences from by their text: sentence 2 has no `# text`
 * line (its text is its tokens joined by spaces, "The dog ran ."), sentence 4
 * repeats sentence 1, and 5 and 6 differ only in case. */
static const char *PICK =
    "# text = The cat sat.\n" W("1", "The", "2", "det", "_") W("2", "cat", "3", "nsubj", "_")
    W("3", "sat", "0", "root", "SpaceAfter=No") W("4", ".", "3", "punct", "_") "\n"
    W("1", "The", "2", "det", "_") W("2", "dog", "3", "nsubj", "_")
    W("3", "ran", "0", "root", "_") W("4", ".", "3", "punct", "_") "\n"
    "# text = The fox slept.\n" W("1", "The", "2", "det", "_") W("2", "fox", "3", "nsubj", "_")
    W("3", "slept", "0", "root", "SpaceAfter=No") W("4", ".", "3", "punct", "_") "\n"
    "# text = The cat sat.\n" W("1", "The", "2", "det", "_") W("2", "cat", "3", "nsubj", "_")
    W("3", "sat", "0", "root", "SpaceAfter=No") W("4", ".", "3", "punct", "_") "\n"
    "# text = the bird ran.\n" W("1", "the", "2", "det", "_") W("2", "bird", "3", "nsubj", "_")
    W("3", "ran", "0", "root", "SpaceAfter=No") W("4", ".", "3", "punct", "_") "\n"
    "# text = The Bird ran.\n" W("1", "The", "2", "det", "_") W("2", "Bird", "3", "nsubj", "_")
    W("3", "ran", "0", "root", "SpaceAfter=No") W("4", ".", "3", "punct", "_") "\n";

/* Runs the explorer on --sentence pick (already quoted for the shell) into
 * NAME.html and NAME.json; its exit status, its output at *out. */
static int explore_pick(const Env *e, const char *pick, const char *name, char **out)
{
    return tu_run(out, "OMP_NUM_THREADS=1 %s/infer --ckpt %s/m.ckpt --explore %s/%s.html "
                  "--explore-json %s/%s.json --text-file %s/pick.conllu --sentence %s 2>&1",
                  tu_bin(), e->dir, e->dir, name, e->dir, name, e->dir, pick);
}

/* Whether the runs a and b wrote the same bytes to their .ext files. */
static int same_output(const Env *e, const char *a, const char *b, const char *ext)
{
    char pa[700], pb[700];
    snprintf(pa, sizeof pa, "%s/%s.%s", e->dir, a, ext);
    snprintf(pb, sizeof pb, "%s/%s.%s", e->dir, b, ext);
    return same_files(pa, pb);
}

/* Explores --sentence pick as run name and checks that it wrote what --sentence
 * as_number wrote (run "nN", made first); returns the run's output. */
static char *expect_same_as_number(const Env *e, const char *pick, const char *name, int number)
{
    char *out = NULL, num[32];
    snprintf(num, sizeof num, "n%d", number);
    int rc = explore_pick(e, pick, name, &out);
    cr_assert_eq(rc, 0, "--sentence %s: %s", pick, out);
    cr_assert(same_output(e, name, num, "json"),
              "--sentence %s wrote another --explore-json than --sentence %d", pick, number);
    return out;
}

Test(explore_gold, a_sentence_typed_as_text_is_the_one_its_number_picks, .timeout = 120)
{
    Env e;
    env_init(&e, "explore_gold_text");
    char tree[600], pick[600];
    train_model(&e, tree, sizeof tree);
    make_file(&e, "pick.conllu", PICK, strlen(PICK), pick, sizeof pick);
    char *out = NULL;
    for (int n = 1; n <= 6; n++) {
        char num[16], name[16];
        snprintf(num, sizeof num, "%d", n);
        snprintf(name, sizeof name, "n%d", n);
        int rc = explore_pick(&e, num, name, &out);
        cr_assert_eq(rc, 0, "--sentence %d: %s", n, out);
        free(out);
    }
    /* The numbers pick different windows, so an equal file below means something. */
    cr_assert(!same_output(&e, "n1", "n3", "json") && !same_output(&e, "n5", "n6", "json"));

    /* The text of a `# text` line: the same JSON and page, named alike. */
    out = expect_same_as_number(&e, "'The fox slept.'", "t3", 3);
    cr_assert(same_output(&e, "t3", "n3", "html"), "the page differs from --sentence 3's");
    cr_assert(strstr(out, "pick.conllu, sentence 3 ("), "%s", out);
    cr_assert(!strstr(out, "matching"), "a note for a single match: %s", out);
    free(out);
    /* A sentence without one: its tokens joined by spaces, as the trainer reads it. */
    free(expect_same_as_number(&e, "'The dog ran .'", "t2", 2));
    /* White space: runs are one space, the ends trimmed. */
    free(expect_same_as_number(&e, "'  The   fox\tslept. '", "w3", 3));
    free(expect_same_as_number(&e, "\"$(printf 'The dog\\nran .')\"", "w2", 2));
    /* Case: an exact match first, even after a sentence that matches in another case. */
    free(expect_same_as_number(&e, "'The Bird ran.'", "c6", 6));
    free(expect_same_as_number(&e, "'the bird ran.'", "c5", 5));
    free(expect_same_as_number(&e, "'the FOX slept.'", "c3", 3));
    /* Several in another case: the first, with the note. */
    out = expect_same_as_number(&e, "'THE BIRD RAN.'", "c5b", 5);
    cr_assert(strstr(out, "pick.conllu, sentence 5 (the first of 2 sentences matching "
                          "--sentence 'THE BIRD RAN.')"), "%s", out);
    free(out);

    /* Two identical sentences: the first, and the note on stderr and the page. */
    out = expect_same_as_number(&e, "'The cat sat.'", "d1", 1);
    const char *note = "pick.conllu, sentence 1 (the first of 2 sentences matching --sentence "
                       "'The cat sat.')";
    cr_assert(strstr(out, note), "no note of the two matches: %s", out);
    free(out);
    char path[700];
    snprintf(path, sizeof path, "%s/d1.html", e.dir);
    char *page = tu_read_text(path);
    cr_assert(page && strstr(page, note), "the page does not say that 2 sentences matched");
    free(page);
}

Test(explore_gold, a_text_no_sentence_has_is_a_usage_error_naming_the_nearest, .timeout = 120)
{
    Env e;
    env_init(&e, "explore_gold_nearest");
    char tree[600], pick[600];
    train_model(&e, tree, sizeof tree);
    make_file(&e, "pick.conllu", PICK, strlen(PICK), pick, sizeof pick);
    char *out = NULL, html[700];
    snprintf(html, sizeof html, "%s/x.html", e.dir);
    struct stat st;

    /* "The dog ran fast" shares the, dog and ran with sentence 2 only (sentences 5
     * and 6 share two words, the others one). */
    int rc = explore_pick(&e, "'The dog ran fast'", "x", &out);
    expect_error(out, rc, 2, "infer", "--sentence 'The dog ran fast': no sentence of ");
    expect_error(out, rc, 2, "infer", "pick.conllu has this text, in any case; the nearest is "
                 "sentence 2, 'The dog ran .', sharing 3 word(s) with it");
    free(out);
    cr_assert_neq(stat(html, &st), 0, "a refused run wrote %s", html);
    /* Words are letters and digits: "slept" in "slept." counts, in any case. */
    rc = explore_pick(&e, "'FOX, slept!'", "x", &out);
    expect_error(out, rc, 2, "infer", "the nearest is sentence 3, 'The fox slept.', sharing 2");
    free(out);
    /* No word in common. */
    rc = explore_pick(&e, "'zebra quilt'", "x", &out);
    expect_error(out, rc, 2, "infer", "--sentence 'zebra quilt': no sentence of ");
    expect_error(out, rc, 2, "infer", "and none shares a word with it");
    free(out);
    /* A long text is cut to 60 bytes in the message, its white space collapsed. */
    rc = explore_pick(&e, "'The   dog ran over the hill and far away, past every fox and bird, "
                      "until the night came down'", "x", &out);
    expect_error(out, rc, 2, "infer", "--sentence 'The dog ran over the hill and far away, past "
                 "every fox and b...': ");
    cr_assert(!strstr(out, "night"), "the text was not cut: %s", out);
    free(out);
    /* Never inside a UTF-8 character: 59 letters, then an e-acute over bytes 60 and 61. */
    char arg[128], want[128];
    snprintf(arg, sizeof arg, "'%.59s\xc3\xa9 and more'", LETTERS80);
    snprintf(want, sizeof want, "--sentence '%.59s...': no sentence of ", LETTERS80);
    rc = explore_pick(&e, arg, "x", &out);
    expect_error(out, rc, 2, "infer", want);
    free(out);
    /* A number stays a number: out of range, or beyond the file. */
    rc = explore_pick(&e, "0", "x", &out);
    expect_error(out, rc, 2, "infer", "--sentence: expected an integer in [1, 100000000], got '0'");
    free(out);
    rc = explore_pick(&e, "7", "x", &out);
    expect_error(out, rc, 1, "infer", "--sentence 7: ");
    free(out);
    rc = explore_pick(&e, "' '", "x", &out);
    expect_error(out, rc, 2, "infer", "--sentence: the text is empty or only white space");
    free(out);
    /* A text needs a .conllu file, as a number does. */
    rc = tu_run(&out, "%s/infer --ckpt %s/m.ckpt --explore %s --text 'a b c' --sentence "
                "'The cat sat.' 2>&1", tu_bin(), e.dir, html);
    expect_error(out, rc, 2, "infer", "--sentence 'The cat sat.' picks a sentence of a CoNLL-U "
                 "--text-file");
    free(out);
    cr_assert_neq(stat(html, &st), 0, "a refused run wrote %s", html);
}
