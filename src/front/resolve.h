/* resolve.h — the resolver: every name to a slot before anything runs.
 * Python's scoping rule: a name assigned in a function body is local to it
 * unless declared `global`; enclosing functions' locals are reached through
 * cells (closures by reference); the rest are module globals or builtins.
 * Knows the AST, not evaluation. */
#ifndef QH_RESOLVE_H
#define QH_RESOLVE_H

#include <stdio.h>
#include "ast.h"

/* Looks a builtin up by name: its index, or -1. */
typedef int (*BuiltinLookup)(const char *name);

/* Resolves `body` (top-level statements) into m's global table, growing
 * it. Errors (e.g. `global` at top level misuse) are printed to diag;
 * returns false on error. warn_unbound: warn about names never bound. */
bool resolve_module(ModInfo *m, Node *body, BuiltinLookup builtins, FILE *diag, bool warn_unbound);
/* Declares a global that the host binds (argv): its slot. */
int resolve_declare(ModInfo *m, const char *name, BuiltinLookup builtins);
/* Slot of a global by name, or -1. */
int resolve_global_slot(const ModInfo *m, const char *name);

/* Builtins hidden by variables. A global named like a builtin
 * (`state = ...`) makes every call `state(...)` that resolves to the global
 * call the variable; a local does so inside its function. Warns, once per
 * name, where such a variable is bound by anything but a function
 * (`fn`, `qfn`, `NAME = fn ...`) while the name is also called:
 * `warning: 'state' hides the builtin state(), called at FILE:LINE`, at the
 * binding. A memo carries the global bindings and calls seen across bodies
 * resolved into the same table (the REPL's entries); with memo NULL, body
 * is checked alone. diag NULL: only note, never warn. Run after resolving
 * body. */
typedef struct HideMemo HideMemo;
HideMemo *resolve_hide_new(void);
void resolve_hide_free(HideMemo *h);
void resolve_warn_hidden(ModInfo *m, Node *body, BuiltinLookup builtins, HideMemo *memo,
                         FILE *diag);

#endif
