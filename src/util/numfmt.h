/* numfmt.h — qh's fixed number printing rules (lang/values.md, "Printing").
 *
 * Integer-valued doubles below 1e15 in magnitude print without a fraction,
 * and -0 prints as 0 (scalars, array elements alike); every other finite value prints as the
 * shortest decimal string that reads
 * back to the same double (Python's repr); inf, -inf, nan. Complex numbers
 * print in Python's style: (1+2j), 1j, (-0-1j): inside a complex number a
 * negative zero keeps its sign. Knows nothing of values. */
#ifndef QH_NUMFMT_H
#define QH_NUMFMT_H

#include <stddef.h>

#define NUMFMT_BUF  40 /* enough for any double */
#define NUMFMT_CBUF 96 /* enough for any complex */

/* Writes the text of d into buf (NUMFMT_BUF bytes); returns its length. */
int numfmt_double(char *buf, double d);
/* Writes the text of re+im*j into buf (NUMFMT_CBUF bytes); returns its length. */
int numfmt_complex(char *buf, double re, double im);

#endif
