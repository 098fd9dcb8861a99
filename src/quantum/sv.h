/* sv.h — the statevector room: the interface of qh's simulator.
 *
 * A state of nq qubits is 2^nq complex doubles, wire 0 = most significant
 * bit of the basis index (PennyLane's convention). Gates, observables,
 * probabilities, sampling and mid-circuit measurement act on it in place.
 *
 * This room is pure C with the prefix sv_. It must not know about the
 * language, values, devices, futures or the executor: callers hand it
 * plain numbers and wire indices and get plain numbers back. Randomness
 * comes from a caller-owned Rng (src/util/rng.h); nothing here is global.
 * Layers: sv_apply validates and names the gate in its errors, a
 * dispatcher picks a kernel by the gate's kind, the kernels do the math.
 *
 * Thread safety: one SvState is used by one thread at a time. A state may
 * borrow an SvTeam (persistent worker threads) to split big kernels; two
 * states sharing a team take turns on it (the team serialises its users).
 */
#ifndef QH_SV_H
#define QH_SV_H

#include <complex.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "rng.h"

typedef double _Complex cplx;
typedef struct SvTeam SvTeam; /* reusable worker threads for big states */

typedef struct SvState {
    int nq;        /* number of qubits (wires) */
    size_t dim;    /* 2^nq */
    cplx *amp;     /* 64-byte aligned amplitudes */
    SvTeam *team;  /* borrowed, may be NULL */
    int nthreads;  /* threads to use from team (<= 1: serial) */
    int simd;      /* highest instruction level the kernels may use:
                          SV_SIMD_C (0) portable C only, SV_SIMD_AVX2 (1)
                          AVX2 + FMA, SV_SIMD_AVX512 (2, the default) —
                          each only where the CPU has it. Tests lower it to
                          cover every level; the environment variable
                          QH_SIMD=c|avx2|avx512 caps it for the process. */
    int diag_walk; /* 1: the diagonal kernels walk every segment, never by
                      blocks (kernels.c); the same bytes, for tests to
                      compare the two */
} SvState;

#define SV_SIMD_C      0
#define SV_SIMD_AVX2   1
#define SV_SIMD_AVX512 2
/* The level the kernels would use for a state with simd = SV_SIMD_AVX512
   on this CPU under this environment (0, 1 or 2). */
int sv_simd_level(void);

/* Bytes of a state of nq qubits: 16 * 2^nq; SIZE_MAX if it does not fit. */
size_t sv_bytes(int nq);
/* |0..0>; returns 0, or -1 if the memory can't be had (never aborts).
   0 <= nq <= 59 (on 64-bit hosts). On failure *s is zeroed. */
int sv_init(SvState *s, int nq);
void sv_free(SvState *s);
void sv_reset(SvState *s); /* back to |0..0> */

/* A team of nthreads participants: the caller of a kernel is one of them,
   so nthreads-1 threads are started (at most 64 in all). NULL on failure. */
SvTeam *sv_team_new(int nthreads);
void sv_team_free(SvTeam *team);
int sv_team_size(const SvTeam *team);
/* How long a team's idle workers wait awake for the next job before they
   sleep, in seconds (at most 10); SV_SPIN_DEFAULT (any negative value)
   restores the default, which adapts to the gaps between jobs. Waiting
   awake keeps the core ready for the next gates, sleeping gives it to
   other work (statevector.c; tests/bench/README.md: the measured trade). */
#define SV_SPIN_DEFAULT (-1.0)
void sv_team_set_spin(SvTeam *team, double seconds);
/* Use up to nthreads of team for this state's big kernels;
   nthreads <= 1 or team NULL: serial. */
void sv_set_threads(SvState *s, SvTeam *team, int nthreads);
/* States with at least this many qubits split kernels over the team. */
#ifndef SV_PAR_QUBITS
#define SV_PAR_QUBITS 15
#endif

typedef enum SvGate {
    SV_IDENTITY,
    SV_HADAMARD,
    SV_PAULIX,
    SV_PAULIY,
    SV_PAULIZ,
    SV_S,
    SV_T,
    SV_SX,
    SV_RX,
    SV_RY,
    SV_RZ,
    SV_PHASESHIFT,
    SV_ROT,
    SV_U3,
    SV_CNOT,
    SV_CY,
    SV_CZ,
    SV_SWAP,
    SV_ISWAP,
    SV_CRX,
    SV_CRY,
    SV_CRZ,
    SV_CPHASE,
    SV_ISINGXX,
    SV_ISINGYY,
    SV_ISINGZZ,
    SV_TOFFOLI,
    SV_CSWAP,
    SV_MULTIRZ,
    SV_QUBITUNITARY,
    SV_BASISSTATE,
    SV_SINGLEEXC,
    SV_DOUBLEEXC,
    SV_NGATES
} SvGate;

