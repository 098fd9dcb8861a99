/* diag.h — diagnostics in one place: `FILE:LINE:COL: error: MESSAGE`, the
 * source line and a caret (lang/errors.md). Knows sources, not values. */
#ifndef QH_DIAG_H
#define QH_DIAG_H

#include <stdio.h>
#include "ast.h"

/* Prints one diagnostic (kind: "error" or "warning") with line and caret. */
void diag_print(FILE *out, const Source *src, int line, int col, const char *kind, const char *msg);
/* Where a line is, for messages that point elsewhere ("called at ..."):
 * FILE:LINE, or for a REPL entry "entry N" (its line L: "entry N, line L"),
 * or the entry's own label ("cell 3", "cell 3, line L").
 * Returns buf. */
const char *diag_where(char *buf, size_t n, const Source *src, int line);
/* The text of line `line` of src (no newline), its length in *n. */
const char *diag_line(const Source *src, int line, size_t *n);

/* Sources: a file read whole, or text given directly. NULL + message on failure. */
Source *source_from_file(const char *path, const char *shown, char *err, size_t errlen);
Source *source_from_text(const char *name, const char *text, size_t len);
void source_free(Source *s);

#endif
