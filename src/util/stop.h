/* stop.h — a request to stop the running work (SIGINT, SIGTERM, SIGHUP),
 * seen by the lower rooms at their safe points: a long read, a QASM
 * expansion, printing a big array, a stack of matrices. The interpreter
 * names the flag its signal handler sets (qh_stop_watch); a room that sees
 * it stops what it does with an error ("interrupted"), and the interpreter
 * makes that error uncatchable. Knows nothing else. */
#ifndef QH_STOP_H
#define QH_STOP_H

#include <stdatomic.h>
#include <stdbool.h>

/* The flag to watch (NULL: none); set once, before any thread starts. */
void qh_stop_watch(const atomic_int *flag);
/* Whether a stop was requested (one relaxed load). */
bool qh_stop_requested(void);

#endif
