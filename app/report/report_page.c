/* report_page: the pictures of --heads --report DIR: one SVG heatmap per head
 * (a text window and a probe) and index.html, a self-contained page (inline SVG,
 * <img> links to the heatmaps beside it, no network). Its numbers are the
 * HeadsReport's; the data files are report.c's. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/report/report.h"
#include "app/report/report_files.h"
#include "app/report/report_route.h"
#include "app/report/report_page.h"
#include "model/gates.h"
#include "util/errbuf.h"
#include "util/json.h"

static const char *const TYPE_COLOURS[HEAD_TYPES] = {
    "#d62728", "#e377c2", "#1f77b4", "#17becf", "#7f7f7f", "#9467bd", "#2ca02c", "#ff7f0e",
    "#8c564b", "#bbbbbb",
};

/* Text escaped for HTML/XML (element content and quoted attributes); a byte
 * outside well-formed UTF-8 (a Latin-1 file name) is &#xXX; with its value, as
 * the JSON files write it \u00XX, so the page stays valid UTF-8. */
static void xml_text(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t u = *p >= 0x80 ? json_utf8_len(p) : 1;
        if (u == 0)
            fprintf(f, "&#x%02x;", *p++);
        else if (u > 1) {
            fwrite(p, 1, u, f);
            p += u;
        } else {
            switch (*p) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&#39;", f); break;
            default: fputc(*p, f);
            }
            p++;
        }
    }
}

/* Axis labels longer than this many characters are cut, with an ellipsis. */
#define AXIS_LABEL_CHARS 10

/* Token id's label (tok_label) for an axis, cut to AXIS_LABEL_CHARS characters
 * and an ellipsis; returns how many characters it has. */
static int axis_label(char *buf, size_t len, const Tokenizer *tok, int id)
{
    report_token_label(buf, len, tok, id);
    int chars = 0;
    for (size_t k = 0; buf[k]; k++)
        if (((unsigned char)buf[k] & 0xc0) != 0x80 && ++chars > AXIS_LABEL_CHARS) {
            snprintf(buf + k, len - k, "\xe2\x80\xa6");  /* U+2026 ellipsis */
            return chars;
        }
    return chars;
}

/* "byte" for a byte-level vocabulary, else "token": the unit of a loss. */
static const char *unit(const HeadsReport *r)
{
    return r->tok->nmerges ? "token" : "byte";
}

/* v in [0, 1] -> colour along white, #6baed6, #08306b. */
static void ramp(char out[8], double v)
{
    static const double stops[3][3] = {{255, 255, 255}, {107, 174, 214}, {8, 48, 107}};
    v = (v < 0 ? 0 : v > 1 ? 1 : v) * 2.0;
    int k = v >= 1.0 ? 1 : 0;
    double t = v - k;
    int rgb[3];
    for (int c = 0; c < 3; c++)
        rgb[c] = (int)lround(stops[k][c] + t * (stops[k + 1][c] - stops[k][c]));
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* Attention weight -> colour: sqrt(w) on the ramp, so weak but real attention
 * stays visible. */
static void colour(char out[8], double w)
{
    ramp(out, sqrt(w < 0 ? 0 : w));
}

/* The colour bar of a heatmap at (x, y), h tall: weight 1 at the top, 0 at the
 * bottom, positioned by sqrt(w) as the cells are coloured. */
static void svg_colour_bar(FILE *f, int x, int y, int h)
{
    static const double ticks[] = {0, 0.01, 0.05, 0.1, 0.25, 0.5, 1};
    for (int k = 0; k < 40; k++) {
        char c[8];
        ramp(c, 1.0 - (k + 0.5) / 40.0);
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"12\" height=\"%.2f\" fill=\"%s\"/>", x,
                y + k * h / 40.0, h / 40.0 + 0.3, c);
    }
    fprintf(f, "\n<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"%d\" fill=\"none\" "
            "stroke=\"#999\"/>\n<g class=\"lab\" font-size=\"11\" font-family=\"sans-serif\" "
            "fill=\"#333\">"
            "<text x=\"%d\" y=\"%d\">weight</text>\n", x, y, h, x - 4, y - 8);
    for (size_t k = 0; k < sizeof ticks / sizeof ticks[0]; k++) {
        double py = y + (1.0 - sqrt(ticks[k])) * h;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>"
                "<text x=\"%d\" y=\"%.1f\">%g</text>\n", x + 12, py, x + 16, py, x + 19, py + 4,
                ticks[k]);
    }
    fprintf(f, "</g>\n");
}

/* One head's attention att[T][T] on the tokens ids[T]: keys along the top,
 * queries down the left, the masked upper triangle grey, a colour bar on the
 * right, axis titles. Labels of one character sit upright, one per cell;
 * when any is longer, they run along the rows and up the columns, with room
 * made for the longest (label is scratch for T of them). All text is hidden
 * when the picture is shown at less than 80% of its size (a thumbnail), where
 * it would be a few pixels high; the page around a thumbnail names the head and
 * the axes. */
