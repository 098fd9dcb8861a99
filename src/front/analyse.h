/* analyse.h — parse-time dependency analysis (lang/command-line.md, "--deps"; lang/async.md).
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
/* The same for one part of a table that grows (the REPL's entries): body
 * from source src, its functions m->protos[first_proto, end_proto).
 * Statements are named "line N", or "entry N" for a REPL entry. st carries
 * which globals may hold futures, and from which call, from one part to
 * the next (NULL: a fresh state); with out NULL the part only advances st. */
typedef struct DepsState DepsState;
DepsState *analyse_deps_new(void);
void analyse_deps_free(DepsState *st);
void analyse_deps_part(ModInfo *m, const Source *src, Node *body, int first_proto, int end_proto,
                       DepsState *st, FILE *out);
void analyse_free_body(Node *body);

#endif
