/* repl.h — the interactive REPL (GNU readline). */
#ifndef QH_REPL_H
#define QH_REPL_H

#include "vm.h"

/* Runs the REPL. With vm/mod (qh -i FILE) it continues in that program's
 * globals; otherwise it starts a fresh session. Returns the exit status. */
int repl_run(Interp *in, VM *vm, ObjModule *mod, const char *trace_path);

#endif
