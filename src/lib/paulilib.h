/* paulilib.h — pauli_sum(text), a Hamiltonian from a Pauli sum as text
 * (paulilib.c). */
#ifndef QH_PAULILIB_H
#define QH_PAULILIB_H

/* Registers the builtin (start-up). */
void paulilib_open(void);

#endif
