/* lookahead.c — see lookahead.h. */
#include "lookahead.h"

void lookahead_run(VM *vm) { (void)vm; }
Fut *lookahead_claim(VM *vm, ObjFunc *f, Value *params, const Node *site, TaskBody body, uint64_t index)
{
    (void)vm; (void)f; (void)params; (void)site; (void)body; (void)index;
    return NULL;
}
void lookahead_drop(Interp *in) { (void)in; }
