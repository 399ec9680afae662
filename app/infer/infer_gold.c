/* infer_gold: a treebank sentence and its gold dependencies for the explorer
 * (infer_gold.h). */
#include "app/infer/infer_gold.h"

#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        cli_fail("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

static size_t piece_bytes(const Tokenizer *tok, const TokenId *ids, size_t n)
{
    size_t sum = 0;
    for (size_t t = 0; t < n; t++) {
        size_t len;
        tok_piece(tok, ids[t], &len);
        sum += len;
    }
    return sum;
}

/* White space, as --sentence's text is matched: a run of it is one space. */
static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A letter or digit of a word; every byte of a UTF-8 character counts as one. */
static int is_word_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c >= 0x80;
}

static unsigned char ascii_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Whether a[0..n) and b[0..n) are the same bytes; fold: ASCII letters in
 * either case (other letters as they are). */
static int same_bytes(const char *a, const char *b, size_t n, int fold)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (fold ? ascii_lower(x) != ascii_lower(y) : x != y)
            return 0;
    }
    return 1;
}

/* The next run of bytes of s[0..n) from *at that are words (word: 1) or not
 * white space (word: 0), at *run; its length, 0 at the end. *at moves past it. */
static size_t next_run(const char *s, size_t n, size_t *at, const char **run, int word)
{
    size_t i = *at;
    while (i < n && (word ? !is_word_byte((unsigned char)s[i]) : is_space((unsigned char)s[i])))
        i++;
    size_t j = i;
    while (j < n && (word ? is_word_byte((unsigned char)s[j]) : !is_space((unsigned char)s[j])))
        j++;
    *run = s + i;
    *at = j;
    return j - i;
}

/* Whether a and b are one text once each run of white space is one space and
 * the ends are trimmed: the same runs of other bytes in the same order. */
static int same_text(const char *a, size_t an, const char *b, size_t bn, int fold)
{
    size_t i = 0, j = 0;
    for (;;) {
        const char *ra, *rb;
        size_t la = next_run(a, an, &i, &ra, 0), lb = next_run(b, bn, &j, &rb, 0);
        if (la != lb || !same_bytes(ra, rb, la, fold))
            return 0;
        if (!la)
            return 1;
    }
}

void gold_show_text(char *buf, const char *s, size_t n, int quote)
{
    char t[GOLD_SHOWN_CUT];
    size_t m = 0, at = 0, len;
    const char *run;
    int cut = 0;
    while (!cut && (len = next_run(s, n, &at, &run, 0))) {
        if (m == GOLD_SHOWN_CUT) {
            cut = 1;
            break;
        }
        if (m)
            t[m++] = ' ';
        size_t take = len < GOLD_SHOWN_CUT - m ? len : GOLD_SHOWN_CUT - m;
        memcpy(t + m, run, take);
        m += take;
        /* Cut inside a UTF-8 character: drop the part of it kept. */
        if (take < len && ((unsigned char)run[take] & 0xC0) == 0x80) {
            while (m && ((unsigned char)t[m - 1] & 0xC0) == 0x80)
                m--;
            m -= m > 0;
        }
        cut = take < len;
    }
    while (cut && m && t[m - 1] == ' ')
        m--;
    snprintf(buf, GOLD_SHOWN_MAX, "%s%.*s%s%s", quote ? "'" : "", (int)m, t, cut ? "..." : "",
             quote ? "'" : "");
}

/* The first sentence (0-based) whose text is text (same_text), or failing
 * that the first whose text is text in another case; *matches: how many
 * sentences match so. -1 when none does. */
static long find_sentence(const Conllu *c, const char *text, size_t *matches)
{
    size_t n = strlen(text);
    for (int fold = 0; fold < 2; fold++) {
        long first = -1;
        size_t m = 0;
        for (size_t s = 0; s < c->nsent; s++) {
            const ConlluSentence *se = &c->sent[s];
            if (same_text(c->text + se->start, se->end - se->start, text, n, fold)) {
                first = first < 0 ? (long)s : first;
                m++;
            }
        }
        if (m) {
            *matches = m;
            return first;
        }
    }
    return -1;
}

/* The query words the nearest sentence is measured on, the first distinct ones:
 * a bound on the work for a long text. */
#define NEAR_WORDS 64

/* The sentence (0-based) that holds the most of text's words (runs of
 * letters and digits, in any case), the first of those tied; *shared: how
 * many it holds (0: no sentence holds one). */
