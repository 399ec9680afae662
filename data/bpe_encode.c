/* bpe_encode: the byte-pair encoder (see bpe.h; data/bpe.c learns).
 *
 * Encoding cuts the text into chunks with bpe_chunk_len; a chunk whose bytes
 * are exactly one token (found by a hash of token byte strings built with the
 * encoder) is that token, any other chunk is merged pair by pair, lowest merge
 * index first, with a pair -> merge index hash. The encoder is never written
 * after bpe_encoder_new, so threads may share it; the memory a call needs for
 * long chunks is its own. docs/tokenizer.md has the measured speed. */
#include "data/bpe.h"

#include <stdlib.h>
#include <string.h>

#include "data/bpe_hash.h"
#include "util/errbuf.h"

#define NO_RANK INT32_MAX
/* Chunks up to this length are merged with ranks in a stack array by repeated
 * scans (quadratic, but fastest when short); longer ones by merge_long. */
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
    BpeMerge *merges; /* (nmerges) */
    RankSlot *ranks;  /* pair -> merge index */
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

/* merge_scan without memory: every step scans every pair. Only for when the
 * arrays of merge_long cannot be allocated. */
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

/* Memory for merge_long, reused across the chunks of one bpe_encode call. */
typedef struct {
    uint32_t pos, next;
} ListNode;

typedef struct {
    uint32_t *next, *prev, *order; /* (n) */
    int32_t *rank;                 /* (n) */
    ListNode *node;                /* (3n): n first listings, 2 per merge done */
    uint32_t nnode;
    uint32_t *head;                /* (nmerges): first node of each merge's list */
    uint64_t *busy;                /* (nmerges / 64, rounded up): lists not empty */
    size_t cap;
} LongScratch;

static void scratch_free(LongScratch *w)
{
    free(w->next);
    free(w->prev);
    free(w->order);
    free(w->rank);
    free(w->node);
    free(w->head);
    free(w->busy);
}

/* Room for a chunk of n symbols; the bucket heads start empty, and
 * merge_long leaves them empty. */
static int scratch_reserve(LongScratch *w, const BpeEncoder *e, size_t n)
{
    if (!w->head) {
        size_t nb = (size_t)e->nmerges + 1, nw = (nb + 63) / 64;
        w->head = malloc(nb * sizeof *w->head);
        w->busy = calloc(nw, sizeof *w->busy);
        if (!w->head || !w->busy)
            return -1;
        memset(w->head, 0xff, nb * sizeof *w->head);
    }
    if (n <= w->cap)
        return 0;
    size_t c = w->cap ? w->cap : 256;
    while (c < n)
        c *= 2;
    uint32_t **u[] = {&w->next, &w->prev, &w->order};
    for (size_t k = 0; k < sizeof u / sizeof u[0]; k++) {
        free(*u[k]);
        *u[k] = malloc(c * sizeof **u[k]);
    }
    free(w->rank);
    free(w->node);
    w->rank = malloc(c * sizeof *w->rank);
    w->node = malloc(3 * c * sizeof *w->node);
    w->cap = c;
    if (!w->next || !w->prev || !w->order || !w->rank || !w->node) {
        w->cap = 0;
        return -1;
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

#define END UINT32_MAX

/* Lists position i under the merge index of the pair that starts there. */
static inline void long_push(LongScratch *w, uint32_t i, int32_t r)
{
    w->rank[i] = r;
    if (r == NO_RANK)
        return;
    w->node[w->nnode] = (ListNode){i, w->head[r]};
    w->head[r] = w->nnode++;
    w->busy[r / 64] |= 1ull << (r % 64);
}

/* merge_scan for a long chunk, in time linear in its length: positions in a
 * linked list, each listed under the merge index of the pair it starts
 * (rank[i]). Merge indices are taken in increasing order, each once: a merge
 * only makes pairs with a later index (they contain the new id), so all
 * occurrences of merge k are on its list when it comes up. A position is
 * listed again each time its pair changes, and never twice under one merge
 * (its ids only grow), so a list holds at most n positions. They cannot
 * overlap unless its two ids are equal; then they are taken in increasing
 * position, left to right, so "aaa" gives "Aa". A listed position is skipped
 * when its pair has changed since (rank[i] no longer k). */
static size_t merge_long(const BpeEncoder *e, TokenId *ids, size_t n, LongScratch *w)
{
    if (n >= UINT32_MAX / 3 || scratch_reserve(w, e, n))
        return merge_slow(e, ids, n);
    uint32_t *next = w->next, *prev = w->prev;
    w->nnode = 0;
    for (size_t i = 0; i < n; i++) {
        next[i] = i + 1 < n ? (uint32_t)(i + 1) : END;
        prev[i] = i > 0 ? (uint32_t)(i - 1) : END;
        long_push(w, (uint32_t)i, i + 1 < n ? enc_rank(e, ids[i], ids[i + 1]) : NO_RANK);
    }
    size_t nw = ((size_t)e->nmerges + 1 + 63) / 64;
    for (size_t word = 0; word < nw; word++)
        while (w->busy[word]) {
            int32_t k = (int32_t)(word * 64 + (size_t)__builtin_ctzll(w->busy[word]));
            w->busy[word] &= w->busy[word] - 1;
            size_t m = 0;
            for (uint32_t v = w->head[k]; v != END; v = w->node[v].next)
                w->order[m++] = w->node[v].pos;
            w->head[k] = END;
            if (e->merges[k].left == e->merges[k].right)
                qsort(w->order, m, sizeof *w->order, cmp_u32);
            for (size_t t = 0; t < m; t++) {
                uint32_t i = w->order[t];
                if (w->rank[i] != k)
                    continue;
                uint32_t j = next[i];
                ids[i] = (TokenId)(e->nbase + k);
                w->rank[j] = NO_RANK; /* j is merged into i */
                next[i] = next[j];
                if (next[i] != END)
                    prev[next[i]] = i;
                long_push(w, i, next[i] != END ? enc_rank(e, ids[i], ids[next[i]]) : NO_RANK);
                if (prev[i] != END)
                    long_push(w, prev[i], enc_rank(e, ids[prev[i]], ids[i]));
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
    free(e->merges);
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
    e->merges = malloc(((size_t)nmerges + 1) * sizeof *e->merges);
    if (!e->ranks || !e->merges)
        goto oom;
    memcpy(e->merges, merges, (size_t)nmerges * sizeof *merges);
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
    LongScratch w = {0};
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        const unsigned char *c = text + i;
        /* At most one piece: looking one byte past it tells whether the chunk
         * goes on (its rest is then the next chunk), and keeps a long run from
         * being scanned again for every piece. */
        size_t len = bpe_chunk_len(c, n - i < BPE_CHUNK_MAX + 1 ? n - i : BPE_CHUNK_MAX + 1);
        if (len > BPE_CHUNK_MAX)
            len = BPE_CHUNK_MAX;
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
                                  : merge_long(e, ids + out, len, &w);
    }
    scratch_free(&w);
    return out;
}
