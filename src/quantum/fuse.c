/* fuse.c — queued gates run as fused blocks in cache-blocked passes
 * (fuse.h). Validation happens when a gate is queued (gates.c's checks);
 * here everything is known to be valid. Knows the kernel layer (sv_impl.h)
 * and nothing of the language.
 */
#include "fuse.h"
#include "sv_impl.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUSE_LOW_BITS 4 /* bits always in a pass's set: runs of >= 16 amplitudes */
#define FUSE_AHEAD    8 /* gathered runs prefetched ahead */

/* Why: cache blocking pays only when a pass over the state goes to
   memory. A state of one chunk gains nothing (its gates would run on it
   in order anyway), and one that the last-level cache mostly holds
   neither: measured here (L3 32 MiB), random circuits ran 10-25% slower
   blocked at 18 and 19 qubits; at 20 (16 MiB) once 20% faster, and
   later (tests/bench/fusion.sh, best of 3, 1 and 2 threads) 7-29% slower
   on the layered and random circuits, while at 21 blocking took 28-44%
   off. The size is fixed, not read from the machine (sysconf reported
   384 MiB of L3 in this VM): QH_FUSION_MIN tunes it; the bytes are the
   same either way. */
#define FUSE_AUTO_MIN 21
static int auto_min_qubits(int chunk_bits)
{
    return FUSE_AUTO_MIN > chunk_bits ? FUSE_AUTO_MIN : chunk_bits + 1;
}

void sv_fuse_defaults(SvFuseCfg *cfg)
{
    cfg->fuse = 1;
    cfg->min_qubits = 0;
    cfg->max_block = 0;
    cfg->chunk_bits = 14;
    cfg->max_ops = 1024;
    cfg->low_bits = FUSE_LOW_BITS;
    const char *e = getenv("QH_FUSION");
    if (e && (strcmp(e, "0") == 0 || strcmp(e, "off") == 0)) cfg->fuse = 0;
    e = getenv("QH_FUSION_MIN");
    if (e && atoi(e) >= 1 && atoi(e) <= 64) cfg->min_qubits = atoi(e);
    e = getenv("QH_FUSION_BLOCK");
    if (e && atoi(e) >= 0 && atoi(e) <= 2) cfg->max_block = atoi(e);
    e = getenv("QH_FUSION_CHUNK");
    if (e && atoi(e) >= FUSE_LOW_BITS + 2 && atoi(e) <= 24) cfg->chunk_bits = atoi(e);
    e = getenv("QH_FUSION_LOW");
    if (e && atoi(e) >= FUSE_LOW_BITS && atoi(e) <= cfg->chunk_bits - 2) cfg->low_bits = atoi(e);
    if (cfg->min_qubits == 0) cfg->min_qubits = auto_min_qubits(cfg->chunk_bits);
}

void svc_init(SvCirc *c, const SvFuseCfg *cfg)
{
    memset(c, 0, sizeof *c);
    if (cfg)
        c->cfg = *cfg;
    else
        sv_fuse_defaults(&c->cfg);
    if (c->cfg.max_ops < 1) c->cfg.max_ops = 1;
    if (c->cfg.min_qubits < 1) c->cfg.min_qubits = auto_min_qubits(c->cfg.chunk_bits);
    if (c->cfg.low_bits < FUSE_LOW_BITS || c->cfg.low_bits > c->cfg.chunk_bits - 2)
        c->cfg.low_bits = FUSE_LOW_BITS;
}

/* Chunk buffers, one per thread that may run a part at the same time: a
   part claims a free one and gives it back (64 parts, a few threads).
   Each is two chunks: the gathered chunk, and where a permutation run
   (PermRun) writes it. */
typedef struct SvFuseBufs {
    int n, cbits;
    cplx *buf[SV_MAX_TEAM];
    atomic_int busy[SV_MAX_TEAM];
} SvFuseBufs;

static void bufs_free(SvFuseBufs *b)
{
    if (!b) return;
    for (int i = 0; i < b->n; i++) free(b->buf[i]);
    free(b);
}

/* The buffers for a pass over s; NULL when they cannot be had. */
static SvFuseBufs *bufs_get(SvCirc *c, const SvState *s)
{
    int want = s->team && s->nthreads > 1 ? sv_team_size(s->team) : 1;
    if (want > SV_MAX_TEAM) want = SV_MAX_TEAM;
    SvFuseBufs *b = c->bufs;
    if (b && b->cbits == c->cfg.chunk_bits && b->n >= want) return b;
    bufs_free(b);
    c->bufs = b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->cbits = c->cfg.chunk_bits;
    for (; b->n < want; b->n++) {
        void *q = NULL;
        if (posix_memalign(&q, 64, ((size_t)2 << b->cbits) * sizeof(cplx)) != 0) break;
        b->buf[b->n] = q;
        atomic_init(&b->busy[b->n], 0);
    }
    if (b->n == 0) {
        free(b);
        c->bufs = NULL;
        return NULL;
    }
    return b;
}

void svc_free(SvCirc *c)
{
    bufs_free(c->bufs);
    free(c->ops);
    free(c->moff);
    free(c->mat);
    memset(c, 0, sizeof *c);
}

void svc_clear(SvCirc *c)
{
    c->nops = 0;
    c->nmat = 0;
}

/* Whether the gates of s are queued (else they run at once). */
static int queues(const SvCirc *c, const SvState *s)
{
    return c->cfg.fuse && s->nq >= c->cfg.min_qubits;
}

