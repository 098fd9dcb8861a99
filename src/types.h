/* types.h — the dispatcher: every operation the evaluator and the builtins
 * apply to a value, over any kind. Lists, dicts, strings and numbers are
 * handled inline; every other kind through the slots of its TypeOps
 * (value.h). A lazy kind (a future) is forced here, generically, before
 * any operation reads it: no slot and no caller ever sees one unless it
 * asks (tp_force, BI_LAZY builtins). Binary operators follow Python's
 * protocol: the left operand's kind, then the right's, each may answer
 * "not implemented". Knows values, the VM's errors and builtins.h; nothing
 * of the AST's evaluation or of any particular room's kind. */
#ifndef QH_TYPES_H
#define QH_TYPES_H

#include "builtins.h"
#include "vm.h"

/* The value v stands for: lazy kinds are forced (waiting), others returned
 * as they are. A new reference, or v_exc(). */
Value tp_force(VM *vm, Value v, const Node *site);

/* Resolves, in place, every future inside v's lists and dicts at any depth
 * (a future stored in a container stands for its value: replacing it is not
 * visible). v itself is not forced. False (error recorded at site) if one
 * of them failed. Free when no lazy value exists. */
bool tp_resolve_in(VM *vm, Value v, const Node *site);
/* Forces v[0..n) in place (references swapped); deep: also the futures
 * inside containers (tp_resolve_in). vsite[i] locates v[i] (may be NULL). */
bool tp_force_args(VM *vm, Value *v, int n, const Node *site, Node *const *vsite, bool deep);

/* a op b; OP_IN/OP_NOTIN test b's contents. New reference or v_exc(). */
Value tp_binop(VM *vm, BinOp op, Value a, Value b, const Node *site);
/* -a, +a, ~a (numbers here; other kinds through their unop slot) */
Value tp_unop(VM *vm, BinOp op, Value a, const Node *site);
/* The error of a bitwise operator whose operand x is not an integer of
 * magnitude below 2^53 (lang/values.md#bitwise-operators). */
Value tp_bit_error(VM *vm, BinOp op, double x, const Node *site);
/* Truthiness (nil, false, 0, empty are false); *err set on a failed force. */
bool tp_truthy(VM *vm, Value v, const Node *site, bool *err);
/* x in coll: a bool value or v_exc(). */
Value tp_contains(VM *vm, Value coll, Value x, const Node *site);

/* obj[idx...] and obj[idx...] = v. Subscripts are forced values (slices as
 * T_SLICE); isite[k] locates subscript k in messages (NULL: site). */
Value tp_index(VM *vm, Value obj, int nidx, const Value *idx, const Node *site, Node *const *isite);
bool tp_setindex(VM *vm, Value obj, int nidx, const Value *idx, Value v, const Node *site,
                 Node *const *isite);
/* len(v): false (no error recorded) when the kind has no length. */
bool tp_len(Value v, size_t *out);

/* Iteration: begin (false and an error if coll cannot be iterated), next
 * (1 and a new reference, 0 at the end, -1 on error), end (always). The
 * collection must stay alive (the caller holds it) until end. */
bool tp_iter_begin(VM *vm, Value coll, Iter *it, const Node *site);
int tp_iter_next(VM *vm, Value coll, Iter *it, Value *out, const Node *site);
void tp_iter_end(Iter *it);

/* Calls any callable (arguments borrowed): a new reference or v_exc(). */
Value tp_call(VM *vm, Value fn, Args *a);
Value vm_call(VM *vm, Value fn, int nargs, Value *args, Node *site);
/* obj.name */
Value tp_member(VM *vm, Value obj, const ObjStr *name, const Node *site);
/* str(v) into b, forcing lazy values inside containers; false on error. */
bool tp_repr(VM *vm, Buf *b, Value v, bool quoted, const Node *site);
/* print's line: the str forms of v[0..n) with `sep` between them and `end` after, written to
 * the program's output at once (print, and display where the host shows nothing itself). */
typedef struct PrintSep {
    const char *sep, *end;
    size_t seplen, endlen;
} PrintSep;
extern const PrintSep print_line; /* " " between, "\n" after */
bool tp_print(VM *vm, const Value *v, int n, const PrintSep *ps, const Node *site);
/* The real number v stands for (numbers, and kinds with a number slot). */
bool tp_number(Value v, double *out);
/* A math builtin or a reduction on a kind that implements it: v_notimpl()
 * when it does not (the builtin then says what it accepts). */
Value tp_math(VM *vm, MathFn fn, Value v, long arg, const Node *site);
Value tp_reduce(VM *vm, ReduceFn fn, Value v, Args *a);
/* A builtin's arguments hold a TF_INTERCEPT kind: that kind's builtin
 * slot's answer (v_notimpl(): the builtin runs as usual). Cheap check
 * first: tp_intercepts. */
bool tp_intercepts(const Args *a);
Value tp_builtin(VM *vm, const struct BuiltinDef *bd, Args *a);
/* The symbol of an operator, for messages. */
const char *op_symbol(BinOp op);

/* ---- helpers for slots and builtins ---- */
bool as_complex(Value v, double *re, double *im);
/* an integer index into a sequence of length len (negative from the end) */
bool num_to_index(VM *vm, Value v, long len, long *out, const Node *site, const char *what);
/* a slice's start, stop and step against a length */
bool slice_indices(VM *vm, const ObjSlice *sl, long len, long *start, long *stop, long *step,
                   const Node *site);
/* builtin arguments: a number, an integer, a keyword's value (or NULL) */
bool arg_int(VM *vm, Args *a, int i, const char *what, long *out);
bool arg_num(VM *vm, Args *a, int i, const char *what, double *out);
Value *arg_kw(Args *a, const char *name);

#endif
