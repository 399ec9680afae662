/* heads_relations: the relations of analysis/heads (heads.h, "Relations"): the
 * keys of the previous-token, bracket, copy and rare relations in windows of tokens,
 * every head's attention on them with the uniform baseline and the loss, the
 * best head and the probe alphabet drawn from copied letters (heads_measure.c
 * runs them in order for the programs). Split from heads.c, which keeps the pattern
 * statistics; docs/heads.md gives the definitions. */
#include "analysis/heads.h"
#include "analysis/pairs.h"

#include <stdlib.h>
#include <string.h>

#include "util/errbuf.h"

/* One row per relation, by its fields' names (heads.h, HeadsRelRow). The text
 * relations' rows are here; the planted ones' come from their rows of
 * SYNTH_RELATIONS (data/synth_relations.h), which give what differs between
 * them; what every planted relation shares is filled in here. */
#define PLANTED_ROW(KIND, ...)                                                          \
    [HEADS_REL_##KIND] = {.bar = HEADS_REL_BAR, .planted = 1, .key = HEADS_KEY_PLANTED, \
                          .synth = SYNTH_REL_##KIND, __VA_ARGS__},
#define NO_ROW(KIND)
const HeadsRelRow heads_rel_table[HEADS_REL_COUNT] = {
    [HEADS_REL_PREV] = {
        .name = "previous-token", .bar = HEADS_PREV_MIN, .key = HEADS_KEY_PREV, .synth = -1,
        .about = "Query: any token. Key: the token just before it."},
    [HEADS_REL_BRACKET] = {
        .name = "bracket", .bar = HEADS_REL_BAR, .key = HEADS_KEY_BRACKET,
        .synth = SYNTH_REL_BRACKET,
        .about = "Query: the token just before a closing bracket or quote. Key: the token "
                 "holding the opening bracket or quote it closes."},
    [HEADS_REL_COPY] = {
        .name = "copy", .bar = HEADS_REL_BAR, .key = HEADS_KEY_COPY, .synth = -1, .repeat = 1,
        .about = "Query: a token that ends three tokens seen earlier in the text. Key: the "
                 "token that followed them there, which comes next again."},
    [HEADS_REL_RARE] = {
        .name = "rare", .bar = HEADS_REL_BAR, .key = HEADS_KEY_RARE, .synth = -1,
        .about = "Query: any token. Keys: the earlier tokens (two or more back) of the text's "
                 "rarest kind, by the training text's counts."},
    SYNTH_RELATIONS(PLANTED_ROW, NO_ROW)
};
#undef PLANTED_ROW
#undef NO_ROW

int heads_rel_of_synth(int synth_kind)
{
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (heads_rel_table[q].synth == synth_kind)
            return q;
    return -1;
}

void heads_keys_prev(int *key, int B, int T)
{
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++)
            key[(size_t)b * T + i] = i - 1;
}

static int is_opener(unsigned char c)
{
    return c == '(' || c == '[' || c == '{';
}

/* The opener a closer pairs with, or 0 for a byte that closes nothing. */
static unsigned char opener_of(unsigned char c)
{
    return c == ')' ? '(' : c == ']' ? '[' : c == '}' ? '{' : 0;
}

void heads_keys_bracket(int *key, const int *tokens, const Tokenizer *tok, int B, int T)
{
    enum { DEPTH = 32 };
    for (int b = 0; b < B; b++) {
        const int *x = tokens + (size_t)b * T;
        int *kb = key + (size_t)b * T;
        /* The open brackets: each one's byte and the token holding it. */
        unsigned char open[DEPTH];
        int at[DEPTH], depth = 0;
        for (int i = 0; i < T; i++)
            kb[i] = -1;
        for (int i = 0; i < T; i++) {
            size_t n;
            const unsigned char *p = tok_piece(tok, x[i], &n);
            int closed = 0;
            for (size_t k = 0; k < n; k++) {
                unsigned char c = p[k], top = depth ? open[depth - 1] : 0;
                if (c == '\n') {
                    depth = 0;
                } else if ((c == '"' && top == '"') || (opener_of(c) && top == opener_of(c))) {
                    depth--;
                    if (!closed && i >= 1 && at[depth] < i)
                        kb[i - 1] = at[depth];
                    closed = 1;
                } else if ((c == '"' || is_opener(c)) && depth < DEPTH) {
                    open[depth] = c;
                    at[depth++] = i;
                }
            }
        }
    }
}

