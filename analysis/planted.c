/* planted: the built-in corpus' planted relations on an analysed text (planted.h). */
#include "analysis/planted.h"

#include <stdlib.h>
#include <string.h>

#include "data/corpus.h"
#include "util/errbuf.h"

/* Whether c is a mark that ends a sentence of the corpus. */
static int is_mark(unsigned char c)
{
    return c == '.' || c == '!' || c == '?';
}

/* Whether the byte before text[i] ends a sentence of the corpus: a newline, or
 * a space after its last mark (a line may hold two sentences). */
static int after_sentence(const unsigned char *text, size_t i)
{
    return text[i - 1] == '\n' || (i > 1 && text[i - 1] == ' ' && is_mark(text[i - 2]));
}

/* The sentences of a text found in the corpus, each ending at the token that
 * holds its newline or its last mark when a space follows (the last one at the
 * text's end), every one understood because the generator wrote it; a
 * sentence cut by the text's start or end is not. */
static int find_sentences(Planted *p, const unsigned char *text, const size_t *start, size_t nids,
                          int sentence_start)
{
    size_t n = 0, cap = 8;
    p->sentence = malloc(cap * sizeof *p->sentence);
    if (!p->sentence)
        return -1;
    size_t first = 0;
    for (size_t t = 0; t < nids; t++) {
        size_t e = start[t + 1];
        int ends = e > start[t] && (after_sentence(text, e) ||
                                    (is_mark(text[e - 1]) && e < start[nids] && text[e] == ' '));
        /* A token that is only the space after a mark (a byte-level model's)
         * starts the next sentence: the mark's token ended this one. */
        if (ends && first == t && t > 0 && e - start[t] == 1 && text[e - 1] == ' ')
            ends = 0;
        if (!ends && t + 1 < nids)
            continue;
        if (n == cap) {
            PlantedSentence *grown = realloc(p->sentence, 2 * cap * sizeof *grown);
            if (!grown)
                return -1;
            p->sentence = grown;
            cap *= 2;
        }
        /* Whole when it ends in its own newline or mark and starts after
         * another sentence (or at a text that starts a corpus sentence). */
        int whole = ends && (n > 0 || sentence_start);
        p->sentence[n++] = (PlantedSentence){first, t + 1, whole, 0, 0};
        first = t + 1;
    }
    p->nsentence = n;
    return 0;
}

/* The sentences synth_parse found, as token ranges: from the token holding a
 * sentence's first byte to the one holding its last. */
static int parsed_sentences(Planted *p, const SynthSentence *sent, size_t ns, const size_t *start,
                            size_t nids)
{
    p->sentence = malloc((ns ? ns : 1) * sizeof *p->sentence);
    if (!p->sentence)
        return -1;
    for (size_t i = 0; i < ns; i++)
        p->sentence[i] = (PlantedSentence){heads_token_at(start, nids, sent[i].start),
                                           heads_token_at(start, nids, sent[i].end - 1) + 1,
                                           sent[i].understood, sent[i].start, sent[i].end};
    p->nsentence = ns;
    return 0;
}

int planted_find(Planted *p, const TokenId *ids, size_t nids, const Tokenizer *tok,
                 size_t corpus_bytes, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    size_t nb = tok_count_bytes(tok, ids, nids), at = 0, total = 0, ns = 0;
    char *text = malloc(nb ? nb : 1);
    size_t *start = malloc((nids + 1) * sizeof *start);
    SynthRelation *rel = NULL;
    SynthSentence *sent = NULL;
    int rc = -1;
    if (!text || !start)
        goto done;
    tok_decode(tok, ids, nids, (unsigned char *)text);
    start[0] = 0;
    for (size_t t = 0; t < nids; t++) {
        size_t len;
        tok_piece(tok, ids[t], &len);
        start[t + 1] = start[t] + len;
    }
    if (synth_locate(&at, text, nb, corpus_bytes ? corpus_bytes : SYNTH_DEFAULT_BYTES,
                     CORPUS_BUILTIN_SEED)) {
        p->builtin = 1;
        total = synth_relations_in(NULL, 0, at, nb, CORPUS_BUILTIN_SEED);
        rel = malloc((total ? total : 1) * sizeof *rel);
        if (!rel)
            goto done;
        synth_relations_in(rel, total, at, nb, CORPUS_BUILTIN_SEED);
        /* Whether the text starts a corpus sentence: the corpus's first byte,
         * or one after a newline or a sentence's mark and space (the corpus up
         * to it is generated again, at most a megabyte, once per analysis). */
        int sentence_start = at == 0;
        if (at > 0) {
            char *before = malloc(at);
            if (!before)
                goto done;
            synth_generate(before, at, CORPUS_BUILTIN_SEED);
            sentence_start = after_sentence((const unsigned char *)before, at);
            free(before);
        }
        if (find_sentences(p, (const unsigned char *)text, start, nids, sentence_start) < 0)
            goto done;
    } else {
        /* Not a piece of the corpus: the sentences its grammar writes. A
         * sentence takes at least two bytes, and no relation two queries. */
        size_t sent_cap = nb / 2 + 1, rel_cap = 2 * nb + 1;
        sent = malloc(sent_cap * sizeof *sent);
        rel = malloc(rel_cap * sizeof *rel);
        if (!sent || !rel)
            goto done;
        total = synth_parse(text, nb, sent, sent_cap, &ns, rel, rel_cap);
        if (total > rel_cap || ns > sent_cap)
            goto done;
        for (size_t i = 0; i < ns; i++)
            p->parsed += sent[i].understood;
        if (parsed_sentences(p, sent, ns, start, nids) < 0)
            goto done;
        p->text = text; /* kept for planted_why */
    }
    p->at = at;
    p->rel = malloc((total ? total : 1) * sizeof *p->rel);
    size_t cap = total * SYNTH_ALTS;
    p->pair = malloc((cap ? cap : 1) * sizeof *p->pair);
    if (!p->rel || !p->pair)
        goto done;
    p->n = heads_planted_to_tokens(p->rel, &p->dropped, rel, total, at, start, nids);
    long np = pairs_from_planted(p->pair, cap, &p->pairs_skipped, rel, total, at,
                                 (const unsigned char *)text, nb, ids, start, nids, tok,
                                 p->builtin ? NULL : sent, ns);
    if (np < 0)
        goto done;
    p->npair = (size_t)np;
    rc = 0;
done:
    free(rel);
    free(sent);
    free(start);
    if (text != p->text)
        free(text);
    if (rc)
        err_set(err, errlen, "out of memory looking for the text's planted relations");
    return rc;
}