/* Why: a queued op's matrix must outlive the operator value it came from. */
static int enqueue(SvCirc *c, const SvOp *op, const cplx *m, size_t nm, char *err, size_t errlen)
{
    if (c->nops == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        SvOp *o = realloc(c->ops, (size_t)cap * sizeof *o);
        if (!o) return sv_err(err, errlen, SV_E_NOMEM, "gate queue");
        c->ops = o;
        size_t *mo = realloc(c->moff, (size_t)cap * sizeof *mo);
        if (!mo) return sv_err(err, errlen, SV_E_NOMEM, "gate queue");
        c->moff = mo;
        c->cap = cap;
    }
    size_t off = SIZE_MAX;
    if (m) {
        if (c->nmat + nm > c->capmat) {
            size_t cap = c->capmat ? 2 * c->capmat : 256;
            while (cap < c->nmat + nm) cap *= 2;
            cplx *p = realloc(c->mat, cap * sizeof *p);
            if (!p) return sv_err(err, errlen, SV_E_NOMEM, "gate queue");
            c->mat = p;
            c->capmat = cap;
        }
        memcpy(c->mat + c->nmat, m, nm * sizeof(cplx));
        off = c->nmat;
        c->nmat += nm;
    }
    c->ops[c->nops] = *op;
    c->ops[c->nops].matrix = NULL;
    c->moff[c->nops] = off;
    c->nops++;
    sv_assert(c->nops <= c->cap && c->nmat <= c->capmat);
    return 0;
}

/* the queued path of svc_push: validated, run at the next flush */
static __attribute__((noinline)) int push_queued(SvCirc *c, SvState *s, const SvOp *op, char *err,
                                                 size_t errlen)
{
    if (c->nops >= c->cfg.max_ops && svc_flush(c, s, err, errlen) != 0) return -1;
    size_t nm = op->gate == SV_QUBITUNITARY ? (size_t)1 << (2 * op->nwires) : 0;
    if (enqueue(c, op, nm ? op->matrix : NULL, nm, err, errlen) != 0) return -1;
    c->st.gates++;
    return 0;
}

/* Why: a gate per statement comes here; the unqueued path (small states)
   is sv_apply's, with the counts taken once the op is known valid (sv_run_op
   cannot fail then), so that it ends in a tail call. */
int svc_push(SvCirc *c, SvState *s, const SvOp *op, char *err, size_t errlen)
{
    if (!s || !s->amp) return sv_err(err, errlen, SV_E_NOSTATE, "sv_apply");
    if (sv_check(op, s->nq, err, errlen) != 0) return -1;
    if (queues(c, s)) return push_queued(c, s, op, err, errlen);
    c->st.gates++;
    c->st.blocks++;
    c->st.passes++;
    return sv_run_op(s, op, err, errlen);
}

int svc_push_matrix(SvCirc *c, SvState *s, const int *wires, int k, const cplx *m, char *err,
                    size_t errlen)
{
    if (!queues(c, s)) {
        if (sv_apply_matrix(s, wires, k, m, err, errlen) != 0) return -1;
        c->st.gates++;
        c->st.blocks++;
        c->st.passes++;
        return 0;
    }
    if (k < 1 || k > SV_MAX_DENSE || !wires || !m) /* its messages */
        return sv_apply_matrix(s, wires, k, m, err, errlen);
    SvOp op;
    memset(&op, 0, sizeof op);
    op.gate = SV_QUBITUNITARY;
    op.nwires = k;
    memcpy(op.wires, wires, (size_t)k * sizeof(int));
    op.matrix = m;
    /* the checks of sv_apply_matrix: wires, finite entries (any matrix) */
    SvOp probe = op;
    probe.gate = SV_IDENTITY;
    probe.nwires = 1;
    for (int i = 0; i < k; i++) {
        probe.wires[0] = wires[i];
        if (sv_check(&probe, s->nq, err, errlen) != 0)
            return sv_apply_matrix(s, wires, k, m, err, errlen);
        for (int j = 0; j < i; j++)
            if (wires[j] == wires[i]) return sv_apply_matrix(s, wires, k, m, err, errlen);
    }
    size_t nm = (size_t)1 << (2 * k);
    for (size_t i = 0; i < nm; i++)
        if (!isfinite(creal(m[i])) || !isfinite(cimag(m[i])))
            return sv_apply_matrix(s, wires, k, m, err, errlen);
    if (c->nops >= c->cfg.max_ops && svc_flush(c, s, err, errlen) != 0) return -1;
    if (enqueue(c, &op, m, nm, err, errlen) != 0) return -1;
    c->st.gates++;
    return 0;
}

/* ---- scheduling ------------------------------------------------------- */

/* The index bits an op touches (targets and controls). */
static uint64_t op_mask(const SvOp *op, int nq)
{
    uint64_t m = 0;
    for (int i = 0; i < op->nwires; i++) m |= (uint64_t)1 << sv_bitpos(nq, op->wires[i]);
    for (int i = 0; i < op->nctrl; i++) m |= (uint64_t)1 << sv_bitpos(nq, op->ctrl[i]);
    return m;
}

/* The index bits of an op's controls: its extra controls and the control
   wires of the controlled gates (those sv_op_uncontrol can drop). */
static uint64_t op_ctrl_mask(const SvOp *op, int nq)
{
    uint64_t m = 0;
    for (int i = 0; i < op->nctrl; i++) m |= (uint64_t)1 << sv_bitpos(nq, op->ctrl[i]);
    if (op->gate == SV_TOFFOLI) m |= (uint64_t)1 << sv_bitpos(nq, op->wires[1]);
    switch ((int)op->gate) {
    case SV_TOFFOLI:
    case SV_CNOT:
    case SV_CSWAP:
    case SV_CY:
    case SV_CRX:
    case SV_CRY:
    case SV_CZ:
    case SV_CRZ:
    case SV_CPHASE: m |= (uint64_t)1 << sv_bitpos(nq, op->wires[0]); break;
    default: break;
    }
    return m;
}

/* The bit, below 3, on which a phase gate's chunk phase
   (sv_op_phase_split) runs: one that none of op's controls uses, or -1. */
