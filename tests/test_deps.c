/* Gold-dependency scoring tests (analysis/deps): known-answer alignments (a
 * byte-level text, a word split into several byte-pair pieces, a word left
 * without a token of its own inside a merged multiword token, a sentence over
 * the context), known-answer scores on a model whose attention is uniform (all
 * parameters zero: every row spreads its weight evenly, so the word of most
 * tokens wins), the dependency alignment on hand-set attention worked by hand,
 * and ./infer --heads FILE.conllu end to end: its table, its
 * JSON, the same bits for 1 and 2 threads, and the treebank's dev set where
 * ../shared/data/ud-english-ewt is. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/deps.h"
#include "data/conllu.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

#define EWT_DEV "../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu"

#define W(id, form, head, rel) id "\t" form "\t_\tX\t_\t_\t" head "\t" rel "\t_\t_\n"

/* "x yy z" (x <- yy, the root; z -> x), then "ww v" (v -> ww, the root). */
static const char *TWO =
    "# text = x yy z\n" W("1", "x", "2", "a") W("2", "yy", "0", "root") W("3", "z", "1", "b")
    "\n# text = ww v\n" W("1", "ww", "0", "root") W("2", "v", "1", "b") "\n";

static void parse(Conllu *c, const char *s)
{
    char err[1500] = "";
    cr_assert_eq(conllu_parse(c, (const unsigned char *)s, strlen(s), "t.conllu", err, sizeof err),
                 0, "%s", err);
}

static void prepare(DepsData *d, const Conllu *c, const Tokenizer *tok, int T)
{
    char err[1500] = "";
    cr_assert_eq(deps_prepare(d, c, tok, T, "t.conllu", err, sizeof err), 0, "%s", err);
}

static void byte_tokenizer(Tokenizer *tok, const Conllu *c)
{
    char err[300];
    cr_assert_eq(tok_build(tok, (const unsigned char *)c->text, c->ntext, err, sizeof err), 0);
}

static void expect_tokens(const DepsData *d, size_t word, int first, int last)
{
    cr_assert_eq(d->tok0[word], first, "word %zu: first token %d, expected %d", word,
                 d->tok0[word], first);
    cr_assert_eq(d->tok1[word], last, "word %zu: last token %d, expected %d", word,
                 d->tok1[word], last);
}

Test(deps, bytes_align_with_the_space_before_a_word_its_own_and_the_newline_no_words)
{
    Conllu c;
    Tokenizer tok;
    DepsData d;
    parse(&c, TWO);
    byte_tokenizer(&tok, &c);
    prepare(&d, &c, &tok, 16);
    cr_assert_eq(d.win0[0], 0);
    cr_assert_eq(d.wlen[0], 6, "x yy z: 6 bytes, no newline before the first sentence");
    cr_assert_eq(d.win0[1], 6, "the second window starts at the newline before it");
    cr_assert_eq(d.wlen[1], 5);
    expect_tokens(&d, 0, 0, 0);
    expect_tokens(&d, 1, 1, 3); /* " yy" */
    expect_tokens(&d, 2, 4, 5); /* " z" */
    expect_tokens(&d, 3, 1, 2); /* "ww" after the newline at 0 */
    expect_tokens(&d, 4, 3, 4);
    cr_assert_eq(d.npair, 3);
    cr_assert_eq(d.roots, 2);
    cr_assert_eq(d.pair[0].dir, DEPS_TO_DEP, "x's head yy comes later: head -> dependent");
    cr_assert_eq(d.pair[0].query, 1);
    cr_assert_eq(d.pair[0].key, 0);
    cr_assert_eq(d.pair[1].dir, DEPS_TO_HEAD);
    cr_assert_eq(d.pair[1].query, 2);
    cr_assert_eq(d.pair[1].key, 0);
    deps_free(&d);
    /* A context of 5 tokens holds the second window only. */
    prepare(&d, &c, &tok, 5);
    cr_assert_eq(d.wlen[0], 0);
    cr_assert_eq(d.over_context, 1);
    cr_assert_eq(d.pairs_over_context, 2);
    cr_assert_eq(d.npair, 1);
    deps_free(&d);
    tok_free(&tok);
    conllu_free(&c);
}

