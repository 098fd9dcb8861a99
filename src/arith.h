/* arith.h — arithmetic of the kinds the value room owns: numbers, complex
 * numbers, strings and lists (concatenation, repetition, comparison).
 * arith_open registers their operator slots; the evaluator's number fast
 * path calls arith_num directly. Knows values and the dispatcher. */
#ifndef QH_ARITH_H
#define QH_ARITH_H

#include "types.h"

/* x op y for two numbers (errors: division by zero, ...). */
Value arith_num(VM *vm, BinOp op, double x, double y, const Node *site);
/* Registers the operator slots of numbers, complex numbers, strings, lists. */
void arith_open(void);

#endif
