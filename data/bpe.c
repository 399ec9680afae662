/* bpe: byte-pair learning and the pre-tokeniser (see bpe.h for the rules;
 * data/bpe_encode.c encodes).
 *
 * Learning works on the text's distinct chunks ("words"), each with its number
 * of occurrences, laid end to end as one array of symbols with links to their
 * live neighbours. Every adjacent pair has a count (the sum of the
 * occurrences of the chunks it is in, overlaps included) and a list of the
 * positions where it starts; a max-heap ordered by (count, then smallest left,
 * then smallest right) picks each merge. A merge visits only its pair's
 * positions and changes only the counts of the pairs beside each replaced
 * occurrence, so it costs the number of occurrences it replaces, whatever the
 * length of the text or of its chunks. docs/tokenizer.md has the complexity
 * and the measured speed. */
#include "data/bpe.h"

#include <stdlib.h>
#include <string.h>

#include "data/bpe_hash.h"
#include "util/errbuf.h"

/* ---- pre-tokenisation ------------------------------------------------------ */

/* Byte classes; a word byte is one below CL_SPACE. */
enum { CL_LETTER, CL_DIGIT, CL_PUNCT, CL_SPACE, CL_WS };

/* The class of every byte: A-Z, a-z and 0x80-0xff letters, 0-9 digits, ' '
 * apart, \t \n \v \f \r other whitespace, everything else punctuation. */
#define L CL_LETTER
#define D CL_DIGIT
#define P CL_PUNCT
#define S CL_SPACE
#define W CL_WS
static const unsigned char BYTE_CLASS[256] = {
    P, P, P, P, P, P, P, P, P, W, W, W, W, W, P, P, /* 0x00 */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, /* 0x10 */
    S, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, /* 0x20 */
    D, D, D, D, D, D, D, D, D, D, P, P, P, P, P, P, /* 0x30 */
    P, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0x40 */
    L, L, L, L, L, L, L, L, L, L, L, P, P, P, P, P, /* 0x50 */
    P, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0x60 */
    L, L, L, L, L, L, L, L, L, L, L, P, P, P, P, P, /* 0x70 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0x80 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0x90 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0xA0 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0xB0 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0xC0 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0xD0 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0xE0 */
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 0xF0 */
};
#undef L
#undef D
#undef P
#undef S
#undef W

size_t bpe_chunk_len(const unsigned char *text, size_t n)
{
    int c = BYTE_CLASS[text[0]];
    size_t i = 1;
    if (c == CL_SPACE && n > 1 && BYTE_CLASS[text[1]] < CL_SPACE) {
        c = BYTE_CLASS[text[1]]; /* " word" */
        i = 2;
    }
    if (c < CL_SPACE) {
        while (i < n && BYTE_CLASS[text[i]] == c)
            i++;
        return i;
    }
    while (i < n && BYTE_CLASS[text[i]] >= CL_SPACE)
        i++;
    /* The run stopped before a word byte: a final ' ' goes with that word. */
    if (i < n && i > 1 && text[i - 1] == ' ')
        i--;
    return i;
}

size_t bpe_uncounted(const unsigned char *text, size_t n)
{
    size_t left_out = 0;
    for (size_t i = 0; i < n;) {
        size_t len = bpe_chunk_len(text + i, n - i);
        if (len > BPE_CHUNK_MAX)
            left_out += len - BPE_CHUNK_MAX;
        i += len;
    }
    return left_out;
}

/* Grows *p (of *cap elements of size elem) to hold at least need; 0 or -1. */
static int grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*(void **)p, c * elem);
    if (!q)
        return -1;
    *(void **)p = q;
    *cap = c;
    return 0;
}

/* ---- learning ---------------------------------------------------------------- */

#define NONE SIZE_MAX
#define DEAD 0xffffu /* a symbol merged into its left neighbour (ids stay below 32768) */

typedef struct {
    size_t off, len; /* the chunk's first occurrence in the text */
    int64_t freq;    /* occurrences in the text */
    uint64_t hash;   /* of its bytes */
} Word;

/* A pair's count rises only in the merge that creates it (or at the start):
 * only then can its two ids become neighbours. So the positions where it
 * occurs are all listed at once, and its list is one run of Learner.pool. */
