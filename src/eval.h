/* eval.h — internal interface between the evaluator and its helpers
 * (arith, builtins, quantum glue, async). Not for other rooms. */
#ifndef QH_EVAL_H
#define QH_EVAL_H

#include "interp.h"

/* Frame binding of a call: fills slots[0..p->nlocals) from positional and
 * keyword arguments and the function's defaults; false (error set) on a
 * mismatch. Takes the references in args. */
bool eval_bind_args(VM *vm, ObjFunc *f, Value *slots, int nargs, Args *kw, const Node *site);
/* Runs a function body in a fresh frame whose slots are already bound. */
Value eval_run_body(VM *vm, ObjFunc *f, Value *slots, const Node *site);

/* qfn calls (async.c): dispatch a task or run inline. params: the bound
 * parameter values (references are taken). */
Value qfn_call(VM *vm, ObjFunc *f, Value *params, const Node *site);
/* --trace: a main-thread statement from ts_us to now (async.c) */
double async_trace_now(Interp *in);
void async_trace_stmt(Interp *in, int line, double ts_us);
/* Resolves a future value (async.c). */
Value future_force(VM *vm, Value fut, const Node *site);

/* operators and quantum (qrt.c) */
Value qrt_apply_stmt(VM *vm, Value op, const Node *site);
Value qrt_binop(VM *vm, int op, Value a, Value b, const Node *site);

/* arrays (arrayval.c) */
Value arr_binop(VM *vm, int op, Value a, Value b, const Node *site);
Value arr_unary_neg(VM *vm, Value a, const Node *site);
Value arr_index(VM *vm, Value a, Value *idx, Node **idxnodes, int nidx, const Node *site);
bool arr_setindex(VM *vm, Value a, Value *idx, Node **idxnodes, int nidx, Value v, const Node *site);
bool arr_contains(VM *vm, Value a, Value x, const Node *site, bool *err);
size_t arr_len(Value a);
Value arr_row(VM *vm, Value a, size_t i);

/* differentiable numbers (grad.c): value with tangents */
Value dual_binop(VM *vm, int op, Value a, Value b, const Node *site);
Value dual_math(VM *vm, int fn, Value v, const Node *site);
double dual_value(Value v);

/* complex helpers */
bool as_complex(Value v, double *re, double *im);

/* slices: resolves start/stop/step against a length */
bool eval_slice(VM *vm, Value lo, Value hi, Value step, long len, long *start, long *stop, long *st, const Node *site);
bool num_to_index(VM *vm, Value v, long len, long *out, const Node *site, const char *what);

#endif
