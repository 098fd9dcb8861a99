/* errf.h — the one formatter behind the lower rooms' error messages.
 *
 * The lower rooms (src/quantum, src/io, ...) report failures as a message
 * in a caller's buffer that may be NULL, and a -1 return: qh_errf does
 * both in one call, `return qh_errf(err, errlen, "...", ...)`. Knows
 * nothing else. */
#ifndef QH_ERRF_H
#define QH_ERRF_H

#include <stddef.h>

/* printf-style message into err (if err is not NULL and errlen > 0,
   truncated to fit); always returns -1. */
int qh_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
