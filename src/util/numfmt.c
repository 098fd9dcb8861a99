/* numfmt.c — shortest round-trip printing of doubles and complex numbers.
 * See numfmt.h for the rules. Must not know about qh values. */
#include "numfmt.h"
#include "qh_assert.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python-style repr of a finite non-integer (or huge) double: shortest %.Ng
 * that round-trips, then reshaped to repr's choice between fixed and
 * exponent notation (exponent when exp < -4 or exp >= 16). */
static int repr_double(char *buf, double d)
{
    char tmp[40];
    int prec;
    /* most doubles need 15-17 digits; try those first, then search down */
    snprintf(tmp, sizeof tmp, "%.*e", 14, d);
    if (strtod(tmp, NULL) == d) {
        int lo = 1, hi = 15; /* shortest in [1, 15]: binary search */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            char t2[40];
            snprintf(t2, sizeof t2, "%.*e", mid - 1, d);
            if (strtod(t2, NULL) == d)
                hi = mid;
            else
                lo = mid + 1;
        }
        prec = lo;
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
    } else {
        for (prec = 16; prec <= 17; prec++) {
            snprintf(tmp, sizeof tmp, "%.*e", prec - 1, d);
            if (strtod(tmp, NULL) == d) break;
        }
    }
    /* tmp is d.ddddde[+-]XX: split digits and exponent */
    char digits[24];
    int nd = 0;
    const char *p = tmp;
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    digits[nd] = 0;
    qh_assert(nd >= 1 && nd <= 17 && *p == 'e'); /* %e wrote d.ddd...e[+-]XX, at most 17 digits */
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = 0;
    char *o = buf;
    if (neg) *o++ = '-';
    if (exp < -4 || exp >= 16) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, nd - 1);
            o += nd - 1;
        }
        o += sprintf(o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -exp - 1; i++) *o++ = '0';
        memcpy(o, digits, nd);
        o += nd;
    } else {
        /* exp+1 digits before the point */
        for (int i = 0; i <= exp; i++) *o++ = i < nd ? digits[i] : '0';
        if (nd > exp + 1) {
            *o++ = '.';
            memcpy(o, digits + exp + 1, nd - exp - 1);
            o += nd - exp - 1;
        } else {
            *o++ = '.';
            *o++ = '0'; /* only reached for integers >= 1e15 */
        }
    }
    *o = 0;
    qh_assert(o - buf < NUMFMT_BUF && strtod(buf, NULL) == d); /* fits, and reads back as d */
    return (int)(o - buf);
}

/* integers below 1e15: a digit loop (printf's float path is slow) */
static int int_text(char *buf, double d)
{
    long long v = (long long)d;
    char tmp[24];
    int n = 0;
    bool neg = v < 0;
    unsigned long long u = neg ? (unsigned long long)(-v) : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int o = 0;
    if (neg) buf[o++] = '-';
    while (n) buf[o++] = tmp[--n];
    buf[o] = 0;
    qh_assert(o < NUMFMT_BUF && (double)v == d);
    return o;
}

int numfmt_double(char *buf, double d)
{
    if (isnan(d)) return sprintf(buf, "nan");
    if (isinf(d)) return sprintf(buf, d < 0 ? "-inf" : "inf");
    if (d == floor(d) && fabs(d) < 1e15) return int_text(buf, d); /* -0 too: "0" */
    return repr_double(buf, d);
}

/* Component of a complex number: Python prints integral parts without ".0"
 * inside complex numbers too, e.g. (1+2j). */
static int comp(char *buf, double d)
{
    if (isnan(d)) return sprintf(buf, "nan");
    if (isinf(d)) return sprintf(buf, d < 0 ? "-inf" : "inf");
    if (d == floor(d) && fabs(d) < 1e16) {
        if (d == 0 && signbit(d)) return sprintf(buf, "-0");
        return sprintf(buf, "%.0f", d);
    }
    return repr_double(buf, d);
}

int numfmt_complex(char *buf, double re, double im)
{
    char r[NUMFMT_BUF], i[NUMFMT_BUF];
    comp(i, im);
    if (re == 0 && !signbit(re)) return sprintf(buf, "%sj", i);
    comp(r, re);
    const char *sign =
        (im < 0 || (im == 0 && signbit(im)) || (isnan(im) && signbit(im))) ? "" : "+";
    if (isnan(im)) sign = "+";
    int n = sprintf(buf, "(%s%s%sj)", r, sign, i);
    qh_assert(n < NUMFMT_CBUF);
    return n;
}
