/* fuse.h — a circuit, not a gate, as the unit the statevector kernels run.
 *
 * An SvCirc queues the gates applied to one state (each validated when it
 * is queued, with sv_apply's messages) and runs them at the next read of
 * the state (svc_flush: the caller flushes before any measurement, any
 * read of the amplitudes and at the end of a call) or when the queue is
 * full. A flush:
 *   - schedules the queued gates into passes: a pass takes the gates whose
 *     target bits fit one set S of chunk_bits index bits (the lowest
 *     low_bits bits always among them, for contiguous runs; a control
 *     outside S, and the target of a phase gate there, decide per chunk
 *     what the gate does on it),
 *     in circuit order; a gate moves ahead of an earlier one only when the
 *     two act on disjoint bits and one of them only moves amplitudes (X,
 *     CNOT, SWAP, Toffoli, CSWAP, BasisState): then either order gives
 *     the same bytes;
 *   - runs a pass chunk by chunk (cache blocking): the 2^chunk_bits
 *     amplitudes that share the bits outside S are gathered into a buffer
 *     that fits the L2 cache (in place when S is the lowest bits), every
 *     gate of the pass runs its own kernel on it, and it is written back:
 *     one sweep over the state for the whole pass. A state of at most
 *     chunk_bits qubits is one chunk: its gates run on it directly.
 * This is exact by construction: the chunk renumbers bits monotonically
 * and keeps the low ones, so each gate takes the same kernel with the same
 * arithmetic per amplitude as sv_apply on the whole state; results are the
 * bytes of the gate-by-gate path (doc/internals.md lists what that relies
 * on). States of fewer than min_qubits qubits (default 21, and always
 * more than chunk_bits: below, the caches hold the state and blocking was
 * measured no faster), and every state when cfg.fuse is 0 (--no-fusion),
 * run gate by gate at once.
 *
 * max_block 1 or 2 (opt-in, QH_FUSION_BLOCK) is the dense mode, NOT exact:
 * consecutive gates on overlapping wires are multiplied into one 2x2 or
 * 4x4 where a cost model says it is cheaper, gates on disjoint bits are
 * reordered freely; results agree to about 1e-15 per gate. Either way the
 * passes, the chunks and the arithmetic depend on the circuit and the
 * state's width only, never on threads or timing.
 *
 * Pure C (prefix svc_ / sv_fuse_), on the kernels of this room; knows
 * nothing of the language or of devices. One SvCirc per state, used by
 * the thread that uses the state.
 */
#ifndef QH_FUSE_H
#define QH_FUSE_H

#include "sv.h"

typedef struct SvFuseCfg {
    int fuse;       /* 0: every gate at once, in order (the unfused path) */
    int min_qubits; /* narrower states run gate by gate (0: the default, 21) */
    int max_block;  /* 0: exact (default); 1, 2: dense blocks, inexact */
    int chunk_bits; /* chunks of 2^chunk_bits amplitudes (default 14: 256 KiB) */
    int max_ops;    /* gates queued before a flush (default 1024) */
    int low_bits;   /* index bits always in a pass's set (default 4: runs of 16) */
} SvFuseCfg;

typedef struct SvFuseStats {
    uint64_t gates;  /* gates applied */
    uint64_t blocks; /* kernel runs: fused blocks, gates run alone, permutation runs */
    uint64_t passes; /* sweeps over the whole state (a gate by gate: one each) */
} SvFuseStats;

typedef struct SvCirc {
    SvFuseCfg cfg;
    SvOp *ops;    /* queued, validated */
    size_t *moff; /* per op: offset of its matrix in mat, or SIZE_MAX */
    int nops, cap;
    cplx *mat; /* copies of the queued ops' matrices */
    size_t nmat, capmat;
    SvFuseStats st;
    struct SvFuseBufs *bufs; /* the chunk buffers, kept between flushes */
} SvCirc;

/* The defaults, then the environment: QH_FUSION=0 (or off) turns fusion
   off; QH_FUSION_MIN, QH_FUSION_BLOCK, QH_FUSION_CHUNK, QH_FUSION_LOW set
   min_qubits, max_block, chunk_bits and low_bits (out-of-range values are
   ignored). */
void sv_fuse_defaults(SvFuseCfg *cfg);
/* cfg NULL: sv_fuse_defaults. */
void svc_init(SvCirc *c, const SvFuseCfg *cfg);
void svc_free(SvCirc *c);
/* Drops the queued gates (the state was reset or is given back). */
void svc_clear(SvCirc *c);
/* Validates op for s (sv_apply's checks and messages), then runs it at
   once (narrow state, fusion off) or queues it (flushing first when the
   queue is full). 0, or -1 with a message. */
int svc_push(SvCirc *c, SvState *s, const SvOp *op, char *err, size_t errlen);
/* The same for any dense 2^k x 2^k matrix on the wires (not necessarily
   unitary: superoperators of channels), checked as sv_apply_matrix. */
int svc_push_matrix(SvCirc *c, SvState *s, const int *wires, int k, const cplx *m, char *err,
                    size_t errlen);
/* Runs the queued gates on s. 0, or -1 with a message (out of memory:
   then the gates ran one by one, so the state is still right). */
int svc_flush(SvCirc *c, SvState *s, char *err, size_t errlen);
static inline int svc_pending(const SvCirc *c) { return c->nops; }

#endif
