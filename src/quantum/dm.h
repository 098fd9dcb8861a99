/* dm.h — the density-matrix room: mixed states and noise channels (prefix dm_).
 *
 * A mixed state of n wires is its density matrix rho (2^n x 2^n complex),
 * stored row-major as the amplitudes of a 2n-qubit SvState: element
 * rho[r][c] is amplitude r * 2^n + c, so row wire w is vector wire w and
 * column wire w is vector wire n + w (wire 0 = most significant bit, as in
 * sv.h). Every operation reuses the statevector kernels on that vector:
 *   - a gate U on wires W:  U on the row wires W and conj(U) on the column
 *     wires n + W (rho -> U rho U^dagger); an uncontrolled 1-wire gate is
 *     one pass of the 4x4 U (x) conj(U) on the pair (w, n + w);
 *   - a channel with Kraus set {K}: one pass of the superoperator
 *     sum_K K (x) conj(K) on the row and column wires (rho -> sum K rho K^dagger).
 * Measurements read rho: probabilities are its diagonal, <P> = Tr(rho P),
 * a mid-circuit measurement projects rows and columns and renormalises.
 *
 * Channels carry PennyLane's names, parameters and Kraus matrices
 * (BitFlip, PhaseFlip, DepolarizingChannel, AmplitudeDamping,
 * GeneralizedAmplitudeDamping, PhaseDamping, ThermalRelaxationError,
 * ResetError, PauliError, QubitChannel); parameters are checked as
 * PennyLane checks them, and a user Kraus set must be complete
 * (sum K^dagger K = I).
 *
 * Pure C: knows sv.h (and through it rng.h) and svmeas.h (the entropy's
 * eigenvalues), nothing of the language, values, devices or the executor.
 * Thread safety: as SvState (one thread at a time per state).
 */
#ifndef QH_DM_H
#define QH_DM_H

#include "sv.h"

struct SvCirc;
typedef struct DmState {
    int n;      /* wires */
    size_t dim; /* 2^n: rho is dim x dim */
    SvState v;  /* 2n qubits: the vectorised rho (v.amp[r * dim + c]) */
    /* while set (the device's apply, backend.c): dm_apply and the Kraus
       maps queue their passes on the vector there (fuse.h) instead of
       running them; NULL (dm_init): they run at once */
    struct SvCirc *circ;
    /* set by dm_apply_pairs: v holds a derivative of rho (a differentiated
       channel's map), not a state, so dm_probs keeps negative entries;
       cleared where rho is set (dm_init, dm_reset, dm_set_pure, dm_set_matrix) */
    int tangent;
} DmState;

/* Largest number of wires of a mixed state (the vector has 2n qubits). */
#define DM_MAX_WIRES 29
/* Largest number of wires of a Kraus set (its superoperator is 4^k x 4^k). */
#define DM_MAX_KRAUS_WIRES 5

/* Bytes of a mixed state of n wires (16 * 4^n); SIZE_MAX if too big. */
size_t dm_bytes(int n);
/* rho = |0..0><0..0|; 0, or -1 when memory can't be had or n is out of
   [0, DM_MAX_WIRES] (never aborts). On failure *d is zeroed. */
int dm_init(DmState *d, int n);
void dm_free(DmState *d);
void dm_reset(DmState *d); /* back to |0..0><0..0| */
/* Split big kernels over a team, as sv_set_threads. */
void dm_set_threads(DmState *d, SvTeam *team, int nthreads);
/* rho = |psi><psi| for psi of 2^n amplitudes (not checked for norm). */
int dm_set_pure(DmState *d, const cplx *psi, char *err, size_t errlen);
/* rho = m (2^n x 2^n row-major), copied as given. */
int dm_set_matrix(DmState *d, const cplx *m, char *err, size_t errlen);

/* ---- gates ---------------------------------------------------------------- */

/* rho -> U rho U^dagger for the op (every gate of sv.h, adjoint and
   controls included). Wires are checked against the n wires of rho, then
   as sv_apply checks them; the messages are sv_apply's, e.g.
   "RX: wire 5 out of range for a 2-wire device". */
