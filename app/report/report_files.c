/* report_files: what the data files (report.c), the page (report_page.c) and the
 * report directory (report_dir.c) share: the output file, the per-head fields,
 * head and relation labels, and the lists of relations a head attends to, is
 * needed for and serves. It uses neither of the others. */
#include "app/report/report_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/common/fileguard.h"
#include "util/errbuf.h"
#include "util/json.h"

ReportField report_field_at(size_t i)
{
    if (i < REPORT_NMETRICS) {
        const HeadsMetricRow *m = &heads_metric_table[i];
        ReportField f = {m->name, m->offset, ""};
        snprintf(f.legend, sizeof f.legend, "%s", m->legend);
        return f;
    }
    size_t q = i - REPORT_NMETRICS;
    ReportField f = {heads_rel_table[q].name, offsetof(HeadStats, rel) + q * sizeof(double),
                     ""};
    snprintf(f.legend, sizeof f.legend,
             "mean weight on the %s relation's key (docs/heads.md, Relations)",
             heads_rel_table[q].name);
    return f;
}

double report_field(const HeadStats *s, const ReportField *f)
{
    return *(const double *)((const char *)s + f->offset);
}

/* Files are created only inside the report's own fresh temporary directory, so
 * O_EXCL never meets a file of the user's; each is fsynced before the directory
 * is put in place. */
int report_out_open(ReportOut *o, const char *dir, const char *name, char *err,
                    size_t errlen)
{
    o->f = NULL;
    if ((size_t)snprintf(o->path, sizeof o->path, "%s/%s", dir, name) >= sizeof o->path)
        return err_set(err, errlen, "%.200s...: path too long", dir);
    int fd = open(o->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    o->fd = fd;
    o->f = fd >= 0 ? guard_fdopen(fd, &o->error) : NULL;
    if (!o->f) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return err_set(err, errlen, "%s: cannot create: %s", o->path, strerror(saved));
    }
    return 0;
}

int report_out_close(ReportOut *o, char *err, size_t errlen)
{
    int bad = guard_stream_close(o->f, o->fd, &o->error);
    o->f = NULL;
    if (bad)
        return err_set(err, errlen, "%s: write failed: %s", o->path, strerror(bad));
    return 0;
}

void report_jnum(FILE *f, double v)
{
    json_fput_number(f, v, 6);
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

const char *report_rels(char *buf, size_t len, const HeadStats *s, const char *sep,
                        HeadRelTest test)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (test(s, q)) {
            int w = snprintf(buf + at, len - at, "%s%s", at ? sep : "", heads_rel_table[q].name);
            if (w < 0 || (size_t)w >= len - at) {
                buf[at] = '\0';   /* a name that does not fit is left out whole */
                break;
            }
            at += (size_t)w;
        }
    return buf;
}

void report_rels_json(FILE *f, const HeadStats *s, HeadRelTest test)
{
    const char *sep = "";
    fputc('[', f);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (test(s, q)) {
            fprintf(f, "%s\"%s\"", sep, heads_rel_table[q].name);
            sep = ",";
        }
    fputc(']', f);
}

const char *report_serves(char *buf, size_t len, const HeadStats *s, const char *sep)
{
    return report_rels(buf, len, s, sep, heads_serves);
}

void report_serves_json(FILE *f, const HeadStats *s)
{
    report_rels_json(f, s, heads_serves);
}

void report_head_relations_json(FILE *f, const HeadStats *s)
{
    fputs(",\"attends\":", f);
    report_rels_json(f, s, heads_attends);
    fputs(",\"needed\":", f);
    report_rels_json(f, s, heads_needed);
    fputs(",\"serves\":", f);
    report_rels_json(f, s, heads_serves);
    if (!s->costed)
        return;
    fputs(",\"cost\":{", f);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        fprintf(f, "%s\"%s\":", q ? "," : "", heads_rel_table[q].name);
        report_jnum(f, s->cost[q]);
    }
    fputc('}', f);
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

const char report_dropped_why[] =
    "with these tokens the token that predicts the answer already holds the key (as a "
    "repeated name's letters inside one token), so there is no earlier key to attend to";
const char report_skipped_why[] =
    "their key is not before the scored token, or their line is cut by the file's ends";

const char *report_best_label(char buf[32], const HeadsRelation *x, int H)
{
    int k = heads_relation_named(x);
    if (x->rows <= 0.0)
        snprintf(buf, 32, "-");
    else if (k < 0)
        snprintf(buf, 32, "none");
    else
        report_rel_label(buf, k, H);
    return buf;
}

int report_heatmap_dir(char *sub, size_t len, const char *dir, char *err, size_t errlen)
{
    if ((size_t)snprintf(sub, len, "%s/heatmaps", dir) >= len)
        return err_set(err, errlen, "%.200s...: path too long", dir);
    return 0;
}