static void svg_heatmap(FILE *f, const float *att, const int *ids, const Tokenizer *tok, int T,
                        char (*label)[REPORT_LABEL_MAX], const char *title)
{
    int widest = 1;
    for (int t = 0; t < T; t++) {
        int c = axis_label(label[t], sizeof label[t], tok, ids[t]);
        widest = c > widest ? c : widest;
    }
    /* About 6 px per character at font size 9. */
    int cell = 12, left = widest > 1 ? 14 + 6 * widest : 40;
    int top = widest > 1 && 44 + 6 * widest > 58 ? 44 + 6 * widest : 58;
    int size = T * cell, bar = 70;
    int width = left + size + bar, height = top + size + 8;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\">\n"
            "<style>@media (max-width: %dpx) { .lab { display: none } }</style>\n",
            width, height, width, height, width * 4 / 5);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
            "<text class=\"lab\" x=\"%d\" y=\"14\" font-size=\"13\" font-family=\"sans-serif\" "
            "font-weight=\"bold\">", left);
    xml_text(f, title);
    fprintf(f, "</text>\n<g class=\"lab\" font-size=\"12\" font-family=\"sans-serif\" "
            "fill=\"#333\">"
            "<text x=\"%d\" y=\"32\">key (the position attended to) &#8594;</text>"
            "<text transform=\"translate(6 %d) rotate(90)\">"
            "query (the position attending) &#8594;</text></g>\n", left, top);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eee\"/>\n",
            left, top, size, size);
    for (int i = 0; i < T; i++)
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", left,
                top + i * cell, (i + 1) * cell, cell);
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double w = att[(size_t)i * T + j];
            if (w < 0.004)
                continue;
            char c[8];
            colour(c, w);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
                    left + j * cell, top + i * cell, cell, cell, c);
        }
    fprintf(f, "<g class=\"lab\" font-size=\"9\" text-anchor=\"%s\" fill=\"#333\">\n",
            widest > 1 ? "end" : "middle");
    for (int t = 0; t < T; t++) {
        if (widest > 1)
            fprintf(f, "<text transform=\"translate(%d %d) rotate(-90)\" text-anchor=\"start\">",
                    left + t * cell + cell / 2 + 3, top - 4);
        else
            fprintf(f, "<text x=\"%d\" y=\"%d\">", left + t * cell + cell / 2, top - 4);
        xml_text(f, label[t]);
        fprintf(f, "</text><text x=\"%d\" y=\"%d\">", widest > 1 ? left - 3 : left - 10,
                top + t * cell + cell - 3);
        xml_text(f, label[t]);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
    svg_colour_bar(f, left + size + 12, top, size < 240 ? size : 240);
    fprintf(f, "</svg>\n");
}

int report_write_heatmaps(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    char sub[4000];
    if (report_heatmap_dir(sub, sizeof sub, dir, err, errlen))
        return -1;
    int H = r->cfg.H, n = r->cfg.L * H;
    int most = r->T > r->probe_len ? r->T : r->probe_len;
    /* Scratch for one heatmap's axis labels. */
    char (*label)[REPORT_LABEL_MAX] = malloc((size_t)most * sizeof *label);
    if (!label)
        return err_set(err, errlen, "out of memory for %d axis labels", most);
    for (int k = 0; k < n; k++)
        for (int probe = 0; probe < 2; probe++) {
            char name[64], title[160];
            const HeadStats *s = &r->st[k];
            snprintf(name, sizeof name, "%s_L%d_H%d.svg", probe ? "probe" : "text", k / H, k % H);
            snprintf(title, sizeof title, "head L%dH%d  %s  (%s)", k / H, k % H,
                     heads_type_names[s->type], probe ? "repeated random probe" : "text window");
            ReportOut o;
            if (report_out_open(&o, sub, name, err, errlen)) {
                free(label);
                return -1;
            }
            int T = probe ? r->probe_len : r->T;
            const float *att = (probe ? r->att_probe : r->att_text) + (size_t)k * T * T;
            svg_heatmap(o.f, att, probe ? r->probe : r->text, r->tok, T, label, title);
            if (report_out_close(&o, err, errlen)) {
                free(label);
                return -1;
            }
        }
    free(label);
    return 0;
}

/* index.html, section by section. */
static void html_head(FILE *f, const HeadsReport *r)
{
    const HeadsSummary *s = &r->sum;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<title>headcount: attention heads</title>\n<style>\n"
            "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,"
            "sans-serif;margin:24px 32px;color:#222;background:#fafafa;max-width:1600px}\n"
            "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;"
            "border-bottom:1px solid #ddd;padding-bottom:4px}\n"
            ".meta{color:#555;font-size:13px}.cards{display:flex;flex-wrap:wrap;gap:10px;"
            "margin:14px 0}\n.card{background:#fff;border:1px solid #e2e2e2;border-radius:6px;"
            "padding:8px 14px;min-width:120px}.card b{display:block;font-size:20px}"
            ".card span{font-size:12px;color:#666}\n"
            ".grid{display:grid;gap:8px;grid-template-columns:28px repeat(%d,minmax(0,340px))}\n"
            ".grid.small{grid-template-columns:28px repeat(%d,minmax(0,220px))}\n"
            ".grid figure{margin:0;background:#fff;border:1px solid #e2e2e2;border-radius:6px;"
            "padding:4px;border-top:4px solid var(--c)}\n.grid img{width:100%%;display:block}"
            ".grid figcaption{font-size:11px;line-height:1.35;padding:2px}\n"
            ".rowlab{writing-mode:vertical-rl;transform:rotate(180deg);text-align:center;"
            "font-size:12px;color:#666}\n"
            ".tag{display:inline-block;border-radius:3px;padding:0 5px;color:#fff;font-size:11px;"
            "background:var(--c)}\n"
            "table{border-collapse:collapse;font-size:12px;background:#fff}"
            "th,td{padding:3px 7px;border-bottom:1px solid #eee;text-align:right}"
            "th{background:#f0f0f0;position:sticky;top:0}td:nth-child(-n+2),th:nth-child(-n+2)"
            "{text-align:left}\n.legend span{margin-right:10px;font-size:12px}"
            ".note{font-size:12px;color:#555;max-width:1000px}\n"
            "dl.cols{font-size:12px;max-width:1000px}dl.cols dt{font-weight:bold;float:left;"
            "clear:left;margin-right:.6em}dl.cols dd{margin:0 0 2px 0}\n"
            "table.metrics{font-size:11px}table.metrics td{padding:2px 3px}"
            "table.metrics th{padding:4px 2px;writing-mode:vertical-rl;transform:rotate(180deg);"
            "text-align:left;vertical-align:bottom;max-height:11em}\n</style></head><body>\n",
            r->cfg.H, r->cfg.H);
    fprintf(f, "<h1>What the attention heads do</h1>\n<div class=\"meta\">checkpoint <code>");
    xml_text(f, r->ckpt);
    fprintf(f, "</code> (L=%d, H=%d, C=%d, D=%d, T=%d, V=%d) on <code>", r->cfg.L, r->cfg.H,
            r->cfg.C, r->cfg.D, r->cfg.T, r->cfg.V);
    xml_text(f, r->data);
    fprintf(f, "</code>: %d windows of %d tokens, %d probes of %d tokens, seed %llu</div>\n",
            r->windows, r->T, r->probes, r->probe_len, r->seed);
    fprintf(f, "<div class=\"cards\"><div class=\"card\"><b>%.4f</b><span>base loss "
            "(nats/%s)</span></div><div class=\"card\"><b>%.2f / %d</b><span>effective "
            "distinct heads</span></div><div class=\"card\"><b>%d</b><span>heads costing &lt; 1%% "
            "when removed</span></div><div class=\"card\"><b>%+.2f%%</b><span>largest single-head "
            "cost</span></div><div class=\"card\"><b>%.3f</b><span>mean normalised entropy"
            "</span></div><div class=\"card\"><b>%.1f</b><span>mean attention distance</span>"
            "</div></div>\n", r->base_loss, unit(r), r->effective, s->active, s->removable_1pct,
            100.0 * s->max_importance / r->base_loss, s->mean_entropy, s->mean_distance);
    fprintf(f, "<div class=\"legend\">");
    for (int t = 0; t < HEAD_TYPES; t++)
        fprintf(f, "<span><span class=\"tag\" style=\"--c:%s\">%s</span> %d</span>",
                TYPE_COLOURS[t], heads_type_names[t], s->type_counts[t]);
    fprintf(f, "</div>\n");
}