int dm_apply(DmState *d, const SvOp *op, char *err, size_t errlen);
/* rho -> M rho M^dagger for any dense 2^k x 2^k matrix M (k <= 5). */
int dm_apply_matrix(DmState *d, const int *wires, int k, const cplx *m, char *err, size_t errlen);

/* ---- channels ------------------------------------------------------------- */

typedef enum DmChannel {
    DM_BITFLIP,
    DM_PHASEFLIP,
    DM_DEPOLARIZING,
    DM_AMPDAMP,
    DM_GENAMPDAMP,
    DM_PHASEDAMP,
    DM_THERMAL,
    DM_RESETERROR,
    DM_PAULIERROR,
    DM_QUBITCHANNEL,
    DM_NCHANNELS
} DmChannel;

typedef struct DmChannelInfo {
    const char *name; /* PennyLane's: "BitFlip", "DepolarizingChannel", ... */
    DmChannel ch;
    int nwires;         /* 1, or -1 = any (PauliError, QubitChannel) */
    int nparams;        /* real parameters before the wires (PauliError: p only,
                            its Pauli string is separate; QubitChannel: 0) */
    const char *params; /* their names, comma separated: "gamma, p" */
} DmChannelInfo;

const DmChannelInfo *dm_channel_by_name(const char *name); /* NULL if unknown */
const DmChannelInfo *dm_channel_info(DmChannel ch);        /* NULL if out of range */

/* Most Kraus matrices of a built-in channel. */
#define DM_MAX_KRAUS 6
/* The Kraus matrices of a built-in 1-wire channel (not PauliError or
   QubitChannel) for its parameters, exactly PennyLane's (without its
   1e-16 regulariser): *nk 2x2 row-major matrices into out
   (DM_MAX_KRAUS * 4 entries). 0, or -1 with PennyLane's reason:
   "BitFlip: p must be in the interval [0,1], got 1.5". */
int dm_channel_kraus(DmChannel ch, const double *params, cplx *out, int *nk, char *err,
                     size_t errlen);
/* PauliError(ops, p): ops is a string of X, Y, Z, one per wire; the two
   Kraus matrices sqrt(1-p) I and sqrt(p) (P1 (x) P2 ...) of size 2^k
   (k = strlen(ops) <= DM_MAX_KRAUS_WIRES) into out (2 * 4^k entries). */
int dm_pauli_error_kraus(const char *ops, double p, cplx *out, char *err, size_t errlen);
/* Completeness of a user Kraus set of nk matrices 2^k x 2^k:
   sum K^dagger K = I within numpy.allclose's tolerance (1e-8 + 1e-5 |I|),
   entries finite. 0, or -1: "QubitChannel: Kraus matrices are not
   trace preserving (max |sum K^dagger K - I| = 0.1)". */
int dm_kraus_check(const char *name, int k, int nk, const cplx *kraus, char *err, size_t errlen);
/* rho -> sum K rho K^dagger for nk matrices 2^k x 2^k on the wires
   (k <= DM_MAX_KRAUS_WIRES). Checks wires, not completeness. */
int dm_apply_kraus(DmState *d, const int *wires, int k, int nk, const cplx *kraus, char *err,
                   size_t errlen);
/* A built-in 1-wire channel on a wire: dm_channel_kraus + dm_apply_kraus. */
int dm_apply_channel(DmState *d, DmChannel ch, const double *params, int wire, char *err,
                     size_t errlen);

/* Most pairs of a channel's derivative map (dm_channel_dterms). */
#define DM_MAX_DTERMS 12
/* A derivative map rho -> sum_j A_j rho B_j^dagger of np pairs of
   d x d matrices is stored as one block ab: A_0 ... A_{np-1}, then
   B_0 ... B_{np-1} (each row-major, 2 * np * d * d entries). */
