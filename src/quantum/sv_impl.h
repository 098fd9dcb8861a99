/* sv_impl.h — internals shared by the files of the statevector room.
 *
 * The kernel layer: a job describes one pass over the amplitudes (which
 * bits are fixed, which control bits must be 1, the small matrix or phase
 * table), and sv_job_run executes it serially or split over the state's
 * team. Callers above this layer (gates.c, measure.c, observables.c) have
 * already validated everything; nothing here checks input or knows gate
 * names. Not part of the room's interface: no other room includes it.
 */
#ifndef QH_SV_IMPL_H
#define QH_SV_IMPL_H

#include <assert.h>
#include <stdlib.h>

#include "errf.h"
#include "sv.h"

/* Invariants: checked in debug and sanitizer builds (NDEBUG unset). */
#define sv_assert(c) assert(c)
#ifdef NDEBUG
#define sv_unreachable() __builtin_unreachable()
#else
#define sv_unreachable() abort()
#endif

#define SV_MAX_TEAM 64

/* Wide kernels are compiled per function for their instruction set and
   only run after a run-time check (sv_level): the build stays portable. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define SV_X86    1
#define SV_AVX2   __attribute__((target("avx2,fma")))
#define SV_AVX512 __attribute__((target("avx512f,avx512dq,avx2,fma")))
#else
#define SV_X86 0
#endif

/* Index bit of a wire: wire 0 is the most significant bit. */
static inline int sv_bitpos(int nq, int wire)
{
    sv_assert(wire >= 0 && wire < nq);
    return nq - 1 - wire;
}

/* Insert a zero bit at each of the sorted (ascending) positions pos[0..m):
   maps an index of the "free" bits onto a full basis index. */
static inline uint64_t sv_expand(uint64_t i, const int *pos, int m)
{
    for (int k = 0; k < m; k++) {
        sv_assert(pos[k] >= 0 && pos[k] < 64 && (k == 0 || pos[k - 1] < pos[k]));
        uint64_t low = ((uint64_t)1 << pos[k]) - 1;
        i = (i & low) | ((i & ~low) << 1);
    }
    return i;
}

