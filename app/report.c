/* report: the data files of --heads --report DIR (see report.h): heads.csv,
 * heads.json, summary.json, relations.csv, tokens.csv, prune.csv, and the
 * directories.
 * The heatmaps and index.html are in report_page.c; what both use (the output
 * file, the per-head fields, head labels) is declared in report_files.h. */
#include "app/report.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "app/report_files.h"
#include "util/errbuf.h"

const ReportField report_fields[] = {
    {"entropy", offsetof(HeadStats, entropy)},
    {"confidence", offsetof(HeadStats, confidence)},
    {"distance", offsetof(HeadStats, distance)},
    {"prev", offsetof(HeadStats, prev)},
    {"self", offsetof(HeadStats, self)},
    {"first", offsetof(HeadStats, first)},
    {"delim", offsetof(HeadStats, delim)},
    {"repeat", offsetof(HeadStats, repeat)},
    {"induction", offsetof(HeadStats, induction)},
    {"duplicate", offsetof(HeadStats, duplicate)},
    {"delta_loss", offsetof(HeadStats, delta_loss)},
    {"grad", offsetof(HeadStats, grad)},
    {"grad_window", offsetof(HeadStats, grad_window)},
    {"jsd_layer", offsetof(HeadStats, jsd_layer)},
    {"jsd_nearest", offsetof(HeadStats, jsd_nearest)},
    {"bracket", offsetof(HeadStats, rel[HEADS_REL_BRACKET])},
    {"copy", offsetof(HeadStats, rel[HEADS_REL_COPY])},
    {"agreement", offsetof(HeadStats, rel[HEADS_REL_AGREE])},
    {"names", offsetof(HeadStats, rel[HEADS_REL_NAMES])},
};
const size_t report_nfields = sizeof report_fields / sizeof report_fields[0];

double report_field(const HeadStats *s, const ReportField *f)
{
    return *(const double *)((const char *)s + f->offset);
}

int report_out_open(ReportOut *o, const char *dir, const char *name, char *err,
                    size_t errlen)
{
    o->f = NULL;
    if ((size_t)snprintf(o->path, sizeof o->path, "%s/%s", dir, name) >= sizeof o->path)
        return err_set(err, errlen, "%.200s...: path too long", dir);
    o->f = fopen(o->path, "w");
    if (!o->f)
        return err_set(err, errlen, "%s: cannot create: %s", o->path, strerror(errno));
    return 0;
}

int report_out_close(ReportOut *o, char *err, size_t errlen)
{
    int bad = ferror(o->f);
    if (fclose(o->f) != 0 || bad)
        return err_set(err, errlen, "%s: write failed: %s", o->path, strerror(errno));
    return 0;
}

static int make_dir(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (mkdir(path, 0777) == 0)
        return 0;
    if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (errno == EEXIST)
        return err_set(err, errlen, "%s exists and is not a directory", path);
    return err_set(err, errlen, "cannot create directory %s: %s", path, strerror(errno));
}

/* A JSON number, or null for a non-finite value. */
static void jnum(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* s as a JSON string: '"' and '\\' escaped, control bytes as \u00XX ('<' too,
 * so a string can sit in an HTML <script>). */
static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<')
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    fputc('"', f);
}

/* s as one CSV field (RFC 4180): quoted, with '"' doubled, when it holds a
 * comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

const char *report_token_label(char *buf, size_t len, const Tokenizer *tok, int id)
{
    tok_label(tok, id, buf, len);
    return buf;
}

/* "L1H10": no spreadsheet reads it as a number (as it would "1.10"). */
const char *report_head_label(char buf[32], int k, int H)
{
    snprintf(buf, 32, "L%dH%d", k / H, k % H);
    return buf;
}

static int write_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "heads.csv", err, errlen))
        return -1;
    int H = r->cfg.H, n = r->cfg.L * H;
    fprintf(o.f, "layer,head,type,masked");
    for (size_t i = 0; i < report_nfields; i++)
        fprintf(o.f, ",%s", report_fields[i].name);
    fprintf(o.f, ",delta_loss_pct,nearest\n");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        char near[32] = "";
        if (s->nearest >= 0)
            report_head_label(near, s->nearest, H);
        fprintf(o.f, "%d,%d,%s,%d", k / H, k % H, heads_type_names[s->type], s->masked);
        for (size_t i = 0; i < report_nfields; i++)
            fprintf(o.f, ",%.6g", report_field(s, &report_fields[i]));
        fprintf(o.f, ",%.6g,%s\n", 100.0 * s->delta_loss / r->base_loss, near);
    }
    return report_out_close(&o, err, errlen);
}

/* "name":[{"id":..,"text":label},...] for the tokens ids[0..n). */
static void write_token_list(FILE *f, const char *name, const int *ids, int n,
                             const Tokenizer *tok)
{
    char label[REPORT_LABEL_MAX];
    fprintf(f, ",\"%s\":[", name);
    for (int t = 0; t < n; t++) {
        fprintf(f, "%s{\"id\":%d,\"text\":", t ? "," : "", ids[t]);
        jstr(f, report_token_label(label, sizeof label, tok, ids[t]));
        fputc('}', f);
    }
    fputc(']', f);
}