static int phase_spare(const SvOp *op, int nq)
{
    uint64_t cm = op_ctrl_mask(op, nq);
    for (int b = 0; b < 3; b++)
        if (!(cm >> b & 1)) return b;
    return -1;
}

/* The bits a pass must hold for op in exact mode: its targets. Controls
   outside the pass's bits are predicates of the chunks (sv_op_uncontrol),
   and so are the targets of a phase gate (sv_op_phase_wires) whose bits
   are not among the lowest few: each row of 8 amplitudes there has one
   phase, which a chunk without the bits runs as a phase of its own. */
static uint64_t exact_need(const SvOp *op, int nq)
{
    uint64_t need = op_mask(op, nq) & ~op_ctrl_mask(op, nq);
    uint64_t pw = phase_spare(op, nq) < 0 ? 0 : sv_op_phase_wires(op);
    for (int i = 0; i < op->nwires; i++)
        if (pw >> i & 1) need &= ~((uint64_t)1 << sv_bitpos(nq, op->wires[i]));
    return need;
}

/* Whether an op only moves amplitudes (the exchange kernels: no
   arithmetic) or does nothing: such an op and any op on disjoint bits
   give the same bytes in either order, since each runs the same
   arithmetic on the same values, only at exchanged places. Two ops that
   both compute do not: H on one bit and H on another round in a
   different order when swapped. */
static int op_moves_only(const SvOp *op)
{
    switch ((int)op->gate) {
    case SV_IDENTITY:
    case SV_PAULIX:
    case SV_CNOT:
    case SV_TOFFOLI:
    case SV_SWAP:
    case SV_CSWAP:
    case SV_BASISSTATE: return 1;
    default: return 0;
    }
}

/* svc_flush's view of the queued gates while it cuts them into passes:
   per gate its bits (mask), the bits a pass must hold for it (need; in
   exact mode the controls are predicates outside it) and whether it has
   run (done); take gets the indices of the gates the next pass runs. */
typedef struct PassQueue {
    const uint64_t *mask, *need;
    const unsigned char *done;
    int *take;
} PassQueue;

/* Why: a pass takes, in order, the gates that fit one chunk's bit set.
   A gate left for a later pass is passed by a later gate only when the
   two commute exactly: disjoint bits and (exact mode, the default) one
   of them only moves amplitudes; in the dense mode (max_block >= 1, not
   exact anyway) any two on disjoint bits. Fills pq->take with their
   indices; returns their number and the set in *set. */
static int select_pass(const SvCirc *c, const PassQueue *pq, int nq, int cbits, uint64_t *set)
{
    const uint64_t *mask = pq->mask, *need = pq->need;
    const unsigned char *done = pq->done;
    int *take = pq->take;
    uint64_t all = nq >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nq) - 1;
    uint64_t S = nq <= cbits ? all : ((uint64_t)1 << c->cfg.low_bits) - 1, B = 0;
    int exact = c->cfg.max_block < 1, left_computes = 0, n = 0;
    for (int i = 0; i < c->nops; i++) {
        if (done[i]) continue;
        uint64_t m = mask[i];
        int moves = op_moves_only(&c->ops[i]);
        if ((m & B) || (exact && left_computes && !moves) ||
            __builtin_popcountll(S | need[i]) > cbits) {
            B |= m; /* left for a later pass */
            left_computes |= !moves;
            continue;
        }
        S |= need[i];
        take[n++] = i;
    }
    for (int b = 0; b < nq && __builtin_popcountll(S) < cbits; b++) S |= (uint64_t)1 << b;
    *set = S;
    return n;
}

/* ---- fusion ------------------------------------------------------------ */

/* A block: one op as it is (nops 1), or the product of several on nb <= 2
   bits b[0] > b[1] (b[0] the most significant bit of the matrix index). */
typedef struct Blk {
    int nb, nops, op;
    int b[2];
    uint64_t mask;
    cplx m[16];
} Blk;

/* 4x4 (or 2x2 when n = 2) product r = a b. */
static void matmul(int n, const cplx *a, const cplx *b, cplx *r)
{
    cplx t[16];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            cplx s = 0;
            for (int k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            t[i * n + j] = s;
        }
    memcpy(r, t, (size_t)(n * n) * sizeof(cplx));
}

/* The matrix of block x on a bit pair whose higher bit is hi: x's own
   bits are among the pair. */
static void embed(const Blk *x, int hi, cplx *out)
{
    memset(out, 0, 16 * sizeof(cplx));
    if (x->nb == 2) {
        if (x->b[0] == hi) {
            memcpy(out, x->m, 16 * sizeof(cplx));
            return;
        }
        for (int r = 0; r < 4; r++) /* swap the two index bits */
            for (int col = 0; col < 4; col++) {
                int r2 = ((r & 1) << 1) | (r >> 1), c2 = ((col & 1) << 1) | (col >> 1);
                out[r2 * 4 + c2] = x->m[r * 4 + col];
            }
        return;
    }
    int top = x->b[0] == hi;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                int r = top ? (i << 1) | k : (k << 1) | i, col = top ? (j << 1) | k : (k << 1) | j;
                out[r * 4 + col] = x->m[i * 2 + j];
            }
}

/* Why: an op becomes a block of its own (its matrix on its bits) when it
   is narrow enough to fuse; 0 when it must run as it is. */