/* The derivative of a built-in 1-wire channel's map rho -> sum K rho K^dagger
   by its parameter number `which` (0-based), in closed form (from
   sum dK rho K^dagger + K rho dK^dagger, written without 1/sqrt(p), so it is
   finite at p = 0): *np pairs of 2x2 matrices into ab (room for
   2 * DM_MAX_DTERMS * 4 entries). Parameters are checked as
   dm_channel_kraus checks them. Where the map has no derivative
   (AmplitudeDamping at gamma = 1) the entries are not finite. 0, or -1
   with the reason. */
int dm_channel_dterms(DmChannel ch, const double *params, int which, cplx *ab, int *np, char *err,
                      size_t errlen);
/* PauliError(ops, p)'s derivative by p: the pairs (-I, I) and (P, P), of
   size 2^k, into ab (4 * 4^k entries). */
int dm_pauli_error_dterms(const char *ops, double p, cplx *ab, char *err, size_t errlen);
/* rho -> sum_j A_j rho B_j^dagger for np pairs (ab) of 2^k x 2^k matrices on
   the wires (k <= DM_MAX_KRAUS_WIRES): a derivative map; sets d->tangent. */
int dm_apply_pairs(DmState *d, const int *wires, int k, int np, const cplx *ab, char *err,
                   size_t errlen);

/* ---- measurements --------------------------------------------------------- */

/* Tr(rho) (1 for a state reached by gates, channels and measurements). */
double dm_trace(const DmState *d);
/* Exact Tr(rho H) for a Pauli sum (as sv_expval). */
double dm_expval(const DmState *d, const SvPauli *t, int nterms);
/* Exact Tr(rho H^2) - Tr(rho H)^2; NaN if out of memory. */
double dm_var(const DmState *d, const SvPauli *t, int nterms);
/* Shot estimates, drawn as sv_expval_shots / sv_var_shots draw them. */
double dm_expval_shots(const DmState *d, const SvPauli *t, int nterms, size_t shots, Rng *r);
double dm_var_shots(const DmState *d, const SvPauli *t, int nterms, size_t shots, Rng *r);
/* Per shot: coeff * (+1 or -1), +1 with probability (1 + <P>)/2. */
void dm_sample_pauli(const DmState *d, const SvPauli *word, size_t shots, Rng *r, double *out);
/* Tr(rho_W H) for a Hermitian 2^k x 2^k matrix on wires W (k <= 14):
   the expectation of a dense observable. NaN on bad wires. */
double dm_expval_matrix(const DmState *d, const int *wires, int k, const cplx *h);

/* Probabilities (the diagonal of rho, marginalised on the given wires,
   first = MSB; nw = 0: all wires), as sv_probs. Tiny negative rounding
   is clipped to 0 (kept when d->tangent: a derivative's diagonal). */
int dm_probs(const DmState *d, const int *wires, int nw, double *out, char *err, size_t errlen);
/* The same from `shots` exact samples (a multinomial draw), as sv_probs_shots. */
void dm_probs_shots(const DmState *d, const int *wires, int nw, size_t shots, Rng *r, double *out);
/* Computational-basis samples, i.i.d.: out[i] = basis index (wire 0 = MSB). */
void dm_sample(const DmState *d, size_t shots, Rng *r, uint64_t *out);
/* Mid-circuit measurement of a wire: 0/1 by the Born rule, then
   rho -> P rho P / p (and with reset = 1 the wire is set back to |0>).
   -1 + err on a bad wire or a zero trace. */
int dm_measure(DmState *d, int wire, int reset, Rng *r, char *err, size_t errlen);
/* The reduced density matrix of the given wires (in that order, first =
   MSB; the others traced out) into out (2^nw x 2^nw, nw <= 14). */
int dm_reduced(const DmState *d, const int *wires, int nw, cplx *out, char *err, size_t errlen);
/* Tr(rho_W^2) of the reduced state of the wires (nw = 0: all wires). NaN on error. */
double dm_purity(const DmState *d, const int *wires, int nw);
/* -sum lambda log(lambda) / log(base) over the eigenvalues of rho_W
   (base <= 0: natural log). NaN on error. */
double dm_vn_entropy(const DmState *d, const int *wires, int nw, double base);
/* (For a given matrix: sv_purity_of, sv_entropy_of in svmeas.h.) */

#endif
