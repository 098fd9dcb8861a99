/* qh.c — the interpreter's public face (qh.h): process-wide start-up in a
 * fixed order (the value room's kinds, the evaluator's, then each room
 * above it registers its kinds and builtins), and readying an Interp.
 * Knows every room's opening entry, none of their insides. */
#include "qh.h"
#include "arith.h"
#include "arrayval.h"
#include "async.h"
#include "corelib.h"
#include "cpus.h"
#include "dual.h"
#include "eval.h"
#include "grad.h"
#include "module.h"
#include "qrt.h"
#include "iolib.h"
#include "circuitlib.h"

#include <pthread.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_rooms(void)
{
    arith_open();           /* operator slots of numbers, strings, lists */
    call_open();            /* functions and builtins: their call slots */
    func_open();            /* modules */
    corelib_open();         /* the core builtins: first in the table */
    arrayval_open();
    dual_open();
    qrt_open();
    iolib_open();           /* files and data (io.h) */
    circuitlib_open();      /* OpenQASM, draw, specs */
    async_open();
    grad_open();
}

void qh_init(void) { pthread_once(&init_once, init_rooms); }

void qh_attach(Interp *in)
{
    qh_init();
    if (!in->ncpu) in->ncpu = qh_cpus();
    async_attach(in);
    module_attach(in);
}