static int op_block(const SvOp *op, int nq, int maxb, int idx, Blk *x)
{
    int k = op->nctrl + op->nwires;
    if (k < 1 || k > maxb || op->gate == SV_BASISSTATE || op->gate == SV_IDENTITY) return 0;
    cplx m[16];
    if (sv_op_matrix(op, m, NULL, 0) != 0) return 0;
    int bits[2] = { 0, 0 }, nb = 0;
    for (int i = 0; i < op->nctrl; i++) bits[nb++] = sv_bitpos(nq, op->ctrl[i]);
    for (int i = 0; i < op->nwires; i++) bits[nb++] = sv_bitpos(nq, op->wires[i]);
    x->nb = nb;
    x->nops = 1;
    x->op = idx;
    x->mask = 0;
    for (int i = 0; i < nb; i++) x->mask |= (uint64_t)1 << bits[i];
    x->b[0] = bits[0];
    x->b[1] = nb == 2 ? bits[1] : -1;
    memcpy(x->m, m, (size_t)(nb == 2 ? 16 : 4) * sizeof(cplx));
    if (nb == 2 && bits[0] < bits[1]) { /* canonical order: b[0] the higher bit */
        Blk t = *x;
        t.b[0] = bits[1];
        t.b[1] = bits[0];
        embed(x, bits[1], t.m);
        *x = t;
    }
    return 1;
}

/* g after the open blocks o[0..n) (disjoint, all within g's bits or
   joining them within max 2 bits): one block. */
static void merge(Blk *g, Blk *const *o, int n)
{
    uint64_t U = g->mask;
    for (int i = 0; i < n; i++) U |= o[i]->mask;
    int nops = g->nops;
    for (int i = 0; i < n; i++) nops += o[i]->nops;
    if (__builtin_popcountll(U) == 1) { /* 1 bit: 2x2 products, in order */
        cplx m[4];
        memcpy(m, g->m, sizeof m);
        for (int i = 0; i < n; i++) matmul(2, m, o[i]->m, m);
        memcpy(g->m, m, sizeof m);
        g->nops = nops;
        return;
    }
    int hi = 63 - __builtin_clzll(U), lo = __builtin_ctzll(U);
    cplx G[16], P[16];
    embed(g, hi, G);
    for (int i = 0; i < n; i++) { /* the open blocks are disjoint: any order */
        embed(o[i], hi, P);
        matmul(4, G, P, G);
    }
    g->nb = 2;
    g->b[0] = hi;
    g->b[1] = lo;
    g->mask = U;
    memcpy(g->m, G, sizeof G);
    g->nops = nops;
}

/* What running a block costs, in RX-like 1-qubit gates over the same
   amplitudes (measured on the kernels of this room in the L2 cache: a
   diagonal or an exchange about a third of that, a 4x4 a little over
   two). Fusion only merges blocks when the merged one costs no more. */
#define COST_DIAG  0.5
#define COST_SWAP  0.35
#define COST_PAIR  1.0
#define COST_QUAD  2.2
#define COST_OTHER 2.5

static int is_diag(const cplx *m, int d)
{
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            if (i != j && m[i * d + j] != 0) return 0;
    return 1;
}

static double op_cost(const SvOp *op)
{
    switch (op->gate) {
    case SV_PAULIZ:
    case SV_S:
    case SV_T:
    case SV_RZ:
    case SV_PHASESHIFT:
    case SV_CZ:
    case SV_CRZ:
    case SV_CPHASE:
    case SV_ISINGZZ:
    case SV_MULTIRZ:
    case SV_IDENTITY: return COST_DIAG;
    case SV_PAULIX:
    case SV_CNOT:
    case SV_SWAP:
    case SV_TOFFOLI:
    case SV_CSWAP:
    case SV_BASISSTATE: return COST_SWAP;
    case SV_HADAMARD:
    case SV_PAULIY:
    case SV_SX:
    case SV_RX:
    case SV_RY:
    case SV_ROT:
    case SV_U3:
    case SV_CY:
    case SV_CRX:
    case SV_CRY:
    case SV_ISWAP:
    case SV_SINGLEEXC:
    case SV_DOUBLEEXC: return COST_PAIR;
    case SV_ISINGXX:
    case SV_ISINGYY: return COST_QUAD;
    case SV_QUBITUNITARY:
        return op->nwires == 1   ? (is_diag(op->matrix, 2) ? COST_DIAG : COST_PAIR)
               : op->nwires == 2 ? COST_QUAD
                                 : COST_OTHER;
    case SV_NGATES: break;
    }
    sv_unreachable();
}

static double blk_cost(const SvCirc *c, const Blk *x)
{
    if (x->nops == 1) return op_cost(&c->ops[x->op]);
    if (x->nb == 1) return is_diag(x->m, 2) ? COST_DIAG : COST_PAIR;
    return COST_QUAD;
}

typedef struct Fuser {
    Blk *open; /* disjoint blocks not yet emitted */
    int nopen;
    Blk *out; /* emitted, in an order that keeps every dependency */
    int nout;
} Fuser;

static void emit(Fuser *f, int i)
{
    f->out[f->nout++] = f->open[i];
    f->open[i] = f->open[--f->nopen];
}

/* Why: the gates of a pass into blocks of at most maxb qubits; a gate that
   cannot join the open blocks on its wires closes them. */
