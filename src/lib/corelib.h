/* corelib.h — the core builtins: printing, conversion, containers,
 * strings, math, time, input. */
#ifndef QH_CORELIB_H
#define QH_CORELIB_H

#include "types.h"

/* Adds the core builtins to the table (start-up). */
void corelib_open(void);

#endif
