/* Tests for app/report: which relations a head serves, as summary.json,
 * report_serves and the relation bars give it, on hand-set head statistics. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/report/report.h"
#include "app/report/report_files.h"
#include "app/report/report_route.h"

Test(report, every_relation_has_a_bar_between_0_and_1)
{
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        cr_assert(heads_rel_table[q].bar > 0.0 && heads_rel_table[q].bar < 1.0, "%s: bar %g",
                  heads_rel_table[q].name, heads_rel_table[q].bar);
    cr_assert_eq(heads_rel_table[HEADS_REL_PREV].bar, HEADS_PREV_MIN);
}

/* heads.csv's per-head columns: the metrics, then one per relation named after
 * it, reading that relation's HeadStats.rel. */
Test(report, per_head_fields_end_with_one_column_per_relation)
{
    HeadStats s = {0};
    s.entropy = 0.25;
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        s.rel[q] = 0.5 + q;
    ReportField first = report_field_at(0);
    cr_assert_str_eq(first.name, "entropy");
    cr_assert_eq(report_field(&s, &first), 0.25);
    cr_assert_str_eq(report_field_at(REPORT_NMETRICS - 1).name, "jsd_nearest");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        ReportField f = report_field_at(REPORT_NMETRICS + (size_t)q);
        cr_assert_str_eq(f.name, heads_rel_table[q].name);
        cr_assert_eq(report_field(&s, &f), 0.5 + q, "%s", f.name);
        char want[128];
        snprintf(want, sizeof want, "mean weight on the %s relation's key (docs/heads.md, "
                 "Relations)", heads_rel_table[q].name);
        cr_assert_str_eq(f.legend, want);
    }
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
    st[1].rel[HEADS_REL_BRACKET] = heads_rel_table[HEADS_REL_BRACKET].bar + 0.2;
    st[1].rel[HEADS_REL_NAMES] = heads_rel_table[HEADS_REL_NAMES].bar + 0.01;
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        st[2].rel[q] = 0.99;
        st[3].rel[q] = heads_rel_table[q].bar - 0.01;
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

Test(report, summary_json_lists_each_relations_bar_kind_and_each_heads_relations)
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
        snprintf(want, sizeof want, "\"%s\":{\"best_head\":", heads_rel_table[q].name);
        const char *p = strstr(text, want);
        cr_assert_not_null(p, "no %s", want);
        snprintf(want, sizeof want, "\"bar\":%g", heads_rel_table[q].bar);
        const char *b = strstr(p, "\"bar\":");
        cr_assert(b && strncmp(b, want, strlen(want)) == 0, "%s: %.40s",
                  heads_rel_table[q].name, b);
        /* its kind right after the bar, as the scripts read it */
        char kind[96];
        snprintf(kind, sizeof kind, "\"bar\":%g,\"planted\":%s", heads_rel_table[q].bar,
                 q >= HEADS_REL_TEXT ? "true" : "false");
        cr_assert(strncmp(b, kind, strlen(kind)) == 0, "%s: %.60s", heads_rel_table[q].name, b);
    }
    free(text);
}

/* Sums for a relation with rows whose uniform head scores 0.1. */
static RelationSums some_rows(void)
{
    RelationSums rs;
    memset(&rs, 0, sizeof rs);
    rs.rows = 10.0;
    rs.uniform = 1.0;
    return rs;
}

Test(report, a_closed_head_attends_to_nothing_serves_nothing_and_is_never_the_best_head)
{
    HeadStats st[4];
    hand_set(st);
    RelationSums rs = some_rows();
    HeadsRelation r;
    heads_relation_finish(&r, st, &rs, HEADS_REL_PREV, 4);
    cr_assert_eq(r.best, 0, "open: L0H0 has the most previous-token attention");
    st[0].closed = 1;
    heads_relation_finish(&r, st, &rs, HEADS_REL_PREV, 4);
    cr_assert_eq(r.best, 1, "closed, L0H0 gives way to the next head, L0H1");
    char buf[256];
    cr_assert_str_eq(report_serves(buf, sizeof buf, &st[0], "+"), "");
    cr_assert_str_eq(report_rels(buf, sizeof buf, &st[0], "+", heads_attends), "");
    cr_assert_str_eq(report_rels(buf, sizeof buf, &st[0], "+", heads_needed), "");
    for (int k = 0; k < 4; k++)
        st[k].closed = 1;
    heads_relation_finish(&r, st, &rs, HEADS_REL_PREV, 4);
    cr_assert_eq(r.best, -1, "every head closed: no best head");
    cr_assert_str_eq(report_best_label(buf, &r, 2), "none");
}

