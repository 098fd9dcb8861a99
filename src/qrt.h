/* qrt.h — the quantum runtime: devices, operators, measurements, and
 * running one qfn call on a device instance from the pool. The language
 * side of lang/quantum.md; the simulator itself is src/quantum (sv_). */
#ifndef QH_QRT_H
#define QH_QRT_H

#include <stdio.h>
#include "vm.h"

/* Registers the device and operator kinds and the quantum builtins (start-up). */
void qrt_open(void);
/* Creates the device pool (budget in->max_memory) and kernel thread teams. */
void qrt_start(Interp *in);
void qrt_finish(Interp *in);
void qrt_stats(Interp *in, FILE *out);

/* Runs one call of f (a qfn) on this VM: takes a device instance from the
 * pool (waiting within the memory budget), seeds the call's random stream
 * from (seed, index), sleeps the device's latency, runs the body with the
 * rule of application in force, gives the instance back. slots are the
 * bound frame (references taken). Reentrant: each call has its own state. */
Value qrt_run(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots, const Node *site);
/* The same, recording onto a gradient tape (grad.h). */
struct QTape;
Value qrt_run_with(VM *vm, ObjFunc *f, uint64_t seed, uint64_t index, Value *slots, const Node *site, struct QTape *tape);

#endif
