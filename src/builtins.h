/* builtins.h — the builtin table: what a builtin is (name, arity,
 * keywords, flags, C function) and the registry every room adds its
 * builtins to at start-up. The resolver and the analyser read it (names,
 * flags); the evaluator calls through it. Knows values (the AST only as
 * a pointer to a node), not the VM (builtins receive it as an opaque pointer). */
#ifndef QH_BUILTINS_H
#define QH_BUILTINS_H

#include "value.h"

typedef struct Node Node; /* the AST's node (front/ast.h): builtins only carry a pointer to it */

/* Builtin calling convention: positional args and keyword args, already
 * evaluated: futures resolved unless the builtin is marked lazy, and
 * futures inside lists and dicts too unless it is marked shallow (a
 * builtin never sees a future it did not ask for). Returns a
 * new reference, or v_exc() after vm_error. */
struct Args {
    int n;
    Value *v;
    int nkw;
    ObjStr **kwname;
    Value *kw;
    Node *site;                   /* the call node, for messages */
    const struct BuiltinDef *def; /* the builtin being called */
};
typedef Value (*BuiltinFn)(VM *vm, Args *a);
typedef struct BuiltinDef {
    const char *name;
    BuiltinFn fn;
    int min, max; /* positional arity; max -1 = any */
    unsigned flags;
    const char *const *kwnames; /* accepted keywords, NULL-terminated, or NULL */
    double cval;                /* BI_CONST: the value (pi, e, inf, nan) */
} BuiltinDef;
enum {
    BI_LAZY = 1,     /* receives futures unresolved (ready, wait, append, ...) */
    BI_IMPURE = 2,   /* prints, reads input: not allowed in a qfn */
    BI_QUANTUM = 4,  /* needs a running quantum function (measurements) */
    BI_GATE = 8,     /* makes an operator */
    BI_CONST = 16,   /* a number, not a function */
    BI_SHALLOW = 32, /* reads only its arguments' top level (len, keys, pop, ...): futures
                           inside containers are passed along, not waited for */
    BI_MUTATES = 64, /* changes the container given as its first argument (append, insert,
                           pop): never computed ahead (laplan.c) */
    BI_CALLS = 128,  /* may call user code: takes a function and calls it (matrix(f, ...),
                           sorted(key=), grad, draw, ...) or returns one that will: never
                           computed ahead (laplan.c) */
    BI_FORCES = 256, /* lazy, yet resolves its one argument at once (wait): a call in
                           that argument is needed as soon as it returns (eval.c) */
};

/* Adds a room's table (terminated by name NULL) at start-up, before any
 * source is resolved; names are unique (the first table's wins). */
void builtins_add(const BuiltinDef *table);
/* Index of a builtin by name (what the resolver stores), or -1. */
int builtin_lookup(const char *name);
int builtin_count(void);
const BuiltinDef *builtin_get(int i);
/* The builtin as a value (constants are numbers). */
Value builtin_value(int i);
/* The builtin named `name` as a value (must exist: rooms use each other's). */
Value builtin_named(const char *name);

#endif
