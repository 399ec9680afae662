/* infer_deps: --heads on a CoNLL-U file (data/conllu.h): besides the head
 * analysis of its text, every head scored against the gold dependency trees,
 * relation by relation and in both directions a causal model sees
 * (analysis/deps.h), printed as one table, then the dependency alignment;
 * report.c writes the same numbers
 * into --json and summary.json ("dependencies"). docs/heads.md, "Gold
 * dependencies", defines every column. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads.h"
#include "analysis/pairs.h"
#include "app/common/cli.h"
#include "app/infer/infer_modes.h"
#include "model/gates.h"

/* The ablation passes read the first sentences holding up to this many tokens. */
#define DEPS_CAUSAL_TOKENS ((size_t)16384)

void infer_deps_measure(DepsRun *run, const InferOptions *o, const Model *m, const Tokenizer *tok)
{
    char err[1500];
    memset(run, 0, sizeof *run);
    if (conllu_read(&run->c, o->heads, err, sizeof err))
        cli_fail("%s", err);
    if (deps_prepare(&run->d, &run->c, tok, m->cfg.T, o->heads, err, sizeof err))
        cli_fail("%s", err);
    int n = m->cfg.L * m->cfg.H;
    unsigned char *eligible = calloc((size_t)n, 1);
    if (!eligible)
        cli_fail("out of memory");
    for (int k = 0; k < n; k++)
        eligible[k] = (!o->head_on || o->head_on[k]) &&
                      !(m->w.log_alpha && gate_eval(m->w.log_alpha[k], NULL) == 0.0f);
    fprintf(stderr, "infer: gold dependencies of %s: %zu sentences, %zu dependencies to score, "
            "every head silenced in turn on the first %zu tokens\n", o->heads, run->c.nsent,
            run->d.npair, DEPS_CAUSAL_TOKENS);
    if (deps_measure(&run->res, &run->d, m, o->head_on, eligible, DEPS_CAUSAL_TOKENS, err,
                     sizeof err))
        cli_fail("%s", err);
    free(eligible);
    run->done = 1;
}

