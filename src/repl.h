/* repl.h — the interactive REPL (GNU readline). */
#ifndef QH_REPL_H
#define QH_REPL_H

#include <stdbool.h>
#include "qh.h"

/* Runs the REPL on an interpreter: in the globals of the program it ran
 * (qh -i FILE), or a fresh session (fresh: the banner on a terminal).
 * Returns the exit status of the session itself (0); qh_close adds the
 * tasks' report. */
int repl_run(qh_State *Q, bool fresh);

#endif