/* 1 when the n tokens ending at p and at q are equal (p, q >= n - 1). */
static int same_tokens(const int *x, int p, int q, int n)
{
    for (int k = 0; k < n; k++)
        if (x[p - k] != x[q - k])
            return 0;
    return 1;
}

void heads_keys_copy(int *key, int *first, const int *tokens, int B, int T)
{
    const int K = HEADS_COPY_CONTEXT;
    for (int b = 0; b < B; b++) {
        const int *x = tokens + (size_t)b * T;
        int *kb = key + (size_t)b * T, *fb = first + (size_t)b * T;
        for (int i = 0; i < T; i++) {
            kb[i] = fb[i] = -1;
            if (i + 1 >= T)
                continue;
            int j = i - 3;
            while (j >= K - 1 && !same_tokens(x, i, j, K))
                j--;
            /* The token must be the one copied, and not the token before i: a
             * previous-token head predicts that one (period-2 text). */
            if (j < K - 1 || x[j + 1] != x[i + 1] || x[i + 1] == x[i - 1])
                continue;
            kb[i] = j + 1;
            /* The first occurrence of the K context tokens and the predicted one. */
            int f = K - 1;
            while (!same_tokens(x, i + 1, f + 1, K + 1))
                f++;
            fb[i] = f;
        }
    }
}

int heads_keys_find(int *key, int *first, int q, const int *tokens, const Tokenizer *tok, int B,
                    int T)
{
    switch (heads_rel_table[q].key) {
    case HEADS_KEY_PREV:
        heads_keys_prev(key, B, T);
        return 1;
    case HEADS_KEY_BRACKET:
        heads_keys_bracket(key, tokens, tok, B, T);
        return 1;
    case HEADS_KEY_COPY:
        heads_keys_copy(key, first, tokens, B, T);
        return 1;
    case HEADS_KEY_RARE:
    case HEADS_KEY_PLANTED:
        break;
    }
    return 0;
}

size_t heads_token_at(const size_t *start, size_t nids, size_t b)
{
    size_t lo = 0, hi = nids;   /* start[lo] <= b < start[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (start[mid] <= b)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

size_t heads_planted_to_tokens(SynthRelation *out, size_t *dropped, const SynthRelation *rel,
                               size_t n, size_t at, const size_t *start, size_t nids)
{
    size_t kept = 0, nb = start[nids];
    *dropped = 0;
    for (size_t r = 0; r < n; r++) {
        if (rel[r].kind == SYNTH_REL_BRACKET || rel[r].key < at || rel[r].query + 1 >= at + nb)
            continue;
        size_t next = heads_token_at(start, nids, rel[r].query + 1 - at);
        size_t key = heads_token_at(start, nids, rel[r].key - at);
        /* A token that holds both the query byte and the start of the word
         * the key decides has chosen that word already ("cat" over "cats",
         * "run" over "runs", though the byte after the query is the next
         * token's space): it is the token predicted, not the predicting row. */
        size_t qt = heads_token_at(start, nids, rel[r].query - at);
        if (rel[r].form_len > 0 && rel[r].form >= at && rel[r].form - at < nb && qt != next &&
            heads_token_at(start, nids, rel[r].form - at) == qt)
            next = qt;
        if (next == 0 || key + 1 >= next) {
            ++*dropped;
            continue;
        }
        out[kept] = rel[r];
        out[kept].query = next - 1;
        out[kept].key = key;
        kept++;
    }
    return kept;
}

