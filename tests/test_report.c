/* Tests for app/report: which relations a head serves, as summary.json,
 * report_serves and the relation bars give it, on hand-set head statistics. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/report.h"

Test(report, every_relation_has_a_bar_between_0_and_1)
{
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        cr_assert(heads_rel_bar[q] > 0.0 && heads_rel_bar[q] < 1.0, "%s: bar %g",
                  heads_rel_names[q], heads_rel_bar[q]);
    cr_assert_eq(heads_rel_bar[HEADS_REL_PREV], HEADS_PREV_MIN);
}

/* Four heads (L = 2, H = 2): L0H0 above the previous-token bar, L0H1 exactly
 * on it (not above) but above the bracket and names bars, L1H0 masked though
 * far above every bar, L1H1 below every bar. Every head is needed for every
 * relation (its cost is the needed share) but L0H1 for names, which it attends
 * to without being needed (a cost just under the share). */
static void hand_set(HeadStats st[4])
{
    memset(st, 0, 4 * sizeof *st);
    for (int k = 0; k < 4; k++) {
        st[k].costed = 1;
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            st[k].cost[q] = HEADS_NEEDED_SHARE;
    }
    st[1].cost[HEADS_REL_NAMES] = HEADS_NEEDED_SHARE - 1e-9;
    st[0].rel[HEADS_REL_PREV] = HEADS_PREV_MIN + 0.01;
    st[1].rel[HEADS_REL_PREV] = HEADS_PREV_MIN;
    st[1].rel[HEADS_REL_BRACKET] = heads_rel_bar[HEADS_REL_BRACKET] + 0.2;
    st[1].rel[HEADS_REL_NAMES] = heads_rel_bar[HEADS_REL_NAMES] + 0.01;
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        st[2].rel[q] = 0.99;
        st[3].rel[q] = heads_rel_bar[q] - 0.01;
    }
    st[2].masked = 1;
}

Test(report, a_head_serves_the_relations_it_attends_to_above_the_bar_and_is_needed_for)
{
    HeadStats st[4];
    hand_set(st);
    char buf[256];
    cr_assert_str_eq(report_serves(buf, sizeof buf, &st[0], "+"), "previous-token");
    cr_assert_str_eq(report_serves(buf, sizeof buf, &st[1], "+"), "bracket");
    cr_assert_str_eq(report_rels(buf, sizeof buf, &st[1], "+", heads_attends), "bracket+names");
    cr_assert_str_eq(report_rels(buf, sizeof buf, &st[1], "+", heads_needed),
                     "previous-token+bracket+copy+rare+agreement+determiner+coreference+"
                     "subject-verb+adjective-verb+verb-modifier+place+pronoun");
    cr_assert_str_eq(report_serves(buf, sizeof buf, &st[2], "+"), "");
    cr_assert_str_eq(report_serves(buf, sizeof buf, &st[3], "+"), "");
    cr_assert_str_eq(report_serves(buf, 10, &st[1], "+"), "bracket", "cut at a whole name");
}

Test(report, summary_json_lists_each_relations_bar_and_each_heads_relations)
{
    HeadStats st[4];
    hand_set(st);
    HeadsRelation rel[HEADS_REL_COUNT] = {{0}};
    double jsd[16] = {0}, layer_eff[2] = {1, 1};
    Tokenizer tok = {.V = 10};
    HeadsReport r = {.cfg = {.L = 2, .H = 2}, .st = st, .jsd = jsd,
                     .layer_effective = layer_eff, .rel = rel, .builtin = 1, .tok = &tok,
                     .probe_rule = "test", .base_loss = 1.0};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    report_summary_json(f, &r);
    fclose(f);
    cr_assert_not_null(strstr(text, "\"serves\":{\"L0H0\":[\"previous-token\"],"
                                    "\"L0H1\":[\"bracket\"],\"L1H0\":[],\"L1H1\":[]}"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "\"attends\":{\"L0H0\":[\"previous-token\"],"
                                    "\"L0H1\":[\"bracket\",\"names\"],\"L1H0\":[],\"L1H1\":[]}"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "\"previous-token\":{\"best_head\":"), "%s", text);
    char want[64];
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        snprintf(want, sizeof want, "\"%s\":{\"best_head\":", heads_rel_names[q]);
        const char *p = strstr(text, want);
        cr_assert_not_null(p, "no %s", want);
        snprintf(want, sizeof want, "\"bar\":%g", heads_rel_bar[q]);
        const char *b = strstr(p, "\"bar\":");
        cr_assert(b && strncmp(b, want, strlen(want)) == 0, "%s: %.40s", heads_rel_names[q], b);
    }
    free(text);
}