static void html_grid(FILE *f, const HeadsReport *r, int probe)
{
    int H = r->cfg.H;
    fprintf(f, "<h2>%s</h2>\n<p class=\"note\">%s Rows are queries, columns keys; colour is "
            "the square root of the weight (white 0, dark blue 1). Click a map for the full-size "
            "SVG, with the tokens on both axes and a colour scale.</p>\n"
            "<div class=\"grid%s\">\n",
            probe ? "Heads on a repeated random probe" :
                    "Heads on one text window (layer &times; head)",
            probe ? "The first half is random tokens, the second half repeats it: an induction "
                    "head lights the diagonal one step right of the repeat offset, a duplicate "
                    "head the offset itself." :
                    "The first analysed window of the file.",
            probe ? " small" : "");
    for (int l = 0; l < r->cfg.L; l++) {
        fprintf(f, "<div class=\"rowlab\">layer %d</div>\n", l);
        for (int h = 0; h < H; h++) {
            const HeadStats *s = &r->st[l * H + h];
            char name[64];
            snprintf(name, sizeof name, "heatmaps/%s_L%d_H%d.svg", probe ? "probe" : "text", l, h);
            fprintf(f, "<figure style=\"--c:%s\"><a href=\"%s\"><img src=\"%s\" alt=\"head L%dH%d"
                    "\"></a><figcaption><b>L%dH%d</b> <span class=\"tag\" style=\"--c:%s\">%s"
                    "</span><br>", TYPE_COLOURS[s->type], name, name, l, h, l, h,
                    TYPE_COLOURS[s->type], heads_type_names[s->type]);
            if (probe)
                fprintf(f, "induction %.2f &middot; duplicate %.2f", s->induction, s->duplicate);
            else
                fprintf(f, "prev %.2f &middot; first %.2f &middot; dist %.1f<br>&Delta;loss "
                        "%+.2f%%", s->prev, s->first, s->distance,
                        100.0 * s->delta_loss / r->base_loss);
            fprintf(f, "</figcaption></figure>\n");
        }
    }
    fprintf(f, "</div>\n");
}

/* A legend's lines: one per column, its name and what it means. */
static void html_legend(FILE *f, const char *const (*cols)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fputs("<dt>", f);
        xml_text(f, cols[i][0]);
        fputs("</dt><dd>", f);
        xml_text(f, cols[i][1]);
        fputs("</dd>", f);
    }
}

/* The Metrics table's columns besides report_fields. */
static const char *const METRIC_COLUMNS[][2] = {
    {"head", "layer and head, 0-based: L1H3 is layer 1, head 3"},
    {"type", "what the head does by its scores (docs/heads.md, Types); masked: --mask"},
    {"nearest", "the head with the most similar attention (smallest JSD)"},
    {"serves", "relations it attends to above the bar and is needed for; - none"},
    {"gate", "models trained with --head-gates: the learned gate; closed = 0, the head is off"},
};

/* The Relations table's columns. */
static const char *const RELATION_COLUMNS[][2] = {
    {"relation", "the relation (docs/heads.md, Relations)"},
    {"best head", "the head with the most attention on the key, closed and masked heads aside; "
     "none: no head attends above the uniform head; -: the relation has no rows"},
    {"attention", "the best head's mean weight on the key"},
    {"uniform", "what a head spreading its weight evenly scores on the key"},
    {"loss", "mean loss on the tokens the relation predicts"},
    {"rows", "query rows that have the relation's key in the window"},
    {"loss ratio", "copy and names: the loss on the repeat over the loss at the first occurrence"},
    {"bar", "the attention a head needs to attend to the relation"},
    {"accuracy", "minimal pairs: share where the right token's logit beats the wrong one's"},
    {"logit diff", "minimal pairs: the mean margin"},
    {"pairs", "minimal pairs scored"},
    {"needed head (share lost)", "the head whose silencing alone costs the relation most, and "
     "the share of the relation's logit difference (of its loss, without pairs) it takes away: "
     "1 takes the whole margin; above 1 the margin turns over and the wrong token wins"},
    {"needed set (share)", "heads silenced together, largest cost first, until the share is gone"},
    {"attended by", "the heads above the bar"},
    {"served by", "the heads above the bar that are also needed"},
};