static size_t nearest_sentence(const Conllu *c, const char *text, size_t *shared)
{
    const char *qw[NEAR_WORDS], *w;
    size_t ql[NEAR_WORDS], nq = 0, at = 0, n = strlen(text), len;
    while (nq < NEAR_WORDS && (len = next_run(text, n, &at, &w, 1))) {
        size_t k = 0;
        while (k < nq && !(ql[k] == len && same_bytes(qw[k], w, len, 1)))
            k++;
        if (k == nq) {
            qw[nq] = w;
            ql[nq++] = len;
        }
    }
    size_t best = 0, most = 0;
    for (size_t s = 0; s < c->nsent && nq; s++) {
        const ConlluSentence *se = &c->sent[s];
        unsigned char seen[NEAR_WORDS] = {0};
        size_t got = 0, a = 0;
        while ((len = next_run(c->text + se->start, se->end - se->start, &a, &w, 1)))
            for (size_t k = 0; k < nq; k++)
                if (!seen[k] && ql[k] == len && same_bytes(qw[k], w, len, 1)) {
                    seen[k] = 1;
                    got++;
                }
        if (got > most) {
            most = got;
            best = s;
        }
    }
    *shared = most;
    return best;
}

/* The sentence --sentence names: its number, or the first whose text is text;
 * a text no sentence has is a usage error naming the nearest sentence. */
static size_t pick_sentence(GoldTree *g, const char *path, long sentence, const char *text)
{
    const Conllu *c = &g->c;
    if (!text) {
        if (sentence < 1 || (size_t)sentence > c->nsent)
            cli_fail("--sentence %ld: %s has %zu sentence(s)", sentence, path, c->nsent);
        return (size_t)sentence - 1;
    }
    long s = find_sentence(c, text, &g->matches);
    if (s >= 0)
        return (size_t)s;
    char shown[GOLD_SHOWN_MAX], near[GOLD_SHOWN_MAX];
    gold_show_text(shown, text, strlen(text), 1);
    size_t shared, k = nearest_sentence(c, text, &shared);
    if (!shared)
        cli_usage_error("--sentence %s: no sentence of %s has this text, in any case, and none "
                        "shares a word with it", shown, path);
    const ConlluSentence *se = &c->sent[k];
    gold_show_text(near, c->text + se->start, se->end - se->start, 1);
    cli_usage_error("--sentence %s: no sentence of %s has this text, in any case; the nearest "
                    "is sentence %zu, %s, sharing %zu word(s) with it", shown, path, k + 1, near,
                    shared);
}

void gold_tree_read(GoldTree *g, const char *path, long sentence, const char *text,
                    const Tokenizer *tok, int T)
{
    char err[1500];
    memset(g, 0, sizeof *g);
    g->g.file = path;
    if (conllu_read(&g->c, path, err, sizeof err))
        cli_fail("%s", err);
    size_t s = g->s = pick_sentence(g, path, sentence, text);
    if (deps_prepare(&g->d, &g->c, tok, T, path, err, sizeof err))
        cli_fail("%s", err);
    const ConlluSentence *se = &g->c.sent[s];
    if (!g->d.wlen[s])
        cli_fail("%s: sentence %zu (line %u) is longer than the model's context of %d tokens; "
                 "the explorer shows one whole sentence", path, s + 1, se->line, T);
    size_t at = piece_bytes(tok, g->d.ids, g->d.win0[s]);
    g->bytes = (const unsigned char *)g->c.text + at;
    g->nbytes = piece_bytes(tok, g->d.ids + g->d.win0[s], g->d.wlen[s]);
}

/* Word i (0-based) of sentence s as a string at *out, which moves past it. */
static const char *word_text(const GoldTree *g, uint32_t i, char **out)
{
    const ConlluWord *w = &g->c.word[g->c.sent[g->s].word0 + i];
    size_t n = w->end > w->start ? w->end - w->start : 0;
    char *p = *out;
    memcpy(p, g->c.text + w->start, n);
    p[n] = '\0';
    *out = p + n + 1;
    return p;
}

