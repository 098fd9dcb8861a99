#!/usr/bin/env python3
"""run.py — the differential test of gate fusion (src/quantum/fuse.h).

Random programs — circuits of 1- and 2-qubit gates (and a few wider ones),
mid-circuit measurements with classical control (if/else on the outcome, a
gate parameter taken from it), noise channels on the mixed device — run
through qh fused and unfused: the fused runs (QH_FUSION_MIN=1 and
QH_FUSION_CHUNK=6, so that even these small states take gathered,
cache-blocked passes) under --sync, --workers 1 and 4, --no-lookahead and
by default must print byte for byte what the unfused run (--no-fusion
--sync) prints, with the same exit status and stderr: fusion is exact by
construction (fuse.h). With --mpi (and mpirun on PATH, qh built with MPI)
distributed devices run the same way on 1, 2 and 4 ranks. --dense checks
the opt-in dense blocks (QH_FUSION_BLOCK=2) instead, which round
differently: every number within 1e-12 (relative to its size, at least 1),
every other token the same.

Usage: run.py QH [--seeds N] [--first S] [--mpi] [--dense] [--keep DIR]
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

TOL = 1e-12
ONE = ["Hadamard", "PauliX", "PauliY", "PauliZ", "S", "T", "SX"]
ONE_P = ["RX", "RY", "RZ", "PhaseShift"]
TWO = ["CNOT", "CY", "CZ", "SWAP", "ISWAP"]
TWO_P = ["CRX", "CRY", "CRZ", "ControlledPhaseShift", "IsingXX", "IsingYY", "IsingZZ"]
CHANNELS = [("BitFlip", 1), ("PhaseFlip", 1), ("DepolarizingChannel", 1),
            ("AmplitudeDamping", 1), ("PhaseDamping", 1)]


def angle(r):
    return r.choice(["a", "b", "a * b", "%.4f" % r.uniform(-3.2, 3.2), "%.3f + a" % r.uniform(-1, 1)])


def gate(r, n, mixed):
    k = r.random()
    w = r.sample(range(n), min(n, 3))
    if mixed and k < 0.12:
        name, _ = r.choice(CHANNELS)
        return "%s(%.3f, %d)" % (name, r.uniform(0, 0.3), w[0])
    if k < 0.25:
        return "%s(%d)" % (r.choice(ONE), w[0])
    if k < 0.55:
        return "%s(%s, %d)" % (r.choice(ONE_P), angle(r), w[0])
    if n < 2:
        return "RY(%s, 0)" % angle(r)
    if k < 0.72:
        return "%s(%d, %d)" % (r.choice(TWO), w[0], w[1])
    if k < 0.92:
        return "%s(%s, %d, %d)" % (r.choice(TWO_P), angle(r), w[0], w[1])
    if k < 0.95:
        return "Rot(%s, %s, %s, %d)" % (angle(r), angle(r), angle(r), w[0])
    if n >= 3 and k < 0.98:
        return "Toffoli(%d, %d, %d)" % (w[0], w[1], w[2])
    return "MultiRZ(%s, wires=%s)" % (angle(r), sorted(r.sample(range(n), r.randint(1, n))))


def body(r, n, mixed, ngates):
    lines = []
    for i in range(ngates):
        lines.append("    " + gate(r, n, mixed))
        if r.random() < 0.06:  # a mid-circuit measurement and what it decides
            w = r.randrange(n)
            lines.append("    m%d = measure(%d%s)" % (i, w, ", reset=true" if r.random() < 0.3 else ""))
            lines.append("    if m%d == 1 { %s } else { %s }" % (i, gate(r, n, mixed), gate(r, n, mixed)))
            lines.append("    RY(0.25 * m%d + a, %d)" % (i, r.randrange(n)))
    return lines


def mpi_sanitizer_env():
    """As tests/mpi/*.sh: Open MPI's own allocations are not freed at exit
    (no leak checks under mpirun) and its races are suppressed (tsan.supp)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = {}
    for name, extra in (("ASAN_OPTIONS", "detect_leaks=0"),
                        ("TSAN_OPTIONS", "suppressions=" + os.path.join(here, "..", "mpi", "tsan.supp"))):
        have = os.environ.get(name, "")
        env[name] = have + ":" + extra if have else extra
    return env


def program(seed, mpi=False):
    r = random.Random(seed)
    mixed = not mpi and r.random() < 0.35
    n = r.randint(12, 13) if mpi else (r.randint(3, 5) if mixed else r.randint(5, 10))
    dev = 'device("%s", wires=%d%s)' % ("mixed" if mixed else "statevector", n,
                                       ", distributed=true" if mpi else "")
    w = r.sample(range(n), min(n, 2))
    obs = "PauliZ(%d)" % w[0] if n < 2 else "PauliZ(%d) @ PauliX(%d)" % (w[0], w[1])
    out = ["dev = %s" % dev, "qfn circuit(a, b) on dev {"]
    out += body(r, n, mixed, r.randint(20, 60 if not mpi else 40))
    pw = sorted(r.sample(range(n), min(n, 3)))
    out.append("    return [probs(wires=%s), expval(%s), var(PauliY(%d))]" % (pw, obs, w[-1]))
    out.append("}")
    for _ in range(2):
        out.append("print(circuit(%.3f, %.3f))" % (r.uniform(-2, 2), r.uniform(-2, 2)))
    if not mixed and not mpi:  # the state itself, once
        out.append("qfn whole(a, b) on dev {")
        out += body(r, n, mixed, 15)
        out.append("    return state()")
        out.append("}")
        out.append("print(whole(0.4, 0.9))")
    return "\n".join(out) + "\n"


def tokens(text):
    return [t for t in re.split(r"[\s\[\](),]+", text) if t]


def close(a, b):
    """the two outputs agree: numbers within TOL, other tokens equal"""
    ta, tb = tokens(a), tokens(b)
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if x == y:
            continue
        try:
            u, v = complex(x), complex(y)  # numbers: 0.5, -0+0j, 1e-17-0.25j, nan
        except ValueError:
            return False
        if abs(u - v) > TOL * max(1.0, abs(u)):
            return False
    return True


# TSan's symbolizer, describing a suppressed race inside Open MPI's shared
# memory (a file in /dev/shm), prints this on stderr: the sanitizer runtime's
# line, never qh's (tests/mpi/qh_mpirun.sh drops it the same way)
SYMBOLIZER_NOISE = "LLVMSymbolizer: error reading file: "


def run(cmd, env, cwd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    err = "".join(l for l in p.stderr.splitlines(True) if not l.startswith(SYMBOLIZER_NOISE))
    return p.returncode, p.stdout, err


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    qh = os.path.abspath(args[0])
    seeds, first, use_mpi, keep, dense = 40, 1, False, None, False
    i = 1
    while i < len(args):
        if args[i] == "--seeds":
            seeds = int(args[i + 1]); i += 2
        elif args[i] == "--first":
            first = int(args[i + 1]); i += 2
        elif args[i] == "--mpi":
            use_mpi = True; i += 1
        elif args[i] == "--dense":
            dense = True; i += 1
        elif args[i] == "--keep":
            keep = args[i + 1]; i += 2
        else:
            sys.exit("run.py: unknown argument %s" % args[i])
    if os.environ.get("QH_TEST_LIGHT") == "1":
        # .ci/run's ThreadSanitizer step: a few seeds look for races in the
        # fused kernels' threads; the test and diff steps check the bytes
        seeds = min(seeds, 4)
    tmp = tempfile.mkdtemp(prefix="qh-fusion-")
    base_env = dict(os.environ)
    for k in ("QH_FUSION", "QH_FUSION_MIN", "QH_FUSION_CHUNK", "QH_FUSION_BLOCK"):
        base_env.pop(k, None)
    fused_env = dict(base_env, QH_FUSION_MIN="1", QH_FUSION_CHUNK="6")
    if dense:
        fused_env["QH_FUSION_BLOCK"] = "2"
    same = close if dense else (lambda a, b: a == b)
    mpirun = shutil.which("mpirun") if use_mpi else None
    if use_mpi and not mpirun:
        print("run.py: no mpirun: the MPI runs are skipped")
    passed = failed = 0
    for seed in range(first, first + seeds):
        cases = [(False, program(seed))]
        if mpirun:
            cases.append((True, program(seed, mpi=True)))
        for mpi, src in cases:
            path = os.path.join(tmp, "f%d%s.qh" % (seed, "_mpi" if mpi else ""))
            with open(path, "w") as f:
                f.write(src)
            if mpi:
                menv = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                            OMPI_MCA_btl="self,vader", **mpi_sanitizer_env())
                want = run([mpirun, "-q", "--oversubscribe", "-n", "1", qh, "--no-fusion", "--sync", path],
                           dict(base_env, **menv), tmp)
                variants = [(dict(fused_env, **menv), [mpirun, "-q", "--oversubscribe", "-n", str(nr), qh, path])
                            for nr in (1, 2, 4)]
            else:
                want = run([qh, "--no-fusion", "--sync", path], base_env, tmp)
                variants = [(fused_env, [qh, m, path])
                            for m in ("--sync", "--workers=1", "--workers=4", "--no-lookahead")]
                variants.append((fused_env, [qh, path]))
            ok = True
            for env, cmd in variants:
                got = run(cmd, env, tmp)
                if got[0] != want[0] or got[2] != want[2] or not same(got[1], want[1]):
                    ok = False
                    print("FAIL seed %d%s: %s" % (seed, " (mpi)" if mpi else "", " ".join(cmd[-3:])))
                    print("  unfused (status %d): %s%s" % (want[0], want[1][:300], want[2][:300]))
                    print("  fused   (status %d): %s%s" % (got[0], got[1][:300], got[2][:300]))
                    if keep:
                        os.makedirs(keep, exist_ok=True)
                        shutil.copy(path, keep)
                    break
            if ok:
                passed += 1
            else:
                failed += 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
