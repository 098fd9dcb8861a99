/* nplib.h — NumPy's array functions as builtins (nplib.c): numpy.linalg,
 * ordering, statistics, joining and the rest of lang/arrays.md's "NumPy's
 * functions". */
#ifndef QH_NPLIB_H
#define QH_NPLIB_H

#include "vm.h"

/* var(a, axis=nil, ddof=0, keepdims=false) (root: std) of an array, list or
 * number: the quantum runtime's var() hands its non-observable calls here. */
Value np_var(VM *vm, Args *a, bool root);
/* var()'s keywords. */
extern const char *const np_var_keywords[];
/* Registers the builtins (start-up). */
void nplib_open(void);

#endif
