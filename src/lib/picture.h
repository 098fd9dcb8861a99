/* picture.h — values that have a picture: display(v...), which a host that
 * shows values itself (the notebook kernel) gets as values and which
 * prints them otherwise. */
#ifndef QH_PICTURE_H
#define QH_PICTURE_H

/* Registers display (start-up). */
void picture_open(void);

#endif