/* Rows in print order: relations by pairs, most first (ties by name), "all" first. */
static size_t *row_order(const DepsResult *res, int dir)
{
    size_t *ord = calloc(res->nrel, sizeof *ord), k = 0;
    if (!ord)
        cli_fail("out of memory");
    ord[k++] = res->nrel - 1;
    for (size_t r = 0; r + 1 < res->nrel; r++)
        if (res->score[r * DEPS_DIRS + dir].pairs > 0)
            ord[k++] = r;
    for (size_t i = 2; i < k; i++)
        for (size_t j = i; j > 1; j--) {
            size_t a = res->score[ord[j] * DEPS_DIRS + dir].pairs;
            size_t b = res->score[ord[j - 1] * DEPS_DIRS + dir].pairs;
            if (a < b || (a == b && strcmp(deps_rel_name(res, ord[j]),
                                           deps_rel_name(res, ord[j - 1])) > 0))
                break;
            size_t t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    if (k < res->nrel)
        ord[k] = (size_t)-1;
    return ord;
}

static void print_row(const DepsResult *res, const DepsScore *sc, const char *name, int H)
{
    char best[32] = "-", cost[32] = "-", loss[32] = "-";
    if (sc->best >= 0)
        snprintf(best, sizeof best, "L%dH%d", sc->best / H, sc->best % H);
    if (sc->best >= 0 && sc->loss_tokens) {
        snprintf(cost, sizeof cost, "%+.3f", sc->cost[sc->best]);
        snprintf(loss, sizeof loss, "%.3f", sc->loss);
    }
    double acc = sc->best >= 0 ? sc->acc[sc->best] : 0.0;
    double attn = sc->best >= 0 ? sc->attn[sc->best] : 0.0;
    printf("  %-16s %7zu  %-6s %5.3f  %5.3f  %3d  %5.3f  %+6.3f  %5.3f  %-5s  %5.3f  %6zu  %-6s "
           "%-7s %s\n", name, sc->pairs, best, acc, attn, sc->offset, sc->offset_acc,
           acc - sc->offset_acc, sc->se, sc->beats ? "yes" : "no", sc->uniform_acc,
           sc->loss_pairs, loss, cost, deps_serves(sc, sc->best) ? "yes" : "no");
}

/* "0.123", or "-" for a value not defined (NAN). */
static const char *fmt3(char buf[32], double v)
{
    if (isfinite(v))
        snprintf(buf, 32, "%.3f", v);
    else
        snprintf(buf, 32, "-");
    return buf;
}

/* The share of pairs at distance k in a relation, "-" for none. */
static const char *share_at(char buf[32], const size_t *at, const size_t *dep, int k)
{
    return fmt3(buf, at[k] ? (double)dep[k] / (double)at[k] : NAN);
}

/* Vig & Belinkov's dependency alignment: per layer its best head, then the baselines and r. */
static void print_alignment(const DepsAlign *al)
{
    char a[32], b[32], c[32];
    printf("\ndependency alignment (Vig & Belinkov 2019): the share of a head's weight, from the "
           "tokens of words, on keys at or before the row whose word is in a dependency "
           "relation with the row's; attention to the window's first token left out\n");
    printf("  %-5s  %-6s %5s  %5s  %6s\n", "layer", "best", "align", "mean", "pooled");
    for (int l = 0; l < al->L; l++) {
        int k = al->layer_best[l];
        char best[32] = "-";
        if (k >= 0)
            snprintf(best, sizeof best, "L%dH%d", k / al->H, k % al->H);
        printf("  %-5d  %-6s %5s  %5s  %6s\n", l, best, fmt3(a, k >= 0 ? al->head[k] : NAN),
               fmt3(b, al->layer_mean[l]), fmt3(c, al->layer_pooled[l]));
    }
    printf("  uniform head %s; token pairs in a relation %s of %zu\n", fmt3(a, al->uniform),
           fmt3(b, al->pair_share), al->token_pairs);
    printf("  in a relation at distance 1, 5, 10: tokens %s, %s, ",
           share_at(a, al->tok_at, al->tok_dep_at, 1), share_at(b, al->tok_at, al->tok_dep_at, 5));
    printf("%s; words %s, %s, ", share_at(a, al->tok_at, al->tok_dep_at, 10),
           share_at(b, al->word_at, al->word_dep_at, 1),
           share_at(c, al->word_at, al->word_dep_at, 5));
    printf("%s\n  r(mean attention distance, alignment) over the heads %s\n",
           share_at(a, al->word_at, al->word_dep_at, 10), fmt3(b, al->r));
    printf("  (align: the best head's alignment; mean: the layer's heads' mean; pooled: their "
           "weight on related keys over their weight)\n");
}

void infer_deps_print(const DepsRun *run, const char *path, int H)
{
    if (!run->done)
        return;
    const DepsResult *res = &run->res;
    printf("\ngold dependencies of %s: %zu sentences, %zu scored (%zu longer than the context of "
           "%d tokens); %zu dependencies scored, %zu roots (no earlier partner), %zu in the "
           "sentences not scored, %zu with a word that has no token of its own\n", path,
           res->sentences, res->scored, res->over_context, res->T, res->pairs, res->roots,
           res->pairs_over_context, res->pairs_no_token);
    printf("a pair is right when the earlier word a head attends to most, from the later word's "
           "last token (weights summed over each word's tokens), is its gold partner; offset: "
           "always the word k back, the best k; ablation on the first %zu sentences (%zu "
           "tokens)\n", res->causal_sentences, res->causal_tokens);
    for (int dir = 0; dir < DEPS_DIRS; dir++) {
        printf("\n%s (the %s comes later and looks back)\n", deps_dir_names[dir],
               dir == DEPS_TO_HEAD ? "dependent" : "head word");
        printf("  %-16s %7s  %-6s %5s  %5s  %3s  %5s  %6s  %5s  %-5s  %5s  %6s  %-6s %-7s %s\n",
               "relation", "pairs", "best", "acc", "attn", "k", "k acc", "margin", "se", "beats",
               "unif", "a.pairs", "loss", "cost", "serves");
        size_t *ord = row_order(res, dir);
        for (size_t i = 0; i < res->nrel && ord[i] != (size_t)-1; i++)
            print_row(res, &res->score[ord[i] * DEPS_DIRS + dir], deps_rel_name(res, ord[i]), H);
        free(ord);
    }
    printf("  (acc: the best head's accuracy, attn: its mean weight on the partner word; k, k acc: "
           "the offset baseline; margin: acc - k acc; beats: margin > se, the standard error of "
           "the paired difference; unif: a uniform head's accuracy (the earlier word of most tokens); a.pairs: pairs in the ablation sentences; loss: mean loss on "
           "the later words' tokens; cost: its relative rise with the best head silenced; serves: "
           "attn > %.2f and cost >= %.2f)\n", HEADS_REL_BAR, HEADS_NEEDED_SHARE);
    print_alignment(&res->align);
}

void infer_deps_free(DepsRun *run)
{
    deps_result_free(&run->res);
    deps_free(&run->d);
    conllu_free(&run->c);
}