static void fuse_pass(const SvCirc *c, const int *take, int n, int nq, Fuser *f)
{
    int maxb = c->cfg.max_block;
    f->nopen = f->nout = 0;
    for (int t = 0; t < n; t++) {
        const SvOp *op = &c->ops[take[t]];
        Blk g;
        int fusable = op_block(op, nq, maxb, take[t], &g);
        uint64_t gm = fusable ? g.mask : op_mask(op, nq);
        for (int i = f->nopen - 1; i >= 0; i--) /* blocks that g cannot join */
            if ((f->open[i].mask & gm) &&
                (!fusable || __builtin_popcountll(f->open[i].mask | gm) > maxb))
                emit(f, i);
        if (!fusable) {
            memset(&g, 0, sizeof g);
            g.nops = 1;
            g.op = take[t];
            g.mask = gm;
            f->out[f->nout++] = g;
            continue;
        }
        Blk *ov[2];
        int nov = 0, idx[2];
        uint64_t U = gm;
        for (int i = 0; i < f->nopen; i++)
            if (f->open[i].mask & gm) {
                idx[nov] = i;
                ov[nov++] = &f->open[i];
                U |= f->open[i].mask;
            }
        if (nov) { /* merged only if that is no dearer than the parts */
            double parts = blk_cost(c, &g);
            for (int i = 0; i < nov; i++) parts += blk_cost(c, ov[i]);
            Blk m = g;
            merge(&m, ov, nov);
            if (__builtin_popcountll(U) > maxb || blk_cost(c, &m) > parts + 1e-9) {
                for (int i = nov - 1; i >= 0; i--) emit(f, idx[i]);
                nov = 0;
            } else {
                g = m;
            }
        }
        for (int i = nov - 1; i >= 0; i--) f->open[idx[i]] = f->open[--f->nopen];
        f->open[f->nopen++] = g;
    }
    while (f->nopen) emit(f, f->nopen - 1);
}

/* The op a block runs as, in the numbering of the full state. */
static void block_op(const SvCirc *c, const Blk *x, int nq, SvOp *op)
{
    if (x->nops == 1) {
        *op = c->ops[x->op];
        return;
    }
    memset(op, 0, sizeof *op);
    op->gate = SV_QUBITUNITARY;
    op->nwires = x->nb;
    for (int i = 0; i < x->nb; i++) op->wires[i] = nq - 1 - x->b[i];
    op->matrix = x->m;
}

/* ---- running a pass --------------------------------------------------- */

typedef struct PassCtx {
    SvState *s;
    const SvOp *ops;      /* in the chunk's numbering */
    const uint64_t *pred; /* per op: control bits outside the set (all 1: it runs) */
    const uint64_t *sel;  /* per op: a phase's target bits outside the set, or 0 */
    const SvOp *alt;      /* per op with sel bits: what runs where their parity is odd */
    int nops;
    int cbits;
    uint64_t set, free_mask; /* the chunk's bits, the others */
    uint64_t nchunks;
    int inplace;         /* the set is the lowest bits: chunks are contiguous */
    SvFuseBufs *bufs;    /* gathered passes */
    uint64_t run, nruns; /* gathered: runs of run amplitudes, nruns per chunk */
    uint64_t *roff;      /* their offsets from the chunk's base */
    const int *runat;    /* per op: the PermRun that starts there, or -1 */
    const struct PermRun *perm;
} PassCtx;

/* x's bits placed at the set bits of mask, lowest first. */
static uint64_t deposit(uint64_t x, uint64_t mask)
{
    uint64_t r = 0;
    for (uint64_t m = mask; m && x; m &= m - 1, x >>= 1)
        if (x & 1) r |= m & (0 - m);
    return r;
}

/* ---- permutation runs ------------------------------------------------ */

/* Why: a CNOT ladder is a run of exchange gates, each a sweep over the
   chunk that only moves amplitudes. Their product is one permutation of
   the chunk's indices, affine over GF(2) (X adds a bit, CNOT adds its
   control bit to its target, SWAP exchanges two bits), so the run moves
   each amplitude once: out[i] = in[g(i)], g(i) = A i + c the inverse of
   the run's map, read from two tables (lo: the low h bits of i, with c;
   hi: the others). Moving bits is exact whatever the order, so this is
   the same bytes as the gates one by one. An X that a control outside
   the pass made a predicate (sv_op_uncontrol) only changes c, per chunk:
   pvec[k] is what it adds where its predicate ppred[k] holds. */
typedef struct PermRun {
    int n; /* its ops */
    int h; /* bits of i that index lo */
    uint32_t *lo, *hi;
    int npx; /* predicated X gates */
    uint64_t *ppred;
    uint32_t *pvec;
} PermRun;

/* Whether a chunk op can be part of a permutation run. */
static int perm_op(const SvOp *op, uint64_t pred, uint64_t sel)
{
    if (sel || op->nctrl) return 0;
    return op->gate == SV_PAULIX || (!pred && (op->gate == SV_CNOT || op->gate == SV_SWAP));
}

/* The amplitudes it moves, in chunks: an X all, CNOT and SWAP half. */
static double perm_weight(const SvOp *op) { return op->gate == SV_PAULIX ? 1.0 : 0.5; }

/* The index map of ops[n-1], then ..., then ops[0] on x (each op is its
   own inverse: this is the inverse of the run ops[0..n)); the constants
   of the X gates only when consts (and then only unpredicated ones). */
static uint32_t perm_map(const SvOp *ops, const uint64_t *pred, int n, int cbits, uint32_t x,
                         int consts)
{
    for (int k = n - 1; k >= 0; k--) {
        const SvOp *o = &ops[k];
        int t = sv_bitpos(cbits, o->wires[o->nwires - 1]);
        switch ((int)o->gate) {
        case SV_PAULIX:
            if (consts && !pred[k]) x ^= (uint32_t)1 << t;
            break;
        case SV_CNOT: x ^= ((x >> sv_bitpos(cbits, o->wires[0])) & 1) << t; break;
        case SV_SWAP: {
            int a = sv_bitpos(cbits, o->wires[0]);
            uint32_t d = ((x >> a) ^ (x >> t)) & 1;
            x ^= (d << a) | (d << t);
            break;
        }
        default: sv_unreachable();
        }
    }
    return x;
}

/* t[x] = start + the sum of col[k] over the bits k of x, x < 2^nb: each
   from the entry with its lowest bit cleared. */
static void span_table(uint32_t *t, int nb, const uint32_t *col, uint32_t start)
{
    t[0] = start;
    for (size_t x = 1; x < (size_t)1 << nb; x++)
        t[x] = t[x & (x - 1)] ^ col[__builtin_ctzll((uint64_t)x)];
}

