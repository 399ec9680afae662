/* pairs: minimal pairs of the planted relations and their scores (pairs.h). */
#include "analysis/pairs.h"

#include <stdlib.h>
#include <string.h>

const char *pairs_set_name(int s)
{
    return s == PAIRS_COREF_CLASS ? "coreference-class" : heads_rel_table[s].name;
}

static int pair_order(const void *x, const void *y)
{
    const MinimalPair *a = x, *b = y;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    return a->set - b->set;
}

/* The names relation of byte query + 1: the row before the token holding it,
 * scored against the most likely other token. 0 when its key is not before the row. */
static int names_pair(MinimalPair *p, const SynthRelation *r, size_t at, const TokenId *ids,
                      const size_t *start, size_t nids)
{
    size_t next = heads_token_at(start, nids, r->query + 1 - at);
    size_t key = heads_token_at(start, nids, r->key - at);
    if (next == 0 || key + 1 >= next)
        return 0;
    *p = (MinimalPair){HEADS_REL_NAMES, next - 1, key, ids[next], -1};
    return 1;
}

/* The span a contrast is encoded over, [*ls, *le) of the text: the line
 * holding the form, from its first byte (just after a newline) to its newline,
 * or, for a parsed text, the sentence holding it with the space before it (so
 * that it starts where the text's own chunks do). 0 when the line is cut by
 * the text's start or end. */
static int contrast_span(size_t *ls, size_t *le, size_t form, size_t at,
                         const unsigned char *text, size_t nb, const SynthSentence *sent,
                         size_t nsent)
{
    if (sent) {
        /* The last sentence starting at or before the form (they are in order). */
        size_t lo = 0, hi = nsent;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sent[mid].start <= form)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0 || form >= sent[lo - 1].end)
            return 0;
        const SynthSentence *x = &sent[lo - 1];
        *ls = x->start - (x->start > 0 && text[x->start - 1] == ' ');
        *le = x->end;
        return 1;
    }
    *ls = form;
    *le = form;
    while (*ls > 0 && text[*ls - 1] != '\n')
        --*ls;
    while (*le < nb && text[*le] != '\n')
        ++*le;
    if ((*ls == 0 && at > 0) || *le >= nb)
        return 0;
    ++*le; /* its newline */
    return 1;
}

/* The pair of one contrast: its span (contrast_span) encoded as it is and with
 * alt in place of the form; the pair sits where the encodings first differ. 0
 * when it cannot be placed (see pairs_from_planted); -1 when out of memory. */
static int contrast_pair(MinimalPair *p, int set, const SynthRelation *r, const char *alt,
                         size_t at, const unsigned char *text, size_t nb, const TokenId *ids,
                         const size_t *start, size_t nids, const Tokenizer *tok,
                         const SynthSentence *sent, size_t nsent)
{
    size_t form = r->form - at, ls, le;
    if (!contrast_span(&ls, &le, form, at, text, nb, sent, nsent))
        return 0;
    size_t alen = strlen(alt), rlen = le - ls, wlen = rlen - r->form_len + alen;
    unsigned char *wrong = malloc(wlen);
    TokenId *rid = malloc(rlen * sizeof *rid), *wid = malloc(wlen * sizeof *wid);
    int rc = -1;
    if (!wrong || !rid || !wid)
        goto done;
    memcpy(wrong, text + ls, form - ls);
    memcpy(wrong + (form - ls), alt, alen);
    memcpy(wrong + (form - ls) + alen, text + form + r->form_len, le - form - r->form_len);
    char err[160];
    long nr = tok_encode(tok, text + ls, rlen, rid, "line", err, sizeof err);
    long nw = tok_encode(tok, wrong, wlen, wid, "line", err, sizeof err);
    rc = 0;
    size_t tl = heads_token_at(start, nids, ls);
    if (nr < 0 || nw < 0 || start[tl] != ls || tl + (size_t)nr > nids)
        goto done;
    long k = 0;
    while (k < nr && k < nw && rid[k] == wid[k])
        k++;
    if (k == 0 || k >= nr || k >= nw)
        goto done; /* no token of context, or one encoding is a prefix of the other */
    for (long j = 0; j <= k; j++)
        if (rid[j] != ids[tl + (size_t)j])
            goto done;
    size_t row = tl + (size_t)k - 1, key = heads_token_at(start, nids, r->key - at);
    if (key > row)
        goto done;
    *p = (MinimalPair){set, row, key, rid[k], wid[k]};
    rc = 1;
done:
    free(wrong);
    free(rid);
    free(wid);
    return rc;
}