typedef struct SvGateInfo {
    const char *name; /* PennyLane name: "Hadamard", "CNOT", "ControlledPhaseShift", ... */
    SvGate gate;
    int nwires;     /* -1 = any number >= 1 (MultiRZ, QubitUnitary, BasisState) */
    int nparams;    /* number of real parameters: RX 1, Rot 3, U3 3, ... */
    int shift_rule; /* 1 if every parameter has the two-term parameter-shift
                          rule (coefficient 1/2, shift pi/2); 0 for gates
                          without parameters and for the four-term ones
                          (CRX CRY CRZ SingleExcitation DoubleExcitation) */
} SvGateInfo;

/* By name, including the aliases I H X Y Z CX CCX CPhase; NULL if unknown. */
const SvGateInfo *sv_gate_by_name(const char *name);
/* By enum; NULL if out of range. */
const SvGateInfo *sv_gate_info(SvGate g);

#define SV_MAX_WIRES 64
/* Largest k for QubitUnitary and sv_apply_matrix (a 2^k x 2^k matrix). */
#define SV_MAX_DENSE 10

/* One gate application (a new field goes into sv_op_copy too). */
typedef struct SvOp {
    SvGate gate;
    int nwires;
    int wires[SV_MAX_WIRES]; /* target wires */
    int nparams;
    double params[3];
    const cplx *matrix; /* QubitUnitary only: 2^k x 2^k row-major, k = nwires */
    uint64_t bits;      /* BasisState only: bit i is the value for wires[i] */
    int adjoint;        /* apply the inverse */
    int nctrl;
    int ctrl[SV_MAX_WIRES]; /* extra control wires, all must be |1> */
} SvOp;

/* n ints from s to d: a gate's 1-4 wires without a call (a copy loop
   becomes a memcpy call, a dozen instructions more per gate). */
static inline void sv_copy_ints(int *d, const int *s, int n)
{
    if (n > 4) {
        memcpy(d, s, (size_t)n * sizeof(int));
        return;
    }
    if (n > 0) d[0] = s[0];
    if (n > 1) d[1] = s[1];
    if (n > 2) d[2] = s[2];
    if (n > 3) d[3] = s[3];
}

/* An op into dst, whose wire arrays past the ones in use are left as they
   are (zero in a zeroed dst: an op is mostly its two arrays of
   SV_MAX_WIRES, of which a gate uses 1-3 entries). src's counts are
   valid (0..SV_MAX_WIRES). */
static inline void sv_op_copy(SvOp *dst, const SvOp *src)
{
    dst->gate = src->gate;
    dst->nwires = src->nwires;
    sv_copy_ints(dst->wires, src->wires, src->nwires);
    dst->nparams = src->nparams;
    for (int i = 0; i < 3; i++) dst->params[i] = src->params[i];
    dst->matrix = src->matrix;
    dst->bits = src->bits;
    dst->adjoint = src->adjoint;
    dst->nctrl = src->nctrl;
    sv_copy_ints(dst->ctrl, src->ctrl, src->nctrl);
}

/* The wires a gate or a dense map acts on, as the checks of wires read
   them: the targets w[0..nw) and the controls c[0..nc) (nc 0: none, c may
   be NULL), and the name their messages give (the gate's, or the entry
   point's). Borrowed: the checks only read it. */
typedef struct SvWires {
    const char *name;
    const int *w;
    int nw;
    const int *c;
    int nc;
} SvWires;

/* Validate (wires in range and distinct, arity, parameter count, finite
   parameters, QubitUnitary matrix present, finite and unitary) then apply
   in place. Returns 0, or -1 with a message in err (may be NULL) such as
   "RX: wire 5 out of range for a 2-wire device" or
   "CNOT: wires must be distinct (0, 0)". Never crashes on bad input.
   BasisState is applied as X flips on the wires whose bit is 1: it
   prepares the bits when those wires are in |0..0> (PennyLane's use);
   its adjoint is the same flips. */
int sv_apply(SvState *s, const SvOp *op, char *err, size_t errlen);
/* The validation of sv_apply alone, for a device of nq wires: 0, or -1
   with the same message sv_apply would give. Lets other rooms (the
   distributed statevector) reject an op before they split it up. */
int sv_check(const SvOp *op, int nq, char *err, size_t errlen);

