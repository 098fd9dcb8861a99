/* chart.h — qh's own small picture writer (prefix ch_): bar charts, line
 * charts and circuit drawings as SVG text (what a notebook shows), and the
 * compact text charts a terminal shows for the same bars and lines.
 *
 * Plain C over numbers and UTF-8 labels: it knows no values, no
 * interpreter and no host. Every function returns a heap string (free
 * it); out of memory ends as xmalloc does. Nothing here is global. */
#ifndef QH_CHART_H
#define QH_CHART_H

#include <stddef.h>

/* One line of a line chart: n points (x NULL: 0, 1, ..., n-1), a label
 * for the legend (NULL or "": none). Points that are not finite are gaps. */
typedef struct ChSeries {
    const double *x, *y;
    size_t n;
    const char *label;
} ChSeries;

/* A bar per label, heights v (n may be 0). */
char *ch_bars_svg(const char *const *labels, const double *v, size_t n, const char *title);
/* The same as text: one line per bar, "label ████▌ value", the longest bar
 * `width` cells. */
char *ch_bars_text(const char *const *labels, const double *v, size_t n, int width);

/* Lines on shared axes; xlabel, ylabel, title may be NULL. */
char *ch_lines_svg(const ChSeries *s, size_t ns, const char *title, const char *xlabel,
                   const char *ylabel);
/* The same as a text plot: `height` rows and up to `width` columns of
 * marks (one mark character per series), the y range on the left, the x
 * range below and a legend line when the series have labels. */
char *ch_lines_text(const ChSeries *s, size_t ns, int width, int height);

/* A circuit drawing: nlayers columns of nwires cells (cell [L * nwires + w]),
 * each part of an operation (op >= 0; the operations of one column do not
 * overlap) or empty (op -1): a control dot, a box with its label (a
 * target), or the operation's line passing a wire it does not touch.
 * ends[w]: what the call measures on wire w at the end, or NULL. */
enum { CH_PASS, CH_CTRL, CH_TARGET };
typedef struct ChCell {
    int op;
    int role;
    const char *label; /* CH_TARGET: UTF-8 */
} ChCell;
char *ch_circuit_svg(int nwires, int nlayers, const ChCell *cells, const char *const *ends);

#endif