typedef struct {
    TokenId l, r;
    int64_t count;     /* adjacent occurrences in the text, overlaps included */
    size_t start, len; /* its positions: pool[start .. start + len) */
    int touched;       /* the merge (1-based; 0 the start) that raised its count */
} Pair;

/* A new occurrence of a pair, listed when the merge that made it ends. */
typedef struct {
    uint32_t pair;
    size_t pos;
} Pending;

typedef struct {
    int64_t count;
    TokenId l, r;
    uint32_t pair;
} HeapEntry;

/* The distinct chunks laid end to end as symbols: sym[pos], with the live
 * neighbours of pos inside its chunk at prev[pos] and next[pos] (NONE at the
 * chunk's ends) and the chunk's occurrence count at freq[pos]. */
typedef struct {
    Word *words;
    size_t nwords, cap_words;
    uint32_t *word_slots; /* word index + 1, 0 when empty */
    size_t word_mask;
    TokenId *sym;
    size_t *next, *prev;
    int64_t *freq;
    Pair *pairs;
    size_t npairs, cap_pairs;
    uint32_t *pair_keys, *pair_idx;
    size_t pair_mask;
    size_t *pool; /* the pairs' position lists */
    size_t npool, cap_pool;
    Pending *pend;
    size_t npend, cap_pend;
    HeapEntry *heap;
    size_t nheap, cap_heap;
    uint32_t *raised; /* pairs whose count the current merge raised */
    size_t nraised, cap_raised;
    size_t *todo; /* positions of an (a, a) pair, sorted */
    size_t cap_todo;
} Learner;

static void learner_free(Learner *L)
{
    free(L->words);
    free(L->word_slots);
    free(L->sym);
    free(L->next);
    free(L->prev);
    free(L->freq);
    free(L->pairs);
    free(L->pair_keys);
    free(L->pair_idx);
    free(L->pool);
    free(L->pend);
    free(L->heap);
    free(L->raised);
    free(L->todo);
}

/* Whether a stop was asked for (stop may be NULL). */
static int stopped(const volatile int *stop)
{
    return stop && *stop;
}

/* Counts the chunks of the text into the word table, each by its first
 * BPE_CHUNK_MAX bytes (so two long chunks that begin alike are one word).
 * 1 when stopped, -1 when memory runs out. */
static int learner_count_words(Learner *L, const unsigned char *text, size_t n,
                               const volatile int *stop)
{
    size_t nslots = 1024;
    L->word_slots = calloc(nslots, sizeof *L->word_slots);
    if (!L->word_slots)
        return -1;
    L->word_mask = nslots - 1;
    size_t next_check = (size_t)1 << 20;
    for (size_t i = 0; i < n;) {
        if (i >= next_check) {
            if (stopped(stop))
                return 1;
            next_check = i + ((size_t)1 << 20);
        }
        size_t whole = bpe_chunk_len(text + i, n - i);
        size_t len = whole < BPE_CHUNK_MAX ? whole : BPE_CHUNK_MAX;
        uint64_t h = hash_bytes(text + i, len);
        size_t s = (size_t)h & L->word_mask;
        for (;;) {
            uint32_t w = L->word_slots[s];
            if (!w)
                break;
            Word *wd = &L->words[w - 1];
            if (wd->hash == h && wd->len == len && !memcmp(text + wd->off, text + i, len)) {
                wd->freq++;
                goto next;
            }
            s = (s + 1) & L->word_mask;
        }
        if (L->nwords >= UINT32_MAX - 1 ||
            grow(&L->words, &L->cap_words, L->nwords + 1, sizeof *L->words))
            return -1;
        L->words[L->nwords] = (Word){.off = i, .len = len, .freq = 1, .hash = h};
        L->word_slots[s] = (uint32_t)++L->nwords;
        if (2 * L->nwords > L->word_mask) { /* rehash at half full */
            size_t cap = 2 * (L->word_mask + 1);
            uint32_t *slots = calloc(cap, sizeof *slots);
            if (!slots)
                return -1;
            for (size_t w = 0; w < L->nwords; w++) {
                size_t t = (size_t)L->words[w].hash & (cap - 1);
                while (slots[t])
                    t = (t + 1) & (cap - 1);
                slots[t] = (uint32_t)(w + 1);
            }
            free(L->word_slots);
            L->word_slots = slots;
            L->word_mask = cap - 1;
        }
    next:
        i += whole;
    }
    return 0;
}

