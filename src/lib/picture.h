/* picture.h — values that have a picture: display(v...), which a host that
 * shows values itself (the notebook kernel) gets as values and which
 * prints them otherwise; the picture kind (a text and an SVG drawing) made
 * by hist, plot and draw. */
#ifndef QH_PICTURE_H
#define QH_PICTURE_H

#include "value.h"

/* A new picture value: its text (str, print, a terminal) and its SVG
 * (copied). */
Value picture_new(const char *text, const char *svg);
/* A picture's SVG (borrowed), or NULL for any other value. */
const char *picture_svg(Value v);
/* Registers the picture kind, display, hist, plot and save_svg (start-up). */
void picture_open(void);

#endif
