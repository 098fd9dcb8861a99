/* track_np.h — the derivatives of NumPy's functions on tracked values
 * (track_np.c), for track.c's builtin slot and nplib's var/std. */
#ifndef QH_TRACK_NP_H
#define QH_TRACK_NP_H

#include "vm.h"

/* The builtin bd (inv, solve, det, eigh, trace, diag, outer, concatenate,
 * stack, where, clip, cumsum, std) on arguments holding tracked values: the
 * tracked result, or v_notimpl() for a builtin that is not one of these. */
Value track_np_builtin(VM *vm, const struct BuiltinDef *bd, Args *a);
/* var / std (root) of a tracked array, composed of differentiated mean, sum
 * and arithmetic. */
Value track_np_var(VM *vm, Args *a, bool root);
/* NumPy builtins whose results have no derivative (run on plain values). */
extern const char *const track_np_plain[];

#endif
