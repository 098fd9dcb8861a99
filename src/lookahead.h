/* lookahead.h — starting quantum calls early while the main thread waits
 * (lang/async.md, "Lookahead"): calls the analysis proves will come next,
 * with arguments already known, are dispatched before their statement is
 * reached; the statement then takes the future started early. Main thread
 * only. Knows the evaluator's loop state, async.h's submission. */
#ifndef QH_LOOKAHEAD_H
#define QH_LOOKAHEAD_H

#include "async.h"

/* The main thread is about to block on a future: start what may start. */
void lookahead_run(VM *vm);
/* A call about to be dispatched as number index: the Fut of the same call
 * started early (a reference handed over), or NULL. */
Fut *lookahead_claim(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body, uint64_t index);
/* Cancels and forgets every call started early that was not claimed. */
void lookahead_drop(Interp *in);

#endif