const char *planted_sentence_text(const Planted *p, size_t s, size_t *len)
{
    const PlantedSentence *x = &p->sentence[s];
    *len = 0;
    if (!p->text)
        return NULL;
    size_t a = x->byte_first, b = x->byte_end;
    while (a < b && (p->text[a] == ' ' || p->text[a] == '\n'))
        a++;
    while (b > a && (p->text[b - 1] == ' ' || p->text[b - 1] == '\n'))
        b--;
    *len = b - a;
    return p->text + a;
}

int planted_why(const Planted *p, size_t s, char *buf, size_t cap)
{
    if (cap)
        buf[0] = '\0';
    size_t n;
    const char *text = planted_sentence_text(p, s, &n);
    SynthWhy why;
    if (!text || p->sentence[s].understood || n == 0 || synth_why(text, n, &why))
        return 0;
    synth_why_text(&why, text, buf, cap);
    return 1;
}

int planted_known(const Planted *p)
{
    return p->builtin || p->parsed > 0;
}

void planted_free(Planted *p)
{
    free(p->rel);
    free(p->pair);
    free(p->sentence);
    free(p->text);
    p->text = NULL;
    p->rel = NULL;
    p->pair = NULL;
    p->sentence = NULL;
    p->n = p->npair = p->nsentence = 0;
}

void planted_keys(int *const *key, int *const *first, const Planted *p, size_t lo, int B, int T,
                  size_t *next)
{
    size_t NT = (size_t)B * T;
    for (int q = HEADS_REL_TEXT; q < HEADS_REL_COUNT; q++)
        for (size_t i = 0; i < NT; i++)
            key[q][i] = first[q][i] = -1;
    size_t hi = lo + NT;
    while (*next < p->n && p->rel[*next].query < lo)
        (*next)++;
    for (size_t r = *next; r < p->n && p->rel[r].query < hi; r++) {
        const SynthRelation *x = &p->rel[r];
        size_t s = lo + (x->query - lo) / (size_t)T * (size_t)T;   /* its window's start */
        if (x->key < s)
            continue;
        int q = heads_rel_of_synth(x->kind);
        if (heads_rel_table[q].key != HEADS_KEY_PLANTED)
            continue; /* a text relation (bracket): heads_keys_find finds its keys */
        size_t i = x->query - lo;
        key[q][i] = (int)(x->key - s);
        if (heads_rel_table[q].repeat && x->key > s)
            first[q][i] = (int)(x->key - 1 - s);
    }
}

void planted_keys_at(int *const *key, int *const *first, const Planted *p, const size_t *starts,
                     int B, int T)
{
    int *kb[HEADS_REL_COUNT] = {NULL}, *fb[HEADS_REL_COUNT] = {NULL};
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)b * T;
        for (int q = HEADS_REL_TEXT; q < HEADS_REL_COUNT; q++) {
            kb[q] = key[q] + off;
            fb[q] = first[q] + off;
        }
        /* The first relation whose query is in the window: the walk starts there. */
        size_t lo = 0, hi = p->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p->rel[mid].query < starts[b])
                lo = mid + 1;
            else
                hi = mid;
        }
        planted_keys(kb, fb, p, starts[b], 1, T, &lo);
    }
}
