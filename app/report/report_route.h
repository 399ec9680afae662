/* report_route: a routed model's routing (analysis/heads_route.h) in the heads
 * report: summary.json's "routing" object (which ./infer --heads --json prints
 * too) and the page's table of each relation's query rows by head. Written only
 * for a routed model (HeadsReport.routing with K > 0), so a plain model's files
 * are unchanged. Internal to app/report. */
#ifndef HEADCOUNT_REPORT_ROUTE_H
#define HEADCOUNT_REPORT_ROUTE_H

#include <stdio.h>

#include "app/report/report.h"

/* 1 when r carries a routing to write. */
int report_routed(const HeadsReport *r);

/* ,"routing":{"k","tokens","serving_measured","heads":{head:{"share","weight"}},
 * "relations":{name:{"rows","top","top_serves","serving_heads","serving_top",
 * "shares":{head:share}}}}; nothing when not routed. */
void report_routing_json(FILE *f, const HeadsReport *r);

/* The page's section: each head's share and weight, and relations x heads, each
 * cell the share of the relation's query rows routed to the head; nothing when
 * not routed. */
void report_routing_html(FILE *f, const HeadsReport *r);

#endif
