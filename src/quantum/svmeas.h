/* svmeas.h — measurement kernels of the statevector room beyond Pauli sums:
 * observables with dense (Hermitian) and projector factors, reduced density
 * matrices and the quantities made from them (von Neumann entropy, mutual
 * information, purity), the spectral decomposition used to sample any
 * observable, exact categorical/multinomial draws, postselected mid-circuit
 * measurement, the Fubini-Study metric block of a layer of gate generators,
 * and batches of states (parameter broadcasting).
 *
 * Conventions are sv.h's: wire 0 is the most significant bit of a basis
 * index; a matrix or ket "on wires w[0..k)" is indexed with w[0] as its most
 * significant bit. Pure C with the prefix sv_, like the rest of the room:
 * it must not know about the language, values, devices, shots as a device
 * option or the executor. Randomness comes from a caller-owned Rng.
 * Every function that can fail returns -1 (or NaN where it says so) with a
 * message in err (which may be NULL) and never crashes on bad input.
 * Thread safety: as sv.h (one state, one thread at a time); everything here
 * only reads the state except sv_measure_post and sv_batch_apply.
 */
#ifndef QH_SVMEAS_H
#define QH_SVMEAS_H

#include "sv.h"

/* ---- observables -------------------------------------------------------
 * An observable is a real linear combination of terms. A term is
 *     coeff * W(x, z) (tensor) B
 * where W is a Pauli word exactly as SvPauli (bit w of x/z <-> wire w) and
 * B is an optional block on its own wires, disjoint from the word's:
 *   SVB_NONE   no block (the term is a plain Pauli word),
 *   SVB_DENSE  a Hermitian 2^k x 2^k matrix m (row-major),
 *   SVB_BASIS  the projector |b><b| onto a basis state: bit i of bits is the
 *              value for wires[i] (as SvOp.bits of BasisState),
 *   SVB_KET    the projector |phi><phi| onto the 2^k amplitudes ket (used
 *              as given: the caller normalises).
 * The caller owns m and ket; they must outlive the call. */
typedef enum SvBlockKind { SVB_NONE, SVB_DENSE, SVB_BASIS, SVB_KET } SvBlockKind;

#define SV_MAX_KET 20 /* widest SVB_KET block (2^20 amplitudes) */
#define SV_MAX_RDM 12 /* widest reduced density matrix (4^12 entries) */

typedef struct SvTerm {
    double coeff;
    uint64_t x, z; /* the Pauli word, as SvPauli */
    SvBlockKind kind;
    int k; /* the block's wires */
    int wires[SV_MAX_WIRES];
    const cplx *m;   /* SVB_DENSE */
    uint64_t bits;   /* SVB_BASIS */
    const cplx *ket; /* SVB_KET */
} SvTerm;

/* Validates an observable for an nq-wire state: finite coefficients and
 * entries, block wires in range, distinct and disjoint from the term's
 * Pauli word, widths within SV_MAX_DENSE / SV_MAX_KET / 64, a dense block
 * Hermitian within |m_ij - conj(m_ji)| <= 1e-8 + 1e-5 |m_ji| (NumPy's
 * allclose, as PennyLane checks), basis bits within the block's wires.
 * name is used in messages ("Hermitian: matrix is not Hermitian ..."). */
int sv_obs_check(const SvTerm *t, int n, int nq, const char *name, char *err, size_t errlen);

/* Exact <O>. Pure Pauli terms go to sv_expval; a term that is a block alone
 * costs one pass without copying the state; a block times a Pauli word uses
 * one state-sized buffer. Returns NaN (+ err) when out of memory. */
double sv_obs_expval(const SvState *s, const SvTerm *t, int n, char *err, size_t errlen);
/* Exact <O^2> - <O>^2 (clamped at 0): sv_var for pure Pauli sums, one pass
 * for a single block term (||B psi||^2, or p - p^2 for projectors), else
 * ||O psi||^2 - <O>^2 through one state-sized buffer. NaN on failure. */
