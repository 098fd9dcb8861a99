/* temporary: stand-ins until the array, quantum and async glue land */
#include "eval.h"
Value qfn_call(VM *vm, ObjFunc *f, Value *params, const Node *site) { return eval_run_body(vm, f, params, site); }
Value future_force(VM *vm, Value fut, const Node *site) { (void)fut; return vm_error(vm, site, "futures not yet"); }
Value qrt_apply_stmt(VM *vm, Value op, const Node *site) { (void)op; return vm_error(vm, site, "ops not yet"); }
Value qrt_binop(VM *vm, int op, Value a, Value b, const Node *site) { (void)op; (void)a; (void)b; return vm_error(vm, site, "ops not yet"); }
Value arr_binop(VM *vm, int op, Value a, Value b, const Node *site) { (void)op; (void)a; (void)b; return vm_error(vm, site, "arrays not yet"); }
Value arr_unary_neg(VM *vm, Value a, const Node *site) { (void)a; return vm_error(vm, site, "arrays not yet"); }
Value arr_index(VM *vm, Value a, Value *idx, Node **idxnodes, int nidx, const Node *site) { (void)a; (void)idx; (void)idxnodes; (void)nidx; return vm_error(vm, site, "arrays not yet"); }
bool arr_setindex(VM *vm, Value a, Value *idx, Node **idxnodes, int nidx, Value v, const Node *site) { (void)a; (void)idx; (void)idxnodes; (void)nidx; (void)v; vm_error(vm, site, "arrays not yet"); return false; }
bool arr_contains(VM *vm, Value a, Value x, const Node *site, bool *err) { (void)a; (void)x; vm_error(vm, site, "arrays not yet"); *err = true; return false; }
size_t arr_len(Value a) { (void)a; return 0; }
Value arr_row(VM *vm, Value a, size_t i) { (void)a; (void)i; return vm_error(vm, NULL, "arrays not yet"); }
Value arr_math(VM *vm, int fn, Value a, const Node *site) { (void)fn; (void)a; return vm_error(vm, site, "arrays not yet"); }
Value arr_reduce(VM *vm, int which, Value a, Args *args) { (void)which; (void)a; return vm_error(vm, args->site, "arrays not yet"); }
Value gradfn_call(VM *vm, Value g, Args *a) { (void)g; return vm_error(vm, a->site, "grad not yet"); }
const BuiltinDef builtins_array[] = { { NULL, NULL, 0, 0, 0, NULL, 0 } };
const BuiltinDef builtins_quantum[] = { { NULL, NULL, 0, 0, 0, NULL, 0 } };
const BuiltinDef builtins_async[] = { { NULL, NULL, 0, 0, 0, NULL, 0 } };
#include "async.h"
#include "repl.h"
void async_start(Interp *in, const char *trace_path) { (void)in; (void)trace_path; }
int async_finish(Interp *in, VM *main_vm, bool cancel) { (void)in; (void)main_vm; (void)cancel; return 0; }
void async_install_sigint(Interp *in) { (void)in; }
int repl_run(Interp *in, VM *vm, ObjModule *mod, const char *trace_path) { (void)in; (void)vm; (void)mod; (void)trace_path; return 0; }
void builtins_register_hooks(void) {}
