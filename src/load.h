/* load.h — the loader: the pipeline from source to an analysed module
 * (written once: qh.h's compile functions and imports use it), finding
 * `import NAME` on disk, preloading the imports a program can see, and
 * running an import (the evaluator's import hook). */
#ifndef QH_LOAD_H
#define QH_LOAD_H

#include <stdio.h>
#include "func.h"
#include "resolve.h"
#include "vm.h"

typedef enum LoadKind {
    LOAD_MODULE, /* an imported module */
    LOAD_MAIN,   /* a program: declares argv, warns about names never bound */
    LOAD_ENTRY,  /* a REPL entry: resolved into the session's table */
} LoadKind;

/* Parses src, resolves its names (an entry into session's globals; memo:
 * the session's record for the hidden-builtin warning), warns about hidden
 * builtins, analyses, and preloads every import it can see. Diagnostics go
 * to diag; an entry's resolve and analysis messages name its own source.
 * *out: the parse (owning src), or NULL; an entry's part is set even on a
 * later error (keep it: its nodes may be referenced; a rejected entry's
 * functions were taken out of the table again). Returns false on any
 * error. */
bool load_compile(Interp *in, Source *src, LoadKind kind, ModInfo *session, HideMemo *memo,
                  FILE *diag, ModInfo **out);
/* Takes the functions from index first on out of a session's table again
 * (their tables freed; their nodes stay in their part's arena): an entry
 * that was rejected, or only analysed, defined nothing. */
void load_forget_protos(ModInfo *session, int first);
/* Releases the imported modules (their cycles broken before) and frees
 * every parse the loader made. */
void load_free_all(Interp *in);
/* The code table of a program (func.h SerCode): main first, then every
 * module loaded so far, in the order the loader met them (the same on every
 * process that compiled the same sources). Free with load_code_free. */
void load_code_table(Interp *in, ModInfo *main, SerCode *out);
void load_code_free(SerCode *code);
/* Installs the evaluator's import hook in an interpreter. */
void load_attach(Interp *in);

#endif