void heads_add_relation(HeadSums *sums, RelationSums *rs, int kind, const Activations *a,
                        const int *key, const int *first, const float *losses, int B, int T)
{
    int H = (int)a->H, n = (int)a->L * H, skip = heads_skip(T);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++)
        for (int b = 0; b < B; b++) {
            const float *att = heads_att(a, k / H, b, k % H, T);
            const int *kb = key + (size_t)b * T;
            for (int i = skip; i < T; i++)
                if (kb[i] >= 0) {
                    sums[k].rel[kind] += att[(size_t)i * T + kb[i]];
                    sums[k].rel_rows[kind] += 1.0;
                }
        }
    for (int b = 0; b < B; b++)
        for (int i = skip; i < T; i++) {
            size_t r = (size_t)b * T + i;
            if (key[r] < 0)
                continue;
            rs->rows += 1.0;
            rs->uniform += 1.0 / (double)(i + 1);
            if (!losses)
                continue;
            rs->loss += losses[r];
            rs->loss_rows += 1.0;
            if (first && first[r] >= 0) {
                rs->pairs += 1.0;
                rs->pair_loss += losses[r];
                rs->first_loss += losses[(size_t)b * T + first[r]];
            }
        }
}

void heads_token_counts(uint64_t *counts, const TokenId *ids, size_t n, int V)
{
    memset(counts, 0, (size_t)V * sizeof *counts);
    for (size_t t = 0; t < n; t++)
        if ((int)ids[t] < V)
            counts[ids[t]]++;
}

void heads_rare_min(uint64_t *minc, const int *tokens, const uint64_t *counts, int B, int T)
{
    for (int b = 0; b < B; b++) {
        const int *x = tokens + (size_t)b * T;
        uint64_t *mb = minc + (size_t)b * T, m = UINT64_MAX;
        for (int i = 0; i < T; i++) {
            if (i >= 2 && counts[x[i - 2]] < m)
                m = counts[x[i - 2]];
            mb[i] = m;
        }
    }
}

int heads_rare_keys(unsigned char *in_set, const int *x, int i, int T, const uint64_t *counts,
                    uint64_t minc_i)
{
    int n = 0;
    for (int j = 0; j < T; j++) {
        int in = j <= i - 2 && counts[x[j]] == minc_i;
        n += in;
        if (in_set)
            in_set[j] = (unsigned char)in;
    }
    return n;
}

int heads_rare_first_row(int T)
{
    int skip = heads_skip(T);
    return skip > 2 ? skip : 2;
}

int heads_add_rare(HeadSums *sums, RelationSums *rs, const Activations *a, const int *tokens,
                    const int *targets, const uint64_t *counts, const float *losses, int B,
                    int T)
{
    int H = (int)a->H, n = (int)a->L * H, first = heads_rare_first_row(T);
    uint64_t *minc = malloc((size_t)B * T * sizeof *minc);
    if (!minc)
        return -1;
    heads_rare_min(minc, tokens, counts, B, T);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++)
        for (int b = 0; b < B; b++) {
            const float *att = heads_att(a, k / H, b, k % H, T);
            const int *x = tokens + (size_t)b * T;
            const uint64_t *mb = minc + (size_t)b * T;
            for (int i = first; i < T; i++) {
                const float *row = att + (size_t)i * T;
                double mass = 0.0;
                for (int j = 0; j <= i - 2; j++)
                    if (counts[x[j]] == mb[i])
                        mass += row[j];
                sums[k].rel[HEADS_REL_RARE] += mass;
                sums[k].rel_rows[HEADS_REL_RARE] += 1.0;
            }
        }
    for (int b = 0; b < B; b++) {
        const int *x = tokens + (size_t)b * T;
        for (int i = first; i < T; i++) {
            size_t r = (size_t)b * T + i;
            int size = heads_rare_keys(NULL, x, i, T, counts, minc[r]);
            rs->rows += 1.0;
            rs->uniform += (double)size / (double)(i + 1);
            if (!losses || !targets)
                continue;
            int back = 0;
            for (int j = 0; j <= i - 2 && !back; j++)
                back = counts[x[j]] == minc[r] && x[j] == targets[r];
            if (back) {
                rs->loss += losses[r];
                rs->loss_rows += 1.0;
            }
        }
    }
    free(minc);
    return 0;
}

int heads_attends(const HeadStats *s, int q)
{
    return !s->masked && !s->closed && s->rel[q] > heads_rel_table[q].bar;
}

int heads_needed(const HeadStats *s, int q)
{
    return !s->masked && !s->closed && s->costed && s->cost[q] >= HEADS_NEEDED_SHARE;
}

