/* Tests of scripts/headcount.py, the PyTorch bridge: on a small trained
 * checkpoint its loss equals ./infer --eval (with and without a head mask), the
 * attention its hooks return equals the weights ./infer --explore-json wrote,
 * and a damaged checkpoint is refused with ./infer's message. Skipped where
 * Debian's python3-torch is not installed (.ci/run installs it). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

#define PY "/usr/bin/python3"

static void need_torch(void)
{
    char *out;
    int rc = tu_run(&out, PY " -c 'import torch'");
    free(out);
    if (rc != 0)
        cr_skip_test("python3-torch is not installed");
}

/* A small trained model (two layers, four heads) for the bridge tests. */
static void trained(TuModel *m, const char *name)
{
    tu_model(m, name, 6000, 7, "--layers 2 --heads 4 --embd 16 --block 32 --batch 4 --steps 40 "
             "--eval-iters 2");
}

static double loss_of(const char *line)
{
    const char *p = strstr(line, "eval loss ");
    cr_assert_not_null(p, "no loss in: %s", line);
    return strtod(p + 10, NULL);
}

Test(headcount_py, loss_equals_infer_eval_with_and_without_a_mask)
{
    need_torch();
    TuModel e;
    trained(&e, "bridge-loss");
    char *a, *b;
    int rc = tu_run(&a, "%s/infer --ckpt %s --eval %s -j 1", tu_bin(), e.ckpt, e.data);
    cr_assert_eq(rc, 0, "%s", a);
    rc = tu_run(&b, PY " scripts/headcount.py eval %s %s", e.ckpt, e.data);
    cr_assert_eq(rc, 0, "%s", b);
    /* float32 sums in another order: agreement to ~1e-6, checked at 2e-5. */
    cr_assert(fabs(loss_of(a) - loss_of(b)) < 2e-5, "infer: %s\ntorch: %s", a, b);
    cr_assert_not_null(strstr(b, "tokens 5999"), "%s", b);
    free(a);
    free(b);
    rc = tu_run(&a, "%s/infer --ckpt %s --eval %s -j 1 --mask 0.1,1.3", tu_bin(), e.ckpt, e.data);
    cr_assert_eq(rc, 0, "%s", a);
    rc = tu_run(&b, PY " -c \"import sys; sys.path.insert(0, 'scripts'); import headcount, torch; "
                "m = headcount.load('%s'); on = torch.ones(2, 4); on[0, 1] = 0; on[1, 3] = 0; "
                "print('eval loss %%.6f' %% headcount.evaluate(m, open('%s', 'rb').read(), "
                "head_on=on)[0])\"", e.ckpt, e.data);
    cr_assert_eq(rc, 0, "%s", b);
    cr_assert(fabs(loss_of(a) - loss_of(b)) < 2e-5, "masked: infer: %s\ntorch: %s", a, b);
    free(a);
    free(b);
}

/* A model with head gates (40 steps at lr 1e-2 leave every evaluation gate near
 * 0.72, strictly between 0 and 1): the bridge reads log_alpha after lnf.b and
 * applies the gates as ./infer does, alone and with a mask. */
Test(headcount_py, loss_equals_infer_eval_with_head_gates)
{
    need_torch();
    TuModel e;
    tu_model(&e, "bridge-gates", 6000, 7, "--layers 2 --heads 4 --embd 16 --block 32 --batch 4 "
             "--steps 40 --eval-iters 2 --lr 1e-2 --warmup 5 --head-gates 0.05");
    const char *mask[2] = {"", "--mask 0.1,1.3"};
    const char *on[2] = {"None", "torch.tensor([[1, 0, 1, 1], [1, 1, 1, 0]])"};
    for (int k = 0; k < 2; k++) {
        char *a, *b;
        int rc = tu_run(&a, "%s/infer --ckpt %s --eval %s -j 1 %s", tu_bin(), e.ckpt, e.data,
                        mask[k]);
        cr_assert_eq(rc, 0, "%s", a);
        rc = tu_run(&b, PY " -c \"import sys; sys.path.insert(0, 'scripts'); import headcount, "
                    "torch; m = headcount.load('%s'); g = m.gates(); "
                    "assert m.cfg.gates and g.shape == (2, 4) and 0 < g.min() and g.max() < 1; "
                    "print('eval loss %%.6f' %% headcount.evaluate(m, open('%s', 'rb').read(), "
                    "head_on=%s)[0])\"", e.ckpt, e.data, on[k]);
        cr_assert_eq(rc, 0, "%s", b);
        cr_assert(fabs(loss_of(a) - loss_of(b)) < 2e-5, "%s: infer: %s\ntorch: %s", mask[k], a, b);
        free(a);
        free(b);
    }
}

/* A routed model (--head-routing 2 of 8 heads): the bridge reads router.w and
 * router.b after lnf.b and routes each token as ./infer does (top 2, a tie to the
 * lower head, weights renormalised over the chosen), alone and with a mask; the
 * TransformerLens bridge refuses it in one line naming why, before importing
 * TransformerLens. */