/* The run of ops[first..first+n) as tables; -1 without memory. */
static int perm_build(PermRun *r, const SvOp *ops, const uint64_t *pred, int first, int n,
                      int cbits)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    r->h = cbits / 2;
    const SvOp *o = ops + first;
    const uint64_t *pr = pred + first;
    size_t nlo = (size_t)1 << r->h, nhi = (size_t)1 << (cbits - r->h);
    r->lo = malloc((nlo + nhi) * sizeof *r->lo);
    r->ppred = malloc((size_t)n * sizeof *r->ppred);
    r->pvec = malloc((size_t)n * sizeof *r->pvec);
    if (!r->lo || !r->ppred || !r->pvec) return -1;
    r->hi = r->lo + nlo;
    uint32_t col[32];
    for (int k = 0; k < cbits; k++) col[k] = perm_map(o, pr, n, cbits, (uint32_t)1 << k, 0);
    uint32_t c0 = perm_map(o, pr, n, cbits, 0, 1);
    span_table(r->lo, r->h, col, c0); /* g(i) = lo[low h bits] ^ hi[the others] */
    span_table(r->hi, cbits - r->h, col + r->h, 0);
    for (int k = 0; k < n; k++)
        if (pr[k]) { /* X at k: its bit through the linear part of ops 0..k-1 */
            int t = sv_bitpos(cbits, o[k].wires[0]);
            r->ppred[r->npx] = pr[k];
            r->pvec[r->npx++] = perm_map(o, pr, k, cbits, (uint32_t)1 << t, 0);
        }
    return 0;
}

static void perm_free(PermRun *r, int n)
{
    for (int i = 0; r && i < n; i++) {
        free(r[i].lo);
        free(r[i].ppred);
        free(r[i].pvec);
    }
    free(r);
}

/* out[i] = in[g(i)] on the chunk whose first amplitude is base: the
   writes in order, the reads from the L2 (measured: the other way round,
   out[f(j)] = in[j], made the layered circuit slower, 0.43
   against 0.35 s at 22 wires). */
static void perm_apply(const PermRun *r, int cbits, uint64_t base, const cplx *in, cplx *out)
{
    uint32_t c = 0;
    for (int k = 0; k < r->npx; k++)
        if ((base & r->ppred[k]) == r->ppred[k]) c ^= r->pvec[k];
    size_t nlo = (size_t)1 << r->h, nhi = (size_t)1 << (cbits - r->h);
    for (size_t y = 0; y < nhi; y++) {
        uint32_t hy = r->hi[y] ^ c;
        cplx *o = out + (y << r->h);
        for (size_t x = 0; x < nlo; x++) o[x] = in[r->lo[x] ^ hy];
    }
}

/* The ops of a pass cut into permutation runs worth one sweep each (at
   least FUSE_PERM_MIN chunks of moves); runat[i] the run that starts at
   op i, or -1. Returns the number of runs (*runs NULL: none), -1
   without memory. */
#define FUSE_PERM_MIN 2.0
static int perm_plan(const PassCtx *p, int *runat, PermRun **runs)
{
    int n = p->nops, nr = 0;
    *runs = NULL;
    for (int i = 0; i < n; i++) runat[i] = -1;
    for (int i = 0; i < n;) {
        int j = i;
        double w = 0;
        while (j < n && perm_op(&p->ops[j], p->pred[j], p->sel[j])) w += perm_weight(&p->ops[j++]);
        if (w < FUSE_PERM_MIN) {
            i = j > i ? j : i + 1;
            continue;
        }
        PermRun *t = realloc(*runs, (size_t)(nr + 1) * sizeof *t);
        if (!t) {
            perm_free(*runs, nr);
            *runs = NULL;
            return -1;
        }
        *runs = t;
        if (perm_build(&t[nr], p->ops, p->pred, i, j - i, p->cbits) != 0) {
            perm_free(*runs, nr + 1);
            *runs = NULL;
            return -1;
        }
        runat[i] = nr++;
        i = j;
    }
    return nr;
}

/* Every op of the pass on the chunk at amp (first amplitude base), a
   permutation run into spare and back to the other buffer; returns the
   buffer that holds the result (amp or spare). */
static cplx *run_chunk_ops(const PassCtx *p, cplx *amp, cplx *spare, uint64_t base)
{
    SvState L;
    memset(&L, 0, sizeof L);
    L.nq = p->cbits;
    L.dim = (size_t)1 << p->cbits;
    L.amp = amp;
    L.nthreads = 1;
    L.simd = p->s->simd;
    L.diag_walk = p->s->diag_walk;
    for (int i = 0; i < p->nops; i++) {
        if (p->runat && p->runat[i] >= 0) {
            const PermRun *r = &p->perm[p->runat[i]];
            cplx *from = L.amp;
            perm_apply(r, p->cbits, base, from, spare);
            L.amp = spare;
            spare = from;
            i += r->n - 1;
            continue;
        }
        if ((base & p->pred[i]) == p->pred[i])
            sv_run_op(&L, __builtin_parityll(base & p->sel[i]) ? &p->alt[i] : &p->ops[i], NULL, 0);
    }
    return L.amp;
}

/* Why: each part of the team handles a range of chunks: gather, every
   block of the pass, scatter. */