static int write_heads_json(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "heads.json", err, errlen))
        return -1;
    int H = r->cfg.H, n = r->cfg.L * H;
    fprintf(o.f, "{\"layers\":%d,\"heads\":%d,\"base_loss\":", r->cfg.L, H);
    jnum(o.f, r->base_loss);
    write_token_list(o.f, "text_window", r->text, r->T, r->tok);
    write_token_list(o.f, "probe", r->probe, r->probe_len, r->tok);
    fprintf(o.f, ",\"records\":[\n");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        fprintf(o.f, "{\"layer\":%d,\"head\":%d,\"type\":\"%s\",\"masked\":%s", k / H, k % H,
                heads_type_names[s->type], s->masked ? "true" : "false");
        for (size_t i = 0; i < report_nfields; i++) {
            fprintf(o.f, ",\"%s\":", report_fields[i].name);
            jnum(o.f, report_field(s, &report_fields[i]));
        }
        fprintf(o.f, ",\"delta_loss_pct\":");
        jnum(o.f, 100.0 * s->delta_loss / r->base_loss);
        char near[32];
        if (s->nearest >= 0)
            fprintf(o.f, ",\"nearest\":\"%s\"}", report_head_label(near, s->nearest, H));
        else
            fprintf(o.f, ",\"nearest\":null}");
        fprintf(o.f, "%s\n", k + 1 < n ? "," : "");
    }
    fprintf(o.f, "]}\n");
    return report_out_close(&o, err, errlen);
}

/* "L1H3" for head k, "" when there is none. */
const char *report_rel_label(char buf[32], int k, int H)
{
    if (k < 0)
        buf[0] = '\0';
    else
        snprintf(buf, 32, "L%dH%d", k / H, k % H);
    return buf;
}

/* summary.json's "relations" object (docs/heads.md, "Output files"). */
static void write_relations_json(FILE *f, const HeadsReport *r)
{
    char name[32];
    fprintf(f, ",\"relation_windows\":%d,\"builtin_corpus\":%s,", r->rel_windows,
            r->builtin ? "true" : "false");
    if (r->builtin)
        fprintf(f, "\"planted_dropped\":%zu,", r->planted_dropped);
    fprintf(f, "\"probe_tokens\":\"%s\",\"relations\":{", r->probe_rule);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *x = &r->rel[q];
        if (q >= HEADS_REL_TEXT && !r->builtin)
            continue;
        fprintf(f, "%s\"%s\":{\"best_head\":", q ? "," : "", heads_rel_names[q]);
        if (x->best >= 0)
            fprintf(f, "\"%s\"", report_rel_label(name, x->best, r->cfg.H));
        else
            fprintf(f, "null");
        fprintf(f, ",\"attention\":");
        jnum(f, x->attention);
        fprintf(f, ",\"uniform\":");
        jnum(f, x->uniform);
        fprintf(f, ",\"loss\":");
        jnum(f, x->loss);
        fprintf(f, ",\"rows\":%.0f", x->rows);
        if (q == HEADS_REL_COPY || q == HEADS_REL_NAMES) {
            fprintf(f, ",\"loss_ratio\":");
            jnum(f, x->loss_ratio);
            fprintf(f, ",\"first_loss\":");
            jnum(f, x->first_loss);
            fprintf(f, ",\"pairs\":%.0f", x->pairs);
        }
        fputc('}', f);
    }
    fputc('}', f);
}

/* --prune-curve's losses as "prune_curve":[{"removed","head","loss"},...]. */
static void write_prune_json(FILE *f, const HeadsReport *r)
{
    char name[32];
    fprintf(f, ",\"prune_curve\":[");
    for (int k = 0; k <= r->nprune; k++) {
        fprintf(f, "%s{\"removed\":%d,\"head\":", k ? "," : "", k);
        if (k)
            fprintf(f, "\"%s\"", report_head_label(name, r->prune_order[k - 1], r->cfg.H));
        else
            fprintf(f, "null");
        fprintf(f, ",\"loss\":");
        jnum(f, r->prune_loss[k]);
        fputc('}', f);
    }
    fputc(']', f);
}

