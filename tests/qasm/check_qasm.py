#!/usr/bin/env python3
"""check_qasm.py — the OpenQASM importer against an independent reference.

For every .qasm file given (or found in the directories given), runs the
qasm_state driver (qh's reader + statevector) and compares its state with
the one this script computes itself, up to a global phase (OpenQASM 2.0
fixes none). The reference is written here from the OpenQASM 2.0
definitions alone: the only primitives are U(θ,φ,λ) = Rz(φ)Ry(θ)Rz(λ) and
CX; every qelib1 gate is its definition as OpenQASM text (below), expanded
by this script's own small parser. Final measurements are skipped.

    check_qasm.py QASM_STATE FILE_OR_DIR...
Exit 0 if all agree (prints "N passed, 0 failed"), 1 if not, 77 (skip)
without numpy.
"""
import math
import os
import re
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("check_qasm.py: SKIPPED (no numpy)")
    sys.exit(77)

# qelib1's gates in terms of U and CX (and each other), as the OpenQASM 2.0
# definitions give them.
QELIB1 = """
gate u3(theta,phi,lambda) q { U(theta,phi,lambda) q; }
gate u2(phi,lambda) q { U(pi/2,phi,lambda) q; }
gate u1(lambda) q { U(0,0,lambda) q; }
gate cx c,t { CX c,t; }
gate id a { U(0,0,0) a; }
gate u0(gamma) q { U(0,0,0) q; }
gate u(theta,phi,lambda) q { U(theta,phi,lambda) q; }
gate p(lambda) q { U(0,0,lambda) q; }
gate x a { u3(pi,0,pi) a; }
gate y a { u3(pi,pi/2,pi/2) a; }
gate z a { u1(pi) a; }
gate h a { u2(0,pi) a; }
gate s a { u1(pi/2) a; }
gate sdg a { u1(-pi/2) a; }
gate t a { u1(pi/4) a; }
gate tdg a { u1(-pi/4) a; }
gate rx(theta) a { u3(theta,-pi/2,pi/2) a; }
gate ry(theta) a { u3(theta,0,0) a; }
gate rz(phi) a { u1(phi) a; }
gate sx a { sdg a; h a; sdg a; }
gate sxdg a { s a; h a; s a; }
gate cz a,b { h b; cx a,b; h b; }
gate cy a,b { sdg b; cx a,b; s b; }
gate swap a,b { cx a,b; cx b,a; cx a,b; }
gate ch a,b { h b; sdg b; cx a,b; h b; t b; cx a,b; t b; h b; s b; x b; s a; }
gate ccx a,b,c { h c; cx b,c; tdg c; cx a,c; t c; cx b,c; tdg c; cx a,c; t b; t c; h c; cx a,b; t a; tdg b; cx a,b; }
gate cswap a,b,c { cx c,b; ccx a,b,c; cx c,b; }
gate crx(lambda) a,b { u1(pi/2) b; cx a,b; u3(-lambda/2,0,0) b; cx a,b; u3(lambda/2,-pi/2,0) b; }
gate cry(lambda) a,b { u3(lambda/2,0,0) b; cx a,b; u3(-lambda/2,0,0) b; cx a,b; }
gate crz(lambda) a,b { u1(lambda/2) b; cx a,b; u1(-lambda/2) b; cx a,b; }
gate cu1(lambda) a,b { u1(lambda/2) a; cx a,b; u1(-lambda/2) b; cx a,b; u1(lambda/2) b; }
gate cp(lambda) a,b { p(lambda/2) a; cx a,b; p(-lambda/2) b; cx a,b; p(lambda/2) b; }
gate cu3(theta,phi,lambda) c,t { u1((lambda+phi)/2) c; u1((lambda-phi)/2) t; cx c,t; u3(-theta/2,0,-(phi+lambda)/2) t; cx c,t; u3(theta/2,phi,0) t; }
gate csx a,b { h b; cu1(pi/2) a,b; h b; }
gate cu(theta,phi,lambda,gamma) c,t { p(gamma) c; p((lambda+phi)/2) c; p((lambda-phi)/2) t; cx c,t; u(-theta/2,0,-(phi+lambda)/2) t; cx c,t; u(theta/2,phi,0) t; }
gate rxx(theta) a,b { u3(pi/2,theta,0) a; h b; cx a,b; u1(-theta) b; cx a,b; h b; u2(-pi,pi-theta) a; }
gate rzz(theta) a,b { cx a,b; u1(theta) b; cx a,b; }
gate rccx a,b,c { u2(0,pi) c; u1(pi/4) c; cx b,c; u1(-pi/4) c; cx a,c; u1(pi/4) c; cx b,c; u1(-pi/4) c; u2(0,pi) c; }
gate rc3x a,b,c,d { u2(0,pi) d; u1(pi/4) d; cx c,d; u1(-pi/4) d; u2(0,pi) d; cx a,d; u1(pi/4) d; cx b,d; u1(-pi/4) d; cx a,d; u1(pi/4) d; cx b,d; u1(-pi/4) d; u2(0,pi) d; u1(pi/4) d; cx c,d; u1(-pi/4) d; u2(0,pi) d; }
gate c3x a,b,c,d { h d; cu1(-pi/4) a,d; h d; cx a,b; h d; cu1(pi/4) b,d; h d; cx a,b; h d; cu1(-pi/4) b,d; h d; cx b,c; h d; cu1(pi/4) c,d; h d; cx a,c; h d; cu1(-pi/4) c,d; h d; cx b,c; h d; cu1(pi/4) c,d; h d; cx a,c; h d; cu1(-pi/4) c,d; h d; }
gate c3sqrtx a,b,c,d { h d; cu1(-pi/8) a,d; h d; cx a,b; h d; cu1(pi/8) b,d; h d; cx a,b; h d; cu1(-pi/8) b,d; h d; cx b,c; h d; cu1(pi/8) c,d; h d; cx a,c; h d; cu1(-pi/8) c,d; h d; cx b,c; h d; cu1(pi/8) c,d; h d; cx a,c; h d; cu1(-pi/8) c,d; h d; }
gate c4x a,b,c,d,e { h e; cu1(-pi/2) d,e; h e; c3x a,b,c,d; h e; cu1(pi/2) d,e; h e; c3x a,b,c,d; c3sqrtx a,b,c,e; }
"""