/* The reports name a relation's best head only when it attends to the key above
 * the uniform head: 0.040 against a uniform 0.041 (the "rare" case of issue 37)
 * and a tie are "none"; a relation without rows is "-". */
Test(report, a_best_head_not_above_the_uniform_head_is_printed_none)
{
    char buf[32];
    HeadsRelation x = {.best = 3, .attention = 0.040, .uniform = 0.041, .rows = 100.0};
    cr_assert_eq(heads_relation_named(&x), -1);
    cr_assert_str_eq(report_best_label(buf, &x, 2), "none");
    x.attention = x.uniform;
    cr_assert_str_eq(report_best_label(buf, &x, 2), "none", "a tie is not above");
    x.attention = 0.05;
    cr_assert_eq(heads_relation_named(&x), 3);
    cr_assert_str_eq(report_best_label(buf, &x, 2), "L1H1");
    x.rows = 0.0;
    cr_assert_str_eq(report_best_label(buf, &x, 2), "-");
}

/* A routed model's routing in summary.json and on the page, and nothing of it
 * for a plain model. */
Test(report, summary_json_holds_the_routing_only_for_a_routed_model)
{
    HeadStats st[4];
    hand_set(st);
    HeadsRelation rel[HEADS_REL_COUNT] = {{0}};
    double jsd[16] = {0}, layer_eff[2] = {1, 1};
    Tokenizer tok = {.V = 10};
    HeadsRouting g;
    cr_assert_eq(heads_routing_init(&g, 2, 2), 0);
    HeadsReport r = {.cfg = {.L = 2, .H = 2}, .st = st, .jsd = jsd,
                     .layer_effective = layer_eff, .rel = rel, .builtin = 1, .tok = &tok,
                     .probe_rule = "test", .base_loss = 1.0, .routing = &g};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    report_summary_json(f, &r);
    fclose(f);
    cr_assert_null(strstr(text, "\"routing\""), "K = 0 is no routed model: %s", text);
    free(text);
    /* K = 1, every token on head 1 of each layer; previous-token's 5 rows too. */
    g.K = 1;
    g.tokens = 20;
    g.served = 1;
    g.share[1] = g.share[3] = 1.0;
    g.weight[1] = g.weight[3] = 1.0;
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        g.top[q] = g.serve_top[q] = -1;
    g.rows[HEADS_REL_PREV] = 5;
    g.rel_share[HEADS_REL_PREV * 4 + 1] = g.rel_share[HEADS_REL_PREV * 4 + 3] = 1.0;
    g.top[HEADS_REL_PREV] = 1;
    g.nserve[HEADS_REL_PREV] = 1;
    g.serve_top[HEADS_REL_PREV] = 0;
    f = open_memstream(&text, &len);
    report_summary_json(f, &r);
    fclose(f);
    cr_assert_not_null(strstr(text, ",\"routing\":{\"k\":1,\"tokens\":20,\"serving_measured\":"
                                    "true,\"heads\":{\"L0H0\":{\"share\":0,\"weight\":0},"
                                    "\"L0H1\":{\"share\":1,\"weight\":1},"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "\"previous-token\":{\"rows\":5,\"top\":\"L0H1\","
                                    "\"top_serves\":false,\"serving_heads\":1,\"serving_top\":"
                                    "\"L0H0\",\"shares\":{\"L0H0\":0,\"L0H1\":1,\"L1H0\":0,"
                                    "\"L1H1\":1}}"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "\"bracket\":{\"rows\":0,\"top\":null,\"top_serves\":null,"),
                       "%s", text);
    free(text);
    /* The page: a row per relation, the serving head's cell in bold. */
    f = open_memstream(&text, &len);
    report_routing_html(f, &r);
    fclose(f);
    cr_assert_not_null(strstr(text, "<tr><td>previous-token</td><td>5</td>"), "%s", text);
    cr_assert_not_null(strstr(text, "<b>0.00</b>"), "L0H0 serves previous-token: %s", text);
    cr_assert_not_null(strstr(text, "<td>L0H1</td><td>no</td>"), "%s", text);
    free(text);
    heads_routing_free(&g);
}
