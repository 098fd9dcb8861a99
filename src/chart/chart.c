/* chart.c — bar charts, line charts and circuit drawings as SVG (a fixed
 * layout: 480 x 300 for charts, axes with "nice" ticks, a palette of six
 * colours) and as text for a terminal. Knows only numbers and UTF-8. */
#include "chart.h"
#include "qh_assert.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Out {
    char *p;
    size_t n, cap;
} Out;

static void put(Out *o, const char *s, size_t n)
{
    if (o->n + n + 1 > o->cap) {
        o->cap = (o->n + n + 1) * 2 + 256;
        o->p = xrealloc(o->p, o->cap);
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
    o->p[o->n] = 0;
}

static void puts_(Out *o, const char *s) { put(o, s, strlen(s)); }

static void __attribute__((format(printf, 2, 3))) pf(Out *o, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < (int)sizeof small) {
        put(o, small, (size_t)n);
        return;
    }
    char *big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    put(o, big, (size_t)n);
    free(big);
}

static char *done(Out *o)
{
    if (!o->p) puts_(o, "");
    return o->p;
}

/* text for XML character data and attributes */
static void esc(Out *o, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': puts_(o, "&lt;"); break;
        case '>': puts_(o, "&gt;"); break;
        case '&': puts_(o, "&amp;"); break;
        case '"': puts_(o, "&quot;"); break;
        default:
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
                puts_(o, "?");
            else
                put(o, s, 1);
        }
    }
}

