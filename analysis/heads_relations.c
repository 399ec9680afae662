/* heads_relations: the relations of analysis/heads (heads.h, "Relations"): the
 * keys of the previous-token, bracket and copy relations in windows of bytes,
 * every head's attention on them with the uniform baseline and the loss, the
 * best head, the probe alphabet drawn from copied letters, and the per-batch
 * version ./train logs. Split from heads.c, which keeps the pattern
 * statistics; docs/heads.md gives the definitions. */
#include "analysis/heads.h"

#include <stdlib.h>
#include <string.h>

#include "util/errbuf.h"

const char *const heads_rel_names[HEADS_REL_COUNT] = {
    "previous-token", "bracket", "copy", "agreement", "names",
};

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

void heads_keys_bracket(int *key, const unsigned char *text, int B, int T)
{
    enum { DEPTH = 32 };
    for (int b = 0; b < B; b++) {
        const unsigned char *x = text + (size_t)b * T;
        int *kb = key + (size_t)b * T;
        int stack[DEPTH], depth = 0;
        for (int i = 0; i < T; i++)
            kb[i] = -1;
        for (int i = 0; i < T; i++) {
            unsigned char c = x[i];
            int top = depth ? stack[depth - 1] : -1;
            if (c == '\n') {
                depth = 0;
            } else if ((c == '"' && top >= 0 && x[top] == '"') ||
                       (opener_of(c) && top >= 0 && x[top] == opener_of(c))) {
                if (i >= 1)
                    kb[i - 1] = top;
                depth--;
            } else if ((c == '"' || is_opener(c)) && depth < DEPTH) {
                stack[depth++] = i;
            }
        }
    }
}

/* 1 when the n bytes ending at p and at q are equal (p, q >= n - 1). */
static int same_bytes(const unsigned char *x, int p, int q, int n)
{
    for (int k = 0; k < n; k++)
        if (x[p - k] != x[q - k])
            return 0;
    return 1;
}

void heads_keys_copy(int *key, int *first, const unsigned char *text, int B, int T)
{
    const int K = HEADS_COPY_CONTEXT;
    for (int b = 0; b < B; b++) {
        const unsigned char *x = text + (size_t)b * T;
        int *kb = key + (size_t)b * T, *fb = first + (size_t)b * T;
        for (int i = 0; i < T; i++) {
            kb[i] = fb[i] = -1;
            if (i + 1 >= T)
                continue;
            int j = i - 3;
            while (j >= K - 1 && !same_bytes(x, i, j, K))
                j--;
            /* The byte must be the one copied, and not the byte before i: a
             * previous-token head predicts that one (period-2 text). */
            if (j < K - 1 || x[j + 1] != x[i + 1] || x[i + 1] == x[i - 1])
                continue;
            kb[i] = j + 1;
            /* The first occurrence of the K context bytes and the predicted one. */
            int f = K - 1;
            while (!same_bytes(x, i + 1, f + 1, K + 1))
                f++;
            fb[i] = f;
        }
    }
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

void heads_relation_finish(HeadsRelation *r, const HeadStats *st, const RelationSums *rs,
                           int kind, int n)
{
    memset(r, 0, sizeof *r);
    r->best = -1;
    if (rs->rows > 0.0)
        for (int k = 0; k < n; k++)
            if (!st[k].masked && (r->best < 0 || st[k].rel[kind] > r->attention)) {
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

static int is_letter(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Appends to alpha the tokens of the bytes marked in want, in byte order. */
static int alphabet_from(int *alpha, const unsigned char *want, const int16_t *id)
{
    int n = 0;
    for (int c = 0; c < 256; c++)
        if (want[c] && id[c] >= 0)
            alpha[n++] = id[c];
    return n;
}

int heads_probe_alphabet(int *alpha, int *rule, const unsigned char *text,
                         const int *copy_key, int nwin, int T, const unsigned char *vocab,
                         const int16_t *id, int V)
{
    unsigned char copied[256] = {0}, letters[256] = {0}, bytes[256] = {0};
    for (size_t r = 0; r < (size_t)nwin * T; r++) {
        unsigned char c = text[r];
        letters[c] = is_letter(c);
        bytes[c] = c != '\n';
        if (copy_key[r] >= 0 && is_letter(text[r + 1]))
            copied[text[r + 1]] = 1;
    }
    *rule = 1;
    int n = alphabet_from(alpha, copied, id);
    if (n < HEADS_PROBE_MIN_ALPHABET && ++*rule)
        n = alphabet_from(alpha, letters, id);
    if (n < HEADS_PROBE_MIN_ALPHABET && ++*rule)
        n = alphabet_from(alpha, bytes, id);
    if (n < HEADS_PROBE_MIN_ALPHABET) {
        *rule = 4;
        n = 0;
        for (int v = 0; v < V; v++)
            if (vocab[v] != '\n' || V == 1)
                alpha[n++] = v;
    }
    return n;
}

int heads_quick_relations(HeadsRelation *rel, const Activations *a, const int *tokens,
                          const unsigned char *vocab, int B, int T, char *err, size_t errlen)
{
    int n = (int)(a->L * a->H);
    size_t NT = (size_t)B * T;
    unsigned char *text = malloc(NT);
    int *key = malloc(NT * sizeof(int)), *first = malloc(NT * sizeof(int));
    HeadSums *sums = calloc((size_t)n, sizeof *sums);
    HeadStats *st = calloc((size_t)n, sizeof *st);
    RelationSums rs[HEADS_REL_TEXT];
    int rc = 0;
    if (!text || !key || !first || !sums || !st) {
        rc = err_set(err, errlen, "out of memory for relation metrics");
        goto done;
    }
    memset(rs, 0, sizeof rs);
    for (size_t r = 0; r < NT; r++)
        text[r] = vocab[tokens[r]];
    for (int q = 0; q < HEADS_REL_TEXT; q++) {
        if (q == HEADS_REL_PREV)
            heads_keys_prev(key, B, T);
        else if (q == HEADS_REL_BRACKET)
            heads_keys_bracket(key, text, B, T);
        else
            heads_keys_copy(key, first, text, B, T);
        heads_add_relation(sums, &rs[q], q, a, key, NULL, NULL, B, T);
    }
    heads_finish(st, sums, n);
    for (int q = 0; q < HEADS_REL_TEXT; q++)
        heads_relation_finish(&rel[q], st, &rs[q], q, n);
done:
    free(text);
    free(key);
    free(first);
    free(sums);
    free(st);
    return rc;
}
