/* laplan.h — the parse-time half of lookahead dispatch (lang/async.md,
 * "Lookahead"): which `for` loops may have their next iterations' quantum
 * calls started early, and how their arguments are computed. A loop gets a
 * plan when the analysis proves that each iteration makes the same calls in
 * the same order, with arguments computable without side effects from the
 * loop's variables, values the body never rebinds, and assignments of the
 * body that are themselves such computations:
 *   - no break, continue or return can leave an iteration early (a break
 *     or continue inside an inner loop is the inner loop's);
 *   - every quantum call site sits at a place each iteration evaluates
 *     exactly once (not under if, while, an inner for, try, and/or, a
 *     conditional expression or a comprehension), calls a qfn bound to a
 *     global by its one definition and never rebound anywhere in the
 *     module (and, at run time, the callee is checked to be a function of
 *     that code before anything runs ahead), and has pure arguments
 *     (constants, names, operators, indexing, value builtins such as sin
 *     or array; no calls of functions, no builtin that may call user code
 *     (BI_CALLS: matrix, sorted, grad, ...), nothing that waits, draws
 *     random numbers or reads the clock);
 *   - the other calls of the body are builtins, pure functions that make
 *     no quantum calls (so the calls of an iteration are counted exactly),
 *     or wrappers: plain functions whose body is straight-line assignments
 *     of locals and a return, computed as above from their parameters, and
 *     whose quantum calls are direct calls of qfns bound once (`fn
 *     energy(t) { return 2 * circuit(t) - 1 }`); such a call is a site: the
 *     wrapper runs ahead in the sandbox up to where it needs a result;
 *   - what the qfn takes along is rebound in the body only by such pure
 *     assignments or the loop itself;
 *   - or, a nested loop: the body's last statement is an inner `for` with
 *     a plan whose collection reads nothing the outer body rebinds (a grid
 *     sweep), after pure assignments and statements that make no quantum
 *     calls; the outer iterations' calls are started from the inner loop's
 *     last iteration.
 * Containers changed in place are checked at run time (lookahead.c).
 * Knows the AST and the builtin table; not evaluation. */
#ifndef QH_LAPLAN_H
#define QH_LAPLAN_H

#include <stdio.h>
#include "ast.h"

typedef enum LaStepKind { LA_ASSIGN, LA_SITE, LA_LOOP } LaStepKind;

/* One thing an iteration does that the lookahead repeats ahead of time, in
 * body order: a pure assignment `target = expr`, or a quantum call site
 * (expr is the N_CALL; target the plain name it is assigned to, or NULL). */
/* A global that must hold a function of proto's code when a site runs
 * ahead (checked before anything runs: binding, not name). */
typedef struct LaCheck {
    int slot;
    FnProto *proto;
} LaCheck;

typedef struct LaStep {
    LaStepKind kind;
    Node *target;
    Node *expr;
    /* LA_SITE: the call's callee (a qfn, or a plain fn that wraps qfn
     * calls: run ahead whole, it starts them) and, for a wrapper, the qfns
     * it calls: each global of checks[] must hold a function of its proto */
    const LaCheck *checks;
    int nchecks;
    int ncalls; /* quantum calls the site makes */
} LaStep;

typedef struct LaPlan {
    LaStep *steps; /* up to the last call site */
    int nsteps;
    int nsites;  /* quantum calls each iteration makes (outside an inner loop) */
    bool nested; /* its last step is an inner loop with a plan (LA_LOOP, expr the N_FOR),
                    whose collection is the same every iteration: reached ahead from
                    the inner loop's last iteration */
} LaPlan;

/* Straight-line lookahead (lang/async.md, "Straight-line code"): what a
 * top-level statement of a module's block allows while an earlier one
 * waits. Its quantum calls may start early while statement `from` (or any
 * between it and this one) waits, when every statement from `from` up to
 * this one (the waiting one included: the rest of it may still run)
 *   - makes a known number of quantum calls (ncalls >= 0: each call of a
 *     qfn bound once sits where the statement evaluates it exactly once;
 *     the other calls are value builtins, builtins that neither call user
 *     code nor run quantum code, pure plain functions that make no
 *     quantum calls, or wrappers as a loop body's: their calls count), so
 *     the calls started early get the numbers (and
 *     random streams) they will have;
 *   - cannot skip what follows: it has no `error()` call (the only raise
 *     at top level; break, continue and return are errors there), no
 *     import (a module's code) and no `try`;
 *   - rebinds no name the calls' arguments read nor a global the qfn
 *     takes along, and changes no container they read in place (an
 *     indexed or member assignment to it, a builtin that changes its
 *     first argument given it, a plain function given it);
 * and this statement's calls are planned as a loop body's are (laplan.h:
 * the callee by binding, pure arguments, no condition). Knows the AST. */
#define LA_STRAIGHT_REACH 32 /* statements a call may start ahead of its own */

typedef struct LaStraight {
    int ncalls;  /* quantum calls the statement makes each time it runs, or -1 (unknown) */
    int from;    /* index of the earliest statement whose wait may start its calls;
                        its own index: none may */
    LaPlan plan; /* its calls, in evaluation order (sites only; nsteps 0: none) */
    int first_line, last_line; /* --deps: the lines of statements from and (own index - 1) */
    bool first;                /* the block's first statement making quantum calls */
    const char *why;           /* --deps: why it may not start earlier (or at all) */
} LaStraight;

/* Attaches a plan (u.fors.plan, in m's arena) to every `for` of body and of
 * the functions m->protos[first_proto..] that qualifies. */
void laplan_analyse(ModInfo *m, Node *body, int first_proto);
/* --deps: a line for each loop with a plan in stmt (a top-level statement,
 * function definitions included), labelled `at`, and for each loop that
 * calls a qfn without one, which calls are refused and why (rebinding,
 * effect, condition). */
void laplan_print(const Node *stmt, const char *at, FILE *out);
/* --deps: for a top-level statement that calls a qfn (after the block's
 * first such), which of its calls straight-line code may start early and
 * while which lines wait, or why none may (LaStraight). */
void laplan_print_straight(const Node *stmt, const char *at, FILE *out);

#endif