double sv_obs_var(const SvState *s, const SvTerm *t, int n, char *err, size_t errlen);
/* out = O psi (s->dim amplitudes; out must not alias s->amp). The bra of
 * the adjoint method. 0 or -1. */
int sv_obs_apply(const SvState *s, const SvTerm *t, int n, cplx *out, char *err, size_t errlen);

/* The support of an observable: the sorted wires any term acts on (Pauli
 * word or block); returns their number. */
int sv_obs_support(const SvTerm *t, int n, int *wires);
/* Dense matrix of the observable on the given wires (which must cover its
 * support; k <= SV_MAX_DENSE): 2^k x 2^k into out. 0 or -1. */
int sv_obs_matrix(const SvTerm *t, int n, const int *wires, int k, cplx *out, char *err,
                  size_t errlen);

/* Owned observables: each term's block (m, ket) a heap copy of its own. */
SvTerm *sv_terms_dup(const SvTerm *t, int n); /* NULL when out of memory */
void sv_terms_free(SvTerm *t, int n);         /* NULL is fine */
/* O^2 as an owned observable: a Pauli sum squared (sv_pauli_square), or
 * the square of O's dense matrix on its support (<= SV_MAX_DENSE wires). */
SvTerm *sv_terms_square(const SvTerm *t, int n, int *n2, char *err, size_t errlen);
/* The tensor product a (x) b of two terms on disjoint wires, into *out
 * (which owns its block): Pauli words multiply, blocks join a's wires
 * first (basis with basis stays a basis projector, ket with ket a ket,
 * anything else becomes one dense block of at most SV_MAX_DENSE wires).
 * 0 or -1 ("tensor product of operators on the same wire (w)", ...). */
int sv_term_tensor(const SvTerm *a, const SvTerm *b, SvTerm *out, char *err, size_t errlen);

/* ---- spectra and sampling ----------------------------------------------
 * An observable on its support (k <= SV_MAX_DENSE wires), diagonalised:
 * eigenvalues ascending and orthonormal eigenvectors (column j of vecs,
 * row-major d x d). Sampling the observable draws eigenvector j with
 * probability p_j = sum over the other wires of |<v_j|psi>|^2 and reports
 * vals[j]. A single Pauli word (any width) gets its exact spectrum
 * {-|c|, +|c|} without a dense matrix (word = 1, vecs NULL, d = 2, k = 0).
 * An observable without wires (identities only) has k = 0, d = 1. */
typedef struct SvSpectrum {
    int k;
    int wires[SV_MAX_DENSE];
    int d;        /* 2^k, or 2 for a word */
    double *vals; /* d eigenvalues, ascending */
    cplx *vecs;   /* d x d, column j = eigenvector of vals[j] */
    int word;     /* 1: the single Pauli word w */
    SvPauli w;
} SvSpectrum;

int sv_obs_spectrum(const SvTerm *t, int n, int nq, SvSpectrum *sp, char *err, size_t errlen);
void sv_spectrum_free(SvSpectrum *sp);
/* p[j] for j < sp->d (sums to the state's norm). 0 or -1. */
int sv_spectrum_probs(const SvState *s, const SvSpectrum *sp, double *p, char *err, size_t errlen);
/* The same from a density matrix rho on the spectrum's wires (2^k x 2^k,
 * as sv_density_matrix makes it): p[j] = <v_j| rho |v_j>. Not for a word
 * spectrum (sp->word). 0 or -1. */
int sv_spectrum_probs_rho(const SvSpectrum *sp, const cplx *rho, double *p, char *err,
                          size_t errlen);
/* The distinct eigenvalues (merged within 1e-9 of the spread, exact for
 * Pauli words), with the probability of each: vals/p have room for d.
 * Returns their number. Used by counts(obs) and shot estimates. */
int sv_spectrum_levels(const SvSpectrum *sp, const double *pj, double *vals, double *p);

/* Hermitian eigendecomposition (LAPACK zheevd): a is d x d row-major,
 * overwritten; vals ascending; vecs (may be NULL: values only) gets the
 * eigenvectors as columns. 0 or -1. */
int sv_eigh(cplx *a, int d, double *vals, cplx *vecs, char *err, size_t errlen);

