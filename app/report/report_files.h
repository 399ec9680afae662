/* report_files: what the parts of the heads report share (report.c writes the
 * data files, report_page.c the heatmaps and index.html, report_dir.c the
 * directory they go into): an output file with its path for messages, the
 * per-head fields of heads.csv, heads.json and the page's table, head labels.
 * Defined in report_files.c, which uses none of the others. Internal to
 * app/report. */
#ifndef HEADCOUNT_REPORT_FILES_H
#define HEADCOUNT_REPORT_FILES_H

#include <stddef.h>
#include <stdio.h>

#include "app/report/report.h"

/* An open output file and its path, for messages. */
typedef struct {
    FILE *f;
    int fd, error;      /* its descriptor; the first failed write's errno, or 0 */
    char path[4096];
} ReportOut;

/* Creates dir/name for writing; -1 with the path in the message. */
int report_out_open(ReportOut *o, const char *dir, const char *name, char *err,
                    size_t errlen);
/* Closes o, reporting any write that failed on the way. */
int report_out_close(ReportOut *o, char *err, size_t errlen);

/* The per-head numbers written to heads.csv, heads.json and the page's table,
 * in order: the REPORT_NMETRICS metrics of HEADS_METRICS
 * (analysis/heads_metrics.h), then each relation's mean attention on its key
 * (HeadStats.rel), named after the relation (heads_rel_table). */
typedef struct {
    const char *name;
    size_t offset;   /* of a double in HeadStats */
    char legend[128]; /* one line for the page's legend under the table */
} ReportField;

#define REPORT_NMETRICS HEADS_METRIC_COUNT
#define REPORT_NFIELDS (REPORT_NMETRICS + HEADS_REL_COUNT)
/* Field i < REPORT_NFIELDS. */
ReportField report_field_at(size_t i);
double report_field(const HeadStats *s, const ReportField *f);

/* A JSON number of the reports and the explorer (six significant digits), or
 * null for a non-finite value. */
void report_jnum(FILE *f, double v);

/* Room for a token's label in the report: longer ones are cut (whole symbols). */
#define REPORT_LABEL_MAX 256
/* Token id's label (tok_label) into buf[len], returned. */
const char *report_token_label(char *buf, size_t len, const Tokenizer *tok, int id);

/* "L1H10": no spreadsheet reads it as a number (as it would "1.10"). */
const char *report_head_label(char buf[32], int k, int H);
/* "L1H3" for head k, "" when there is none (k < 0). */
const char *report_rel_label(char buf[32], int k, int H);

/* dir/heatmaps into sub. */
int report_heatmap_dir(char *sub, size_t len, const char *dir, char *err, size_t errlen);

#endif
