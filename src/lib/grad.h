/* grad.h — gradients of quantum functions: the grad builtin and the kind
 * of the functions it returns. */
#ifndef QH_GRAD_H
#define QH_GRAD_H

/* Registers the gradient-function kind and the grad builtin (start-up). */
void grad_open(void);

#endif
