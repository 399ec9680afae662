/* Command-line tests of ./train --head-routing K and --routing-balance X
 * (programs found in $HEADCOUNT_BIN): 1 and 2 threads train the same checkpoint
 * and log; K = 0 given is the run without the flag; the checkpoint's header keeps
 * K (flag bit 2, header int 11) and its training state the coefficient, and a
 * resumed run continues bit-identically and refuses another K or coefficient;
 * bad values and the pair with --head-gates are one usage-error line before any
 * work. Every run is tiny (2 layers, C = 16, a 20 KB generated text file), with
 * OMP_WAIT_POLICY=passive (see test_train.c). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/ckpt.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

Test(train, head_routing_gives_identical_checkpoints_for_one_and_two_threads)
{
    Env e;
    env_init(&e, "route-threads");
    char ck[4][400], lg[4][400];
    expect_option_threads(&e, "--heads 8 --head-routing 2", "--head-routing 0",
                          "\"head_routing\":2,\"routing_balance\":0.01", ck, lg);
    cr_assert(!same_files(ck[0], ck[2]), "--head-routing 2 trained what 0 trains");
    /* the balance loss is in every step line of a routed run, and in no plain one */
    char *routed = tu_read_text(lg[0]), *plain = tu_read_text(lg[3]);
    cr_assert(strstr(routed, "{\"type\":\"step\",\"step\":1,\"loss\":"), "%s", routed);
    cr_assert(strstr(routed, ",\"balance_loss\":"), "%s", routed);
    cr_assert_null(strstr(plain, "balance_loss"), "%s", plain);
    cr_assert_null(strstr(plain, "routing"), "%s", plain);
    free(routed);
    free(plain);
}

/* 3 steps, save, resume to 6 equals 6 straight; the header holds K and the flag
 * bit (which a reader from before routing refuses as an unknown flag, one line),
 * the training state the coefficient; a resume refuses another of either. */
Test(train, head_routing_is_kept_in_the_checkpoint_and_resumes_bit_identically)
{
    Env e;
    env_init(&e, "route-resume");
    Model m;
    Tokenizer tok;
    TrainState ts;
    expect_option_resumes(&e, TINY " --heads 8 --head-routing 2 --routing-balance 0.05 "
                          "--warmup 100 --eval-every 0", "--routing-balance 0.01", &m, &tok, &ts);
    cr_assert_eq(m.cfg.route_k, 2);
    cr_assert(ts.routing_balance == 0.05, "stored route_balance %g", ts.routing_balance);
    model_free(&m);
    tok_free(&tok);
    char path[400];
    snprintf(path, sizeof path, "%s/part.ckpt", e.dir);
    size_t n;
    unsigned char *b = tu_read_file(path, &n);
    int32_t h[12];
    memcpy(h, b, sizeof h);
    cr_assert_eq(h[7], CKPT_FLAG_TRAIN_STATE | CKPT_FLAG_ROUTE);
    cr_assert_eq(h[11], 2);
    free(b);
    char *out;
    int rc = tu_run(&out, "%s/train --resume %s --head-routing 1 --steps 8 --out %s/x.ckpt",
                    tu_bin(), path, e.dir);
    expect_error(out, rc, 2, "train", "--head-routing 1 contradicts the checkpoint");
    free(out);
}

