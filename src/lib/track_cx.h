/* track_cx.h — complex intermediates of a differentiated evaluation
 * (track_cx.c): a tracked complex number or array as a pair of real values,
 * for track.c's operator and builtin slots. */
#ifndef QH_TRACK_CX_H
#define QH_TRACK_CX_H

#include "types.h"

/* Registers the kind (from track_open). */
void track_cx_open(void);
/* A complex number, a complex array or a tracked complex value. */
bool track_cx_operand(Value v);
bool track_cx_is(Value v);
/* Whether a list (nested) holds a tracked complex value. */
bool track_cx_inside(Value v);
/* a op b where one is complex and one is tracked (or a tracked pair). */
Value track_cx_binop(VM *vm, BinOp op, Value a, Value b, const Node *site);
/* array(list) of a list holding tracked complex values. */
Value track_cx_array(VM *vm, Value list, const Node *site);

#endif
