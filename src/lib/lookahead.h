/* lookahead.h — starting quantum calls early while the main thread waits
 * (lang/async.md, "Lookahead"): calls the analysis proves will come next,
 * (a loop's next iterations, the statements after a waiting top-level
 * one), with arguments already known, are dispatched before their statement is
 * reached; the statement then takes the future started early. Main thread
 * only. Knows the evaluator's loop state, task.h's submission. */
#ifndef QH_LOOKAHEAD_H
#define QH_LOOKAHEAD_H

#include "task.h"

/* The main thread is about to block on a future: start what may start. */
void lookahead_run(VM *vm);
/* A call about to be dispatched (s, its task's copies c not yet launched):
 * the Fut of the call started early for its place whose function object is
 * s->f and whose task's canonical bytes equal c's (a reference handed
 * over), or NULL. Early calls whose place has come are dropped either way. */
Fut *lookahead_claim(VM *vm, const TaskSpec *s, const TaskCtx *c);
/* Cancels and forgets every call started early that was not claimed. */
void lookahead_drop(Interp *in);
/* The sandbox's qfn call (async_dispatch while VM.la_sandbox): the call
 * started early as number VM.la_index, and a future on it; params: the
 * bound frame (references taken). An error (the sandbox stops) if it
 * cannot be started early. */
Value lookahead_start(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body);
/* --stats: calls started early, used and dropped. */
void lookahead_stats(Interp *in, FILE *out);
/* Drops everything and frees the state (at the end of a run). */
void lookahead_free(Interp *in);
/* Installs the evaluator's hooks (loop ends, the main thread's waits). */
void lookahead_attach(Interp *in);

#endif
