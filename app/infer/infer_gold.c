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

void gold_tree_read(GoldTree *g, const char *path, long sentence, const Tokenizer *tok, int T)
{
    char err[1500];
    memset(g, 0, sizeof *g);
    g->g.file = path;
    if (conllu_read(&g->c, path, err, sizeof err))
        cli_fail("%s", err);
    if (deps_prepare(&g->d, &g->c, tok, T, path, err, sizeof err))
        cli_fail("%s", err);
    if (sentence < 1 || (size_t)sentence > g->c.nsent)
        cli_fail("--sentence %ld: %s has %zu sentence(s)", sentence, path, g->c.nsent);
    size_t s = g->s = (size_t)sentence - 1;
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