long pairs_from_planted(MinimalPair *out, size_t cap, size_t *skipped, const SynthRelation *rel,
                        size_t n, size_t at, const unsigned char *text, size_t nb,
                        const TokenId *ids, const size_t *start, size_t nids,
                        const Tokenizer *tok, const SynthSentence *sent, size_t nsent)
{
    size_t np = 0;
    *skipped = 0;
    for (size_t i = 0; i < n && np < cap; i++) {
        const SynthRelation *r = &rel[i];
        if (r->key < at || r->query + 1 >= at + nb)
            continue;
        if (r->kind == SYNTH_REL_NAMES) {
            MinimalPair p;
            if (!names_pair(&p, r, at, ids, start, nids))
                ++*skipped;
            else if (np == 0 || out[np - 1].set != HEADS_REL_NAMES || out[np - 1].row != p.row)
                out[np++] = p; /* several letters of one token give one row */
            continue;
        }
        for (int c = 0; c < SYNTH_ALTS && np < cap; c++) {
            if (!r->alt[c][0])
                continue;
            int set = c == 1 && r->kind == SYNTH_REL_COREF ? PAIRS_COREF_CLASS
                                                            : heads_rel_of_synth(r->kind);
            int got = contrast_pair(&out[np], set, r, r->alt[c], at, text, nb, ids, start, nids,
                                    tok, sent, nsent);
            if (got < 0)
                return -1;
            if (got)
                np++;
            else
                ++*skipped;
        }
    }
    qsort(out, np, sizeof *out, pair_order);
    return (long)np;
}

/* The largest logit of row z[V] but token `right`'s. */
static float best_other(const float *z, int V, int right)
{
    float best = right == 0 ? z[1] : z[0];
    for (int v = 0; v < V; v++)
        if (v != right && z[v] > best)
            best = z[v];
    return best;
}

/* Scores the pairs whose rows lie in the window of T text tokens from token lo,
 * whose logits are at batch position pos0 on, walking p from *next. */
static void score_window(PairSums sums[PAIRS_SETS], const Activations *a, const MinimalPair *p,
                         size_t np, size_t lo, int T, size_t pos0, size_t *next)
{
    int V = (int)a->V, skip = heads_skip(T);
    while (*next < np && p[*next].row < lo)
        (*next)++;
    for (size_t r = *next; r < np && p[r].row < lo + (size_t)T; r++) {
        const MinimalPair *x = &p[r];
        if (x->key < lo || (int)(x->row - lo) < skip)
            continue;
        size_t pos = pos0 + (x->row - lo);
        const float *z = a->logits + pos * a->V;
        double wrong = x->wrong >= 0 ? z[x->wrong] : best_other(z, V, x->right);
        double diff = (double)z[x->right] - wrong;
        PairSums *ps = &sums[x->set];
        ps->pairs += 1.0;
        ps->correct += diff > 0.0;
        ps->diff += diff;
        ps->loss += a->losses[pos];
    }
}

void pairs_add(PairSums sums[PAIRS_SETS], const Activations *a, const MinimalPair *p, size_t np,
               size_t lo, int B, int T, size_t *next)
{
    for (int b = 0; b < B; b++)
        score_window(sums, a, p, np, lo + (size_t)b * T, T, (size_t)b * T, next);
}

void pairs_add_at(PairSums sums[PAIRS_SETS], const Activations *a, const MinimalPair *p,
                  size_t np, const size_t *starts, int B, int T)
{
    for (int b = 0; b < B; b++) {
        size_t lo = 0, hi = np; /* the first pair at or after the window's start */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p[mid].row < starts[b])
                lo = mid + 1;
            else
                hi = mid;
        }
        score_window(sums, a, p, np, starts[b], T, (size_t)b * T, &lo);
    }
}

void pairs_finish(PairScore *out, const PairSums *s)
{
    memset(out, 0, sizeof *out);
    out->pairs = s->pairs;
    if (s->pairs > 0) {
        out->accuracy = s->correct / s->pairs;
        out->logit_diff = s->diff / s->pairs;
        out->loss = s->loss / s->pairs;
    }
}

double pairs_cost(const PairScore *base, const PairScore *ablated, double base_loss,
                  double ablated_loss)
{
    if (base->pairs > 0)
        return base->logit_diff > 0 ? (base->logit_diff - ablated->logit_diff) / base->logit_diff
                                    : 0.0;
    return base_loss > 0 ? (ablated_loss - base_loss) / base_loss : 0.0;
}