static void pass_part(void *ctx, int part, int nparts)
{
    const PassCtx *p = ctx;
    uint64_t a = p->nchunks * (uint64_t)part / (uint64_t)nparts;
    uint64_t b = p->nchunks * (uint64_t)(part + 1) / (uint64_t)nparts;
    sv_assert(part >= 0 && part < nparts && a <= b && b <= p->nchunks);
    cplx *amp = p->s->amp;
    size_t csize = (size_t)1 << p->cbits;
    if (p->inplace && !p->bufs) {
        for (uint64_t x = a; x < b; x++)
            run_chunk_ops(p, amp + (x << p->cbits), NULL, x << p->cbits);
        return;
    }
    SvFuseBufs *bs = p->bufs;
    int slot = 0;
    while (atomic_exchange_explicit(&bs->busy[slot], 1, memory_order_acquire))
        slot = (slot + 1) % bs->n;
    cplx *buf = bs->buf[slot];
    if (p->inplace) { /* permutation runs: the second buffer is the spare */
        for (uint64_t x = a; x < b; x++) {
            cplx *chunk = amp + (x << p->cbits);
            cplx *res = run_chunk_ops(p, chunk, buf, x << p->cbits);
            if (res != chunk) memcpy(chunk, res, csize * sizeof(cplx));
        }
        atomic_store_explicit(&bs->busy[slot], 0, memory_order_release);
        return;
    }
    uint64_t run = p->run, nruns = p->nruns;
    const uint64_t *ro = p->roff;
    uint64_t base = deposit(a, p->free_mask);
    for (uint64_t x = a; x < b; x++) {
        /* the runs are scattered over the state: ask for a few ahead (the
           hardware prefetcher does not follow them), the next chunk's
           first ones at the end of this one */
        uint64_t next = x + 1 < b ? (base - p->free_mask) & p->free_mask : base;
        for (uint64_t k = 0; k < nruns; k++) {
            uint64_t kk = k + FUSE_AHEAD;
            if (kk < 2 * nruns) { /* ro[kk - nruns] past that is out of bounds */
                const cplx *src =
                    kk < nruns ? amp + (base | ro[kk]) : amp + (next | ro[kk - nruns]);
                for (uint64_t l = 0; l < run; l += 4) __builtin_prefetch(src + l);
            }
            memcpy(buf + k * run, amp + (base | ro[k]), run * sizeof(cplx));
        }
        cplx *res = run_chunk_ops(p, buf, buf + csize, base);
        for (uint64_t k = 0; k < nruns; k++)
            memcpy(amp + (base | ro[k]), res + k * run, run * sizeof(cplx));
        base = next;
    }
    atomic_store_explicit(&bs->busy[slot], 0, memory_order_release);
}

/* o's wires in the chunk's numbering: wire w of the state is the chunk's
   wire of the same bit among the set's bits. */
static void renumber(SvOp *o, int nq, uint64_t set, int cbits)
{
    for (int i = 0; i < o->nwires; i++) {
        int p = sv_bitpos(nq, o->wires[i]);
        sv_assert(set >> p & 1); /* a pass holds only ops whose targets are its bits */
        int l = __builtin_popcountll(set & (((uint64_t)1 << p) - 1));
        o->wires[i] = cbits - 1 - l;
    }
    for (int i = 0; i < o->nctrl; i++) {
        int p = sv_bitpos(nq, o->ctrl[i]);
        sv_assert(set >> p & 1); /* the others became predicates */
        int l = __builtin_popcountll(set & (((uint64_t)1 << p) - 1));
        o->ctrl[i] = cbits - 1 - l;
    }
}

/* An op for the chunks, in their numbering (renumber). A control whose
   bit is outside the set is dropped (sv_op_uncontrol; m[0..3] holds a
   matrix it makes) and becomes a bit of *pred: the op runs on the chunks
   where it is 1. A phase gate whose target bits are outside the set
   (exact_need) becomes what runs on the chunks where their parity is
   even (out) and odd (alt; *sel is the bits): sv_op_phase_split, on the
   spare bit below 3 where it makes a phase (m[4..11] their matrices). */
typedef struct LocalOps {
    SvOp *ops, *alt;
    cplx *m; /* 12 per op */
    uint64_t *pred, *sel;
} LocalOps;

static void local_op(const SvOp *op, int nq, uint64_t set, int cbits, LocalOps *lo, int i)
{
    SvOp t = *op, *out = &lo->ops[i], *alt = &lo->alt[i];
    cplx *m = lo->m + 12 * i;
    uint64_t *pred = &lo->pred[i], *sel = &lo->sel[i];
    *pred = 0;
    *sel = 0;
    for (int again = 1; again;) {
        again = 0;
        uint64_t cm = op_ctrl_mask(&t, nq) & ~set;
        if (cm) {
            int b = __builtin_ctzll(cm);
            SvOp u;
            if (sv_op_uncontrol(&t, nq - 1 - b, &u, m) == 0) {
                t = u;
                *pred |= (uint64_t)1 << b;
                again = 1;
            }
        }
    }
    int spare = phase_spare(&t, nq);
    uint64_t outside = 0, ow = 0; /* target bits outside the set; their indices in t.wires */
    for (int k = 0; k < t.nwires; k++) {
        uint64_t b = (uint64_t)1 << sv_bitpos(nq, t.wires[k]);
        if (!(set & b)) {
            outside |= b;
            ow |= (uint64_t)1 << k;
        }
    }
    SvOp v[2];
    if (outside && spare >= 0 && sv_op_phase_split(&t, ow, nq - 1 - spare, v, m + 4) == 0) {
        sv_assert(!(outside & 7) && (set & 7) == 7); /* rows of one phase */
        *sel = outside;                              /* their parity picks alt */
        *out = v[0];
        *alt = v[1];
        renumber(out, nq, set, cbits);
        renumber(alt, nq, set, cbits);
        return;
    }
    *out = t;
    renumber(out, nq, set, cbits);
}

/* Why: one pass over the state; 0, or -1 when its buffers cannot be had
   (nothing has run then). */
