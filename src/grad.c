/* grad.c — gradients of quantum functions (LANGUAGE.md §8 grad). Being
 * written: this first version accepts plain numbers only. */
#include "eval.h"
#include "qrt.h"
#include "sv.h"

struct QTape;
struct ObjOp;
bool grad_param_value(Value v, double *out)
{
    if (v.t == T_NUM) { *out = v.n; return true; }
    if (v.t == T_BOOL) { *out = v.b; return true; }
    return false;
}
double *grad_param_tangent(VM *vm, Value v, int *ntan) { (void)vm; (void)v; *ntan = 0; return NULL; }
void grad_record(struct QTape *tape, const struct ObjOp *op) { (void)tape; (void)op; }
bool grad_shift(struct QTape *tape, const struct ObjOp *op, SvOp *out) { (void)tape; (void)op; (void)out; return false; }
void grad_note_expval(struct QTape *tape, const SvPauli *t, int n) { (void)tape; (void)t; (void)n; }
Value gradfn_call(VM *vm, Value g, Args *a) { (void)g; return vm_error(vm, a->site, "grad: not yet"); }
const BuiltinDef builtins_grad[] = { { NULL, NULL, 0, 0, 0, NULL, 0 } };
