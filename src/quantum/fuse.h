/* fuse.h — a circuit, not a gate, as the unit the statevector kernels run.
 *
 * An SvCirc queues the gates applied to one state (each validated when it
 * is queued, with sv_apply's messages) and runs them at the next read of
 * the state (svc_flush: the caller flushes before any measurement, any
 * read of the amplitudes and at the end of a call) or when the queue is
 * full. A flush:
 *   - schedules the queued gates into passes: a pass takes the gates whose
 *     bits (targets and controls) fit one set S of chunk_bits index bits
 *     (the lowest few bits always among them, for contiguous runs), in
 *     circuit order, a gate moving ahead of an earlier one only when the
 *     two act on disjoint bits (they commute);
 *   - fuses the gates of a pass into blocks of at most max_block qubits
 *     (consecutive gates on overlapping wires multiplied into one 2x2 or
 *     4x4; a gate left alone keeps its own kernel, so diagonal gates stay
 *     diagonal and X, CNOT, SWAP, Toffoli stay exchanges);
 *   - runs a pass chunk by chunk (cache blocking): the 2^chunk_bits
 *     amplitudes that share the bits outside S are gathered into a buffer
 *     that fits the L2 cache (in place when S is the lowest bits), every
 *     block of the pass runs on it, and it is written back: one sweep over
 *     the state for the whole pass. A state of at most chunk_bits qubits
 *     is one chunk: its blocks run on it directly.
 * Fused blocks round differently from the gates one by one (products of
 * matrices, a changed order of commuting gates): results agree with the
 * gate-by-gate path to about 1e-15 per gate, not bit for bit. So states
 * of fewer than min_qubits qubits (default 14, Qiskit Aer's fusion
 * threshold), and every state when cfg.fuse is 0 (--no-fusion), run gate
 * by gate in order at once: the same bytes as sv_apply. Whatever is
 * fused, the blocks, the chunks and the arithmetic depend on the circuit
 * and the state's width only, never on threads or timing.
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
    int min_qubits; /* narrower states run gate by gate (default 14) */
    int max_block;  /* widest fused block, 1 or 2 qubits (default 2) */
    int chunk_bits; /* chunks of 2^chunk_bits amplitudes (default 14: 256 KiB) */
    int max_ops;    /* gates queued before a flush (default 1024) */
} SvFuseCfg;

typedef struct SvFuseStats {
    uint64_t gates;  /* gates applied */
    uint64_t blocks; /* kernel runs: fused blocks and gates run alone */
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
   off; QH_FUSION_MIN, QH_FUSION_BLOCK, QH_FUSION_CHUNK set min_qubits,
   max_block and chunk_bits (out-of-range values are ignored). */
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