/* The index of pair (l, r), created with count 0 when new; -1 when memory runs out. */
static int64_t learner_pair(Learner *L, TokenId l, TokenId r)
{
    uint32_t key = pair_key(l, r);
    size_t s = mix32(key) & L->pair_mask;
    while (L->pair_keys[s] != PAIR_EMPTY) {
        if (L->pair_keys[s] == key)
            return L->pair_idx[s];
        s = (s + 1) & L->pair_mask;
    }
    if (grow(&L->pairs, &L->cap_pairs, L->npairs + 1, sizeof *L->pairs))
        return -1;
    L->pairs[L->npairs] = (Pair){.l = l, .r = r, .touched = -1};
    L->pair_keys[s] = key;
    L->pair_idx[s] = (uint32_t)L->npairs++;
    if (2 * L->npairs > L->pair_mask) {
        size_t cap = 2 * (L->pair_mask + 1);
        uint32_t *keys = malloc(cap * sizeof *keys), *idx = malloc(cap * sizeof *idx);
        if (!keys || !idx) {
            free(keys);
            free(idx);
            return -1;
        }
        memset(keys, 0xff, cap * sizeof *keys);
        for (size_t p = 0; p < L->npairs; p++) {
            uint32_t k = pair_key(L->pairs[p].l, L->pairs[p].r);
            size_t t = mix32(k) & (cap - 1);
            while (keys[t] != PAIR_EMPTY)
                t = (t + 1) & (cap - 1);
            keys[t] = k;
            idx[t] = (uint32_t)p;
        }
        free(L->pair_keys);
        free(L->pair_idx);
        L->pair_keys = keys;
        L->pair_idx = idx;
        L->pair_mask = cap - 1;
    }
    return (int64_t)L->npairs - 1;
}

/* Adds delta occurrences of (l, r). A raise is a new occurrence starting at pos,
 * pending until learner_list; the pair joins the ones whose lists and heap
 * entries merge number stamp renews. */
static int learner_add(Learner *L, TokenId l, TokenId r, int64_t delta, size_t pos, int stamp)
{
    int64_t p = learner_pair(L, l, r);
    if (p < 0)
        return -1;
    Pair *pr = &L->pairs[p];
    pr->count += delta;
    if (delta <= 0)
        return 0;
    if (grow(&L->pend, &L->cap_pend, L->npend + 1, sizeof *L->pend))
        return -1;
    L->pend[L->npend++] = (Pending){(uint32_t)p, pos};
    if (pr->touched != stamp) {
        if (grow(&L->raised, &L->cap_raised, L->nraised + 1, sizeof *L->raised))
            return -1;
        L->raised[L->nraised++] = (uint32_t)p;
        pr->touched = stamp;
    }
    return 0;
}

/* Heap order: higher count first, then smaller left id, then smaller right id. */
static inline int heap_before(const HeapEntry *a, const HeapEntry *b)
{
    if (a->count != b->count)
        return a->count > b->count;
    if (a->l != b->l)
        return a->l < b->l;
    return a->r < b->r;
}

static int heap_push(Learner *L, uint32_t p)
{
    if (grow(&L->heap, &L->cap_heap, L->nheap + 1, sizeof *L->heap))
        return -1;
    HeapEntry e = {L->pairs[p].count, L->pairs[p].l, L->pairs[p].r, p};
    size_t i = L->nheap++;
    while (i > 0 && heap_before(&e, &L->heap[(i - 1) / 2])) {
        L->heap[i] = L->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    L->heap[i] = e;
    return 0;
}

static HeapEntry heap_pop(Learner *L)
{
    HeapEntry top = L->heap[0], last = L->heap[--L->nheap];
    size_t i = 0, n = L->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_before(&L->heap[c + 1], &L->heap[c]))
            c++;
        if (!heap_before(&L->heap[c], &last))
            break;
        L->heap[i] = L->heap[c];
        i = c;
    }
    if (n > 0)
        L->heap[i] = last;
    return top;
}

