/* eval.h — the evaluator's entry points, for the rooms above it (the
 * quantum runtime, async, gradients, the loader, qh.c) and between its own
 * files: eval.c (expressions and statements) and call.c (calls and
 * frames). The evaluator depends only downward: values and their kinds'
 * slots (types.h), the VM, the AST, function objects, builtins. */
#ifndef QH_EVAL_H
#define QH_EVAL_H

#include "func.h"
#include "types.h"

/* ---- eval.c ---- */
/* Runs a module's top-level statements; false on an uncaught error. */
bool vm_run_module(VM *vm, ObjModule *m);
/* Prepares a module's code without running it, once, before any thread
 * may run it: a rank that serves the tasks of a program it does not run
 * (remote.c) prepares every module before its workers start. */
void eval_prepare_module(ModInfo *m);
/* An expression's value (a new reference or v_exc()); a statement. These
 * prepare code that has not run before (a REPL entry). */
Value eval_expr(VM *vm, Node *e);
ExecStatus exec_stmt(VM *vm, Node *s);
ExecStatus exec_block(VM *vm, Node *b);
/* Runs a function body in a fresh frame whose slots are already bound
 * (references taken); checks the recursion limits. */
Value eval_run_body(VM *vm, ObjFunc *f, Value *slots, const Node *site);

/* A call whose value prepared code forces as soon as the call returns,
 * with nothing evaluated in between (an operand of an operator, the
 * argument of a builtin that reads it, of wait(), a condition): the
 * evaluator notes it in the N_CALL's flag. A quantum call there may run on
 * the calling thread at once (async.c): no other work could overlap it. */
#define EVAL_FORCED_AT_ONCE 1u
static inline bool eval_forced_at_once(const Node *site)
{
    return site && site->kind == N_CALL && (site->flag & EVAL_FORCED_AT_ONCE);
}

/* An expression of prepared code (inside the evaluator: call.c) */
static inline Value eval_node(VM *vm, Node *e) { return e->run.ev(vm, e); }

/* ---- call.c ---- */
/* N_CALL: evaluates callee and arguments, calls. */
Value eval_call(VM *vm, Node *n);
/* The same once the callee is evaluated (takes the reference). */
Value eval_call_callee(VM *vm, Node *n, Value callee);
/* Frame binding of a call: fills slots[0..p->nlocals) from positional and
 * keyword arguments and the function's defaults; false (error set) on a
 * mismatch. Takes the references in args. */
bool eval_bind_args(VM *vm, ObjFunc *f, Value *slots, int nargs, Args *kw, const Node *site);
/* A call made from C (a call slot): a's arguments copied onto the value
 * stack and bound as f's frame. The frame's slots, or NULL (error set);
 * after running the body, vm->sp = *base. */
Value *eval_bind_frame(VM *vm, ObjFunc *f, Args *a, size_t *base);
/* Registers the callable kinds: functions and builtins (start-up). */
void call_open(void);

#endif
