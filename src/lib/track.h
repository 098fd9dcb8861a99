/* track.h — differentiated values: the numbers and arrays a gradient
 * evaluation follows (lang/quantum.md, "Gradients of whole programs").
 *
 * While grad, jacobian, hessian or metric_tensor evaluates a function, the
 * arguments being differentiated are tracked values: a number or a float
 * array plus the node of the reverse-mode tape (src/ad) that made it. Every
 * operation on them (arithmetic, math builtins, indexing, array builtins,
 * reductions) computes the ordinary result and records a node; anything
 * that would lose the derivative is refused where it happens. Comparisons,
 * truthiness and printing use the plain value, so control flow follows the
 * values the evaluation met. Tracked values live on one VM (vm->ad) and
 * never cross threads: copied to another thread they become plain.
 *
 * Knows values, the dispatcher, arrays (arrayval.h), the tape (ad.h) and
 * the builtin table; the quantum side (diffq.h) plugs in through AdCtx.
 */
#ifndef QH_TRACK_H
#define QH_TRACK_H

#include "ad.h"
#include "types.h"

struct DiffQ;

/* The differentiation running on a VM. */
typedef struct AdCtx {
    AdTape *tape;
    uint64_t id;         /* tells this evaluation's values from any other's */
    struct DiffQ *dq;    /* quantum calls made during it (diffq.h), or NULL */
    struct AdCtx *outer; /* the VM's previous context (restored after) */
} AdCtx;

/* Registers the tracked kinds (start-up). */
void track_open(void);
/* A fresh context with an empty tape, installed on vm (the previous one
 * is kept in outer); track_end uninstalls and frees it. */
AdCtx *track_begin(VM *vm);
void track_end(VM *vm, AdCtx *c);

/* A tracked number / array on vm's context; node AD_NONE gives a plain
 * number / array. track_arr takes a. AD_ERR: the tape's error, v_exc(). */
Value track_num(VM *vm, double x, AdNode node, const Node *site);
Value track_arr(VM *vm, Array *a, AdNode node, const Node *site);

/* Is v a tracked number / array (of any evaluation)? */
bool track_is(Value v);
bool track_is_num(Value v);
bool track_is_arr(Value v);
/* A number (plain, bool or tracked) as (value, node on vm's tape); false
 * if v is not one. A tracked value of another evaluation is an error. */
bool track_number(VM *vm, Value v, double *x, AdNode *node, const Node *site, bool *err);
/* A tracked array's primal and node (borrowed). */
const Array *track_array(Value v);
AdNode track_node(Value v);
double track_value(Value v);
/* Whether a value holds tracked values anywhere (lists, dicts nested). */
bool track_inside(Value v);
/* The same structure with every tracked value replaced by its plain value
 * (a new reference; containers copied only where they hold some). */
Value track_plain(Value v);

#endif
