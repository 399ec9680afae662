/* bpe: byte-pair encoding, learning and encoding (see bpe.h for the rules).
 *
 * Learning works on the text's distinct chunks ("words"), each with its number
 * of occurrences, laid end to end as one array of symbols with links to their
 * live neighbours. Every adjacent pair has a count (the sum of the
 * occurrences of the chunks it is in, overlaps included) and a list of the
 * positions where it starts; a max-heap ordered by (count, then smallest left,
 * then smallest right) picks each merge. A merge visits only its pair's
 * positions and changes only the counts of the pairs beside each replaced
 * occurrence, so it costs the number of occurrences it replaces, whatever the
 * length of the text or of its chunks.
 *
 * Encoding cuts the text into chunks; a chunk whose bytes are exactly one token
 * (found by a hash of token byte strings built with the encoder) is that token,
 * any other chunk is merged pair by pair, lowest merge index first, with a
 * pair -> merge index hash. The encoder is never written after bpe_encoder_new.
 * docs/tokenizer.md has the complexity and the measured speed. */
#include "data/bpe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/errbuf.h"

/* ---- pre-tokenisation ------------------------------------------------------ */

enum { CL_LETTER, CL_DIGIT, CL_PUNCT, CL_SPACE, CL_WS };

static inline int byte_class(unsigned char b)
{
    if (b >= 0x80 || (unsigned)((b | 0x20) - 'a') < 26u)
        return CL_LETTER;
    if ((unsigned)(b - '0') < 10u)
        return CL_DIGIT;
    if (b == ' ')
        return CL_SPACE;
    if (b >= '\t' && b <= '\r') /* \t \n \v \f \r */
        return CL_WS;
    return CL_PUNCT;
}

size_t bpe_chunk_len(const unsigned char *text, size_t n)
{
    int c = byte_class(text[0]);
    size_t i = 1;
    if (c == CL_SPACE && n > 1 && byte_class(text[1]) < CL_SPACE) {
        c = byte_class(text[1]); /* " word" */
        i = 2;
    }
    if (c < CL_SPACE) {
        while (i < n && byte_class(text[i]) == c)
            i++;
        return i;
    }
    while (i < n && byte_class(text[i]) >= CL_SPACE)
        i++;
    /* The run stopped before a word byte: a final ' ' goes with that word. */
    if (i < n && i > 1 && text[i - 1] == ' ')
        i--;
    return i;
}

/* ---- small shared pieces --------------------------------------------------- */

#define PAIR_EMPTY 0xffffffffu

static inline uint32_t pair_key(unsigned l, unsigned r)
{
    return (uint32_t)l << 16 | r;
}

static inline size_t mix32(uint32_t k)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 32);
}