Test(headcount_py, loss_equals_infer_eval_with_head_routing)
{
    need_torch();
    TuModel e;
    tu_model(&e, "bridge-route", 6000, 7, "--layers 2 --heads 8 --embd 16 --block 32 --batch 4 "
             "--steps 40 --eval-iters 2 --lr 1e-2 --warmup 5 --head-routing 2");
    const char *mask[2] = {"", "--mask 0.1,1.3"};
    const char *on[2] = {"None", "torch.tensor([[1, 0, 1, 1, 1, 1, 1, 1], "
                                 "[1, 1, 1, 0, 1, 1, 1, 1]])"};
    for (int k = 0; k < 2; k++) {
        char *a, *b;
        int rc = tu_run(&a, "%s/infer --ckpt %s --eval %s -j 1 %s", tu_bin(), e.ckpt, e.data,
                        mask[k]);
        cr_assert_eq(rc, 0, "%s", a);
        rc = tu_run(&b, PY " -c \"import sys; sys.path.insert(0, 'scripts'); import headcount, "
                    "torch; m = headcount.load('%s'); assert m.cfg.route_k == 2; "
                    "print('eval loss %%.6f' %% headcount.evaluate(m, open('%s', 'rb').read(), "
                    "head_on=%s)[0])\"", e.ckpt, e.data, on[k]);
        cr_assert_eq(rc, 0, "%s", b);
        cr_assert(fabs(loss_of(a) - loss_of(b)) < 2e-5, "%s: infer: %s\ntorch: %s", mask[k], a, b);
        free(a);
        free(b);
    }
    /* Without the router (every head, weight 1) the loss is another: routing is applied. */
    char *b;
    int rc = tu_run(&b, PY " -c \"import sys; sys.path.insert(0, 'scripts'); import headcount; "
                    "m = headcount.load('%s'); m.cfg.route_k = 0; "
                    "print('eval loss %%.6f' %% "
                    "headcount.evaluate(m, open('%s', 'rb').read())[0])\"",
                    e.ckpt, e.data);
    cr_assert_eq(rc, 0, "%s", b);
    char *a;
    rc = tu_run(&a, "%s/infer --ckpt %s --eval %s -j 1", tu_bin(), e.ckpt, e.data);
    cr_assert(fabs(loss_of(a) - loss_of(b)) > 1e-3, "unrouted %s, routed %s", b, a);
    free(a);
    free(b);
    rc = tu_run(&b, PY " -c \"import sys; sys.path.insert(0, 'scripts'); import headcount; "
                "headcount.to_transformer_lens('%s')\"", e.ckpt);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(b, "ValueError: a model routed to 2 of 8 heads per token (--head-routing) "
                        "has no TransformerLens equivalent"), "%s", b);
    free(b);
}

Test(headcount_py, hooked_attention_equals_infer_explore_json)
{
    need_torch();
    TuModel e;
    trained(&e, "bridge-att");
    char *out, html[400], json[400];
    snprintf(html, sizeof html, "%s/p.html", e.dir);
    snprintf(json, sizeof json, "%s/w.json", e.dir);
    const char *text = "The old mouse went twice. The boys";
    int rc = tu_run(&out, "%s/infer --ckpt %s --explore %s --explore-json %s --text '%s' -j 1",
                    tu_bin(), e.ckpt, html, json, text);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, PY
                " -c \"import sys, json; sys.path.insert(0, 'scripts'); import headcount; "
                "m = headcount.load('%s'); J = json.load(open('%s')); "
                "att = m.attention(m.encode(bytes(J['tokens']))); "
                "print('shape', tuple(att.shape)); "
                "print('maxdiff %%.3g' %% max(abs(att[l, h, i, j].item() - "
                "J['attention'][l][h][i][j]) "
                "for l in range(2) for h in range(4) for i in range(J['T']) for j in range(i + 1)))\"",
                e.ckpt, json);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "shape (2, 4, 32, 32)"), "%s", out);
    const char *p = strstr(out, "maxdiff ");
    cr_assert_not_null(p, "%s", out);
    /* JSON has 6 significant digits: 5e-7 of a weight <= 1, plus float noise. */
    cr_assert(strtod(p + 8, NULL) < 1e-5, "%s", out);
    free(out);
}

/* A version 2 checkpoint: the script reads the merges and encodes as data/bpe.h
 * says, so its token count and loss equal ./infer --eval's on a text with every
 * kind of chunk (runs of spaces before words, tabs and CR LF, digits, punctuation,
 * UTF-8 letters), and decode(encode(text)) is the text. */
