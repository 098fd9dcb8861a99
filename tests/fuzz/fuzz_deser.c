/* fuzz_deser.c — libFuzzer target for the serializer's reader (issue 26):
 * the bytes another rank sends, read by every kind's deser slot (lists,
 * dicts, strings, arrays, functions and modules, devices, operators,
 * observables, channels, modifiers, circuits, futures). An input is either
 * raw bytes (first byte 0xff) or a patch of a valid encoding: the first
 * byte picks one of the values of the program below, the second how much
 * of its encoding is kept, and each following pair of bytes (offset, byte)
 * overwrites one byte, so the fuzzer reaches deep into every kind. A value
 * read back is used (printed, and for operators and circuits passed to the
 * builtins that walk their ids), then freed with its cycles.
 * Built with -DFUZZ_READER_MAIN it is a plain program over files and
 * folders (meson test runs it over tests/fuzz/regressions/fuzz_deser and a
 * fixed set of pseudo-random patches).
 * Any crash, sanitizer report or leak is a bug in src/. */
#include "func.h"
#include "load.h"
#include "qh.h"
#include "serial.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char program[] =
    "l = [1, \"two\", [3, 4], nil, true, 2.5]\n"
    "d = {\"a\": 1, 2: [3], true: {\"x\": \"y\"}}\n"
    "c = 1.5 + 2j\n"
    "a = array([[1, 2.5], [3, 4]])\n"
    "ca = array([1 + 1j, 2])\n"
    "dev = device(\"statevector\", wires=3, shots=100, seed=7)\n"
    "mdev = device(\"mixed\", wires=2)\n"
    "fn add(p, q=2) { return p + q }\n"
    "fn mk(n) { fn inner(x) { return x + n } \n return inner }\n"
    "cl = mk(5)\n"
    "qfn circ(t) on dev { RX(t, 0)\n return expval(PauliZ(0)) }\n"
    "g = RX(0.5, wires=[1])\n"
    "cg = ctrl(PauliX(2), control=[0])\n"
    "obs = 0.5 * PauliZ(0) @ PauliX(1) + PauliY(2)\n"
    "hob = 2 * Hermitian(array([[1, 2j], [-2j, 3]]), wires=[1]) @ PauliZ(0)\n"
    "pr = Projector([1, 0], wires=[0, 2])\n"
    "u = QubitUnitary(array([[0, 1], [1, 0]]), wires=[0])\n"
    "ch = DepolarizingChannel(0.1, wires=0)\n"
    "pe = PauliError(\"XY\", 0.2, wires=[0, 1])\n"
    "adj = adjoint(circ)\n"
    "ctl = ctrl(circ, control=[2])\n"
    "qc = qasm(\"OPENQASM 2.0; qreg q[2]; creg c[2]; h q[0]; cx q[0], q[1]; if (c == 1) x q[1]; "
    "measure q -> c;\")\n"
    "bi = len\n"
    "cyc = [1]\n"
    "append(cyc, cyc)\n"
    "fut = circ(0.3)\n"
    "done = wait(fut)\n";
static const char *names[] = { "l",  "d",    "c",   "a",   "ca",  "dev", "mdev", "add",
                               "cl", "circ", "g",   "cg",  "obs", "hob", "pr",   "u",
                               "ch", "pe",   "adj", "ctl", "qc",  "bi",  "cyc",  "fut" };
#define NNAMES (sizeof names / sizeof names[0])

static qh_State *Q;
static SerCode code;
static CopyCtx kept; /* modules read: released at the end */
static Buf enc[NNAMES];
static Value users[3];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    qh_init();
    qh_Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.err = fopen("/dev/null", "w");
    cfg.sync = true;
    Q = qh_open(&cfg);
    qh_Program *P = qh_compile(Q, "fuzz_deser.qh", program, strlen(program), stderr);
    if (!P || qh_run(Q, P) != 0) {
        fprintf(stderr, "fuzz_deser: the program did not run\n");
        exit(1);
    }
    load_code_table(qh_interp(Q), qh_program_info(P), &code);
    copy_init(&kept);
    for (size_t i = 0; i < NNAMES; i++) {
        Value v;
        if (!qh_get_global(Q, names[i], &v)) exit(1);
        SerCtx w;
        ser_init(&w, &code);
        if (!ser_value(&w, v)) {
            fprintf(stderr, "fuzz_deser: %s cannot be written: %s\n", names[i], w.error);
            exit(1);
        }
        buf_init(&enc[i]);
        buf_put(&enc[i], w.out.p, w.out.len);
        ser_free(&w);
        decref(v);
    }
    const char *fns[] = { "to_qasm", "specs", "matrix" };
    for (int i = 0; i < 3; i++)
        if (!qh_get_global(Q, fns[i], &users[i])) users[i] = v_nil();
    return 0;
}

static void use(Value x)
{
    Buf b;
    buf_init(&b);
    value_repr(&b, x, true);
    buf_free(&b);
    for (int i = 0; i < 3; i++) {
        if (users[i].t == T_NIL) continue;
        Value r = qh_call(Q, users[i], 1, &x);
        if (!IS_EXC(r)) decref(r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 64 * 1024) return -1;
    unsigned char *bytes;
    size_t len;
    if (data[0] == 0xff) { /* raw */
        len = size - 1;
        bytes = malloc(len ? len : 1);
        memcpy(bytes, data + 1, len);
    } else {
        const Buf *e = &enc[data[0] % NNAMES];
        len = e->len;
        if (data[1] < 0xf0) len = e->len * (data[1] + 16) / (0xf0 + 16); /* keep a prefix */
        bytes = malloc(e->len ? e->len : 1);
        memcpy(bytes, e->p, e->len);
        for (size_t i = 2; i + 1 < size && len; i += 2) bytes[data[i] * 7 % len] = data[i + 1];
    }
    SerCtx r;
    des_init(&r, bytes, len, &code);
    Value x = des_value(&r);
    if (!IS_EXC(x)) {
        use(x);
        value_break_cycles(&x, 1);
        decref(x);
    }
    copy_move_modules(&kept, &r.memo);
    ser_free(&r);
    free(bytes);
    return 0;
}

#ifdef FUZZ_READER_MAIN
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    size_t cap = 4096, n = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (buf) LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

/* Usage: fuzz_deser_main N [FILE-OR-FOLDER...]: the files, then N patches
   from a fixed pseudo-random stream. */
int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int ran = 0;
    for (int i = 2; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) continue;
        if (!S_ISDIR(st.st_mode)) {
            run_file(argv[i]);
            ran++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            run_file(p);
            ran++;
        }
        if (d) closedir(d);
    }
    long n = argc > 1 ? atol(argv[1]) : 0;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (long k = 0; k < n; k++) {
        uint8_t in[34];
        for (size_t i = 0; i < sizeof in; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            in[i] = (uint8_t)s;
        }
        in[0] = (uint8_t)(k % NNAMES);
        in[1] = k % 3 ? 0xff : in[1];
        LLVMFuzzerTestOneInput(in, 2 + 2 * (size_t)(k % 17));
        ran++;
    }
    copy_release_modules(&kept);
    for (int i = 0; i < 3; i++) decref(users[i]);
    for (size_t i = 0; i < NNAMES; i++) buf_free(&enc[i]);
    load_code_free(&code);
    qh_close(Q, 0);
    printf("fuzz_deser: %d inputs, no crash\n", ran);
    return 0;
}
#endif
