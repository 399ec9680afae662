/* heads_metrics: the per-head metrics, one row each. Everything that lists
 * them derives from HEADS_METRICS: the fields of HeadStats (and their sums in
 * HeadSums), heads_finish's divisions, the report's columns (heads.csv,
 * heads.json, the page's table and legend), the --heads terminal table's
 * columns and the legend under it and in --help, the explorer's scores and
 * --heads-every's log keys. Adding a metric is one row here, its computation
 * (analysis/heads.c), its test (tests/test_heads.c) and its line in
 * docs/heads.md's metric reference. */
#ifndef HEADCOUNT_HEADS_METRICS_H
#define HEADCOUNT_HEADS_METRICS_H

/* X(field, per, legend, col, fmt, pct, col_legend, explore, log), one row per metric:
 *   field       the HeadStats double; also its name in heads.csv, heads.json, the
 *               explorer's JSON and --heads-every's log
 *   per         what heads_finish divides its HeadSums sum by: rows (the scored query
 *               rows), repeat_rows (rows with an in-text repeat), probe_rows (probe
 *               rows); none: set directly, not summed
 *   legend      its line under the report page's table
 *   col         its column header in ./infer --heads' table, with the spaces before
 *               it (the name alone heads the legend); NULL: not in that table
 *   fmt         how that table prints it
 *   pct         1: the table follows it with a column of it as a percentage of the
 *               base loss ("dloss%")
 *   col_legend  its legend under that table and in --help
 *   explore     its place among the explorer's scores (1 first); 0: not there
 *   log         its place among --heads-every's per-head keys; 0: not logged */
#define HEADS_METRICS(X)                                                                          \
    X(entropy, rows, "mean normalised entropy of a row: 0 = one key, 1 = uniform", "entropy",     \
      " %6.3f", 0, "mean normalised entropy of a row: 0 = one key, 1 = uniform", 1, 1)            \
    X(confidence, rows, "mean largest weight of a row", "  conf", " %5.2f", 0,                    \
      "mean largest weight of a row", 0, 0)                                                       \
    X(distance, rows, "mean distance to the attended tokens, in positions", "  dist", " %5.1f", 0, \
      "mean distance to the attended tokens, in positions", 5, 4)                                 \
    X(prev, rows, "mean weight on the previous token", "  prev", " %5.2f", 0,                     \
      "mean weight on the previous token", 2, 2)                                                  \
    X(self, rows, "mean weight on the token itself", "  self", " %5.2f", 0,                       \
      "mean weight on the token itself", 4, 0)                                                    \
    X(first, rows, "mean weight on the first token of the window", " first", " %5.2f", 0,         \
      "mean weight on the first token of the window", 3, 3)                                       \
    X(delim, rows, "mean weight on whitespace and punctuation keys", " delim", " %5.2f", 0,       \
      "mean weight on whitespace and punctuation keys", 6, 0)                                     \
    X(local3, rows, "mean weight on the token itself and the 3 before it", "  loc3", " %5.2f", 0, \
      "mean weight on the token itself and the 3 before it", 0, 0)                               \
    X(repeat, repeat_rows,                                                                        \
      "mean weight on the token after the last earlier occurrence of the two tokens ending at "   \
      "the row", NULL, NULL, 0, NULL, 7, 5)                                                       \
    X(induction, probe_rows, "probes: weight on the token after the earlier copy", "  ind",       \
      " %5.2f", 0,                                                                                \
      "induction score on the probes: weight on the token after the earlier copy", 8, 0)          \
    X(duplicate, probe_rows, "probes: weight on the earlier copy itself", "   dup", " %5.2f", 0,  \
      "duplicate score on the probes: weight on the earlier copy itself", 9, 0)                   \
    X(delta_loss, none, "loss rise when this head alone is silenced", "   dloss", " %7.4f", 1,    \
      "loss rise when this head alone is silenced (the table's order)", 10, 0)                    \
    X(grad, none,                                                                                 \
      "gate gradient |dL/dgate| (Michel et al. 2019): the sum over windows, then abs", "   grad", \
      " %7.4f", 0, "gate gradient |dL/dgate| (Michel et al. 2019), averaged over windows", 0, 0)  \
    X(grad_window, none, "the same with abs per window, then the mean", NULL, NULL, 0, NULL, 0,   \
      0)                                                                                          \
    X(jsd_layer, none, "mean Jensen-Shannon divergence to the other heads of its layer (nats)",   \
      NULL, NULL, 0, NULL, 0, 0)                                                                  \
    X(jsd_nearest, none, "smallest Jensen-Shannon divergence to any other head (nats)", NULL,     \
      NULL, 0, NULL, 0, 0)

/* HEADS_M_entropy ... : a metric's index in heads_metric_table. */
#define HEADS_METRIC_ENUM(field, ...) HEADS_M_##field,
typedef enum { HEADS_METRICS(HEADS_METRIC_ENUM) HEADS_METRIC_COUNT } HeadsMetric;
#undef HEADS_METRIC_ENUM

/* The fields HEADS_METRICS declares, for HeadStats and HeadSums. */
#define HEADS_METRIC_FIELD(field, ...) double field;

#endif
