/* run.c — running a whole program: the main VM, the main module, the
 * executor's start and end, exit statuses. Knows the evaluator and the
 * async glue's entry points. */
#include "async.h"
#include "analyse.h"
#include "diag.h"
#include "eval.h"
#include "parse.h"
#include "qh.h"
#include "repl.h"

#include <stdlib.h>
#include <string.h>


/* Frees the imported modules: their globals first (breaking the cycles
 * functions make through their module), then their code. */
static void free_modules(Interp *in)
{
    if (!in->modules) return;
    ObjDict *d = in->modules;
    ModInfo **infos = malloc((d->len + 1) * sizeof(ModInfo *));
    size_t n = 0;
    for (size_t i = 0; i < d->nent; i++) {
        if (!d->ent[i].live) continue;
        ObjModule *m = AS_MOD(d->ent[i].val);
        infos[n++] = m->info;
        for (int g = 0; g < m->nglobals; g++) { Value v = m->globals[g]; m->globals[g] = v_nil(); decref(v); }
    }
    decref(v_obj(&d->h));
    in->modules = NULL;
    for (size_t i = 0; i < n; i++) {
        Source *src = infos[i]->src;
        analyse_free_body(infos[i]->body);
        parse_free(infos[i]);
        source_free(src);
    }
    free(infos);
}

int run_main(Interp *in, ModInfo *m, int argv_slot, bool interactive, const char *trace_path)
{
    qh_attach(in);
    async_start(in, trace_path);
    async_install_sigint(in);
    VM vm;
    vm_init(&vm, in, false);
    rng_seed(&vm.rng, in->seed);
    vm.stream_seed = in->seed;
    ObjModule *mod = module_new(m, "__main__");
    mod->globals[argv_slot] = v_list(in->argv);
    in->argv = NULL;
    bool ok = vm_run_module(&vm, mod);
    int status = 0;
    bool interrupted = !ok && vm.err.interrupted;
    if (!ok) {
        fflush(in->out);
        if (!interrupted) vm_print_error(&vm, stderr);
        status = interrupted ? 130 : 1;
    }
    if (interactive && !interrupted) {
        /* qh -i: the REPL, with the globals as the script left them, even
         * after a runtime error (as python -i); the session's end decides */
        while (vm.sp) decref(vm.stack[--vm.sp]);
        vm.depth = 0;
        vm.frame = NULL;
        fflush(in->out);
        status = repl_run(in, &vm, mod, NULL);
        ok = true;
    }
    fflush(in->out);
    int unobserved = async_finish(in, &vm, !ok);
    if (status == 0 && unobserved) status = 1;
    if (atomic_load(&in->sigint)) status = 130;      /* Ctrl-C: whatever failed because of it */
    /* break every cycle reachable from the program's modules, then release them */
    {
        /* the program's module and every imported one (the registry itself stays) */
        size_t nm = in->modules ? in->modules->nent : 0, k = 0;
        Value *roots = malloc((nm + 1) * sizeof(Value));
        roots[k++] = v_obj(&mod->h);
        for (size_t i = 0; i < nm; i++) if (in->modules->ent[i].live) roots[k++] = in->modules->ent[i].val;
        value_break_cycles(roots, (int)k);
        free(roots);
    }
    decref(v_obj(&mod->h));
    free_modules(in);
    vm_free(&vm);
    vm_thread_cleanup();
    fflush(in->out);
    return status;
}