static int cps(const char *s)
{
    int n = 0;
    for (; s && *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* a number as a tick label: %g with up to 4 significant digits */
static void num(char *buf, size_t len, double x)
{
    if (fabs(x) < 1e-12) x = 0;
    snprintf(buf, len, "%.4g", x);
}

static const char *const palette[] = { "#1f77b4", "#ff7f0e", "#2ca02c",
                                       "#d62728", "#9467bd", "#8c564b" };

enum { W = 480, H = 300, ML = 60, MR = 20, MT = 34, MB = 44 };

static void svg_open(Out *o, int w, int h)
{
    pf(o,
       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
       "%d\" font-family=\"sans-serif\" font-size=\"11\">\n",
       w, h, w, h);
    pf(o, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
}

static void title_(Out *o, const char *title, int w)
{
    if (!title || !*title) return;
    pf(o, "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">", w / 2);
    esc(o, title);
    puts_(o, "</text>\n");
}

/* "nice" ticks covering [lo, hi]: the step and the first and last tick */
static double nice_step(double span, int want)
{
    if (!(span > 0) || !isfinite(span)) return 1;
    double raw = span / want, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double s = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    return s * mag;
}

typedef struct Axis {
    double lo, hi; /* the data range shown */
    double step;
} Axis;

static Axis axis_of(double lo, double hi, bool from_zero)
{
    if (from_zero) {
        if (lo > 0) lo = 0;
        if (hi < 0) hi = 0;
    }
    if (!(hi > lo)) {
        double d = fabs(lo) > 0 ? fabs(lo) * 0.5 : 1;
        lo -= d;
        hi += d;
    }
    Axis a;
    a.step = nice_step(hi - lo, 5);
    a.lo = floor(lo / a.step) * a.step;
    a.hi = ceil(hi / a.step) * a.step;
    return a;
}

static double map(double v, const Axis *a, double p0, double p1)
{
    return p0 + (v - a->lo) / (a->hi - a->lo) * (p1 - p0);
}

/* the y axis: its line, ticks, labels and grid */
static void y_axis(Out *o, const Axis *a, int x0, int x1, int y0, int y1)
{
    for (double t = a->lo; t <= a->hi + a->step * 1e-9; t += a->step) {
        double y = map(t, a, y0, y1);
        char b[32];
        num(b, sizeof b, t);
        pf(o, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#e0e0e0\"/>\n", x0, y, x1,
           y);
        pf(o, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n", x0 - 6, y + 4, b);
    }
    pf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n", x0, y0, x0, y1);
}

char *ch_bars_svg(const char *const *labels, const double *v, size_t n, const char *title)
{
    Out o = { 0 };
    svg_open(&o, W, H);
    title_(&o, title, W);
    double lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) {
            if (v[i] < lo) lo = v[i];
            if (v[i] > hi) hi = v[i];
        }
    Axis a = axis_of(lo, hi, true);
    int x0 = ML, x1 = W - MR, y0 = H - MB, y1 = MT;
    y_axis(&o, &a, x0, x1, y0, y1);
    double slot = n ? (double)(x1 - x0) / (double)n : 0, bw = slot * 0.7;
    double base = map(0, &a, y0, y1);
    int every = n > 16 ? (int)((n + 15) / 16) : 1; /* labels that fit */
    for (size_t i = 0; i < n; i++) {
        double val = isfinite(v[i]) ? v[i] : 0, y = map(val, &a, y0, y1);
        double x = x0 + slot * (double)i + (slot - bw) / 2;
        pf(&o, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>", x,
           y < base ? y : base, bw, fabs(base - y), palette[0]);
        esc(&o, labels[i]);
        char b[32];
        num(b, sizeof b, v[i]);
        pf(&o, ": %s</title></rect>\n", b);
        if (i % (size_t)every == 0) {
            pf(&o, "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">", x + bw / 2, y0 + 16);
            esc(&o, labels[i]);
            puts_(&o, "</text>\n");
        }
    }
    pf(&o, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#000000\"/>\n", x0, base, x1,
       base);
    puts_(&o, "</svg>\n");
    return done(&o);
}

char *ch_bars_text(const char *const *labels, const double *v, size_t n, int width)
{
    static const char *const eighths[] = { "",
                                           "\xe2\x96\x8f",
                                           "\xe2\x96\x8e",
                                           "\xe2\x96\x8d",
                                           "\xe2\x96\x8c",
                                           "\xe2\x96\x8b",
                                           "\xe2\x96\x8a",
                                           "\xe2\x96\x89" };
    Out o = { 0 };
    double hi = 0;
    int lw = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(v[i]) && fabs(v[i]) > hi) hi = fabs(v[i]);
        if (cps(labels[i]) > lw) lw = cps(labels[i]);
    }
    for (size_t i = 0; i < n; i++) {
        puts_(&o, labels[i]);
        for (int k = cps(labels[i]); k < lw; k++) puts_(&o, " ");
        puts_(&o, " ");
        double cells = hi > 0 && isfinite(v[i]) ? fabs(v[i]) / hi * width : 0;
        long e8 = lround(cells * 8);
        for (long k = 0; k < e8 / 8; k++) puts_(&o, "\xe2\x96\x88"); /* █ */
        puts_(&o, eighths[e8 % 8]);
        char b[32];
        num(b, sizeof b, v[i]);
        pf(&o, " %s", b);
        if (i + 1 < n) puts_(&o, "\n");
    }
    return done(&o);
}

static bool series_range(const ChSeries *s, size_t ns, double *xlo, double *xhi, double *ylo,
                         double *yhi)
{
    bool any = false;
    for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < s[k].n; i++) {
            double x = s[k].x ? s[k].x[i] : (double)i, y = s[k].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            if (!any) {
                *xlo = *xhi = x;
                *ylo = *yhi = y;
                any = true;
            }
            if (x < *xlo) *xlo = x;
            if (x > *xhi) *xhi = x;
            if (y < *ylo) *ylo = y;
            if (y > *yhi) *yhi = y;
        }
    if (!any) *xlo = *xhi = *ylo = *yhi = 0;
    return any;
}

char *ch_lines_svg(const ChSeries *s, size_t ns, const char *title, const char *xlabel,
                   const char *ylabel)
{
    Out o = { 0 };
    svg_open(&o, W, H);
    title_(&o, title, W);
    double xlo, xhi, ylo, yhi;
    series_range(s, ns, &xlo, &xhi, &ylo, &yhi);
    Axis ax = axis_of(xlo, xhi, false), ay = axis_of(ylo, yhi, false);
    int x0 = ML, x1 = W - MR, y0 = H - MB, y1 = MT;
    y_axis(&o, &ay, x0, x1, y0, y1);
    for (double t = ax.lo; t <= ax.hi + ax.step * 1e-9; t += ax.step) {
        double x = map(t, &ax, x0, x1);
        char b[32];
        num(b, sizeof b, t);
        pf(&o, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#000000\"/>\n", x, y0, x,
           y0 + 4);
        pf(&o, "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, y0 + 16, b);
    }
    pf(&o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n", x0, y0, x1, y0);
    if (xlabel && *xlabel) {
        pf(&o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (x0 + x1) / 2, H - 8);
        esc(&o, xlabel);
        puts_(&o, "</text>\n");
    }
    if (ylabel && *ylabel) {
        pf(&o, "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 14 %d)\">",
           (y0 + y1) / 2, (y0 + y1) / 2);
        esc(&o, ylabel);
        puts_(&o, "</text>\n");
    }
    int legend = 0;
    for (size_t k = 0; k < ns; k++) {
        const char *col = palette[k % 6];
        bool open = false;
        for (size_t i = 0; i < s[k].n; i++) {
            double x = s[k].x ? s[k].x[i] : (double)i, y = s[k].y[i];
            if (!isfinite(x) || !isfinite(y)) {
                if (open) puts_(&o, "\"/>\n");
                open = false;
                continue;
            }
            if (!open)
                pf(&o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
            pf(&o, "%s%.2f,%.2f", open ? " " : "", map(x, &ax, x0, x1), map(y, &ay, y0, y1));
            open = true;
        }
        if (open) puts_(&o, "\"/>\n");
        if (s[k].n <= 40)
            for (size_t i = 0; i < s[k].n; i++) {
                double x = s[k].x ? s[k].x[i] : (double)i, y = s[k].y[i];
                if (isfinite(x) && isfinite(y))
                    pf(&o, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n",
                       map(x, &ax, x0, x1), map(y, &ay, y0, y1), col);
            }
        if (s[k].label && *s[k].label) {
            int ly = MT + 8 + 16 * legend++;
            pf(&o,
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n",
               x1 - 120, ly, x1 - 100, ly, col);
            pf(&o, "<text x=\"%d\" y=\"%d\">", x1 - 94, ly + 4);
            esc(&o, s[k].label);
            puts_(&o, "</text>\n");
        }
    }
    puts_(&o, "</svg>\n");
    return done(&o);
}

char *ch_lines_text(const ChSeries *s, size_t ns, int width, int height)
{
    static const char marks[] = "*o+x#@";
    double xlo, xhi, ylo, yhi;
    series_range(s, ns, &xlo, &xhi, &ylo, &yhi);
    size_t maxn = 0;
    for (size_t k = 0; k < ns; k++)
        if (s[k].n > maxn) maxn = s[k].n;
    int cols = maxn < (size_t)width ? (int)(maxn ? maxn : 1) : width;
    if (height < 2) height = 2;
    char *grid = xmalloc((size_t)cols * (size_t)height);
    memset(grid, ' ', (size_t)cols * (size_t)height);
    for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < s[k].n; i++) {
            double x = s[k].x ? s[k].x[i] : (double)i, y = s[k].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            int c = xhi > xlo ? (int)lround((x - xlo) / (xhi - xlo) * (cols - 1)) : 0;
            int r = yhi > ylo ? (int)lround((yhi - y) / (yhi - ylo) * (height - 1)) : height / 2;
            grid[(size_t)r * (size_t)cols + (size_t)c] = marks[k % 6];
        }
    char top[32], bot[32], xl[32], xr[32];
    num(top, sizeof top, yhi);
    num(bot, sizeof bot, ylo);
    num(xl, sizeof xl, xlo);
    num(xr, sizeof xr, xhi);
    int lw = (int)(strlen(top) > strlen(bot) ? strlen(top) : strlen(bot));
    Out o = { 0 };
    for (int r = 0; r < height; r++) {
        const char *lab = r == 0 ? top : r == height - 1 ? bot : "";
        pf(&o, "%*s \xe2\x94\x82", lw, lab); /* │ */
        put(&o, grid + (size_t)r * (size_t)cols, (size_t)cols);
        size_t end = o.n;
        while (end > 0 && o.p[end - 1] == ' ') end--; /* no trailing blanks */
        o.n = end;
        o.p[end] = 0;
        puts_(&o, "\n");
    }
    pf(&o, "%*s \xe2\x94\x94", lw, ""); /* └ */
    for (int c = 0; c < cols; c++) puts_(&o, "\xe2\x94\x80");
    pf(&o, "\n%*s  %s", lw, "", xl);
    int gap = cols - (int)strlen(xl) - (int)strlen(xr);
    for (int k = 0; k < (gap > 1 ? gap : 1); k++) puts_(&o, " ");
    puts_(&o, xr);
    bool labels = false;
    for (size_t k = 0; k < ns; k++) labels |= s[k].label && *s[k].label;
    if (labels) {
        puts_(&o, "\n");
        for (size_t k = 0; k < ns; k++)
            pf(&o, "%s%c %s", k ? "  " : "", marks[k % 6], s[k].label ? s[k].label : "");
    }
    free(grid);
    return done(&o);
}

/* ---------------------------------------------------------------- circuits */

enum { CX0 = 40, CDX = 16, CW = 8, ROW = 40, CTOP = 24 };

/* the box width of a label: 8 px per code point and a margin */
static int box_w(const char *label) { return cps(label) * CW + 14; }

char *ch_circuit_svg(int nwires, int nlayers, const ChCell *cells, const char *const *ends)
{
    /* column widths: the widest box of each column */
    int *cw = xcalloc((size_t)(nlayers > 0 ? nlayers : 1), sizeof(int));
    for (int L = 0; L < nlayers; L++) {
        cw[L] = 20;
        for (int w = 0; w < nwires; w++) {
            const ChCell *c = &cells[(size_t)L * (size_t)nwires + (size_t)w];
            if (c->op >= 0 && c->role == CH_TARGET && box_w(c->label) > cw[L])
                cw[L] = box_w(c->label);
        }
    }
    int endw = 0;
    for (int w = 0; ends && w < nwires; w++)
        if (ends[w] && box_w(ends[w]) > endw) endw = box_w(ends[w]);
    int x = CX0;
    int *cx = xcalloc((size_t)(nlayers > 0 ? nlayers : 1), sizeof(int));
    for (int L = 0; L < nlayers; L++) {
        cx[L] = x + CDX + cw[L] / 2;
        x += CDX + cw[L];
    }
    int wire_end = x + CDX, width = wire_end + (endw ? endw + 10 : 0) + 10;
    int height = CTOP + ROW * (nwires > 0 ? nwires : 1);
    Out o = { 0 };
    svg_open(&o, width, height);
    for (int w = 0; w < nwires; w++) {
        int y = CTOP + ROW * w;
        pf(&o, "<text x=\"8\" y=\"%d\">%d</text>\n", y + 4, w);
        pf(&o, "<line x1=\"24\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\"/>\n", y, wire_end,
           y);
        if (ends && ends[w]) {
            pf(&o,
               "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"24\" fill=\"#f3f3f3\" "
               "stroke=\"#000000\"/>\n",
               wire_end, y - 12, box_w(ends[w]));
            pf(&o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", wire_end + box_w(ends[w]) / 2,
               y + 4);
            esc(&o, ends[w]);
            puts_(&o, "</text>\n");
        }
    }
    for (int L = 0; L < nlayers; L++) {
        const ChCell *col = &cells[(size_t)L * (size_t)nwires];
        /* each operation's vertical line, from its first wire to its last */
        for (int w = 0; w < nwires; w++) {
            if (col[w].op < 0 || (w > 0 && col[w - 1].op == col[w].op)) continue;
            int e = w;
            while (e + 1 < nwires && col[e + 1].op == col[w].op) e++;
            if (e > w)
                pf(&o,
                   "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000000\" "
                   "stroke-width=\"1.5\"/>\n",
                   cx[L], CTOP + ROW * w, cx[L], CTOP + ROW * e);
        }
        for (int w = 0; w < nwires; w++) {
            const ChCell *c = &col[w];
            int y = CTOP + ROW * w;
            if (c->op < 0 || c->role == CH_PASS) continue;
            if (c->role == CH_CTRL) {
                pf(&o, "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"#000000\"/>\n", cx[L], y);
                continue;
            }
            int bw = box_w(c->label);
            pf(&o,
               "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"24\" rx=\"3\" fill=\"#dce9f7\" "
               "stroke=\"#1f4e79\"/>\n",
               cx[L] - bw / 2, y - 12, bw);
            pf(&o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", cx[L], y + 4);
            esc(&o, c->label);
            puts_(&o, "</text>\n");
        }
    }
    puts_(&o, "</svg>\n");
    free(cx);
    free(cw);
    return done(&o);
}
