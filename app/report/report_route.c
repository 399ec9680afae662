/* report_route: the routing's JSON and page section (report_route.h). The
 * numbers are analysis/heads_route.c's; this file only writes them. */
#include "app/report/report_route.h"

#include "app/report/report_files.h"

int report_routed(const HeadsReport *r)
{
    return r->routing && r->routing->K > 0;
}

/* The relations the report shows: the planted ones only with the built-in
 * corpus's relations known. */
static int shown(const HeadsReport *r, int q)
{
    return !heads_rel_table[q].planted || r->builtin;
}

/* "L1H3" as a JSON string, or null for no head. */
static void head_or_null(FILE *f, int k, int H)
{
    char name[32];
    if (k < 0)
        fputs("null", f);
    else
        fprintf(f, "\"%s\"", report_head_label(name, k, H));
}

void report_routing_json(FILE *f, const HeadsReport *r)
{
    if (!report_routed(r))
        return;
    const HeadsRouting *g = r->routing;
    char name[32];
    fprintf(f, ",\"routing\":{\"k\":%d,\"tokens\":%.0f,\"serving_measured\":%s,\"heads\":{",
            g->K, g->tokens, g->served ? "true" : "false");
    for (int k = 0; k < g->n; k++) {
        fprintf(f, "%s\"%s\":{\"share\":", k ? "," : "", report_head_label(name, k, g->H));
        report_jnum(f, g->share[k]);
        fputs(",\"weight\":", f);
        report_jnum(f, g->weight[k]);
        fputc('}', f);
    }
    fputs("},\"relations\":{", f);
    const char *sep = "";
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        if (!shown(r, q))
            continue;
        fprintf(f, "%s\"%s\":{\"rows\":%.0f,\"top\":", sep, heads_rel_table[q].name, g->rows[q]);
        sep = ",";
        head_or_null(f, g->top[q], g->H);
        fputs(",\"top_serves\":", f);
        fputs(!g->served || g->top[q] < 0 ? "null" : g->top_serves[q] ? "true" : "false", f);
        fputs(",\"serving_heads\":", f);
        if (g->served)
            fprintf(f, "%d", g->nserve[q]);
        else
            fputs("null", f);
        fputs(",\"serving_top\":", f);
        head_or_null(f, g->serve_top[q], g->H);
        fputs(",\"shares\":{", f);
        const double *share = g->rel_share + (size_t)q * g->n;
        for (int k = 0; k < g->n; k++) {
            fprintf(f, "%s\"%s\":", k ? "," : "", report_head_label(name, k, g->H));
            report_jnum(f, share[k]);
        }
        fputs("}}", f);
    }
    fputs("}}", f);
}

void report_routing_html(FILE *f, const HeadsReport *r)
{
    if (!report_routed(r))
        return;
    const HeadsRouting *g = r->routing;
    char name[32];
    fprintf(f, "<h2>Routing: which heads each relation's rows go to</h2>\n<p class=\"note\">"
            "Each token uses %d of the %d heads of a layer, as its layer's router chooses "
            "(docs/heads.md, \"Routing\"); over %.0f tokens of the relation windows.</p>\n"
            "<table><tr><th>relation</th><th>rows</th>", g->K, g->H, g->tokens);
    for (int k = 0; k < g->n; k++)
        fprintf(f, "<th>%s</th>", report_head_label(name, k, g->H));
    fputs("<th>top head</th><th>serves</th></tr>\n<tr><td><i>all tokens</i></td><td></td>", f);
    for (int k = 0; k < g->n; k++)
        fprintf(f, "<td style=\"background:rgba(40,120,80,%.2f)\">%.2f</td>",
                0.75 * g->share[k], g->share[k]);
    fputs("<td></td><td></td></tr>\n", f);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        if (!shown(r, q))
            continue;
        const double *share = g->rel_share + (size_t)q * g->n;
        fprintf(f, "<tr><td>%s</td><td>%.0f</td>", heads_rel_table[q].name, g->rows[q]);
        for (int k = 0; k < g->n; k++) {
            int serves = g->served && heads_serves(&r->st[k], q);
            fprintf(f, "<td style=\"background:rgba(40,120,80,%.2f)\">%s%.2f%s</td>",
                    0.75 * share[k], serves ? "<b>" : "", share[k], serves ? "</b>" : "");
        }
        fprintf(f, "<td>%s</td><td>%s</td></tr>\n",
                g->top[q] < 0 ? "-" : report_head_label(name, g->top[q], g->H),
                !g->served || g->top[q] < 0 ? "-" : g->top_serves[q] ? "yes" : "no");
    }
    fputs("</table>\n<p class=\"note\">A cell: the share of the relation's query rows (all "
          "tokens: of every token) whose router chose that head; a layer's cells sum to K. "
          "Bold: the head serves the relation (attends above the bar and is needed). top "
          "head: the head most rows go to; serves: whether it serves the relation. The mean "
          "route weight of each head when chosen is in summary.json's \"routing\".</p>\n", f);
}