Test(train, head_routing_refuses_bad_values_in_one_usage_error_line)
{
    Env e;
    env_init(&e, "route-range");
    char extra[600];
    /* K above H: the model's rule (config_validate) */
    snprintf(extra, sizeof extra, "--data %s --heads 2 --head-routing 3", e.data);
    refuse_train(&e, extra, 2, "routed heads K must be in [0, 2], got 3");
    const char *bad_k[] = {"-1", "257", "1.5", "", "two"};
    refuse_values(&e, "--head-routing", bad_k, sizeof bad_k / sizeof bad_k[0],
                  "--head-routing: expected an integer in [1, 256]");
    const char *bad_x[] = {"-0.01", "nan", "inf", "-inf", "1e9", "0.1x", ""};
    refuse_values(&e, "--routing-balance", bad_x, sizeof bad_x / sizeof bad_x[0],
                  "--routing-balance: expected a number in [0, 100]");
    snprintf(extra, sizeof extra, "--data %s --head-routing 1 --head-gates 0.01", e.data);
    refuse_train(&e, extra, 2, "--head-routing 1 and --head-gates 0.01 both choose");
    /* A coefficient for routers that do not exist: a fresh run without K, and a
     * resumed checkpoint trained without. */
    snprintf(extra, sizeof extra, "--data %s --routing-balance 0.05", e.data);
    refuse_train(&e, extra, 2, "--routing-balance 0.05 weighs the routers' balance loss, and "
                               "a run without --head-routing has no routers");
    char *out;
    int rc = tu_run(&out, "%s/train --data %s " TINY " --steps 2 --out %s/plain.ckpt", tu_bin(),
                    e.data, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --resume %s/plain.ckpt --routing-balance 0.05 --steps 4 "
                "--out %s/x.ckpt", tu_bin(), e.dir, e.dir);
    expect_error(out, rc, 2, "train", "--routing-balance 0.05 weighs the routers' balance loss, "
                                      "and the checkpoint's model has no routers");
    free(out);
}

/* --print-settings shows both (routing off: K 0, the coefficient's default). */
Test(train, print_settings_shows_head_routing)
{
    char *out;
    int rc = tu_run(&out, "%s/train --print-settings --head-routing 3", tu_bin());
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"head_routing\":3"), "%s", out);
    cr_assert(strstr(out, "\"routing_balance\":0.01"), "%s", out);
    free(out);
}

/* ./infer --heads --json on a model trained with --head-routing: the "routing"
 * object names K, and each layer's heads' shares (the share of the layer's tokens
 * whose router chose the head) add up to K, since every token picks K heads; with
 * K = 1 the one chosen head's route weight is exactly 1. A plain model has no
 * "routing" key. */
static void expect_routing_json(const Env *e, int layers, int heads, int k)
{
    char *out;
    int rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --json --windows 4 --threads 1 "
                    "2>/dev/null", tu_bin(), e->out, e->data);
    cr_assert_eq(rc, 0, "%s", out);
    const char *r = strstr(out, "\"routing\":{\"k\":");
    cr_assert_not_null(r, "no routing object: %.300s", out);
    cr_assert_eq(atoi(r + strlen("\"routing\":{\"k\":")), k);
    for (int l = 0; l < layers; l++) {
        double sum = 0;
        for (int h = 0; h < heads; h++) {
            char key[64];
            snprintf(key, sizeof key, "\"L%dH%d\":{\"share\":", l, h);
            const char *p = strstr(r, key);
            cr_assert_not_null(p, "%s missing", key);
            double share, weight;
            int got = sscanf(p + strlen(key), "%lf,\"weight\":%lf", &share, &weight);
            cr_assert_eq(got, 2, "%.80s", p);
            cr_assert(share >= 0 && share <= 1, "%s share %g", key, share);
            if (k == 1 && share > 0)
                cr_assert(weight == 1.0, "%s: K = 1 weight %.9g, expected exactly 1", key, weight);
            sum += share;
        }
        /* shares are printed to 6 places */
        cr_assert(sum > k - 1e-5 * heads && sum < k + 1e-5 * heads,
                  "layer %d: shares add to %.7f, not %d", l, sum, k);
    }
    free(out);
}

Test(train, a_routed_models_heads_json_reports_shares_that_add_up_to_k)
{
    Env e;
    env_init(&e, "route-heads");
    char *out;
    for (int k = 1; k <= 2; k++) {
        int rc = tu_run(&out, "%s/train --data %s --out %s " TINY " --layers 2 --heads 4 "
                        "--head-routing %d --steps 6 --eval-every 0 --save-every 0 "
                        "--progress-every 0",
                        tu_bin(), e.data, e.out, k);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
        expect_routing_json(&e, 2, 4, k);
    }
    int rc = tu_run(&out, "%s/train --data %s --out %s " TINY " --steps 3 --eval-every 0 "
                    "--save-every 0 --progress-every 0", tu_bin(), e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --heads %s --json --windows 4 --threads 1 2>/dev/null",
                tu_bin(), e.out, e.data);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_null(strstr(out, "\"routing\""), "a plain model reports routing");
    free(out);
}