/* Field i of the Metrics table is shown: every metric, and a relation's column
 * where the relation can have keys on the analysed text (a planted one only on the
 * built-in corpus's text; heads.csv keeps every column). */
static int metric_shown(const HeadsReport *r, size_t i)
{
    return i < REPORT_NMETRICS || r->builtin || !heads_rel_table[i - REPORT_NMETRICS].planted;
}

static void html_table(FILE *f, const HeadsReport *r)
{
    int H = r->cfg.H, n = r->cfg.L * H;
    fprintf(f, "<h2>Metrics</h2>\n<table class=\"metrics\"><tr><th>head</th><th>type</th>");
    for (size_t i = 0; i < REPORT_NFIELDS; i++) {
        if (!metric_shown(r, i))
            continue;
        ReportField fi = report_field_at(i);
        fprintf(f, "<th>%s</th>", fi.offset == offsetof(HeadStats, entropy)
                ? "entropy (normalised, 0&ndash;1)" : fi.name);
    }
    fprintf(f, "<th>nearest</th><th>serves</th>%s</tr>\n", r->log_alpha ? "<th>gate</th>" : "");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        char near[32] = "-";
        if (s->nearest >= 0)
            report_head_label(near, s->nearest, H);
        fprintf(f, "<tr><td>L%dH%d</td><td><span class=\"tag\" style=\"--c:%s\">%s</span></td>",
                k / H, k % H, TYPE_COLOURS[s->type], heads_type_names[s->type]);
        for (size_t i = 0; i < REPORT_NFIELDS; i++) {
            if (!metric_shown(r, i))
                continue;
            ReportField fi = report_field_at(i);
            fprintf(f, "<td>%.2f</td>", report_field(s, &fi));
        }
        char serves[HEADS_REL_COUNT * 32];
        report_serves(serves, sizeof serves, s, ", ");
        fprintf(f, "<td>%s</td><td>%s</td>", near, serves[0] ? serves : "-");
        if (r->log_alpha) {
            float z = gate_eval(r->log_alpha[k], NULL);
            if (z == 0.0f)
                fputs("<td>closed</td>", f);
            else
                fprintf(f, "<td>%.3f</td>", (double)z);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n<dl class=\"cols\">", f);
    for (size_t i = 0; i < REPORT_NFIELDS; i++) {
        if (!metric_shown(r, i))
            continue;
        ReportField fi = report_field_at(i);
        fprintf(f, "<dt>%s</dt><dd>", fi.name);
        xml_text(f, fi.legend);
        fputs("</dd>", f);
    }
    html_legend(f, METRIC_COLUMNS, sizeof METRIC_COLUMNS / sizeof METRIC_COLUMNS[0] -
                (r->log_alpha ? 0 : 1));
    fputs("</dl>\n", f);
    fprintf(f, "<p class=\"note\">Entropy is H(row) / ln(keys in the row): 0 = one "
            "key, 1 = uniform. Definitions and sources: docs/heads.md. Share of "
            "delimiter keys (what a uniform head scores on delim): %.3f.</p>\n", r->delim_share);
}

/* Horizontal bars: the loss increase when each head alone is silenced, and
 * the gate gradient, each scaled to its largest value. */
static void html_importance(FILE *f, const HeadsReport *r)
{
    int H = r->cfg.H, n = r->cfg.L * H, row = 18, lab = 50, bw = 330, gap = 150;
    double md = 1e-12, mg = 1e-12;
    for (int k = 0; k < n; k++) {
        md = fmax(md, fabs(r->st[k].delta_loss));
        mg = fmax(mg, r->st[k].grad);
    }
    fprintf(f, "<h2>Importance</h2>\n<p class=\"note\"><span style=\"color:#1f77b4\">&#9632;"
            "</span> loss increase when the head alone is silenced (Michel et al. 2019, "
            "ablation) &nbsp; <span style=\"color:#ff7f0e\">&#9632;</span> |gate gradient| "
            "(Michel et al. 2019, eq. 2)</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
            "width=\"%d\" height=\"%d\" font-size=\"11\" font-family=\"sans-serif\">\n",
            lab + 2 * (bw + gap), n * row + 24);
    fprintf(f, "<text x=\"%d\" y=\"12\" font-weight=\"bold\">&#916; loss</text><text x=\"%d\" "
            "y=\"12\" font-weight=\"bold\">|dL/d&#958;|</text>\n", lab, lab + bw + gap);
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        int y = 20 + k * row;
        double d = s->delta_loss / md * bw, g = s->grad / mg * bw;
        fprintf(f, "<text x=\"0\" y=\"%d\">L%dH%d</text>", y + 12, k / H, k % H);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", lab,
                y + 2, fmax(d, 0.0), row - 5, s->masked ? "#ccc" : "#1f77b4");
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%+.4f (%+.2f%%)</text>", lab + fmax(d, 0.0) + 4,
                y + 12, s->delta_loss, 100.0 * s->delta_loss / r->base_loss);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#ff7f0e\"/>",
                lab + bw + gap, y + 2, g, row - 5);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.4f</text>\n", lab + bw + gap + g + 4, y + 12,
                s->grad);
    }
    fprintf(f, "</svg>\n");
}

/* The mean JSD between every pair of heads, with layer boundaries drawn:
 * dark = similar, white = the most divergent pair. */