void report_summary_json(FILE *f, const HeadsReport *r)
{
    const HeadsSummary *s = &r->sum;
    fprintf(f, "{\"layers\":%d,\"heads\":%d,\"total_heads\":%d,\"active_heads\":%d,"
            "\"windows\":%d,\"tokens_per_window\":%d,\"vocab_size\":%d,\"merges\":%d,"
            "\"base_loss\":", r->cfg.L, r->cfg.H, r->cfg.L * r->cfg.H, s->active, r->windows, r->T,
            r->tok->V, r->tok->nmerges);
    jnum(f, r->base_loss);
    fprintf(f, ",\"mean_entropy\":");
    jnum(f, s->mean_entropy);
    fprintf(f, ",\"mean_distance\":");
    jnum(f, s->mean_distance);
    fprintf(f, ",\"type_counts\":{");
    for (int t = 0; t < HEAD_TYPES; t++)
        fprintf(f, "%s\"%s\":%d", t ? "," : "", heads_type_names[t], s->type_counts[t]);
    fprintf(f, "},\"effective_heads\":");
    jnum(f, r->effective);
    fprintf(f, ",\"effective_heads_per_layer\":[");
    for (int l = 0; l < r->cfg.L; l++) {
        fputs(l ? "," : "", f);
        jnum(f, r->layer_effective[l]);
    }
    fprintf(f, "],\"removable_heads_1pct\":%d,\"max_importance\":", s->removable_1pct);
    jnum(f, s->max_importance);
    fprintf(f, ",\"jsd_within_layer\":");
    jnum(f, s->jsd_within);
    fprintf(f, ",\"jsd_between_layers\":");
    jnum(f, s->jsd_between);
    fprintf(f, ",\"delimiter_share\":");
    jnum(f, r->delim_share);
    if (r->rel)
        write_relations_json(f, r);
    if (r->prune_order)
        write_prune_json(f, r);
    fprintf(f, "}\n");
}

static int write_summary(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "summary.json", err, errlen))
        return -1;
    report_summary_json(o.f, r);
    return report_out_close(&o, err, errlen);
}

/* relations.csv: one row per relation measured. */
static int write_relations_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "relations.csv", err, errlen))
        return -1;
    char name[32];
    fprintf(o.f, "relation,best_head,attention,uniform,loss,rows,loss_ratio,first_loss,pairs\n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *x = &r->rel[q];
        if (q >= HEADS_REL_TEXT && !r->builtin)
            continue;
        fprintf(o.f, "%s,%s,%.6g,%.6g,%.6g,%.0f,", heads_rel_names[q],
                report_rel_label(name, x->best, r->cfg.H), x->attention, x->uniform, x->loss,
                x->rows);
        if (q == HEADS_REL_COPY || q == HEADS_REL_NAMES)
            fprintf(o.f, "%.6g,%.6g,%.0f\n", x->loss_ratio, x->first_loss, x->pairs);
        else
            fprintf(o.f, ",,\n");
    }
    return report_out_close(&o, err, errlen);
}

/* tokens.csv: the tokens on the heatmaps' axes, the text window's then the
 * probe's: each one's id, its bytes in hex and its label. */
static int write_tokens_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "tokens.csv", err, errlen))
        return -1;
    char label[REPORT_LABEL_MAX];
    fprintf(o.f, "part,position,id,bytes,text\n");
    for (int part = 0; part < 2; part++) {
        const int *ids = part ? r->probe : r->text;
        int n = part ? r->probe_len : r->T;
        for (int t = 0; t < n; t++) {
            size_t len;
            const unsigned char *p = tok_piece(r->tok, ids[t], &len);
            fprintf(o.f, "%s,%d,%d,", part ? "probe" : "text", t, ids[t]);
            for (size_t k = 0; k < len; k++)
                fprintf(o.f, "%02x", p[k]);
            fputc(',', o.f);
            csv_field(o.f, report_token_label(label, sizeof label, r->tok, ids[t]));
            fputc('\n', o.f);
        }
    }
    return report_out_close(&o, err, errlen);
}

static int write_prune(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "prune.csv", err, errlen))
        return -1;
    char name[32];
    fprintf(o.f, "removed,kept,head,loss,loss_pct\n");
    for (int k = 0; k <= r->nprune; k++)
        fprintf(o.f, "%d,%d,%s,%.6g,%.6g\n", k, r->nprune - k,
                k ? report_head_label(name, r->prune_order[k - 1], r->cfg.H) : "",
                r->prune_loss[k], 100.0 * (r->prune_loss[k] / r->base_loss - 1.0));
    return report_out_close(&o, err, errlen);
}

int report_heatmap_dir(char *sub, size_t len, const char *dir, char *err, size_t errlen)
{
    if ((size_t)snprintf(sub, len, "%s/heatmaps", dir) >= len)
        return err_set(err, errlen, "%.200s...: path too long", dir);
    return 0;
}

int report_prepare(const char *dir, char *err, size_t errlen)
{
    char sub[4000];
    if (make_dir(dir, err, errlen) || report_heatmap_dir(sub, sizeof sub, dir, err, errlen))
        return -1;
    return make_dir(sub, err, errlen);
}

int report_write(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    if (report_prepare(dir, err, errlen) || write_csv(dir, r, err, errlen) ||
        write_heads_json(dir, r, err, errlen) || write_summary(dir, r, err, errlen) ||
        write_tokens_csv(dir, r, err, errlen) ||
        report_write_heatmaps(dir, r, err, errlen) || report_write_index(dir, r, err, errlen))
        return -1;
    if (r->prune_order && write_prune(dir, r, err, errlen))
        return -1;
    if (r->rel && write_relations_csv(dir, r, err, errlen))
        return -1;
    return 0;
}
