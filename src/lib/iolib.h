/* iolib.h — the data builtins: read_text, read_lines, write_text, load,
 * save, load_csv, json_parse, json_dump (lang/builtins.md). */
#ifndef QH_IOLIB_H
#define QH_IOLIB_H

/* Registers the builtins (start-up). */
void iolib_open(void);

#endif