static void html_divergence(FILE *f, const HeadsReport *r)
{
    int H = r->cfg.H, n = r->cfg.L * H;
    int cell = n <= 16 ? 28 : n <= 64 ? 12 : 6, lab = 40, size = n * cell;
    double mx = 1e-12;
    for (size_t i = 0; i < (size_t)n * n; i++)
        mx = fmax(mx, r->jsd[i]);
    fprintf(f, "<h2>Redundancy: Jensen-Shannon divergence between heads</h2>\n<p class=\"note\">"
            "Mean JSD (nats, 0 = identical rows, ln 2 = 0.693 = disjoint) between the attention "
            "rows of every pair of heads; hover a cell for its value. Effective number of "
            "distinct heads %.2f (per layer:", r->effective);
    for (int l = 0; l < r->cfg.L; l++)
        fprintf(f, " %.2f", r->layer_effective[l]);
    fprintf(f, "); mean JSD within a layer %.3f, between layers %.3f.</p>\n", r->sum.jsd_within,
            r->sum.jsd_between);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-size=\"10\" font-family=\"sans-serif\">\n", lab + size + 110,
            lab + size + 10);
    for (int p = 0; p < n; p++) {
        char name[32];
        report_head_label(name, p, H);
        if (cell >= 12)
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text><text x=\"%d\" "
                    "y=\"%d\" text-anchor=\"middle\">%s</text>\n", lab - 3,
                    lab + p * cell + cell / 2 + 4, name, lab + p * cell + cell / 2, lab - 4, name);
        for (int q = 0; q < n; q++) {
            char c[8];
            double d = r->jsd[(size_t)p * n + q];
            ramp(c, 1.0 - d / mx);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                    "<title>L%dH%d vs L%dH%d: %.3f</title></rect>", lab + q * cell, lab + p * cell,
                    cell, cell, c, p / H, p % H, q / H, q % H, d);
        }
        fputc('\n', f);
    }
    for (int l = 1; l < r->cfg.L; l++)
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#d62728\"/>"
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#d62728\"/>\n",
                lab + l * H * cell, lab, lab + l * H * cell, lab + size, lab, lab + l * H * cell,
                lab + size, lab + l * H * cell);
    /* Colour bar: JSD 0 at the top, the largest at the bottom. */
    int bx = lab + size + 14, bh = size < 200 ? size : 200;
    for (int k = 0; k < 20; k++) {
        char c[8];
        ramp(c, 1.0 - k / 19.0);
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"14\" height=\"%.1f\" fill=\"%s\"/>", bx,
                lab + k * bh / 20.0, bh / 20.0 + 0.5, c);
    }
    fprintf(f, "\n<text x=\"%d\" y=\"%d\">0 (same)</text><text x=\"%d\" y=\"%d\">%.3f</text>"
            "</svg>\n", bx + 18, lab + 9, bx + 18, lab + bh, mx);
}

/* A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about n
 * ticks over span. */
static double nice_step(double span, int n)
{
    double raw = span / n, mag = pow(10.0, floor(log10(raw)));
    static const double m[] = {1, 2, 2.5, 5, 10};
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++)
        if (m[k] * mag >= raw * 0.999)
            return m[k] * mag;
    return 10 * mag;
}

/* Loss against heads removed, with the base loss as a dashed line, ticks and
 * labels on both axes. */
static void html_prune(FILE *f, const HeadsReport *r)
{
    if (!r->prune_order)
        return;
    int w = 680, h = 300, x0 = 78, y0 = 20, pw = w - x0 - 24, ph = h - y0 - 58;
    double lo = r->prune_loss[0], hi = r->prune_loss[0];
    for (int k = 0; k <= r->nprune; k++) {
        lo = fmin(lo, r->prune_loss[k]);
        hi = fmax(hi, r->prune_loss[k]);
    }
    double pad = (hi - lo) * 0.06 + 1e-9;
    lo -= pad;
    hi += pad;
    int nx = r->nprune > 0 ? r->nprune : 1;
    double dx = (double)pw / nx;
#define PRUNE_Y(v) (y0 + ph - ((v) - lo) / (hi - lo) * ph)
    fprintf(f, "<h2>Pruning curve</h2>\n<p class=\"note\">Heads removed one at a time, least "
            "important (by &#916; loss) first (after Michel et al. 2019, fig. 3); the dashed "
            "line is the loss with every head.</p>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-size=\"11\" font-family=\"sans-serif\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
            "height=\"%d\" fill=\"#fff\" stroke=\"#999\"/>\n", w, h, x0, y0, pw, ph);
    double ys = nice_step(hi - lo, 5);
    for (double v = ceil(lo / ys) * ys; v <= hi; v += ys)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#555\"/>"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", x0, PRUNE_Y(v),
                x0 + pw, PRUNE_Y(v), x0 - 4, PRUNE_Y(v), x0, PRUNE_Y(v), x0 - 7, PRUNE_Y(v) + 4, v);
    double xs = fmax(1.0, round(nice_step(nx, 8)));
    for (double v = 0; v <= nx + 1e-9; v += xs)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#555\"/>"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x0 + v * dx,
                y0 + ph, x0 + v * dx, y0 + ph + 4, x0 + v * dx, y0 + ph + 17, v);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">heads removed "
            "(of %d active)</text><text transform=\"translate(16 %d) rotate(-90)\" "
            "text-anchor=\"middle\" font-size=\"12\">loss (nats per %s)</text>\n",
            x0 + pw / 2, y0 + ph + 38, r->nprune, y0 + ph / 2, unit(r));
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#999\" "
            "stroke-dasharray=\"4 3\"/>\n<polyline fill=\"none\" stroke=\"#1f77b4\" "
            "stroke-width=\"2\" points=\"", x0, PRUNE_Y(r->prune_loss[0]), x0 + pw,
            PRUNE_Y(r->prune_loss[0]));
    for (int k = 0; k <= r->nprune; k++)
        fprintf(f, "%.1f,%.1f ", x0 + k * dx, PRUNE_Y(r->prune_loss[k]));
    fprintf(f, "\"/>\n");
    for (int k = 0; k <= r->nprune; k++) {
        char name[32];
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#1f77b4\"><title>%d removed"
                "%s%s: loss %.4f</title></circle>", x0 + k * dx, PRUNE_Y(r->prune_loss[k]), k,
                k ? ", last " : "",
                k ? report_head_label(name, r->prune_order[k - 1], r->cfg.H) : "",
                r->prune_loss[k]);
    }