/* ---- exact draws -------------------------------------------------------
 * p need not be normalised (its sum is used); non-finite or negative
 * entries count as 0. */
/* shots i.i.d. draws of an index in [0, K), in draw order. */
void sv_draw(Rng *r, const double *p, size_t K, size_t shots, uint64_t *out);
/* counts[j] of shots draws (a multinomial, as a chain of binomials). */
void sv_multinomial(Rng *r, const double *p, size_t K, uint64_t shots, uint64_t *counts);

/* ---- reduced states ----------------------------------------------------- */
/* rho = Tr_rest |psi><psi| on the given wires (k <= SV_MAX_RDM; first wire =
 * most significant bit of rho's index): 2^k x 2^k row-major. 0 or -1. */
int sv_density_matrix(const SvState *s, const int *wires, int k, cplx *rho, char *err,
                      size_t errlen);
/* -sum lambda log(lambda) over the positive eigenvalues of rho (natural log,
 * as PennyLane), from the reduced density matrix of the wires; NaN + err. */
double sv_vn_entropy(const SvState *s, const int *wires, int k, char *err, size_t errlen);
/* S(A) + S(B) - S(AB) for disjoint wire sets A and B; NaN + err. */
double sv_mutual_info(const SvState *s, const int *wa, int ka, const int *wb, int kb, char *err,
                      size_t errlen);
/* Tr(rho^2) of the reduced state of the wires; NaN + err. */
double sv_purity(const SvState *s, const int *wires, int k, char *err, size_t errlen);
/* The same three from a given density matrix (d x d). */
double sv_entropy_of(const cplx *rho, int d, char *err, size_t errlen);
double sv_purity_of(const cplx *rho, int d);

/* ---- postselected mid-circuit measurement --------------------------------
 * Projects wire onto outcome (0 or 1), renormalises, and with reset=1 flips
 * the wire back to |0>. *prob (may be NULL) receives the probability the
 * outcome had (relative to the state's norm). An outcome of probability 0
 * leaves the state unchanged and returns -1 with "measure: postselected
 * outcome 1 has probability 0". 0 or -1. */
int sv_measure_post(SvState *s, int wire, int outcome, int reset, double *prob, char *err,
                    size_t errlen);

/* ---- the Fubini-Study metric of one layer ------------------------------
 * The generator of parameter p of op at its current parameters is
 * G = -i U^dagger dU/dp (Hermitian): d(U psi)/dp = U (i G) psi, so the
 * metric of a parameter on the state psi *before* the gate is exactly the
 * covariance of G on psi. For the one-parameter gates (U = exp(i t G)) it is
 * the constant generator PennyLane uses (RX: -X/2, PhaseShift: |1><1|, ...);
 * PennyLane splits Rot and U3 into one-parameter gates first (so must the
 * caller, to get the same layers). Matrix on nctrl + nwires wires, in
 * sv_op_matrix's order (controls first). */
int sv_generator(const SvOp *op, int p, cplx *out, char *err, size_t errlen);
/* A layer's generators, as sv_metric_block reads them: generator i < n
 * is m[i], a 2^k[i] x 2^k[i] matrix on the wires wires[i][0..k[i]) (first
 * wire the most significant bit). Borrowed. */
typedef struct SvGens {
    int n;
    const cplx *const *m;
    const int *const *wires;
    const int *k;
} SvGens;
/* The covariance block g_ij = Re<G_i G_j> - <G_i><G_j> on the state, for
 * the n generators of g; out n x n. Uses n state-sized buffers. 0 or -1. */
int sv_metric_block(const SvState *s, const SvGens *g, double *out, char *err, size_t errlen);

