/* circuitlib.h — circuits in and out and looking at them: qasm, qasm_file,
 * to_qasm, draw, specs (lang/quantum.md, "Circuits"). */
#ifndef QH_CIRCUITLIB_H
#define QH_CIRCUITLIB_H

/* Registers the circuit kind and the builtins (start-up). */
void circuitlib_open(void);

#endif
