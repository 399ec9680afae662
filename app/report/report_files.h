/* report_files: what the two halves of the heads report share (report.c writes
 * the data files, report_page.c the heatmaps and index.html): an output file
 * with its path for messages, the per-head fields of heads.csv, heads.json and
 * the page's table, and head labels. Internal to app/report*.c. */
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
 * in order. */
typedef struct {
    const char *name;
    size_t offset;   /* of a double in HeadStats */
    const char *legend; /* one line for the page's legend under the table */
} ReportField;

extern const ReportField report_fields[];
extern const size_t report_nfields;
double report_field(const HeadStats *s, const ReportField *f);

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

/* report_page.c: the SVG heatmaps (into dir/heatmaps) and index.html. */
int report_write_heatmaps(const char *dir, const HeadsReport *r, char *err, size_t errlen);
int report_write_index(const char *dir, const HeadsReport *r, char *err, size_t errlen);

#endif