/* Lists the pending occurrences: each raised pair gets its run of the pool, in
 * the order its occurrences were found; then the raised pairs that occur at
 * least twice go on the heap. */
static int learner_list(Learner *L)
{
    size_t at = L->npool;
    for (size_t i = 0; i < L->nraised; i++)
        L->pairs[L->raised[i]].len = 0;
    for (size_t i = 0; i < L->npend; i++)
        L->pairs[L->pend[i].pair].len++;
    for (size_t i = 0; i < L->nraised; i++) {
        Pair *pr = &L->pairs[L->raised[i]];
        pr->start = at;
        at += pr->len;
        pr->len = 0;
    }
    if (grow(&L->pool, &L->cap_pool, at, sizeof *L->pool))
        return -1;
    for (size_t i = 0; i < L->npend; i++) {
        Pair *pr = &L->pairs[L->pend[i].pair];
        L->pool[pr->start + pr->len++] = L->pend[i].pos;
    }
    L->npool = at;
    L->npend = 0;
    for (size_t i = 0; i < L->nraised; i++)
        if (L->pairs[L->raised[i]].count >= 2 && heap_push(L, L->raised[i]))
            return -1;
    L->nraised = 0;
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Merge number stamp: replaces pair p = (l, r) by id at every position on its
 * list that still holds it, and moves the counts: each replaced occurrence
 * removes (l, r), (prev, l) and (r, next) and adds (prev, id) and (id, next),
 * reading prev and next as they are at that moment, so two replacements side
 * by side meet as (id, id). The list may hold positions whose pair has since
 * changed; they are skipped. Occurrences of a pair (l, r) with l != r never
 * overlap, so their order does not matter; for (a, a) the positions must be
 * taken in ascending order, which is left to right inside each chunk, so
 * "aaa" becomes "Aa". Lists come out ascending (the start lists them in text
 * order, and a merge walking ascending positions finds new ones ascending);
 * one that does not is sorted. */
static int learner_merge(Learner *L, size_t p, TokenId id, int stamp)
{
    TokenId l = L->pairs[p].l, r = L->pairs[p].r;
    size_t n = L->pairs[p].len;
    const size_t *list = L->pool + L->pairs[p].start;
    L->pairs[p].len = 0;
    int sorted = 1;
    for (size_t t = 1; l == r && t < n && sorted; t++)
        sorted = list[t - 1] < list[t];
    if (!sorted) {
        if (grow(&L->todo, &L->cap_todo, n, sizeof *L->todo))
            return -1;
        memcpy(L->todo, list, n * sizeof *list);
        qsort(L->todo, n, sizeof *L->todo, cmp_size);
        list = L->todo;
    }
    for (size_t t = 0; t < n; t++) {
        size_t pos = list[t], q = L->next[pos];
        if (L->sym[pos] != l || q == NONE || L->sym[q] != r)
            continue;
        size_t a = L->prev[pos], b = L->next[q];
        int64_t f = L->freq[pos];
        L->pairs[p].count -= f;
        if (a != NONE && (learner_add(L, L->sym[a], l, -f, a, stamp) ||
                          learner_add(L, L->sym[a], id, f, a, stamp)))
            return -1;
        if (b != NONE && (learner_add(L, r, L->sym[b], -f, pos, stamp) ||
                          learner_add(L, id, L->sym[b], f, pos, stamp)))
            return -1;
        L->sym[pos] = id;
        L->sym[q] = DEAD;
        L->next[pos] = b;
        if (b != NONE)
            L->prev[b] = pos;
    }
    return 0;
}

/* The symbols of every word and the initial pair counts, lists and heap. */
static int learner_start(Learner *L, const unsigned char *text, const int16_t byte_id[256])
{
    size_t total = 0;
    for (size_t w = 0; w < L->nwords; w++)
        total += L->words[w].len;
    size_t m = total ? total : 1;
    L->sym = malloc(m * sizeof *L->sym);
    L->next = malloc(m * sizeof *L->next);
    L->prev = malloc(m * sizeof *L->prev);
    L->freq = malloc(m * sizeof *L->freq);
    L->pair_keys = malloc(1024 * sizeof *L->pair_keys);
    L->pair_idx = malloc(1024 * sizeof *L->pair_idx);
    if (!L->sym || !L->next || !L->prev || !L->freq || !L->pair_keys || !L->pair_idx)
        return -1;
    memset(L->pair_keys, 0xff, 1024 * sizeof *L->pair_keys);
    L->pair_mask = 1023;
    size_t pos = 0;
    for (size_t w = 0; w < L->nwords; w++) {
        const Word *wd = &L->words[w];
        for (size_t i = 0; i < wd->len; i++, pos++) {
            L->sym[pos] = (TokenId)byte_id[text[wd->off + i]];
            L->freq[pos] = wd->freq;
            L->prev[pos] = i > 0 ? pos - 1 : NONE;
            L->next[pos] = i + 1 < wd->len ? pos + 1 : NONE;
            if (i > 0 && learner_add(L, L->sym[pos - 1], L->sym[pos], wd->freq, pos - 1, 0))
                return -1;
        }
    }
    return learner_list(L);
}

/* The pair to merge next, -1 when no pair occurs twice, -2 when memory runs
 * out. Heap entries may be stale: a pair's count only falls after it is pushed
 * (a count rises only in the merge that creates the pair, which pushes it
 * afterwards), so a stale entry overstates and is pushed again with the
 * current count. */
static int64_t learner_best(Learner *L)
{
    while (L->nheap > 0) {
        HeapEntry e = heap_pop(L);
        const Pair *pr = &L->pairs[e.pair];
        if (e.count == pr->count)
            return e.pair;
        if (pr->count >= 2 && heap_push(L, e.pair))
            return -2;
    }
    return -1;
}

int bpe_learn(const unsigned char *text, size_t n, const int16_t byte_id[256], int nbase,
              int want, BpeMerge *merges, int *got, char *err, size_t errlen)
{
    return bpe_learn_until(text, n, byte_id, nbase, want, merges, got, NULL, err, errlen);
}

int bpe_learn_until(const unsigned char *text, size_t n, const int16_t byte_id[256], int nbase,
                    int want, BpeMerge *merges, int *got, const volatile int *stop, char *err,
                    size_t errlen)
{
    *got = 0;
    if (nbase < 1 || nbase > 256)
        return err_set(err, errlen, "bpe: %d base ids; expected 1 to 256", nbase);
    if (want < 0 || want > TOK_VOCAB_MAX - nbase)
        return err_set(err, errlen,
                       "bpe: %d merges on %d base ids make a vocabulary over the limit of %d",
                       want, nbase, TOK_VOCAB_MAX);
    for (int b = 0; b < 256; b++)
        if (byte_id[b] >= nbase)
            return err_set(err, errlen, "bpe: byte 0x%02x has id %d, not below %d", b,
                           byte_id[b], nbase);
    for (size_t i = 0; i < n; i++)
        if (byte_id[text[i]] < 0) {
            char bb[ERR_BYTE_LEN];
            return err_set(err, errlen, "bpe: byte %s at offset %zu has no base id",
                           err_byte(text[i], bb), i);
        }
    Learner L;
    memset(&L, 0, sizeof L);
    int rc = learner_count_words(&L, text, n, stop);
    if (rc > 0 || (rc == 0 && stopped(stop)))
        goto stop;
    if (rc < 0 || learner_start(&L, text, byte_id))
        goto oom;
    for (int k = 0; k < want; k++) {
        if (stopped(stop))
            goto stop;
        int64_t p = learner_best(&L);
        if (p == -2)
            goto oom;
        if (p < 0)
            break;
        merges[k] = (BpeMerge){L.pairs[p].l, L.pairs[p].r};
        if (learner_merge(&L, (size_t)p, (TokenId)(nbase + k), k + 1) || learner_list(&L))
            goto oom;
        *got = k + 1;
    }
    learner_free(&L);
    return 0;
stop:
    learner_free(&L);
    *got = 0;
    return 1;
oom:
    learner_free(&L);
    *got = 0;
    return err_set(err, errlen, "bpe: out of memory learning merges from %zu bytes", n);
}