/* The block-diagonal metric tensor of a circuit, as PennyLane's
 * metric_tensor(approx="block-diag") computes it, for the circuit of an
 * SvMetricSpec (borrowed, only read): ops[0..nops) run from |0..0> on nq
 * wires; train[k] has bit p set when params[p] of ops[k] is a trainable
 * parameter (the others are fixed angles). Rot and U3 count as their
 * one-parameter decompositions (Rot = RZ RY RZ, U3 = PhaseShift RY
 * PhaseShift, each part its own gate). The trainable gates are grouped
 * greedily in circuit order into layers, a new layer starting at a gate
 * that depends on one of the current layer (through shared wires, directly
 * or via other gates); each layer's block is sv_metric_block on the state
 * made by the gates the layer depends on. out: P x P (P = trainable
 * parameters, ordered by gate then parameter index), zero between layers;
 * diag_only keeps only the diagonal. *nlayers (may be NULL) gets the number
 * of layers. Wires < 64. 0 or -1. */
typedef struct SvMetricSpec {
    int nq;
    const SvOp *ops;
    int nops;
    const uint8_t *train;
    int diag_only;
} SvMetricSpec;
int sv_metric_tensor(const SvMetricSpec *sp, double *out, int *nlayers, char *err, size_t errlen);

/* ---- adjoint differentiation --------------------------------------------
 * The circuit and its observables are one SvAdjointSpec: final is the
 * state after the gates ops[0..nops) (unitary: no measurement among them);
 * observable j (obs[j], nterms[j] terms) was measured after the first
 * pos[j] gates (pos NULL: all at the end). want[k] has bit p set for each
 * parameter p of gate k whose derivative is wanted (NULL: all); the gates
 * before the first wanted one are not undone. The spec is only read. out
 * is nobs x (3 nops): entry
 * [j][3k + p] = d<O_j>/d(params[p] of gate k) (0 where not wanted). One
 * backward sweep for all observables: 1 + nobs state-sized buffers. The
 * rotation gates (RX RY RZ PhaseShift CRX CRY CRZ ControlledPhaseShift
 * IsingXX IsingYY IsingZZ MultiRZ, with ctrl and adjoint) cost one
 * read-only pass per parameter; Rot, U3 and the excitations a dense
 * generator and one more buffer. 0 or -1. */
typedef struct SvAdjointSpec {
    const SvOp *ops; /* the gates ops[0..nops), unitary */
    int nops;
    const uint8_t *want;      /* per gate, the parameters wanted (NULL: all) */
    int nobs;                 /* the observables obs[0..nobs) */
    const SvTerm *const *obs; /* obs[j]: nterms[j] terms */
    const int *nterms;
    const int *pos; /* obs[j] measured after pos[j] gates (NULL: all at the end) */
} SvAdjointSpec;
int sv_adjoint(const SvState *final, const SvAdjointSpec *sp, double *out, char *err,
               size_t errlen);
/* The same on the final state itself, which it overwrites (no copy; its
   amplitudes 64-byte aligned, as sv_init makes them). */
int sv_adjoint_inplace(SvState *final, const SvAdjointSpec *sp, double *out, char *err,
                       size_t errlen);

/* ---- batches (parameter broadcasting) -----------------------------------
 * n states of nq qubits in one allocation, each member an SvState view of
 * its own slice (member i's amplitudes follow member i-1's). Members share
 * the batch's team setting. */
typedef struct SvBatch {
    int n, nq;
    cplx *amp;  /* n * 2^nq amplitudes, 64-byte aligned */
    SvState *m; /* n views */
} SvBatch;

/* Bytes of a batch; SIZE_MAX if it does not fit. */
size_t sv_batch_bytes(int nq, int n);
/* All members |0..0>; 0, or -1 if the memory can't be had (*b zeroed). */
int sv_batch_init(SvBatch *b, int nq, int n);
void sv_batch_free(SvBatch *b);
void sv_batch_reset(SvBatch *b);
void sv_batch_set_threads(SvBatch *b, SvTeam *team, int nthreads);
/* Applies op to every member. params NULL: op's own parameters for all;
 * else n * op->nparams values, member i using params[i*nparams ...].
 * Each member's op is validated as by sv_apply; an error names the member
 * ("RX: parameter 1 is not finite (batch member 3)"). 0 or -1. */
int sv_batch_apply(SvBatch *b, const SvOp *op, const double *params, char *err, size_t errlen);

#endif
