/* picture.c — showing values: display(v...) hands each value to the host's
 * display (Interp.hooks.show: a notebook shows it as a rich output, a
 * future still running as one that updates itself), or prints it as print
 * does where the host has none (the terminal). Knows values and the
 * dispatcher; nothing of hosts, sockets or the executor. */
#include "picture.h"
#include "builtins.h"
#include "types.h"
#include "vm.h"

/* Why: display(v, ...): IPython's display(); in a terminal, print's line
   for each value (futures waited for). */
static Value bi_display(VM *vm, Args *a)
{
    for (int i = 0; i < a->n; i++) {
        if (vm->in->hooks.show) {
            if (!vm->in->hooks.show(vm, a->v[i], a->site)) return v_exc();
            continue;
        }
        Value v = tp_force(vm, a->v[i], a->site);
        if (IS_EXC(v)) return v;
        Buf b;
        buf_init(&b);
        bool ok = tp_repr(vm, &b, v, false, a->site);
        decref(v);
        if (ok) buf_putc(&b, '\n');
        if (ok && buf_failed(&b)) ok = (vm_oom(vm, a->site), false);
        if (ok) ok = vm_write_out(vm, b.p, b.len, false, a->site);
        buf_free(&b);
        if (!ok) return v_exc();
    }
    return v_nil();
}

static const BuiltinDef builtins_picture[] = {
    { "display", bi_display, 0, -1, BI_LAZY | BI_IMPURE, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

void picture_open(void) { builtins_add(builtins_picture); }
