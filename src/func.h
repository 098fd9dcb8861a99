/* func.h — function and module objects (ObjFunc, ObjModule in vm.h): making
 * them, their lifecycle slots (free, clear, traverse, deep copy, print),
 * a module's globals and members. Knows values, the AST and the VM's
 * error reporting; not how a function is called (call.c registers the
 * function kind with its call slot, using the slots here). */
#ifndef QH_FUNC_H
#define QH_FUNC_H

#include "vm.h"

/* A function of p in module mod, with no defaults, cells or device yet
 * (the evaluator fills them: defaults and the device are evaluated). */
ObjFunc *func_new(FnProto *p, ObjModule *mod);
void func_free(Obj *o);
void func_clear(Obj *o);
void func_traverse(Obj *o, void (*visit)(Value child, void *ud), void *ud);
Value func_copy(Value v, CopyCtx *cc);
void func_repr(Buf *b, Value v, bool quoted);

/* A module whose globals start as the builtins its names resolve to. */
ObjModule *module_new(ModInfo *info, const char *name);
/* After the resolver added globals (REPL): the new slots. */
void module_grow(ObjModule *m);
/* A copy of m for a task with only the globals in `want` (deep copies by
 * cc, which records the module: copy_release_modules frees it). */
ObjModule *module_copy_some(ObjModule *m, const bool *want, CopyCtx *cc);
/* A copy of m for a task holding no globals yet: copying a function of m
 * (by cc) then adds the globals it reads. */
ObjModule *module_copy_partial(ObjModule *m, CopyCtx *cc);
/* Into a partial copy of m: the globals p reads that it lacks (copied by
 * cc; functions among them add theirs in turn). Copying a function whose
 * module has a partial copy calls it: what a task takes along follows the
 * function values it reaches, not only the names its qfn spells. */
void module_copy_reads(ObjModule *m, ObjModule *copy, const FnProto *p, CopyCtx *cc);

/* ---- functions and modules for another process (serial.h) ----
 * They travel by reference to the code every rank parsed from the same
 * sources: a module as its number in the code table (with its globals'
 * values), a function as (module number, index among its module's
 * functions) with its defaults, cells and device. The table lists the
 * same modules in the same order on every rank. */
typedef struct SerCode {
    ModInfo **mods;     /* 0: the program, then its imports */
    const char **names; /* what each module is called ("__main__", import names) */
    int *nprotos;       /* the functions each had then (REPL entries add more on one rank only) */
    int nmods;
} SerCode;
bool func_ser(Value v, SerCtx *sc);
Value func_deser(SerCtx *sc, ValType t, size_t id);

/* Registers the module kind (start-up). */
void func_open(void);

#endif