#undef PRUNE_Y
    fprintf(f, "\n</svg>\n");
}

/* The heads of relation q for which test holds, as "L0H1, L2H3" or "-". */
static void html_heads_where(FILE *f, const HeadsReport *r, int q, HeadRelTest test)
{
    char name[32];
    const char *sep = "";
    for (int k = 0; k < r->cfg.L * r->cfg.H; k++)
        if (test(&r->st[k], q)) {
            fprintf(f, "%s%s", sep, report_head_label(name, k, r->cfg.H));
            sep = ", ";
        }
    fputs(*sep ? "" : "-", f);
}

/* The names of the relations with .planted == planted, in table order, as
 * "a, b and c". */
static void html_names_where(FILE *f, int planted)
{
    int n = 0, i = 0;
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        n += heads_rel_table[q].planted == planted;
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (heads_rel_table[q].planted == planted) {
            fprintf(f, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ", heads_rel_table[q].name);
            i++;
        }
}

/* The relation table: best head, its attention against a uniform head's, loss,
 * the minimal pairs, and the heads that attend, are needed and serve. */
static void html_relations(FILE *f, const HeadsReport *r)
{
    if (!r->rel)
        return;
    char name[32];
    int H = r->cfg.H;
    fprintf(f, "<h2>Relations</h2>\n<table><tr><th>relation</th><th>best head</th>"
            "<th>attention</th><th>uniform</th><th>loss</th><th>rows</th><th>loss ratio</th>"
            "<th>bar</th><th>accuracy</th><th>logit diff</th><th>pairs</th>"
            "<th>needed head (share lost)</th><th>needed set (share)</th><th>attended by</th>"
            "<th>served by</th></tr>\n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *x = &r->rel[q];
        if (heads_rel_table[q].planted && !r->builtin)
            continue;
        fprintf(f, "<tr><td>%s</td><td>%s</td><td>%.3f</td><td>%.3f</td><td>%.3f</td>"
                "<td>%.0f</td>", heads_rel_table[q].name, report_best_label(name, x, H),
                x->attention, x->uniform, x->loss, x->rows);
        if (heads_rel_table[q].repeat)
            fprintf(f, "<td>%.3f</td>", x->loss_ratio);
        else
            fprintf(f, "<td></td>");
        fprintf(f, "<td>%.2f</td>", heads_rel_table[q].bar);
        const PairScore *p = r->causal ? &r->causal->pair[q] : NULL;
        if (p && p->pairs > 0)
            fprintf(f, "<td>%.3f</td><td>%.2f</td><td>%.0f</td>", p->accuracy, p->logit_diff,
                    p->pairs);
        else
            fputs("<td></td><td></td><td></td>", f);
        int k = r->causal ? r->needed_head[q] : -1;
        if (k >= 0)
            fprintf(f, "<td>%s (%.2f)</td>", report_head_label(name, k, H), r->st[k].cost[q]);
        else
            fputs("<td>-</td>", f);
        fputs("<td>", f);
        if (p && p->pairs > 0 && r->needed[q].n > 0) {
            for (int i = 0; i < r->needed[q].n; i++)
                fprintf(f, "%s%s", i ? "+" : "", report_head_label(name, r->needed[q].head[i], H));
            fprintf(f, " (%.2f%s)", r->needed[q].share, r->needed[q].reached ? "" : ", short");
        } else {
            fputs("-", f);
        }
        fputs("</td><td>", f);
        html_heads_where(f, r, q, heads_attends);
        fputs("</td><td>", f);
        html_heads_where(f, r, q, heads_serves);
        fputs("</td></tr>\n", f);
    }
    const PairScore *c = r->causal ? &r->causal->pair[PAIRS_COREF_CLASS] : NULL;
    fputs("</table>\n<dl class=\"cols\">", f);
    html_legend(f, RELATION_COLUMNS, sizeof RELATION_COLUMNS / sizeof RELATION_COLUMNS[0]);
    fputs("</dl>\n", f);
    fprintf(f, "<p class=\"note\">Measured on %d consecutive windows", r->rel_windows);
    if (r->builtin) {
        fputs(" of the built-in corpus (", f);
        html_names_where(f, 1);
        fputs(" are its planted relations)", f);
    }
    fprintf(f, ". attention: "
            "the best head's mean weight on the key the relation names; uniform: what a head "
            "spreading its weight evenly scores there; loss: nats on the %ss the relation "
            "predicts; loss ratio: loss on copy rows over the loss on the same %ss at their "
            "first occurrence. Probe tokens: %s. Definitions: docs/heads.md.</p>\n",
            unit(r), unit(r), r->probe_rule);
    if (r->causal) {
        fprintf(f, "<p class=\"note\">Minimal pairs (the first %d windows): accuracy is the "
                "share of pairs where the model's logit for the right %s beats the wrong one "
                "(chance 0.5), logit diff its mean margin.", r->causal_windows, unit(r));
        int first = 1;
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (heads_rel_table[q].against) {
                if (first)
                    fprintf(f, " The wrong %s of %s is %s", unit(r), heads_rel_table[q].name,
                            heads_rel_table[q].against);
                else
                    fprintf(f, ", of %s %s", heads_rel_table[q].name, heads_rel_table[q].against);
                first = 0;
            }
        fprintf(f, ". The cost of a "
                "head is the share of the logit difference (of the loss, for a relation without "
                "pairs) that silencing it alone takes away (to %s); it is needed at %.2f or "
                "more, and it <b>serves</b> a relation when it also attends to the key above "
                "the bar. The needed set: heads silenced together, largest cost first, until "
                "%.2f of the margin is gone.</p>\n", r->mean_ablate ? "its mean output" : "zero",
                HEADS_NEEDED_SHARE, HEADS_NEEDED_SET_SHARE);
    }
    if (c && c->pairs > 0)
        fprintf(f, "<p class=\"note\">Coreference against a noun of the antecedent's class "
                "that is not in the sentence: accuracy %.3f, logit diff %.2f over %.0f pairs (does "
                "the model retrieve the referent, or only its class?).</p>\n", c->accuracy,
                c->logit_diff, c->pairs);
    if (r->rare_source) {
        fputs("<p class=\"note\">rare: token counts of ", f);
        xml_text(f, r->rare_source);
        fputs(".</p>\n", f);
    }
    if (r->builtin && r->planted_dropped)
        fprintf(f, "<p class=\"note\">%zu planted relations are left out: %s.</p>\n",
                r->planted_dropped, report_dropped_why);
    if (r->causal && r->builtin)
        fprintf(f, "<p class=\"note\">%zu minimal-pair contrasts are left out: %s.</p>\n",
                r->pairs_skipped, report_skipped_why);
}

/* The heads x relations matrix of costs, one row per head, shaded by cost. */
static void html_costs(FILE *f, const HeadsReport *r)
{
    if (!r->causal)
        return;
    char name[32];
    int H = r->cfg.H, n = r->cfg.L * H;
    fputs("<h2>What silencing each head costs each relation</h2>\n<table><tr><th>head</th>", f);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (!heads_rel_table[q].planted || r->builtin)
            fprintf(f, "<th>%s</th>", heads_rel_table[q].name);
    fputs("</tr>\n", f);
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        if (s->masked)
            continue;
        fprintf(f, "<tr><td>%s</td>", report_head_label(name, k, H));
        for (int q = 0; q < HEADS_REL_COUNT; q++) {
            if (heads_rel_table[q].planted && !r->builtin)
                continue;
            double c = s->cost[q], shade = c < 0 ? 0 : c > 1 ? 1 : c;
            fprintf(f, "<td style=\"background:rgba(200,60,40,%.2f)\">%s%.2f%s</td>",
                    0.75 * shade, heads_serves(s, q) ? "<b>" : "", c,
                    heads_serves(s, q) ? "</b>" : "");
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n<p class=\"note\">Each cell: the share of the relation's logit difference "
          "(of its loss, without pairs) that silencing that head alone takes away; above 1: "
          "the margin turns over, the wrong token wins without it; negative: the relation does "
          "better without it. Bold: the head serves the relation (attends "
          "above the bar and is needed). ablation.csv holds every cell.</p>\n", f);
}

/* The compromise measure (analysis/compromise.h): one row per pair of relations
 * that share rows, then each head's split and weight on those keys. */
static void html_compromise(FILE *f, const HeadsReport *r)
{
    const Compromise *c = r->compromise;
    if (!c || c->npair == 0)
        return;
    char a[32], b[32];
    int H = r->cfg.H, n = r->cfg.L * H;
    fputs("<h2>Compromise: one head for several keys, or a head for each</h2>\n<p class=\"note\">"
          "Rows that carry the keys of two relations. A head's weight on the two keys is a "
          "and b; overlap is the sum over heads of min(a, b) over the sum of max(a, b): 1 when "
          "the same head holds both keys (it must spread its weight over them), 0 when each "
          "key has heads of its own.</p>\n<table><tr><th>pair</th><th>rows</th><th>overlap</th>"
          "<th>best head, first key</th><th>best head, second key</th></tr>\n", f);
    for (int i = 0; i < c->npair; i++) {
        const CompromisePair *p = &c->pair[i];
        fprintf(f, "<tr><td>%s + %s</td><td>%.0f</td><td>%.3f</td>", heads_rel_table[p->q].name,
                heads_rel_table[p->r].name, p->rows, p->overlap);
        if (p->best_q >= 0)
            fprintf(f, "<td>%s (%.2f)</td><td>%s (%.2f)%s</td></tr>\n",
                    report_head_label(a, p->best_q, H), p->att[2 * p->best_q],
                    report_head_label(b, p->best_r, H), p->att[2 * p->best_r + 1],
                    p->best_q == p->best_r ? " one head" : "");
        else
            fputs("<td>-</td><td>-</td></tr>\n", f);
    }
    fprintf(f, "</table>\n<p class=\"note\">Mean overlap %.3f over %d pairs (pairs with at "
            "least %d rows).</p>\n<table><tr><th>head</th><th>split</th><th>keys</th></tr>\n",
            c->overlap, c->npair, COMPROMISE_MIN_ROWS);
    for (int k = 0; k < n; k++) {
        if (isnan(c->split[k]) && isnan(c->keys[k]))
            continue;
        fprintf(f, "<tr><td>%s</td><td>%.2f</td><td>%.2f</td></tr>\n",
                report_head_label(a, k, H), c->split[k], c->keys[k]);
    }
    fputs("</table>\n<p class=\"note\">split: over the pairs, the sum of min(a, b) over the "
          "sum of max(a, b), weighted by rows (1: the head divides its weight evenly between "
          "a pair's keys, 0: it takes one). keys: its mean weight a + b on them. summary.json's "
          "\"compromise\" holds every head's a and b for every pair.</p>\n", f);
}

/* A value of the alignment table: three decimals, or "-" where it is not defined. */
static void align_cell(FILE *f, double v, int bold)
{
    if (isnan(v))
        fputs("<td>-</td>", f);
    else
        fprintf(f, "<td style=\"background:rgba(40,90,200,%.2f)\">%s%.3f%s</td>",
                0.75 * v, bold ? "<b>" : "", v, bold ? "</b>" : "");
}

/* Vig & Belinkov's dependency alignment (analysis/deps.h's DepsAlign): a layers x
 * heads grid, each layer's mean and pooled value, then the baselines. */
static void html_deps_alignment(FILE *f, const DepsAlign *al)
{
    fputs("<h2>Dependency alignment</h2>\n<p class=\"note\">Vig &amp; Belinkov (2019): the "
          "share of a head's weight, from the tokens of words, on earlier keys whose word is "
          "in a dependency relation with the row's (attention to the window's first token "
          "left out; docs/heads.md, \"Dependency alignment\"). Bold: each layer's best "
          "head.</p>\n<table><tr><th>layer</th>", f);
    for (int h = 0; h < al->H; h++)
        fprintf(f, "<th>H%d</th>", h);
    fputs("<th>mean</th><th>pooled</th></tr>\n", f);
    for (int l = 0; l < al->L; l++) {
        fprintf(f, "<tr><td>%d</td>", l);
        for (int h = 0; h < al->H; h++)
            align_cell(f, al->head[l * al->H + h], al->layer_best[l] == l * al->H + h);
        align_cell(f, al->layer_mean[l], 0);
        align_cell(f, al->layer_pooled[l], 0);
        fputs("</tr>\n", f);
    }
    fprintf(f, "</table>\n<p class=\"note\">Against: a head that spreads its weight evenly "
            "over the keys scores %.3f; %.3f of the %zu counted (row, key) token pairs are in "
            "a relation. r(mean attention distance, alignment) over the heads: ",
            al->uniform, al->pair_share, al->token_pairs);
    if (isnan(al->r))
        fputs("not defined", f);
    else
        fprintf(f, "%.3f", al->r);
    fputs(". summary.json's \"dependencies\".\"alignment\" holds every value.</p>\n", f);
}

/* A CoNLL-U file's gold dependencies (analysis/deps.h): heads x relations, each
 * cell a head's accuracy, for every relation and direction with at least
 * DEPS_PAGE_MIN_PAIRS pairs ("all" first), under the offset and uniform baselines. */
#define DEPS_PAGE_MIN_PAIRS 100
static void html_deps(FILE *f, const HeadsReport *r)
{
    const DepsResult *d = r->deps;
    if (!d)
        return;
    char name[32];
    int H = r->cfg.H, n = r->cfg.L * H;
    size_t ncol = 0, *col = malloc(d->nrel * DEPS_DIRS * sizeof *col);
    if (!col)
        return;
    for (size_t j = 0; j < d->nrel * DEPS_DIRS; j++) { /* "all", the last relation, first */
        size_t i = (j + (d->nrel - 1) * DEPS_DIRS) % (d->nrel * DEPS_DIRS);
        if (d->score[i].pairs >= DEPS_PAGE_MIN_PAIRS || (j < DEPS_DIRS && d->score[i].pairs))
            col[ncol++] = i;
    }
    fprintf(f, "<h2>Gold dependencies</h2>\n<p class=\"note\">%zu of %zu sentences scored "
            "(%zu longer than the context), %zu dependencies. A cell is a head's accuracy: the "
            "share of pairs whose most-attended earlier word, from the later word's last "
            "token, is the gold partner (docs/heads.md, \"Gold dependencies\"). Bold: the "
            "relation's best head, when it beats the offset baseline by more than its "
            "standard error; relations with %d pairs or more.</p>\n<table><tr><th>head</th>",
            d->scored, d->sentences, d->over_context, d->pairs, DEPS_PAGE_MIN_PAIRS);
    for (size_t c = 0; c < ncol; c++) {
        fputs("<th>", f);
        xml_text(f, deps_rel_name(d, col[c] / DEPS_DIRS));
        fprintf(f, "<br>%s</th>", col[c] % DEPS_DIRS == DEPS_TO_HEAD ? "dep&rarr;head"
                                                                     : "head&rarr;dep");
    }
    fputs("</tr>\n<tr><td>pairs</td>", f);
    for (size_t c = 0; c < ncol; c++)
        fprintf(f, "<td>%zu</td>", d->score[col[c]].pairs);
    fputs("</tr>\n<tr><td>offset (k)</td>", f);
    for (size_t c = 0; c < ncol; c++)
        fprintf(f, "<td>%.2f (%d)</td>", d->score[col[c]].offset_acc, d->score[col[c]].offset);
    fputs("</tr>\n<tr><td>uniform</td>", f);
    for (size_t c = 0; c < ncol; c++)
        fprintf(f, "<td>%.2f</td>", d->score[col[c]].uniform_acc);
    fputs("</tr>\n", f);
    for (int k = 0; k < n; k++) {
        fprintf(f, "<tr><td>%s</td>", report_head_label(name, k, H));
        for (size_t c = 0; c < ncol; c++) {
            const DepsScore *sc = &d->score[col[c]];
            int bold = sc->best == k && sc->beats;
            fprintf(f, "<td style=\"background:rgba(40,90,200,%.2f)\">%s%.2f%s</td>",
                    0.75 * sc->acc[k], bold ? "<b>" : "", sc->acc[k], bold ? "</b>" : "");
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n<p class=\"note\">summary.json's \"dependencies\" holds every "
          "relation, each head's accuracy, attention and ablation cost.</p>\n", f);
    free(col);
    html_deps_alignment(f, &d->align);
}

int report_write_index(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "index.html", err, errlen))
        return -1;
    html_head(o.f, r);
    html_grid(o.f, r, 0);
    html_importance(o.f, r);
    html_divergence(o.f, r);
    html_prune(o.f, r);
    html_relations(o.f, r);
    html_costs(o.f, r);
    html_compromise(o.f, r);
    html_deps(o.f, r);
    report_routing_html(o.f, r);
    html_table(o.f, r);
    html_grid(o.f, r, 1);
    fprintf(o.f, "</body></html>\n");
    return report_out_close(&o, err, errlen);
}