static inline uint64_t hash_bytes(const unsigned char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
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

/* Counts the chunks of the text into the word table. */
static int learner_count_words(Learner *L, const unsigned char *text, size_t n)
{
    size_t nslots = 1024;
    L->word_slots = calloc(nslots, sizeof *L->word_slots);
    if (!L->word_slots)
        return -1;
    L->word_mask = nslots - 1;
    for (size_t i = 0; i < n;) {
        size_t len = bpe_chunk_len(text + i, n - i);
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
        i += len;
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
            char bb[8];
            return err_set(err, errlen, "bpe: byte %s at offset %zu has no base id",
                           err_byte(text[i], bb), i);
        }
    Learner L;
    memset(&L, 0, sizeof L);
    if (learner_count_words(&L, text, n) || learner_start(&L, text, byte_id))
        goto oom;
    for (int k = 0; k < want; k++) {
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
oom:
    learner_free(&L);
    *got = 0;
    return err_set(err, errlen, "bpe: out of memory learning merges from %zu bytes", n);
}

/* ---- encoding ---------------------------------------------------------------- */

#define NO_RANK INT32_MAX
/* Chunks up to this length are merged with ranks in a stack array by repeated
 * scans; longer ones with a linked list and a heap. */
#define SHORT_CHUNK 64
/* Tokens up to this many bytes are in the whole-chunk table. */
#define CACHED_BYTES 64

typedef struct {
    uint32_t key;
    int32_t rank;
} RankSlot;

typedef struct {
    uint64_t hash;
    int32_t id; /* -1 when empty */
} TokenSlot;

struct BpeEncoder {
    int16_t byte_id[256];
    int nbase, nmerges;
    RankSlot *ranks; /* pair -> merge index */
    size_t rank_mask;
    TokenSlot *whole; /* bytes of a chunk that is one token -> the token */
    size_t whole_mask;
    size_t *tok_off;      /* bytes of token t: tok_bytes[tok_off[t] .. tok_off[t + 1]) */
    unsigned char *tok_bytes; /* only tokens of at most CACHED_BYTES bytes; others empty */
};

static inline int32_t enc_rank(const BpeEncoder *e, TokenId l, TokenId r)
{
    uint32_t key = pair_key(l, r);
    size_t s = mix32(key) & e->rank_mask;
    for (;;) {
        uint32_t k = e->ranks[s].key;
        if (k == key)
            return e->ranks[s].rank;
        if (k == PAIR_EMPTY)
            return NO_RANK;
        s = (s + 1) & e->rank_mask;
    }
}

/* Merges ids[0..n) in place, lowest rank first, leftmost first among equals;
 * returns the new length. rank[] has room for n - 1 entries. */
static size_t merge_scan(const BpeEncoder *e, TokenId *ids, size_t n, int32_t *rank)
{
    for (size_t i = 0; i + 1 < n; i++)
        rank[i] = enc_rank(e, ids[i], ids[i + 1]);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (rank[i] < rank[best])
                best = i;
        if (rank[best] == NO_RANK)
            break;
        ids[best] = (TokenId)(e->nbase + rank[best]);
        memmove(ids + best + 1, ids + best + 2, (n - best - 2) * sizeof *ids);
        memmove(rank + best, rank + best + 1, (n - best - 2) * sizeof *rank);
        n--;
        if (best > 0)
            rank[best - 1] = enc_rank(e, ids[best - 1], ids[best]);
        if (best + 1 < n)
            rank[best] = enc_rank(e, ids[best], ids[best + 1]);
    }
    return n;
}

typedef struct {
    int32_t rank;
    uint32_t pos;
} RankPos;

static inline int rp_before(RankPos a, RankPos b)
{
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
}

static void rp_push(RankPos *h, size_t *n, RankPos x)
{
    size_t i = (*n)++;
    while (i > 0 && rp_before(x, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static RankPos rp_pop(RankPos *h, size_t *n)
{
    RankPos top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && rp_before(h[c + 1], h[c]))
            c++;
        if (!rp_before(h[c], last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

/* merge_scan without memory: every step scans every pair. Only for when the
 * arrays of merge_heap cannot be allocated. */
static size_t merge_slow(const BpeEncoder *e, TokenId *ids, size_t n)
{
    while (n > 1) {
        size_t best = 0;
        int32_t best_rank = NO_RANK;
        for (size_t i = 0; i + 1 < n; i++) {
            int32_t r = enc_rank(e, ids[i], ids[i + 1]);
            if (r < best_rank) {
                best_rank = r;
                best = i;
            }
        }
        if (best_rank == NO_RANK)
            break;
        ids[best] = (TokenId)(e->nbase + best_rank);
        memmove(ids + best + 1, ids + best + 2, (n - best - 2) * sizeof *ids);
        n--;
    }
    return n;
}

/* Memory for merge_heap, reused across the chunks of one bpe_encode call. */
typedef struct {
    uint32_t *next, *prev;
    int32_t *rank;
    RankPos *heap;
    size_t cap;
} HeapScratch;

static int scratch_reserve(HeapScratch *w, size_t n)
{
    if (n <= w->cap)
        return 0;
    size_t c = w->cap ? w->cap : 256;
    while (c < n)
        c *= 2;
    free(w->next);
    free(w->prev);
    free(w->rank);
    free(w->heap);
    w->next = malloc(c * sizeof *w->next);
    w->prev = malloc(c * sizeof *w->prev);
    w->rank = malloc(c * sizeof *w->rank);
    w->heap = malloc(c * sizeof *w->heap);
    w->cap = c;
    if (!w->next || !w->prev || !w->rank || !w->heap) {
        w->cap = 0;
        return -1;
    }
    return 0;
}

static void scratch_free(HeapScratch *w)
{
    free(w->next);
    free(w->prev);
    free(w->rank);
    free(w->heap);
}

/* merge_scan for a long chunk: positions in a linked list, the pair starting
 * at each live position in a min-heap by (rank, position). An entry is current
 * when its position is alive and still starts a pair of that rank (the pair at
 * a position never comes back once it changed: its ids only grow). */
static size_t merge_heap(const BpeEncoder *e, TokenId *ids, size_t n, HeapScratch *w)
{
    if (n >= UINT32_MAX || scratch_reserve(w, n))
        return merge_slow(e, ids, n);
    uint32_t *next = w->next, *prev = w->prev;
    int32_t *rank = w->rank;
    RankPos *heap = w->heap;
    size_t nh = 0;
    const uint32_t END = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        next[i] = i + 1 < n ? (uint32_t)(i + 1) : END;
        prev[i] = i > 0 ? (uint32_t)(i - 1) : END;
        rank[i] = i + 1 < n ? enc_rank(e, ids[i], ids[i + 1]) : NO_RANK;
        if (rank[i] != NO_RANK)
            rp_push(heap, &nh, (RankPos){rank[i], (uint32_t)i});
    }
    while (nh > 0) {
        RankPos t = rp_pop(heap, &nh);
        uint32_t i = t.pos;
        if (rank[i] != t.rank) /* stale: merged away or its pair changed */
            continue;
        uint32_t j = next[i];
        ids[i] = (TokenId)(e->nbase + t.rank);
        rank[j] = NO_RANK; /* j dies */
        next[i] = next[j];
        if (next[j] != END)
            prev[next[j]] = i;
        rank[i] = next[i] != END ? enc_rank(e, ids[i], ids[next[i]]) : NO_RANK;
        if (rank[i] != NO_RANK)
            rp_push(heap, &nh, (RankPos){rank[i], i});
        uint32_t p = prev[i];
        if (p != END) {
            rank[p] = enc_rank(e, ids[p], ids[i]);
            if (rank[p] != NO_RANK)
                rp_push(heap, &nh, (RankPos){rank[p], p});
        }
    }
    size_t m = 0;
    for (uint32_t i = 0; i != END; i = next[i])
        ids[m++] = ids[i];
    return m;
}

/* The bytes of every token of at most CACHED_BYTES bytes (longer ones, and
 * ones built from an id no byte maps to, get none), then the table of those
 * whose bytes, encoded as one chunk, give back just that token. */
static int enc_build_whole(BpeEncoder *e, const BpeMerge *merges)
{
    size_t V = (size_t)e->nbase + (size_t)e->nmerges;
    e->tok_off = malloc((V + 1) * sizeof *e->tok_off);
    if (!e->tok_off)
        return -1;
    int first[256];
    for (int t = 0; t < 256; t++)
        first[t] = -1;
    for (int b = 255; b >= 0; b--)
        if (e->byte_id[b] >= 0)
            first[e->byte_id[b]] = b;
    /* tok_off[t + 1] holds token t's length (0: none stored) until the prefix sum. */
    e->tok_off[0] = 0;
    for (size_t t = 0; t < V; t++) {
        size_t len = 0;
        if (t < (size_t)e->nbase) {
            len = first[t] >= 0;
        } else {
            size_t a = e->tok_off[merges[t - e->nbase].left + 1];
            size_t b = e->tok_off[merges[t - e->nbase].right + 1];
            len = a && b && a + b <= CACHED_BYTES ? a + b : 0;
        }
        e->tok_off[t + 1] = len;
    }
    for (size_t t = 0; t < V; t++)
        e->tok_off[t + 1] += e->tok_off[t];
    e->tok_bytes = malloc(e->tok_off[V] ? e->tok_off[V] : 1);
    size_t cap = 16;
    while (cap < 2 * V)
        cap *= 2;
    e->whole = malloc(cap * sizeof *e->whole);
    if (!e->tok_bytes || !e->whole)
        return -1;
    e->whole_mask = cap - 1;
    for (size_t s = 0; s < cap; s++)
        e->whole[s].id = -1;
    TokenId ids[CACHED_BYTES];
    int32_t rank[CACHED_BYTES];
    for (size_t t = 0; t < V; t++) {
        unsigned char *dst = e->tok_bytes + e->tok_off[t];
        size_t len = e->tok_off[t + 1] - e->tok_off[t];
        if (len == 0)
            continue;
        if (t < (size_t)e->nbase) {
            dst[0] = (unsigned char)first[t];
            continue;
        }
        const BpeMerge *m = &merges[t - e->nbase];
        size_t a = e->tok_off[m->left + 1] - e->tok_off[m->left];
        memcpy(dst, e->tok_bytes + e->tok_off[m->left], a);
        memcpy(dst + a, e->tok_bytes + e->tok_off[m->right], len - a);
        for (size_t i = 0; i < len; i++)
            ids[i] = (TokenId)e->byte_id[dst[i]];
        if (merge_scan(e, ids, len, rank) != 1 || ids[0] != t)
            continue;
        uint64_t h = hash_bytes(dst, len);
        size_t s = (size_t)h & e->whole_mask;
        while (e->whole[s].id >= 0)
            s = (s + 1) & e->whole_mask;
        e->whole[s] = (TokenSlot){h, (int32_t)t};
    }
    return 0;
}

void bpe_encoder_free(BpeEncoder *e)
{
    if (!e)
        return;
    free(e->ranks);
    free(e->whole);
    free(e->tok_off);
    free(e->tok_bytes);
    free(e);
}

BpeEncoder *bpe_encoder_new(const int16_t byte_id[256], int nbase, const BpeMerge *merges,
                            int nmerges, char *err, size_t errlen)
{
    if (nbase < 1 || nbase > 256) {
        err_set(err, errlen, "bpe: %d base ids; expected 1 to 256", nbase);
        return NULL;
    }
    if (nmerges < 0 || nmerges > TOK_VOCAB_MAX - nbase) {
        err_set(err, errlen, "bpe: %d merges on %d base ids make a vocabulary over the limit of %d",
                nmerges, nbase, TOK_VOCAB_MAX);
        return NULL;
    }
    for (int b = 0; b < 256; b++)
        if (byte_id[b] < -1 || byte_id[b] >= nbase) {
            err_set(err, errlen, "bpe: byte 0x%02x has id %d, expected -1 to %d", b, byte_id[b],
                    nbase - 1);
            return NULL;
        }
    BpeEncoder *e = calloc(1, sizeof *e);
    if (!e)
        goto oom;
    memcpy(e->byte_id, byte_id, sizeof e->byte_id);
    e->nbase = nbase;
    e->nmerges = nmerges;
    size_t cap = 16;
    while (cap < 2 * (size_t)nmerges)
        cap *= 2;
    e->ranks = malloc(cap * sizeof *e->ranks);
    if (!e->ranks)
        goto oom;
    e->rank_mask = cap - 1;
    for (size_t s = 0; s < cap; s++)
        e->ranks[s] = (RankSlot){PAIR_EMPTY, NO_RANK};
    for (int k = 0; k < nmerges; k++) {
        int l = merges[k].left, r = merges[k].right, top = nbase + k;
        if (l >= top || r >= top) {
            err_set(err, errlen,
                    "bpe: merge %d joins ids %d and %d, but only ids below %d are defined", k,
                    l, r, top);
            bpe_encoder_free(e);
            return NULL;
        }
        uint32_t key = pair_key((unsigned)l, (unsigned)r);
        size_t s = mix32(key) & e->rank_mask;
        while (e->ranks[s].key != PAIR_EMPTY && e->ranks[s].key != key)
            s = (s + 1) & e->rank_mask;
        if (e->ranks[s].key == key) {
            err_set(err, errlen, "bpe: merge %d repeats merge %d (ids %d and %d)", k,
                    e->ranks[s].rank, l, r);
            bpe_encoder_free(e);
            return NULL;
        }
        e->ranks[s] = (RankSlot){key, k};
    }
    if (enc_build_whole(e, merges))
        goto oom;
    return e;
oom:
    bpe_encoder_free(e);
    err_set(err, errlen, "bpe: out of memory building an encoder for %d merges", nmerges);
    return NULL;
}

/* The token whose bytes are exactly c[0..len), when encoding them gives one token. */
static inline int32_t enc_whole(const BpeEncoder *e, const unsigned char *c, size_t len)
{
    uint64_t h = hash_bytes(c, len);
    size_t s = (size_t)h & e->whole_mask;
    for (;;) {
        const TokenSlot *sl = &e->whole[s];
        if (sl->id < 0)
            return -1;
        if (sl->hash == h) {
            size_t off = e->tok_off[sl->id];
            if (e->tok_off[sl->id + 1] - off == len && !memcmp(e->tok_bytes + off, c, len))
                return sl->id;
        }
        s = (s + 1) & e->whole_mask;
    }
}

size_t bpe_encode(const BpeEncoder *e, const unsigned char *text, size_t n, TokenId *ids)
{
    int32_t rank[SHORT_CHUNK];
    HeapScratch w = {0};
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char *c = text + i;
        size_t len = bpe_chunk_len(c, n - i);
        i += len;
        if (len == 1) {
            ids[out++] = (TokenId)e->byte_id[c[0]];
            continue;
        }
        int32_t t = len <= CACHED_BYTES ? enc_whole(e, c, len) : -1;
        if (t >= 0) {
            ids[out++] = (TokenId)t;
            continue;
        }
        /* out <= the chunk's offset, so its ids fit in place. */
        for (size_t j = 0; j < len; j++)
            ids[out + j] = (TokenId)e->byte_id[c[j]];
        out += len <= SHORT_CHUNK ? merge_scan(e, ids + out, len, rank)
                                  : merge_heap(e, ids + out, len, &w);
    }
    scratch_free(&w);
    return out;
}
