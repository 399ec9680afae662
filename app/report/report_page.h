/* report_page: the heads report's pictures, the SVG heatmaps and index.html,
 * from the measured HeadsReport (report.h); report_dir.c calls these while
 * writing a report's directory. */
#ifndef HEADCOUNT_REPORT_PAGE_H
#define HEADCOUNT_REPORT_PAGE_H

#include <stddef.h>

#include "app/report/report.h"

/* One heatmap per head and part (text window, probe) into dir/heatmaps, which
 * exists; -1 with the file in the message. */
int report_write_heatmaps(const char *dir, const HeadsReport *r, char *err, size_t errlen);
/* dir/index.html; -1 with the file in the message. */
int report_write_index(const char *dir, const HeadsReport *r, char *err, size_t errlen);

#endif