TOKEN = re.compile(r"\s*(?:(//[^\n]*)|(/\*.*?\*/)|([A-Za-z_][A-Za-z_0-9]*)|(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|(\"[^\"]*\")|(->|==|.))", re.S)


def tokens(text):
    out = []
    for m in TOKEN.finditer(text):
        if m.group(1) or m.group(2):
            continue
        tok = m.group(0).strip()
        if tok:
            out.append(tok)
    return out


class Program:
    def __init__(self):
        self.gates = {}      # name -> (params, qargs, body tokens)
        self.qregs = {}      # name -> (offset, size)
        self.n = 0
        self.ops = []        # ("U", θ, φ, λ, q) or ("CX", c, t)

    def expr(self, toks, i, env):
        # precedence climbing over + - * / ^ and unary minus, functions, pi
        def atom(i):
            t = toks[i]
            if t == "(":
                v, i = expr(i + 1)
                return v, i + 1
            if t == "-":
                v, i = atom(i + 1)
                return -v, i
            if t == "+":
                return atom(i + 1)
            if t == "pi":
                v, i = math.pi, i + 1
            elif t in ("sin", "cos", "tan", "exp", "ln", "sqrt"):
                a, j = expr(i + 2)
                f = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp,
                     "ln": math.log, "sqrt": math.sqrt}[t]
                v, i = f(a), j + 1
            elif t in env:
                v, i = env[t], i + 1
            else:
                v, i = float(t), i + 1
            if i < len(toks) and toks[i] == "^":
                e, i = atom(i + 1)
                v = v ** e
            return v, i

        def term(i):
            v, i = atom(i)
            while i < len(toks) and toks[i] in ("*", "/"):
                b, j = atom(i + 1)
                v = v * b if toks[i] == "*" else v / b
                i = j
            return v, i

        def expr(i):
            v, i = term(i)
            while i < len(toks) and toks[i] in ("+", "-"):
                b, j = term(i + 1)
                v = v + b if toks[i] == "+" else v - b
                i = j
            return v, i

        return expr(i)

    def args(self, toks, i, qenv):
        """Operands up to ';' as lists of wires (registers broadcast)."""
        out = []
        while toks[i] != ";":
            name = toks[i]
            i += 1
            if qenv is not None:
                out.append([qenv[name]])
            elif i < len(toks) and toks[i] == "[":
                off, size = self.qregs[name]
                out.append([off + int(toks[i + 1])])
                i += 3
            else:
                off, size = self.qregs[name]
                out.append(list(range(off, off + size)))
            if toks[i] == ",":
                i += 1
        return out, i + 1

    def call(self, name, params, wires, scope):
        if name == "U":
            self.ops.append(("U", params[0], params[1], params[2], wires[0]))
        elif name == "CX":
            self.ops.append(("CX", wires[0], wires[1]))
        else:
            # inside a body, the names it saw at its definition; a gate
            # defined later is found too (files that define out of order)
            seen = scope.get(name) or self.gates[name]
            pnames, qnames, body, inner = seen
            self.run(body, dict(zip(pnames, params)), dict(zip(qnames, wires)), inner)

    def run(self, toks, env, qenv, scope=None):
        scope = self.gates if scope is None else scope
        i = 0
        while i < len(toks):
            t = toks[i]
            if t in ("OPENQASM", "include"):
                i = toks.index(";", i) + 1
            elif t in ("qreg", "creg"):
                name, size = toks[i + 1], int(toks[i + 3])
                if t == "qreg":
                    self.qregs[name] = (self.n, size)
                    self.n += size
                i += 6
            elif t == "gate":
                name = toks[i + 1]
                i += 2
                pnames = []
                if toks[i] == "(":
                    i += 1
                    while toks[i] != ")":
                        if toks[i] != ",":
                            pnames.append(toks[i])
                        i += 1
                    i += 1
                qnames = []
                while toks[i] != "{":
                    if toks[i] != ",":
                        qnames.append(toks[i])
                    i += 1
                depth, j = 1, i + 1
                while depth:
                    depth += {"{": 1, "}": -1}.get(toks[j], 0)
                    j += 1
                # a definition replaces any earlier one of its name (qelib1's
                # too) from here on; its body sees the gates defined before it
                self.gates[name] = (pnames, qnames, toks[i + 1:j - 1], dict(self.gates))
                i = j
            elif t in ("measure", "barrier"):
                i = toks.index(";", i) + 1
            else:
                name = t
                i += 1
                params = []
                if toks[i] == "(":
                    i += 1
                    while toks[i] != ")":
                        v, i = self.expr(toks, i, env)
                        params.append(v)
                        if toks[i] == ",":
                            i += 1
                    i += 1
                ops, i = self.args(toks, i, qenv)
                size = max(len(o) for o in ops)
                for k in range(size):
                    self.call(name, params, [o[k] if len(o) > 1 else o[0] for o in ops], scope)