/* Dense 2^k x 2^k matrix (row-major, k = nctrl + nwires, control wires
   first, wire order as given, first wire = most significant bit) of the
   op including adjoint and controls; 0 or -1 (k <= 14). Wires are only
   checked to be >= 0 and distinct (there is no device here). */
int sv_op_matrix(const SvOp *op, cplx *out, char *err, size_t errlen);
/* Analytic derivative of that matrix with respect to params[p]. */
int sv_op_dmatrix(const SvOp *op, int p, cplx *out, char *err, size_t errlen);
/* Apply an arbitrary (not necessarily unitary) dense 2^k x 2^k matrix on
   the given wires (first wire = most significant bit), k <= SV_MAX_DENSE. */
int sv_apply_matrix(SvState *s, const int *wires, int k, const cplx *m, char *err, size_t errlen);

/* Observables: Hermitian sums of Pauli words with real coefficients.
   Bit w of x/z <-> wire w (not bit position in the index):
   X: x=1,z=0; Z: x=0,z=1; Y: x=1,z=1 (the true Pauli Y). Bits for wires
   >= nq are ignored: the caller validates observables. */
typedef struct SvPauli {
    double coeff;
    uint64_t x, z;
} SvPauli;
double sv_expval(const SvState *s, const SvPauli *t, int nterms); /* exact <H> */
double sv_var(const SvState *s, const SvPauli *t,
              int nterms); /* exact <H^2> - <H>^2; NaN if out of memory */
/* Shot estimates: each term (and for var each product of two commuting
   terms) is estimated from `shots` samples in its eigenbasis, drawn
   exactly as a binomial with the term's exact probability. Identity terms
   are exact. var_shots is max(0, est<H^2> - est<H>^2). */
double sv_expval_shots(const SvState *s, const SvPauli *t, int nterms, size_t shots, Rng *r);
double sv_var_shots(const SvState *s, const SvPauli *t, int nterms, size_t shots, Rng *r);
/* H^2 as a deduplicated Pauli sum (for var on other simulators): *out is
   malloc'ed (the caller frees it); returns its length, -1 if out of memory. */
int sv_pauli_square(const SvPauli *t, int nterms, SvPauli **out);
/* Per shot: coeff * (+1 or -1), +1 with probability (1 + <P>)/2. */
void sv_sample_pauli(const SvState *s, const SvPauli *word, size_t shots, Rng *r, double *out);

/* Probabilities over the given wires (first = most significant bit of the
   output index); nw = 0 means all wires. out has 2^nw (or 2^nq) doubles.
   nw <= 30. */
int sv_probs(const SvState *s, const int *wires, int nw, double *out, char *err, size_t errlen);
/* The same estimated from `shots` exact samples (a multinomial draw);
   shots = 0 gives the exact probabilities. Bad wires: out is all NaN
   (validate with sv_probs). */
void sv_probs_shots(const SvState *s, const int *wires, int nw, size_t shots, Rng *r, double *out);
/* p[0..K) (probabilities, their sum is used) becomes the frequencies k/shots
   of one exact multinomial draw of shots; shots = 0 leaves p. Shared by
   every simulator's probs with shots, so a seed draws the same on each. */
void sv_freq_shots(Rng *r, double *p, size_t K, size_t shots);
/* Computational-basis samples, i.i.d. in random order: out[i] = basis
   index (wire 0 = MSB). O(2^nq + shots) time, no extra memory. */
void sv_sample(const SvState *s, size_t shots, Rng *r, uint64_t *out);
/* The draw behind sv_sample, for every simulator: shots i.i.d. indices in
   [0, dim) with weights fill(src, a, n, w) (w[j] = weight of index a + j;
   negative or NaN count as 0) of total T, in random order. */
typedef void (*SvWeightFill)(const void *src, uint64_t a, size_t n, double *w);
void sv_sweep_draw(Rng *r, size_t shots, uint64_t dim, double T, SvWeightFill fill, const void *src,
                   uint64_t *out);
/* Mid-circuit measurement of one wire: returns 0/1 drawn with the Born
   rule, collapses and renormalises; reset=1 then flips the wire back to
   |0>. -1 + err on a bad wire or a zero state. */
int sv_measure(SvState *s, int wire, int reset, Rng *r, char *err, size_t errlen);

/* Exact binomial draw (BTRS / inversion); exposed for the estimators of
   other rooms and for tests. */
uint64_t sv_binomial(Rng *r, uint64_t n, double p);
/* An estimate of a Pauli word's <W> from shots +/-1 outcomes of exact
   mean v: one binomial draw (every simulator's shot estimates use it). */
double sv_word_estimate(double v, size_t shots, Rng *r);

#endif
