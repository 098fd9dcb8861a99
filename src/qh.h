/* qh.h — the interpreter's public face. */
#ifndef QH_QH_H
#define QH_QH_H

#include "vm.h"

/* Process-wide initialisation, once (safe to call again): every room
 * registers its value kinds and builtins. */
void qh_init(void);
/* Readies a zeroed Interp: the CPU count and the hooks of the rooms above
 * the evaluator (qfn calls, imports). */
void qh_attach(Interp *in);

#endif