def simulate(prog):
    n = prog.n
    psi = np.zeros([2] * n, dtype=complex)
    psi[(0,) * n] = 1
    for op in prog.ops:
        if op[0] == "U":
            th, ph, la, q = op[1:]
            rz = lambda a: np.diag([np.exp(-0.5j * a), np.exp(0.5j * a)])
            ry = np.array([[math.cos(th / 2), -math.sin(th / 2)], [math.sin(th / 2), math.cos(th / 2)]])
            u = rz(ph) @ ry @ rz(la)
            psi = np.moveaxis(np.tensordot(u, psi, axes=([1], [q])), 0, q)
        else:
            c, t = op[1:]
            idx = [slice(None)] * n
            idx[c] = 1
            sub = psi[tuple(idx)]
            tt = t if t < c else t - 1
            psi[tuple(idx)] = np.flip(sub, axis=tt)
    return psi.reshape(-1)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    driver = sys.argv[1]
    files = []
    for a in sys.argv[2:]:
        if os.path.isdir(a):
            files += sorted(os.path.join(a, f) for f in os.listdir(a) if f.endswith(".qasm"))
        else:
            files.append(a)
    passed = failed = 0
    for f in files:
        prog = Program()
        prog.run(tokens(QELIB1), {}, None)
        with open(f) as fh:
            prog.run(tokens(fh.read()), {}, None)
        ref = simulate(prog)
        r = subprocess.run([driver, f], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {f}: {r.stderr.strip()}")
            failed += 1
            continue
        lines = r.stdout.split("\n")
        nq = int(lines[0])
        ours = np.array([complex(float(x.split()[0]), float(x.split()[1])) for x in lines[1:1 + 2 ** nq]])
        overlap = abs(np.vdot(ref, ours))
        err = np.max(np.abs(ours - ref * (np.vdot(ref, ours) / max(overlap, 1e-300))))
        ok = nq == prog.n and abs(overlap - 1) < 1e-9 and err < 1e-9
        print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(f)}: {nq} qubits, {len(prog.ops)} U/CX, "
              f"|<ref|qh>| = {overlap:.15f}, max diff {err:.2e}")
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