Test(headcount_py, a_bpe_checkpoint_encodes_and_scores_as_infer_does, .timeout = 120)
{
    need_torch();
    TuModel e;
    trained(&e, "bridge-bpe");
    char text[400], *a, *b;
    snprintf(text, sizeof text, "%s/mixed.txt", e.dir);
    FILE *f = fopen(text, "wb");
    cr_assert_not_null(f);
    size_t n;
    unsigned char *data = tu_read_file(e.data, &n);
    for (int rep = 0; rep < 30; rep++)
        fprintf(f, "  \n\n  x 12,345 !! \303\251t\303\251 \t\r\n  end...  (see: [1]) -- "
                   "The  cat's  49 paws,\tok?\n%.*s", 120, (const char *)data + 7 * rep);
    fclose(f);
    free(data);
    char ckpt[400];
    snprintf(ckpt, sizeof ckpt, "%s/bpe.ckpt", e.dir);
    int rc = tu_run(&a, "%s/train --data %s --vocab 300 --layers 1 "
                    "--heads 2 --embd 16 --block 32 --batch 4 --steps 20 --eval-iters 2 "
                    "--threads 1 --out %s", tu_bin(), text, ckpt);
    cr_assert_eq(rc, 0, "%s", a);
    free(a);
    rc = tu_run(&a, "%s/infer --ckpt %s --eval %s -j 1", tu_bin(), ckpt, text);
    cr_assert_eq(rc, 0, "%s", a);
    rc = tu_run(&b, PY " scripts/headcount.py eval %s %s", ckpt, text);
    cr_assert_eq(rc, 0, "%s", b);
    const char *ta = strstr(a, " tokens "), *tb = strstr(b, " tokens ");
    cr_assert(ta && tb, "infer: %s\ntorch: %s", a, b);
    cr_assert_str_eq(ta, tb, "token and byte counts differ:\ninfer: %s\ntorch: %s", a, b);
    cr_assert(fabs(loss_of(a) - loss_of(b)) < 2e-5, "infer: %s\ntorch: %s", a, b);
    free(a);
    free(b);
    rc = tu_run(&b, PY " -c \"import sys; sys.path.insert(0, 'scripts'); import headcount; "
                "m = headcount.load('%s'); t = open('%s', 'rb').read(); ids = m.encode(t); "
                "print('merges', len(m.tokenizer.merges), 'tokens', len(ids), 'same', "
                "m.decode(ids) == t)\"", ckpt, text);
    cr_assert_eq(rc, 0, "%s", b);
    cr_assert_not_null(strstr(b, "same True"), "%s", b);
    cr_assert_null(strstr(b, "merges 0 "), "%s", b);
    free(b);
}

/* headcount.load reads through scripts/checkpoint.py: a damaged or hostile file
 * raises CheckpointError with the message ./infer gives for it, before anything
 * the header claims is built (a header claiming 0.8 G parameters in a small
 * file, zero layers, a checksum mismatch, a negative step count, an unsorted
 * alphabet, a trailing byte), and a valid file still loads. */
Test(headcount_py, load_refuses_what_infer_refuses_with_its_message, .timeout = 120)
{
    need_torch();
    TuModel e;
    trained(&e, "bridge-damaged");
    size_t n;
    unsigned char *good = tu_read_file(e.ckpt, &n);
    cr_assert_not_null(good);
    unsigned char *b = malloc(n + 1);
    cr_assert_not_null(b);
    struct { const char *what; int at; int32_t value; } cases[] = {
        {"huge", 0, 0}, {"no layers", 16, 0}, {"checksum", -1, 0}, {"negative steps", 32, -1},
        {"unsorted alphabet", 1025, 0}, {"trailing byte", -2, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(b, good, n);
        size_t len = n;
        if (c == 0) { /* V=256 T=4096 L=64 H=16 C=1024 D=64: P = 0.8 G */
            int32_t dims[][2] = {{2, 256}, {3, 4096}, {4, 64}, {5, 16}, {6, 1024}, {9, 64}};
            for (int i = 0; i < 6; i++)
                memcpy(b + 4 * dims[i][0], &dims[i][1], 4);
            for (int i = 0; i < 256; i++)
                b[1024 + i] = (unsigned char)i;
        } else if (cases[c].at == -1) {
            b[n / 2] ^= 1;
        } else if (cases[c].at == -2) {
            b[len++] = 0;
        } else if (cases[c].at == 1025) {
            b[1025] = b[1024];
        } else {
            memcpy(b + cases[c].at, &cases[c].value, 4);
        }
        char path[400], *a, *p;
        snprintf(path, sizeof path, "%s/damaged.ckpt", e.dir);
        cr_assert_eq(tu_write_file(path, b, len), 0);
        int rc = tu_run(&a, "%s/infer --ckpt %s --eval %s -j 1", tu_bin(), path, e.data);
        cr_assert_eq(rc, 1, "%s: infer: %s", cases[c].what, a);
        rc = tu_run(&p, PY " -c \"import sys; sys.path.insert(0, 'scripts'); import headcount\n"
                    "try: headcount.load('%s'); print('loaded')\n"
                    "except headcount.CheckpointError as e: print('infer: error:', e)\"", path);
        cr_assert_eq(rc, 0, "%s: %s", cases[c].what, p);
        cr_assert_str_eq(p, a, "%s: the two readers disagree", cases[c].what);
        free(a);
        free(p);
    }
    free(b);
    free(good);
}
