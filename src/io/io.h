/* io.h — the data I/O room (prefix io_): text files, NumPy .npy, CSV, JSON.
 *
 * Plain C over bytes, numbers and a small JSON tree: it must not know
 * about the language's values, the evaluator or the executor (the
 * language glue converts between IoArray / IoJson and its values, and
 * decides where I/O is allowed). Every function reports failure as -1 or
 * NULL with a message in err that names the path and the reason:
 *   "'data.csv': No such file or directory"
 *   "'data.csv': line 4: expected 3 fields, got 2"
 *   "'x.npy': not a .npy file (bad magic string)"
 *   "line 2, column 7: expected ',' or ']'"          (json, no path)
 * Nothing here is global; every call may run on any thread.
 */
#ifndef QH_IO_H
#define QH_IO_H

#include <stddef.h>
#include <stdint.h>

/* ---- text files ----------------------------------------------------------- */

/* What is read of a file whose size is not known (a device, a pipe; or
   beyond the size of a regular file that grows while it is read). */
#define IO_MAX_STREAM ((size_t)256 << 20)

/* The whole file, NUL-terminated (the NUL is not counted in *len), on the
   heap (free it). NULL + err if it can't be opened or read, or if it is
   not a regular file and longer than IO_MAX_STREAM. */
char *io_read_file(const char *path, size_t *len, char *err, size_t errlen);
/* Write (append = 0: replace, 1: append) len bytes; 0 or -1 + err. */
int io_write_file(const char *path, const char *data, size_t len, int append, char *err,
                  size_t errlen);
/* Python's str.splitlines() for \n, \r\n and \r: the number of lines and,
   when starts/lens are not NULL, each line (without its ending). */
size_t io_split_lines(const char *text, size_t len, const char **starts, size_t *lens);

/* ---- arrays (npy, csv) ---------------------------------------------------- */

#define IO_MAX_DIMS 32

typedef struct IoArray {
    int is_complex; /* 0: float64, 1: complex128 */
    int ndim;       /* 0 (a scalar) .. IO_MAX_DIMS */
    size_t shape[IO_MAX_DIMS];
    size_t n;     /* number of elements (product of shape) */
    double *data; /* n doubles, or 2n (re, im) for complex; C order */
} IoArray;

void io_array_free(IoArray *a);

/* A NumPy .npy file, versions 1.0, 2.0 and 3.0: float64 and complex128
   are read as they are; other numeric dtypes (float32/16, complex64,
   signed and unsigned integers, bool, either byte order) are converted to
   float64 / complex128; Fortran order is turned into C order. */
int io_npy_read(const char *path, IoArray *out, char *err, size_t errlen);
/* The same from bytes in memory; name is used in messages. */
int io_npy_parse(const unsigned char *buf, size_t len, const char *name, IoArray *out, char *err,
                 size_t errlen);
/* Writes '<f8' or '<c16', C order, version 1.0 (2.0 if the header needs it),
   the header padded to a multiple of 64 bytes as numpy does. */
int io_npy_write(const char *path, const IoArray *a, char *err, size_t errlen);
/* The bytes io_npy_write would write (heap; free it). */
unsigned char *io_npy_encode(const IoArray *a, size_t *len, char *err, size_t errlen);

/* CSV to a 2-d float64 array (rows x columns). delim: a one-byte field
   separator (' ' means runs of blanks, as numpy.loadtxt's default);
   skip: lines dropped first (a header); then blank lines and lines whose
   first non-blank is '#' are ignored, as are '#' comments after the data.
   Fields may be blank-padded or double-quoted; numbers as strtod reads
   them (nan, inf too). Every row must have the same number of fields. */
int io_csv_read(const char *path, char delim, long skip, IoArray *out, char *err, size_t errlen);
/* io_csv_parse's input: the text (len bytes, not 0-terminated), the name its
   messages give it (NULL: "<csv>"), and io_csv_read's delim and skip. */
typedef struct IoCsvText {
    const char *text;
    size_t len;
    const char *name;
    char delim;
    long skip;
} IoCsvText;
int io_csv_parse(const IoCsvText *in, IoArray *out, char *err, size_t errlen);

/* ---- JSON ----------------------------------------------------------------- */

typedef enum IoJsonKind {
    IOJ_NULL,
    IOJ_BOOL,
    IOJ_NUMBER,
    IOJ_STRING,
    IOJ_ARRAY,
    IOJ_OBJECT
} IoJsonKind;

typedef struct IoJson IoJson;
struct IoJson {
    IoJsonKind kind;
    int b;           /* bool */
    double num;      /* number */
    char *str;       /* string (UTF-8, may hold NULs), NUL-terminated */
    size_t len;      /* its length in bytes */
    size_t n;        /* array / object: number of items */
    IoJson *items;   /* the items (object: the values) */
    char **keys;     /* object: the keys, in file order (NUL-terminated) */
    size_t *keylens; /* object: key lengths */
};

/* Parse one JSON text (RFC 8259, plus NaN, Infinity and -Infinity as
   Python's json module reads them). NULL + "line L, column C: reason". */
IoJson *io_json_parse(const char *text, size_t len, char *err, size_t errlen);
void io_json_free(IoJson *j); /* a tree from io_json_parse */

/* Building trees to dump (all allocation is the caller's business: these
   only fill in nodes; io_json_dump reads the tree). */
IoJson io_json_null(void);
IoJson io_json_bool(int b);
IoJson io_json_number(double x);
IoJson io_json_string(const char *s, size_t len); /* borrows s */

/* The text of a tree as Python's json.dumps writes it: indent < 0 gives
   one line with ", " and ": " separators; indent >= 0 puts each item on
   its own line, indented by that many spaces per level, with "," and
   ": ". Numbers as qh prints them (3, 0.1, 1e+20), NaN / Infinity /
   -Infinity as Python does; strings escaped (", \, control characters),
   UTF-8 kept. Heap (free it); NULL + err if out of memory or nested
   deeper than 1000. */
char *io_json_dump(const IoJson *j, int indent, size_t *len, char *err, size_t errlen);

#endif