/* The 256 byte values and these merges, in order. */
static void bpe_tokenizer(Tokenizer *tok, const char *const *pairs, int n)
{
    unsigned char bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (unsigned char)i;
    BpeMerge m[16];
    for (int i = 0; i < n; i++) {
        /* "ab" joins two bytes; "#k+c" joins merge k's token and byte c. */
        if (pairs[i][0] == '#')
            m[i] = (BpeMerge){(TokenId)(256 + pairs[i][1] - '0'), (TokenId)(unsigned char)pairs[i][3]};
        else
            m[i] = (BpeMerge){(TokenId)(unsigned char)pairs[i][0],
                              (TokenId)(unsigned char)pairs[i][1]};
    }
    char err[300];
    cr_assert_eq(tok_from_parts(tok, bytes, 256, m, n, err, sizeof err), 0, "%s", err);
}

Test(deps, a_word_split_into_byte_pair_pieces_keeps_them_all_and_a_word_inside_a_token_has_none)
{
    Conllu c;
    Tokenizer tok;
    DepsData d;
    /* "the cats cannot go": cannot is can + not, and the merges make it one token. */
    parse(&c, "# text = the cats cannot go\n" W("1", "the", "2", "det") W("2", "cats", "5", "nsubj")
              "3-4\tcannot\t_\t_\t_\t_\t_\t_\t_\t_\n" W("3", "can", "5", "aux")
              W("4", "not", "5", "advmod") W("5", "go", "0", "root"));
    /* merges: 256 " c", 257 " ca", 258 "ts", 259 " can", 260 " cann", 261 " canno",
     * 262 " cannot" */
    const char *merges[] = {" c", "#0+a", "ts", "#1+n", "#3+n", "#4+o", "#5+t"};
    bpe_tokenizer(&tok, merges, 7);
    prepare(&d, &c, &tok, 64);
    /* tokens: t h e | " ca" "ts" | " cannot" | " " g o (no merge makes " g") */
    cr_assert_eq(d.wlen[0], 9, "got %u tokens", d.wlen[0]);
    expect_tokens(&d, 0, 0, 2);
    expect_tokens(&d, 1, 3, 4);  /* cats: two pieces */
    expect_tokens(&d, 2, 5, 5);  /* can holds " cannot" */
    expect_tokens(&d, 3, -1, -1); /* not: no token starts in it */
    expect_tokens(&d, 4, 6, 8);
    cr_assert_eq(d.pairs_no_token, 1, "not -> go has a word without a token");
    cr_assert_eq(d.npair, 3);
    deps_free(&d);
    tok_free(&tok);
    conllu_free(&c);
}

