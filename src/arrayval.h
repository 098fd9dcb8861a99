/* arrayval.h — arrays as qh values: the wrapper object and its maker, for
 * the rooms that build arrays (quantum measurements). */
#ifndef QH_ARRAYVAL_H
#define QH_ARRAYVAL_H

#include "value.h"

struct Array;
typedef struct ObjArray { Obj h; struct Array *a; } ObjArray;
#define AS_ARR(v) (((ObjArray *)(v).o)->a)

/* Wraps an Array (taking it) as a value. */
Value arr_wrap(struct Array *a);
void arrayval_register_hooks(void);

#endif