static int run_pass(SvCirc *c, SvState *s, const SvOp *ops, int n, uint64_t set, int *nblocks)
{
    *nblocks = n;
    int nq = s->nq, cbits = c->cfg.chunk_bits;
    if (nq <= cbits) { /* one chunk: the blocks on the state itself */
        for (int i = 0; i < n; i++) sv_run_op(s, &ops[i], NULL, 0);
        c->st.passes += (uint64_t)n;
        return 0;
    }
    sv_assert(__builtin_popcountll(set) == cbits); /* a chunk: the set's bits */
    PassCtx p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.cbits = cbits;
    p.set = set;
    p.free_mask = (nq >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << nq) - 1) & ~set;
    p.nchunks = (uint64_t)1 << (nq - cbits);
    p.inplace = set == ((uint64_t)1 << cbits) - 1;
    size_t nn = (size_t)(n ? n : 1);
    SvOp *lops = malloc(2 * nn * sizeof *lops); /* the ops, then their alternatives */
    cplx *lm = malloc(nn * 12 * sizeof *lm);
    uint64_t *pred = malloc(2 * nn * sizeof *pred); /* the predicates, then the sel bits */
    int *runat = malloc(nn * sizeof *runat), nrun = 0, rc = -1;
    PermRun *runs = NULL;
    if (!lops || !lm || !pred || !runat) goto out;
    LocalOps lo = { lops, lops + nn, lm, pred, pred + nn };
    for (int i = 0; i < n; i++) local_op(&ops[i], nq, set, cbits, &lo, i);
    p.ops = lops;
    p.alt = lops + nn;
    p.pred = pred;
    p.sel = pred + nn;
    p.nops = n;
    nrun = perm_plan(&p, runat, &runs); /* -1 (no memory): the gates one by one */
    if (nrun > 0) {
        p.runat = runat;
        p.perm = runs;
    }
    if (!p.inplace) {
        p.bufs = bufs_get(c, s);
        int r = __builtin_ctzll(~set); /* the contiguous low bits */
        uint64_t H = set & ~(((uint64_t)1 << r) - 1), off = 0;
        p.run = (uint64_t)1 << r;
        p.nruns = (uint64_t)1 << (cbits - r);
        p.roff = malloc(p.nruns * sizeof *p.roff);
        if (!p.bufs || !p.roff) goto out;
        for (uint64_t k = 0; k < p.nruns; k++, off = (off - H) & H) p.roff[k] = off;
    } else if (p.runat && !(p.bufs = bufs_get(c, s))) {
        p.runat = NULL; /* no spare chunk: the gates one by one */
    }
    sv_parallel(s, pass_part, &p);
    for (int i = 0; p.runat && i < nrun; i++) /* a run is one sweep of the chunk */
        *nblocks -= runs[i].n - 1;
    rc = 0;
out:
    perm_free(runs, nrun > 0 ? nrun : 0);
    free(runat);
    free(p.roff);
    free(lops);
    free(lm);
    free(pred);
    if (rc == 0) c->st.passes++;
    return rc;
}

/* Why: without memory for the plan, the queue runs gate by gate. */
static void run_in_order(SvCirc *c, SvState *s, const unsigned char *done)
{
    for (int i = 0; i < c->nops; i++) {
        if (done && done[i]) continue;
        sv_run_op(s, &c->ops[i], NULL, 0);
        c->st.blocks++;
        c->st.passes++;
    }
}

int svc_flush(SvCirc *c, SvState *s, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    if (c->nops == 0) return 0;
    for (int i = 0; i < c->nops; i++)
        c->ops[i].matrix = c->moff[i] == SIZE_MAX ? NULL : c->mat + c->moff[i];
    int nq = s->nq, n = c->nops;
    uint64_t *mask = malloc(2 * (size_t)n * sizeof *mask), *need = mask ? mask + n : NULL;
    unsigned char *done = calloc((size_t)n, 1);
    int *take = malloc((size_t)n * sizeof *take);
    Fuser f = { malloc((size_t)n * sizeof(Blk)), 0, malloc((size_t)n * sizeof(Blk)), 0 };
    SvOp *bops = malloc((size_t)n * sizeof *bops);
    if (!mask || !done || !take || !f.open || !f.out || !bops) {
        run_in_order(c, s, NULL);
        goto out;
    }
    for (int i = 0; i < n; i++) { /* exact mode: predicates of the chunks, exact_need */
        mask[i] = op_mask(&c->ops[i], nq);
        need[i] = c->cfg.max_block < 1 ? exact_need(&c->ops[i], nq) : mask[i];
    }
    int left = n;
    while (left > 0) {
        uint64_t set;
        PassQueue pq = { mask, need, done, take };
        int nt = select_pass(c, &pq, nq, c->cfg.chunk_bits, &set);
        if (nt == 0) { /* the first op left is wider than a chunk: alone, on the state */
            int i = 0;
            while (done[i]) i++;
            sv_run_op(s, &c->ops[i], NULL, 0);
            done[i] = 1;
            left--;
            c->st.blocks++;
            c->st.passes++;
            continue;
        }
        if (c->cfg.max_block < 1) { /* exact: every gate its own kernel, in order */
            for (int i = 0; i < nt; i++) bops[i] = c->ops[take[i]];
            f.nout = nt;
        } else {
            fuse_pass(c, take, nt, nq, &f);
            for (int i = 0; i < f.nout; i++) block_op(c, &f.out[i], nq, &bops[i]);
        }
        int nb;
        if (run_pass(c, s, bops, f.nout, set, &nb) != 0) {
            run_in_order(c, s, done);
            goto out;
        }
        c->st.blocks += (uint64_t)nb;
        for (int i = 0; i < nt; i++) done[take[i]] = 1;
        left -= nt;
    }
out:
    free(mask);
    free(done);
    free(take);
    free(f.open);
    free(f.out);
    free(bops);
    svc_clear(c);
    return 0;
}