int heads_serves(const HeadStats *s, int q)
{
    return heads_attends(s, q) && heads_needed(s, q);
}

int heads_role_relation(const HeadStats *s)
{
    int best = -1;
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (heads_serves(s, q) && (best < 0 || s->rel[q] > s->rel[best]))
            best = q;
    return best;
}

const char *heads_role(const HeadStats *s)
{
    int q = heads_role_relation(s);
    return q >= 0 ? heads_rel_table[q].name : heads_type_names[s->type];
}

int heads_clearest(const HeadStats *st, int n, int *rel)
{
    int best = -1;
    *rel = -1;
    for (int k = 0; k < n; k++) {
        int q = heads_role_relation(&st[k]);
        if (q >= 0 && (best < 0 || st[k].rel[q] > st[best].rel[*rel])) {
            best = k;
            *rel = q;
        }
    }
    return best;
}

void heads_relation_finish(HeadsRelation *r, const HeadStats *st, const RelationSums *rs,
                           int kind, int n)
{
    memset(r, 0, sizeof *r);
    r->best = -1;
    if (rs->rows > 0.0)
        for (int k = 0; k < n; k++)
            if (!st[k].masked && !st[k].closed &&
                (r->best < 0 || st[k].rel[kind] > r->attention)) {
                r->best = k;
                r->attention = st[k].rel[kind];
            }
    r->rows = rs->rows;
    r->pairs = rs->pairs;
    r->uniform = rs->rows > 0.0 ? rs->uniform / rs->rows : 0.0;
    r->loss = rs->loss_rows > 0.0 ? rs->loss / rs->loss_rows : 0.0;
    r->first_loss = rs->pairs > 0.0 ? rs->first_loss / rs->pairs : 0.0;
    r->loss_ratio = rs->first_loss > 0.0 ? rs->pair_loss / rs->first_loss : 0.0;
}

int heads_relation_named(const HeadsRelation *r)
{
    return r->best >= 0 && r->attention > r->uniform ? r->best : -1;
}

/* A word token: ASCII letters, optionally after one leading space. */
static int is_word(const Tokenizer *tok, int id)
{
    size_t n, k = 0;
    const unsigned char *p = tok_piece(tok, id, &n);
    if (n > 1 && p[0] == ' ')
        k = 1;
    for (; k < n; k++)
        if (!((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z')))
            return 0;
    return n > 0;
}

static int has_newline(const Tokenizer *tok, int id)
{
    size_t n;
    const unsigned char *p = tok_piece(tok, id, &n);
    return memchr(p, '\n', n) != NULL;
}

int heads_probe_alphabet(int *alpha, int *rule, const int *tokens, const int *copy_key,
                         int nwin, int T, const Tokenizer *tok)
{
    enum { COPIED = 1, WORD = 2, NO_NEWLINE = 4 };
    static const int bit[3] = {COPIED, WORD, NO_NEWLINE};
    int V = tok->V, count[3] = {0};
    /* alpha[v] first holds token v's flags, then the chosen ids in place: the
     * n-th id kept is never above v, so compaction never overwrites a flag it
     * has still to read. */
    for (int v = 0; v < V; v++)
        alpha[v] = 0;
    for (size_t r = 0; r < (size_t)nwin * T; r++) {
        int v = tokens[r];
        alpha[v] |= (is_word(tok, v) ? WORD : 0) | (has_newline(tok, v) ? 0 : NO_NEWLINE);
        if (copy_key[r] >= 0 && is_word(tok, tokens[r + 1]))
            alpha[tokens[r + 1]] |= COPIED;
    }
    for (int v = 0; v < V; v++)
        for (int k = 0; k < 3; k++)
            count[k] += (alpha[v] & bit[k]) != 0;
    int k = 0;
    while (k < 3 && count[k] < HEADS_PROBE_MIN_ALPHABET)
        k++;
    *rule = k + 1;
    int n = 0;
    for (int v = 0; v < V; v++)
        if (k < 3 ? (alpha[v] & bit[k]) != 0 : !has_newline(tok, v))
            alpha[n++] = v;
    if (n == 0)
        for (; n < V; n++)
            alpha[n] = n;
    return n;
}
