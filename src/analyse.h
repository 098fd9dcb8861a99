/* analyse.h — parse-time dependency analysis (LANGUAGE.md §9).
 * Per top-level statement: the globals it writes, the globals it reads in a
 * way that needs the value, the ones it only passes on, and the quantum
 * calls it makes; per function: purity and the globals it reads (what a
 * qfn takes along). A qfn body that prints, reads input, imports or assigns
 * a global is an analysis error. Knows the AST and the builtin table's
 * flags, not evaluation. */
#ifndef QH_ANALYSE_H
#define QH_ANALYSE_H

#include <stdio.h>
#include "ast.h"

/* Annotates m (statements of `body`, functions in m->protos from index
 * first_proto on); prints errors to diag; false if a qfn body is impure. */
bool analyse_module(ModInfo *m, FILE *diag);
bool analyse_body(ModInfo *m, Node *body, int first_proto, FILE *diag);
/* Prints the analysis the way `qh --deps` shows it. */
void analyse_print_deps(ModInfo *m, Node *body, FILE *out);
void analyse_free_body(Node *body);

#endif
