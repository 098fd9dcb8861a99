/* module.h — the module loader: parsing, resolving and analysing a source
 * (the pipeline), finding `import NAME` on disk, preloading the imports a
 * program can see, and running an import. */
#ifndef QH_MODULE_H
#define QH_MODULE_H

#include <stdio.h>
#include "vm.h"

/* Parses, resolves and analyses a module's source; NULL (errors printed
 * to diag) if it has errors. */
ModInfo *load_and_analyse(Interp *in, Source *src, FILE *diag, bool warn);
/* Finds, parses and analyses every import visible in m before the run:
 * false (errors printed) if one of them has errors. */
bool module_preload(Interp *in, ModInfo *m, FILE *diag);
void module_preload_free(Interp *in);
/* Installs the evaluator's import hook in an interpreter. */
void module_attach(Interp *in);

#endif
