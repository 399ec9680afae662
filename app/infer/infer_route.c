/* infer_route: --heads' routing section for a routed model: each head's share
 * of its layer's tokens and its mean route weight when chosen, then each
 * relation's query rows by head, with the head most of them go to and whether
 * it serves the relation. The numbers are analysis/heads_route.c's (the
 * HEADS_ROUTING stage of heads_measure); docs/heads.md, "Routing", defines
 * them. A plain model prints nothing here. */
#include <stdio.h>

#include "analysis/heads_route.h"
#include "app/infer/infer_modes.h"

static const char *head_name(char buf[32], int k, int H)
{
    if (k < 0)
        snprintf(buf, 32, "-");
    else
        snprintf(buf, 32, "L%dH%d", k / H, k % H);
    return buf;
}

void infer_route_print(const HeadsRouting *g, int planted)
{
    if (g->K <= 0)
        return;
    char a[32], b[32];
    printf("\nrouting (docs/heads.md, Routing): each token uses %d of the %d heads of a layer; "
           "over %.0f tokens of the relation windows\n", g->K, g->H, g->tokens);
    printf("  head    share  weight   (share: of the tokens of its layer whose router chose "
           "it; weight: its mean route weight when chosen)\n");
    for (int k = 0; k < g->n; k++)
        printf("  %-7s %5.3f  %6.3f\n", head_name(a, k, g->H), g->share[k], g->weight[k]);
    printf("  each relation's query rows by head (the share of its rows routed to each; top: "
           "the head most go to; serves: whether top serves the relation; serving: the "
           "serving head most rows go to, and its share):\n");
    printf("  %-15s %7s  %-7s %-6s %-12s", "relation", "rows", "top", "serves", "serving");
    for (int k = 0; k < g->n; k++)
        printf(" %5s", head_name(a, k, g->H));
    printf("\n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        if (heads_rel_table[q].planted && !planted)
            continue;
        const double *share = g->rel_share + (size_t)q * g->n;
        char serving[48];
        if (!g->served || g->top[q] < 0)
            snprintf(serving, sizeof serving, "-");
        else if (g->serve_top[q] < 0)
            snprintf(serving, sizeof serving, "none");
        else
            snprintf(serving, sizeof serving, "%s %.2f", head_name(b, g->serve_top[q], g->H),
                     share[g->serve_top[q]]);
        printf("  %-15s %7.0f  %-7s %-6s %-12s", heads_rel_table[q].name, g->rows[q],
               head_name(a, g->top[q], g->H),
               !g->served || g->top[q] < 0 ? "-" : g->top_serves[q] ? "yes" : "no", serving);
        for (int k = 0; k < g->n; k++)
            printf(" %5.2f", share[k]);
        printf("\n");
    }
}
