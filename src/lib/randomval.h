/* randomval.h — NumPy's random generators as values (randomval.c): the
 * RandomState and Generator kinds, their methods, random_state() and
 * default_rng(). */
#ifndef QH_RANDOMVAL_H
#define QH_RANDOMVAL_H

/* Registers the kinds and the builtins (start-up). */
void randomval_open(void);

#endif