Test(deps, a_uniform_model_scores_the_word_of_most_tokens_and_costs_nothing)
{
    Conllu c;
    Tokenizer tok;
    DepsData d;
    parse(&c, TWO);
    byte_tokenizer(&tok, &c);
    prepare(&d, &c, &tok, 16);
    Config cfg = {.V = tok.V, .T = 16, .L = 1, .H = 2, .C = 8, .D = 4};
    Model m;
    char err[1500] = "";
    cr_assert_eq(model_init(&m, &cfg, err, sizeof err), 0, "%s", err);
    unsigned char eligible[2] = {1, 1};
    DepsResult r;
    cr_assert_eq(deps_measure(&r, &d, &m, NULL, eligible, 1000, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r.nrel, 4, "a, root, b and all");
    cr_assert_str_eq(deps_rel_name(&r, 3), "all");
    const DepsScore *b = &r.score[2 * DEPS_DIRS + DEPS_TO_HEAD];
    /* z -> x: from z's last byte (row 5) x has 1/6, yy 3/6: wrong; v -> ww: the only
     * earlier word: right. */
    cr_assert_eq(b->pairs, 2);
    for (int k = 0; k < 2; k++) {
        cr_assert_float_eq(b->acc[k], 0.5, 1e-12);
        cr_assert_float_eq(b->attn[k], (1.0 / 6 + 2.0 / 5) / 2, 1e-6);
        cr_assert_float_eq(b->cost[k], 0.0, 1e-12);
    }
    cr_assert_eq(b->best, 0, "ties go to the lower head");
    cr_assert_eq(b->offset, 1, "offsets 2 and 1 tie; the nearer k wins");
    cr_assert_float_eq(b->offset_acc, 0.5, 1e-12);
    cr_assert_float_eq(b->se, 0.0, 1e-12, "the head and the offset agree on every pair");
    cr_assert_eq(b->beats, 0);
    for (size_t i = 0; i < r.nrel * DEPS_DIRS; i++)
        for (int k = 0; k < 2 && r.score[i].pairs; k++)
            cr_assert_float_eq(r.score[i].acc[k], r.score[i].uniform_acc, 1e-12,
                               "a uniform head scores the uniform baseline (%s)",
                               deps_rel_name(&r, i / DEPS_DIRS));
    cr_assert_eq(b->loss_tokens, 4);
    cr_assert_float_eq(b->loss, log((double)tok.V), 1e-5, "zero logits: ln V per token");
    const DepsScore *a = &r.score[0 * DEPS_DIRS + DEPS_TO_DEP];
    cr_assert_eq(a->pairs, 1);
    cr_assert_float_eq(a->acc[1], 1.0, 1e-12);
    cr_assert_float_eq(a->attn[1], 0.25, 1e-6);
    cr_assert_eq(r.score[0 * DEPS_DIRS + DEPS_TO_HEAD].pairs, 0);
    const DepsScore *all = &r.score[3 * DEPS_DIRS + DEPS_TO_HEAD];
    cr_assert_eq(all->pairs, 2);
    cr_assert_eq(deps_serves(b, 0), 0);
    for (int k = 0; k < 2; k++)
        cr_assert_float_eq(r.align.head[k], r.align.uniform, 1e-6,
                           "a uniform head's dependency alignment (head %d)", k);
    cr_assert(isnan(r.align.r), "two equal heads: no spread, no r");
    deps_result_free(&r);
    model_free(&m);
    deps_free(&d);
    tok_free(&tok);
    conllu_free(&c);
}

/* Dependency alignment (Vig & Belinkov 2019), worked by hand. The file is "z"
 * (one word, the root), then "a b cc d": a <- b (the root), cc -> d, d -> b, so
 * the related word pairs are {a,b}, {cc,d}, {b,d}. Merges " b", " c", " d" make
 * the second window's tokens 0 "\n", 1 "a", 2 " b", 3 " c", 4 "c", 5 " d": cc
 * has two pieces (3, 4), each carrying cc's label. The first window is "z"
 * alone (no newline before the file's first sentence): its one row has only
 * key 0, left out, so it adds nothing.
 *
 * Counted pairs (row i, key 1..i), * in a relation:
 *   row 1 a: a                 row 2 b: a* b
 *   row 3 c: a b c             row 4 c: a b c c (pieces of one word: 0)
 *   row 5 d: a b* c* c* d
 * 15 pairs, 4 related: pair share 4/15. By token distance: 1: (2,1)* (3,2)
 * (4,3) (5,4)* = 2/4; 2: (3,1) (4,2) (5,3)* = 1/3; 3: (4,1) (5,2)* = 1/2;
 * 4: (5,1) = 0/1. By word distance: 1: b-a* cc-b d-cc* = 2/3; 2: cc-a d-b* =
 * 1/2; 3: d-a = 0/1.
 * A uniform head puts 1/(i+1) on each of row i's i+1 keys: weight counted
 * 1/2 + 2/3 + 3/4 + 4/5 + 5/6 = 213/60, on related keys 1/3 + 3/6 = 50/60:
 * 50/213; its distance sum 0 + 1/3 + 3/4 + 6/5 + 10/6 = 237/60: 237/213.
 *
 * Four heads (L = 2, H = 2), every row summing to 1:
 *   L0H0 previous token (row i on i - 1, row 0 on itself): rows 2..5 count,
 *        rows 2 and 5 related: 2/4 = the share at token distance 1; distance 1.
 *   L0H1 half on token 0, half on itself: weight 5 * 1/2, none related: 0;
 *        distance 0.
 *   L1H0 row 2 all on a; row 5 1/2 on b, 1/4 on token 0, 1/4 on itself; the
 *        rest all on token 0: weight 1 + 3/4, related 1 + 1/2: 6/7; distance
 *        (1 + 3/2) / (7/4) = 10/7.
 *   L1H1 uniform: 50/213, distance 237/213.
 * Layer 0: mean (1/2 + 0)/2 = 1/4, pooled (2 + 0)/(4 + 5/2) = 4/13, best
 * L0H0. Layer 1: mean (6/7 + 50/213)/2 = 814/1491, pooled (3/2 + 50/60) /
 * (7/4 + 213/60) = 140/318 = 70/159, best L1H0.
 * r over the four: x = (1, 0, 10/7, 237/213), y = (1/2, 0, 6/7, 50/213); mean
 * x 440/497, y 4747/11928; Sxy = 854207/1482054, Sxx = 282518/247009, Syy =
 * 1605651/3952144; r = Sxy / sqrt(Sxx Syy) = 0.845519. With L1H1 not eligible:
 * x = (1, 0, 10/7), y = (1/2, 0, 6/7), means 17/21 and 19/42, Sxy = 92/147,
 * Sxx = 158/147, Syy = 109/294, r = 92 / sqrt(8611) = 0.991428; layer 1 is
 * L1H0 alone: mean and pooled 6/7. */
static const char *ALIGN =
    "# text = z\n" W("1", "z", "0", "root")
    "\n# text = a b cc d\n" W("1", "a", "2", "det") W("2", "b", "0", "root")
    W("3", "cc", "4", "amod") W("4", "d", "2", "obj") "\n";

/* Head k's attention on the second window (6 x 6), as the comment above sets it. */
static void align_heads(float A[4][36])
{
    memset(A, 0, 4 * 36 * sizeof(float));
    for (int i = 0; i < 6; i++) {
        A[0][i * 6 + (i ? i - 1 : 0)] = 1.0f;
        A[1][i * 6 + 0] += 0.5f;
        A[1][i * 6 + i] += 0.5f;
        A[2][i * 6 + 0] = 1.0f;
        for (int j = 0; j <= i; j++)
            A[3][i * 6 + j] = 1.0f / (float)(i + 1);
    }
    A[2][2 * 6 + 0] = 0.0f;
    A[2][2 * 6 + 1] = 1.0f;
    A[2][5 * 6 + 0] = 0.25f;
    A[2][5 * 6 + 2] = 0.5f;
    A[2][5 * 6 + 5] = 0.25f;
}

static double share(const size_t *at, const size_t *dep, int k)
{
    return at[k] ? (double)dep[k] / (double)at[k] : -1.0;
}

Test(deps, dependency_alignment_matches_the_hand_worked_fixture)
{
    Conllu c;
    Tokenizer tok;
    DepsData d;
    parse(&c, ALIGN);
    const char *merges[] = {" b", " c", " d"};
    bpe_tokenizer(&tok, merges, 3);
    prepare(&d, &c, &tok, 16);
    cr_assert_eq(d.wlen[0], 1);
    cr_assert_eq(d.win0[1], 1);
    cr_assert_eq(d.wlen[1], 6, "got %u tokens", d.wlen[1]);
    expect_tokens(&d, 3, 3, 4);
    float A[4][36], first = 1.0f; /* the first window: row 0 on key 0 */
    align_heads(A);
    DepsAlignSums sums[2][4];
    memset(sums, 0, sizeof sums);
    for (int k = 0; k < 4; k++) {
        deps_align_window(&d, 0, &first, 1, &sums[0][k]);
        deps_align_window(&d, 1, A[k], 6, &sums[1][k]);
    }
    cr_assert_float_eq(sums[0][0].weight, 0.0, 1e-12, "the first window's key 0 is left out");
    DepsAlign al;
    cr_assert_eq(deps_align_finish(&al, &d, &sums[0][0], 2, 2, NULL), 0);
    const double head[4] = {0.5, 0.0, 6.0 / 7, 50.0 / 213};
    const double dist[4] = {1.0, 0.0, 10.0 / 7, 237.0 / 213};
    for (int k = 0; k < 4; k++) {
        cr_assert_float_eq(al.head[k], head[k], 1e-6, "head %d: %g, expected %g", k, al.head[k],
                           head[k]);
        cr_assert_float_eq(al.distance[k], dist[k], 1e-6, "head %d: distance %g, expected %g", k,
                           al.distance[k], dist[k]);
    }
    cr_assert_float_eq(al.uniform, 50.0 / 213, 1e-12);
    cr_assert_float_eq(al.head[3], al.uniform, 1e-6, "a uniform head scores the uniform value");
    cr_assert_eq(al.token_pairs, 15);
    cr_assert_eq(al.token_pairs_dep, 4);
    cr_assert_float_eq(al.pair_share, 4.0 / 15, 1e-12);
    const double tok_at[5] = {-1, 2.0 / 4, 1.0 / 3, 1.0 / 2, 0.0};
    for (int k = 1; k <= 4; k++)
        cr_assert_float_eq(share(al.tok_at, al.tok_dep_at, k), tok_at[k], 1e-12, "tokens %d", k);
    cr_assert_eq(al.tok_at[5], 0, "no token pair 5 apart");
    cr_assert_float_eq(al.head[0], share(al.tok_at, al.tok_dep_at, 1), 1e-6,
                       "a previous-token head scores the adjacent pairs' share");
    const double word_at[4] = {-1, 2.0 / 3, 1.0 / 2, 0.0};
    for (int k = 1; k <= 3; k++)
        cr_assert_float_eq(share(al.word_at, al.word_dep_at, k), word_at[k], 1e-12, "words %d",
                           k);
    cr_assert_eq(al.word_at[4], 0);
    cr_assert_eq(al.layer_best[0], 0);
    cr_assert_eq(al.layer_best[1], 2);
    cr_assert_float_eq(al.layer_mean[0], 0.25, 1e-6);
    cr_assert_float_eq(al.layer_pooled[0], 4.0 / 13, 1e-6);
    cr_assert_float_eq(al.layer_mean[1], 814.0 / 1491, 1e-6);
    cr_assert_float_eq(al.layer_pooled[1], 70.0 / 159, 1e-6);
    cr_assert_float_eq(al.r, 0.845519, 1e-5, "r %g", al.r);
    deps_align_free(&al);
    unsigned char eligible[4] = {1, 1, 1, 0};
    cr_assert_eq(deps_align_finish(&al, &d, &sums[0][0], 2, 2, eligible), 0);
    cr_assert_float_eq(al.head[3], 50.0 / 213, 1e-6, "every head keeps its own value");
    cr_assert_float_eq(al.layer_mean[1], 6.0 / 7, 1e-6);
    cr_assert_float_eq(al.layer_pooled[1], 6.0 / 7, 1e-6);
    cr_assert_float_eq(al.r, 92.0 / sqrt(8611.0), 1e-6, "r %g", al.r);
    deps_align_free(&al);
    /* The previous-token head alone: r is not defined. */
    DepsAlignSums one[2] = {sums[0][0], sums[1][0]};
    cr_assert_eq(deps_align_finish(&al, &d, one, 1, 1, NULL), 0);
    cr_assert_float_eq(al.layer_mean[0], 0.5, 1e-6);
    cr_assert(isnan(al.r));
    deps_align_free(&al);
    deps_free(&d);
    tok_free(&tok);
    conllu_free(&c);
}

/* A small treebank: the sentence pattern repeated with other words. */
static size_t small_treebank(char *buf, size_t cap)
{
    const char *nouns[] = {"cat", "dog", "bird", "fox"}, *verbs[] = {"sat", "ran", "slept"};
    size_t n = 0;
    for (int i = 0; i < 60; i++) {
        const char *no = nouns[i % 4], *ve = verbs[i % 3];
        n += (size_t)snprintf(buf + n, cap - n,
                              "# text = The %s %s.\n" W("1", "The", "2", "det")
                              "2\t%s\t_\tX\t_\t_\t3\tnsubj\t_\t_\n"
                              "3\t%s\t_\tX\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
                              W("4", ".", "3", "punct") "\n", no, ve, no, ve);
        cr_assert_lt(n, cap);
    }
    return n;
}

Test(deps, infer_heads_on_a_conllu_file_prints_and_writes_the_dependencies)
{
    Env e;
    env_init(&e, "deps_cli");
    static char tb[16384];
    size_t n = small_treebank(tb, sizeof tb);
    char data[600];
    make_file(&e, "t.conllu", tb, n, data, sizeof data);
    char *out = NULL;
    int rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/train --data %s --steps 20 --batch 4 --block 16 "
                    "--layers 1 --embd 16 --heads 2 --eval-iters 1 --out %s/m.ckpt 2>&1",
                    tu_bin(), data, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/infer --ckpt %s/m.ckpt --heads %s 2>/dev/null",
                tu_bin(), e.dir, data);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "gold dependencies of"), "%s", out);
    cr_assert(strstr(out, "60 sentences, 60 scored (0 longer than the context of 16 tokens); "
                          "180 dependencies scored, 60 roots"), "%s", out);
    cr_assert(strstr(out, "\n  nsubj "), "%s", out);
    cr_assert(strstr(out, "\ndependency alignment (Vig & Belinkov 2019)"), "%s", out);
    free(out);
    char *one = NULL, *two = NULL;
    rc = tu_run(&one, "OMP_NUM_THREADS=1 %s/infer --ckpt %s/m.ckpt --heads %s --json 2>/dev/null",
                tu_bin(), e.dir, data);
    cr_assert_eq(rc, 0, "%s", one);
    cr_assert(strstr(one, "\"dependencies\":{\"sentences\":60,\"scored_sentences\":60,"), "%s",
              one);
    cr_assert(strstr(one, "\"nsubj\":{\"dependent->head\":{\"pairs\":0,"), "%s", one);
    cr_assert(strstr(one, "\"head->dependent\":{\"pairs\":60,\"best_head\":\"L0H"), "%s", one);
    cr_assert(strstr(one, "\"all\":{"), "%s", one);
    cr_assert(strstr(one, "\"alignment\":{\"per_head\":{\"L0H0\":"), "%s", one);
    cr_assert(strstr(one, "\"pairs_in_relation_by_distance\":{\"tokens\":{\"1\":"), "%s", one);
    rc = tu_run(&two, "OMP_NUM_THREADS=2 %s/infer --ckpt %s/m.ckpt --heads %s --json 2>/dev/null",
                tu_bin(), e.dir, data);
    cr_assert_eq(rc, 0);
    cr_assert_str_eq(one, two, "1 and 2 threads differ");
    free(one);
    free(two);
    /* --report: summary.json holds the same object, index.html the table. */
    rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/infer --ckpt %s/m.ckpt --heads %s --report %s/rep "
                "--json 2>/dev/null >/dev/null", tu_bin(), e.dir, data, e.dir);
    cr_assert_eq(rc, 0);
    free(out);
    char path[700];
    snprintf(path, sizeof path, "%s/rep/summary.json", e.dir);
    char *summary = tu_read_text(path);
    cr_assert(summary && strstr(summary, "\"dependencies\":{\"sentences\":60,"), "%s", path);
    const char *key = "\"alignment\":{\"per_head\":{\"L0H0\":";
    const char *at = strstr(summary, key);
    double align00 = NAN;
    cr_assert(at && sscanf(at + strlen(key), "%lf", &align00) == 1, "%s", path);
    free(summary);
    snprintf(path, sizeof path, "%s/rep/index.html", e.dir);
    char *page = tu_read_text(path);
    cr_assert(page && strstr(page, "<h2>Gold dependencies</h2>"), "%s", path);
    cr_assert(strstr(page, "<th>all<br>dep&rarr;head</th><th>all<br>head&rarr;dep</th></tr>"),
              "%s: the all columns, and no relation under 100 pairs", path);
    cr_assert(strstr(page, "<h2>Dependency alignment</h2>"), "%s", path);
    cr_assert(strstr(page, "<th>layer</th><th>H0</th>"), "%s: the alignment grid", path);
    char cell[32]; /* head L0H0's value, as summary.json gives it */
    snprintf(cell, sizeof cell, "%.3f", align00);
    const char *grid = strstr(page, "<h2>Dependency alignment</h2>");
    cr_assert(strstr(grid, "<tr><td>0</td>") && strstr(strstr(grid, "<tr><td>0</td>"), cell),
              "%s: L0H0's alignment %s in the grid", path, cell);
    free(page);
    /* A bad line: the one message, exit 1. */
    const char *bad = "# text = a b\n" W("1", "a", "2", "x") W("2", "b", "1", "y");
    make_file(&e, "bad.conllu", bad, strlen(bad), data, sizeof data);
    rc = tu_run(&out, "%s/infer --ckpt %s/m.ckpt --heads %s 2>&1", tu_bin(), e.dir, data);
    expect_error(out, rc, 1, "infer", "bad.conllu:2: the tree has a cycle through word 1");
    free(out);
}

Test(deps, the_treebank_dev_set_scores_end_to_end)
{
    struct stat st;
    if (stat(EWT_DEV, &st) != 0)
        cr_skip_test("%s is absent (the UD English Web Treebank; its README says where to get "
                     "it)", EWT_DEV);
    Env e;
    env_init(&e, "deps_ewt");
    char *out = NULL;
    int rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/train --data %s --vocab 300 --steps 2 --batch 2 "
                    "--block 64 --layers 1 --embd 8 --heads 2 --eval-iters 1 --out %s/m.ckpt "
                    "2>&1", tu_bin(), EWT_DEV, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "OMP_NUM_THREADS=1 %s/infer --ckpt %s/m.ckpt --heads %s --json "
                "--windows 4 2>/dev/null", tu_bin(), e.dir, EWT_DEV);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"dependencies\":{\"sentences\":2001,"), "%.300s", out);
    cr_assert(strstr(out, "\"compound:prt\":{"), "subtypes are kept");
    cr_assert(strstr(out, "\"nmod:poss\":{"), "subtypes are kept");
    free(out);
}
