/* arrayval.h — arrays as qh values: the wrapper object, its maker and a
 * row getter, for the rooms that build or read arrays (quantum
 * measurements, gradients). */
#ifndef QH_ARRAYVAL_H
#define QH_ARRAYVAL_H

#include "array.h"
#include "vm.h"

struct Array;
typedef struct ObjArray {
    Obj h;
    struct Array *a;
} ObjArray;
#define AS_ARR(v) (((ObjArray *)(v).o)->a)

/* Wraps an Array (taking it) as a value. */
Value arr_wrap(struct Array *a);
/* Row i of an array (an element of a 1-d one). */
Value arr_row(VM *vm, Value a, size_t i, const Node *site);
/* For rooms that mirror arrays (gradients' tracked arrays): a subscript
 * (integer or slice value) as the array room's index, and a nested list of
 * numbers as an array (false / NULL with the error recorded). */
bool arr_subscript(VM *vm, Value v, const Node *site, void *ix /* ArIndex * */);
struct Array *arr_from_list(VM *vm, Value list, const Node *site);
/* The array room's function for a math builtin (arrays and the rooms that
 * mirror them). */
ArFunc arr_math_func(MathFn fn);
/* The array room's element-wise operator for a language operator (arrays
 * and the rooms that mirror them); false for one arrays do not have. */
bool arr_op_of(BinOp op, ArOp *out);
/* Registers the array kind and the array builtins (start-up). */
void arrayval_open(void);

#endif