/* The relations (label and direction) in the order of their first pair. */
static void group_relations(GoldTree *g, int n)
{
    ExploreGold *x = &g->g;
    for (size_t p = 0; p < x->npair; p++) {
        const ExploreGoldPair *pp = &g->pair[p];
        size_t r = 0;
        while (r < x->nrel && (g->rel[r].label != pp->label || g->rel[r].dir != pp->dir))
            r++;
        if (r == x->nrel)
            g->rel[x->nrel++] = (ExploreGoldRelation){.label = pp->label, .dir = pp->dir};
    }
    for (size_t r = 0; r < x->nrel; r++) {
        ExploreGoldRelation *rel = &g->rel[r];
        double uni = 0.0;
        rel->best = 0;
        rel->attention = -1.0;
        for (int k = 0; k < n; k++) {
            double sum = 0.0;
            size_t m = 0;
            for (size_t p = 0; p < x->npair; p++) {
                const ExploreGoldPair *pp = &g->pair[p];
                if (pp->label != rel->label || pp->dir != rel->dir)
                    continue;
                sum += pp->attn[k];
                if (k == 0)
                    uni += (double)(pp->key1 - pp->key0 + 1) / (pp->query + 1);
                m++;
            }
            rel->pairs = m;
            if (sum / (double)m > rel->attention) {
                rel->attention = sum / (double)m;
                rel->best = k;
            }
        }
        rel->uniform = uni / (double)rel->pairs;
    }
}

void gold_tree_attach(GoldTree *g, Explore *e)
{
    const DepsData *d = &g->d;
    size_t s = g->s, w0 = d->win0[s];
    if ((size_t)e->T != d->wlen[s])
        cli_fail("%s: sentence %zu made %d token(s) alone but %u in the file; its gold words "
                 "cannot be placed", g->g.file, s + 1, e->T, d->wlen[s]);
    for (int t = 0; t < e->T; t++)
        if (e->ids[t] != (int)d->ids[w0 + t])
            cli_fail("%s: sentence %zu tokenises differently alone than in the file (token %d); "
                     "its gold words cannot be placed", g->g.file, s + 1, t);
    const ConlluSentence *se = &g->c.sent[s];
    int n = e->cfg.L * e->cfg.H, T = e->T;
    size_t p0 = d->pair0[s], np = d->pair0[s + 1] - p0;
    ExploreGold *x = &g->g;
    x->sentence = s + 1;
    x->line = se->line;
    x->words = se->nwords;
    g->pair = xcalloc(np, sizeof *g->pair);
    g->rel = xcalloc(np, sizeof *g->rel);
    g->attn = xcalloc(np * (size_t)n, sizeof *g->attn);
    /* Each pair's two words, each at most the sentence, and their NULs. */
    g->words = xcalloc(np * 2 * (se->end - se->start + 1), 1);
    char *out = g->words;
    for (uint32_t i = 0; i < se->nwords; i++) {
        const ConlluWord *w = &g->c.word[se->word0 + i];
        uint32_t h = w->head ? w->head - 1 : 0;
        x->roots += w->head == 0;
        x->no_token += w->head != 0 && (d->tok0[se->word0 + i] < 0 || d->tok0[se->word0 + h] < 0);
    }
    for (size_t p = 0; p < np; p++) {
        const DepsPair *pr = &d->pair[p0 + p];
        ExploreGoldPair *q = &g->pair[p];
        int to_head = pr->dir == DEPS_TO_HEAD;
        uint32_t dep = to_head ? pr->query : pr->key, head = to_head ? pr->key : pr->query;
        q->label = g->c.rel_name[pr->rel];
        q->dir = pr->dir;
        q->dependent = word_text(g, dep, &out);
        q->head = word_text(g, head, &out);
        q->dependent_id = dep + 1;
        q->head_id = head + 1;
        q->query = d->tok1[se->word0 + pr->query];
        q->key0 = d->tok0[se->word0 + pr->key];
        q->key1 = d->tok1[se->word0 + pr->key];
        float *a = g->attn + p * (size_t)n;
        for (int k = 0; k < n; k++) {
            a[k] = (float)deps_pair_attention(d, pr, e->att + (size_t)k * T * T, T, NULL);
            if (a[k] > a[q->best])
                q->best = k;
        }
        q->attn = a;
    }
    x->pair = g->pair;
    x->npair = np;
    group_relations(g, n);
    x->rel = g->rel;
    e->gold = x;
}

void gold_tree_free(GoldTree *g)
{
    free(g->pair);
    free(g->rel);
    free(g->attn);
    free(g->words);
    deps_free(&g->d);
    conllu_free(&g->c);
    memset(g, 0, sizeof *g);
}
