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

#endif