/* Sort a few ints ascending (insertion sort: m is small). */
static inline void sv_sort_ints(int *a, int m)
{
    for (int i = 1; i < m; i++) {
        int v = a[i], j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

/* The scalar cores of the portable kernels (m re/im interleaved,
   row-major): a 2x2 on the amplitudes at x and y (pointers to re), a 4x4
   on those at p[0..3]. */
static inline void sv_mul2(const double *m, double *x, double *y)
{
    double xr = x[0], xi = x[1], yr = y[0], yi = y[1];
    x[0] = m[0] * xr - m[1] * xi + m[2] * yr - m[3] * yi;
    x[1] = m[0] * xi + m[1] * xr + m[2] * yi + m[3] * yr;
    y[0] = m[4] * xr - m[5] * xi + m[6] * yr - m[7] * yi;
    y[1] = m[4] * xi + m[5] * xr + m[6] * yi + m[7] * yr;
}
static inline void sv_mul4(const double *m, double *const p[4])
{
    double vr[4], vi[4];
    for (int c = 0; c < 4; c++) {
        vr[c] = p[c][0];
        vi[c] = p[c][1];
    }
    for (int r = 0; r < 4; r++) {
        const double *q = m + 8 * r;
        double re = 0, im = 0;
        for (int c = 0; c < 4; c++) {
            re += q[2 * c] * vr[c] - q[2 * c + 1] * vi[c];
            im += q[2 * c] * vi[c] + q[2 * c + 1] * vr[c];
        }
        p[r][0] = re;
        p[r][1] = im;
    }
}

typedef enum SvJobKind {
    SVJ_PAIR,  /* 2x2 matrix on streams base+o1, base+o2 */
    SVJ_SWAP,  /* exchange streams base+o1, base+o2 */
    SVJ_QUAD,  /* 4x4 matrix on base+off[0..3] */
    SVJ_DENSE, /* 2^k x 2^k matrix, gathered per base */
    SVJ_DIAG,  /* per-amplitude phase from a table, chunks of 8 */
} SvJobKind;

typedef struct SvJob {
    SvJobKind kind;
    double *amp;    /* interleaved re, im */
    uint64_t total; /* size of the iteration space */
    int m;          /* fixed bit positions, ascending */
    int pos[SV_MAX_WIRES];
    uint64_t cm;     /* bits that must be 1 (controls) */
    uint64_t off[4]; /* stream offsets (pair: off[0], off[1]) */
    double mat[32];  /* 2x2 or 4x4 matrix, row-major, re/im interleaved */
    /* dense */
    int k;
    const uint64_t *doff; /* 2^k offsets */
    const cplx *dm;       /* the matrix */
    int dadj;             /* use the conjugate transpose of dm */
    /* diag: phase(i) = tab[key(i)][i & 7] where key comes from the bits
       at kpos (table mode) or the parity of i & kmask (parity mode) */
    int chunk;      /* 8, or dim when the state is smaller */
    int parity;     /* 1: parity mode */
    uint64_t kmask; /* parity mode: mask of high target bits */
    int nk;         /* table mode: high target bits */
    int kpos[4], kshift[4];
    int nkeys;
    uint64_t seg;          /* chunks per segment: contiguous, one key */
    double tab[8][16];     /* [key][2*j + re/im] */
    unsigned char skip[8]; /* 1 if tab[key] is all ones */
    int walk_only;         /* SvState.diag_walk: no blocks (kernels.c) */
} SvJob;

/* Execute a job over its whole iteration space (maybe on the team). */
void sv_job_run(const SvState *s, const SvJob *j);

/* Parallel-for over [0, n): fn(ctx, part, nparts) runs once per part, on
   the team when the state has one, else in order on the caller. nparts
   (<= SV_MAX_TEAM, returned) depends on the state's size only (1 below
   SV_PAR_QUBITS): results never depend on the threads used. */
typedef void (*SvPartFn)(void *ctx, int part, int nparts);
int sv_parallel(const SvState *s, SvPartFn fn, void *ctx);
/* How many parts sv_parallel would use for this state. */
int sv_nparts(const SvState *s);
/* The [a, b) slice of [0, n) that part p of np handles (64-aligned). */
static inline void sv_slice(uint64_t n, int p, int np, uint64_t *a, uint64_t *b)
{
    if (np <= 1) {
        *a = 0;
        *b = n;
        return;
    }
    uint64_t per = n / (uint64_t)np;
    per = (per + 63) & ~(uint64_t)63;
    uint64_t lo = per * (uint64_t)p, hi = lo + per;
    if (p == np - 1 || hi > n) hi = n;
    if (lo > n) lo = n;
    *a = lo;
    *b = hi;
}

/* The instruction level the kernels use for this state: the lowest of
   its simd field, what the CPU has (and the OS saves), and QH_SIMD. */
int sv_level(const SvState *s);
/* Whether the wide (AVX2 + FMA) kernels may run for this state. */
static inline int sv_use_avx2(const SvState *s) { return sv_level(s) >= SV_SIMD_AVX2; }

/* Block kernels (kernels_block.c): pair, exchange and 4x4 jobs with a
   fixed bit among the two lowest (a target or control inside one 64-byte
   line) run over lines of 4 amplitudes with the low bits as lanes. Runs
   the job and returns 1 if it takes that path, else returns 0. */
int sv_blk_run(const SvState *s, const SvJob *j, int level);

/* sv_apply without its validation (gates.c): for ops already checked
   against a state of the same width or wider (fuse.c runs them on
   chunks). 0, or -1 for an unknown gate. */
int sv_run_op(SvState *s, const SvOp *op, char *err, size_t errlen);

/* Why: a chunk of fuse.c whose amplitudes all have a control bit at 1
   runs the gate without that control. *out becomes op with control wire
   w removed (an extra control, or the control of CNOT, Toffoli, CSWAP,
   CY, CRX, CRY, CZ, CRZ, ControlledPhaseShift), running the same kernel
   with the same matrix on the amplitudes it touches: the same bytes
   there. m (4 entries) holds the 2x2 when the gate becomes a 1-wire
   QubitUnitary; out->matrix points to it. 0, or -1 if w is not one of
   op's controls. */
int sv_op_uncontrol(const SvOp *op, int w, SvOp *out, cplx *m);

/* Why: a fused pass (fuse.c) whose chunks lack target bits of a phase
   gate runs it as one phase per chunk (or on the bits they hold), so
   that those bits take no room in the pass. The op's targets that may be
   left out, as bits of indices into op->wires: the target of a gate that
   sv_run_op gives the diagonal kernel (a 1-qubit gate, 1-wire
   QubitUnitary or controlled gate whose 2x2 as applied is diagonal), all
   wires of IsingZZ and MultiRZ (a phase by their parity); else 0. */
uint64_t sv_op_phase_wires(const SvOp *op);

/* The op on the amplitudes where the parity of its wires out_wires (a
   subset of sv_op_phase_wires, as there) is even (v[0]) and odd (v[1]);
   for one target that is its value. A diagonal 2x2 becomes its phase
   d[v] under op's controls: a 1-wire QubitUnitary diag(d[v], d[v]) on
   wire spare (none of op's wires), or SV_IDENTITY where d[v] is exactly
   1 (every row of the kernel is ones then: it skips them all). IsingZZ
   and MultiRZ become MultiRZ on the other wires, theta negated where odd
   (its two phases exchanged, bit for bit), or with none the phase of
   that parity as above. m holds 8 entries. For the same bytes as op's
   own run the wires left out must be at bit 3 or above and spare below
   on the state the result runs on: each row of 8 amplitudes the kernel
   multiplies then has the same phases in both. 0, or -1 if out_wires is
   not one the op can leave out. */
int sv_op_phase_split(const SvOp *op, uint64_t out_wires, int spare, SvOp v[2], cplx *m);

/* Every user-facing message of the room, in one place. */
#define SV_E_NOSTATE   "%s: no state"
#define SV_E_NOOP      "sv_apply: no operation"
#define SV_E_BADGATE   "unknown gate %d"
#define SV_E_NWIRES    "%s: expected %d wire%s, got %d"
#define SV_E_NOWIRES   "%s: needs at least one wire"
#define SV_E_MANYWIRES "%s: at most %d wires, got %d"
#define SV_E_NCTRL     "%s: bad number of control wires (%d)"
#define SV_E_NPARAMS   "%s: expected %d parameter%s, got %d"
#define SV_E_NOTFINITE "%s: parameter %d is not finite"
#define SV_E_RANGE     "%s: wire %d out of range for a %d-wire device"
#define SV_E_CRANGE    "%s: control wire %d out of range for a %d-wire device"
#define SV_E_NEGWIRE   "%s: wire %d is negative"
#define SV_E_DUP       "%s: wires must be distinct (%s)"
#define SV_E_CDUP                                                                                \
    "%s: control wires must be distinct from each other and from the target wires (control %s; " \
    "wires %s)"
#define SV_E_NOMAT    "%s: no matrix"
#define SV_E_MATNF    "%s: matrix entries must be finite"
#define SV_E_NOTUNIT  "%s: matrix is not unitary (max |U U^dagger - I| = %.3g)"
#define SV_E_BITS     "%s: bits beyond its %d wires"
#define SV_E_NOPARAM  "%s: has no parameter %d"
#define SV_E_BIGOP    "%s: matrix of %d wires is too large (at most %d)"
#define SV_E_NOMEM    "%s: out of memory"
#define SV_E_NWMEAS   "%s: %d wires asked, at most %d"
#define SV_E_ZERONORM "%s: the state has zero norm"

/* Errors: format into err if it is not NULL. Always returns -1. The
   room's name for util's one formatter (errf.h). */
#define sv_err qh_errf

/* Sum of |amp|^2 over [a, b) (kernels.c, simd-aware). */
double sv_norm_range(const SvState *s, uint64_t a, uint64_t b);

#endif
