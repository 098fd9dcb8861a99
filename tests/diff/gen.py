#!/usr/bin/env python3
"""Random valid qh programs for the differential test (tests/diff/run.py).

usage: gen.py SEED            writes one program to standard output

Each program mixes what the asynchronous runtime must keep equal to a
sequential run (lang/async.md): classical code, quantum functions on small
devices (some with a latency, so calls really overlap), futures kept in
lists and dicts and compared, searched, summed and printed there, calls that
fail (used under try, or never used: reported at exit), nested calls,
function values passed into calls, gradients with future arguments, devices
with shots and seeds, and sweep loops that lookahead may run ahead. Among
the sweeps are the lookahead's hazards (lang/async.md, "Exact reuse" and
the binding rule): containers reordered or changed in place between an
early start and the call (dict order, the sign of zero, a number becoming
complex or a bool, an array's dtype or mask, [l, l] against two equal
lists, a taken-along global), a qfn name rebound to a plain fn that prints,
and matrix(f, t) templates that print and draw random numbers; and the
same hazards in straight-line code (pairs `e = q(x); print(e)` whose
later calls start early while an earlier statement waits). Every
value printed is printed in full (%.17g): the modes must agree bit for bit.
The program itself is deterministic: only qh's scheduling differs between
the runs the test compares.
"""
import random
import sys

GATES1 = ["H", "PauliX", "PauliY", "PauliZ", "S", "T", "SX"]
ROT1 = ["RX", "RY", "RZ", "PhaseShift"]
GATES2 = ["CNOT", "CZ", "SWAP", "CY"]
ROT2 = ["CRX", "CRY", "CRZ", "IsingXX", "IsingZZ"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.lines = []
        self.nq = self.r.randint(1, 4)          # wires of the main device
        self.qfns = []                          # (name, nparams, kind) kind: num | list | dict | fails
        self.names = 0

    def fresh(self, base):
        self.names += 1
        return "%s%d" % (base, self.names)

    def emit(self, s=""):
        self.lines.append(s)

    def angle(self, var=None):
        a = "%.3f" % self.r.uniform(-3, 3)
        if var and self.r.random() < 0.7:
            return "%s * %s + %s" % (var, "%.2f" % self.r.uniform(-2, 2), a)
        return a

    def gates(self, var, n, nq):
        out = []
        for _ in range(n):
            k = self.r.random()
            if k < 0.3:
                out.append("%s(%d)" % (self.r.choice(GATES1), self.r.randrange(nq)))
            elif k < 0.7:
                out.append("%s(%s, %d)" % (self.r.choice(ROT1), self.angle(var), self.r.randrange(nq)))
            elif nq >= 2:
                a, b = self.r.sample(range(nq), 2)
                if self.r.random() < 0.5:
                    out.append("%s(wires=[%d, %d])" % (self.r.choice(GATES2), a, b))
                else:
                    out.append("%s(%s, wires=[%d, %d])" % (self.r.choice(ROT2), self.angle(var), a, b))
            else:
                out.append("RY(%s, 0)" % self.angle(var))
        return out

    def obs(self, nq):
        ws = self.r.sample(range(nq), self.r.randint(1, nq))
        return " @ ".join("%s(%d)" % (self.r.choice(["PauliZ", "PauliX", "PauliY"]), w) for w in ws)

    # ---- the program's parts ----
    def header(self):
        lat = self.r.choice([0, 0, 0.002, 0.005])
        self.emit('dev = device("statevector", wires=%d%s)' % (self.nq, ", latency=%g" % lat if lat else ""))
        self.emit('shots = device("statevector", wires=2, shots=%d, seed=%d)' % (self.r.choice([8, 16, 32]), self.r.randrange(100)))
        self.emit('big = device("statevector", wires=%d)' % self.r.choice([5, 6]))
        self.emit('hz = device("statevector", wires=1, latency=%g)' % self.r.choice([0.002, 0.004]))
        self.emit("k = %s" % self.angle())
        self.emit("scale = %d" % self.r.randint(1, 3))
        self.emit('fn f17(x) { return fmt("%.17g", x) }')
        self.emit("fn show(x) { if type(x) == \"number\" { return f17(x) }; return str(x) }")
        self.emit("fn ang() { return k * scale }")

    def qfn(self):
        name = self.fresh("q")
        kind = self.r.choice(["num", "num", "num", "list", "dict", "fails", "probs", "hybrid", "shots", "fnarg"])
        nq = self.nq
        if kind == "fails":
            self.emit("qfn %s(t) on dev {" % name)
            for g in self.gates("t", self.r.randint(1, 3), nq):
                self.emit("    " + g)
            self.emit("    if t > %.2f { PauliX(%d) }" % (self.r.uniform(-1, 1), nq + 3))
            self.emit("    return expval(%s)" % self.obs(nq))
            self.emit("}")
        elif kind == "hybrid" and self.qfns:
            inner = self.r.choice([q for q in self.qfns if q[1] in ("num", "fails", "shots")] or self.qfns)
            self.emit("qfn %s(t) {" % name)
            self.emit("    a = %s(t)" % inner[0])
            self.emit("    b = %s(t + 0.5)" % inner[0])
            self.emit("    return [a, b]")
            self.emit("}")
            kind = "list"
        elif kind == "shots":
            self.emit("qfn %s(t) on shots {" % name)
            self.emit("    H(0)")
            for g in self.gates("t", self.r.randint(1, 3), 2):
                self.emit("    " + g)
            self.emit("    return join(tolist((sample(PauliZ(0) @ PauliZ(1)) + 1) / 2))")
            self.emit("}")
        elif kind == "fnarg":
            self.emit("qfn %s(f, t) { return f() + t }" % name)
        else:
            self.emit("qfn %s(t) on dev {" % name)
            for g in self.gates("t", self.r.randint(1, 5), nq):
                self.emit("    " + g)
            if kind == "num":
                self.emit("    return expval(%s)" % self.obs(nq))
            elif kind == "list":
                self.emit("    return [expval(%s), t, var(%s)]" % (self.obs(nq), self.obs(nq)))
            elif kind == "dict":
                self.emit('    return {"e": expval(%s), "t": t}' % self.obs(nq))
            else:
                self.emit("    return probs(wires=[%d])" % self.r.randrange(nq))
            self.emit("}")
        self.qfns.append((name, kind))

    def call(self, arg):
        name, kind = self.r.choice(self.qfns)
        if kind == "fnarg":
            return "%s(ang, %s)" % (name, arg), "num"
        return "%s(%s)" % (name, arg), kind

    def stmt_calls(self):
        """calls kept in variables and containers, used in various ways"""
        v = self.fresh("x")
        c, kind = self.call(self.angle())
        self.emit("%s = %s" % (v, c))
        safe = kind not in ("fails",)
        use = self.r.random()
        wrap = lambda e: e if safe else None
        if kind in ("num",):
            if use < 0.3:
                self.emit("print(f17(%s * 2 + 1))" % v)
            elif use < 0.6:
                self.emit("print([%s, 1] == [%s, 1], %s in [0, %s])" % (v, v, v, v))
            else:
                self.emit("ys = [%s, %s, %s]" % (v, self.call(self.angle())[0] if self.r.random() < 0.5 else "1.5", v))
                self.emit("try { print(f17(sum([y for y in ys if type(y) == \"number\"]))) } catch e { print(\"error:\", e) }")
        elif kind == "fails":
            if use < 0.5:
                self.emit("try { print(show(%s)) } catch e { print(\"caught:\", e) }" % v)
            elif use < 0.8:
                self.emit("# %s is never read: reported at exit" % v)
            else:
                self.emit("try { print(show(%s + 0)) } catch e { print(\"caught:\", e) }" % v)
        elif kind == "shots":
            self.emit("print(%s)" % v)
        else:
            self.emit("try { print(str(%s)) } catch e { print(\"error:\", e) }" % v)

    def stmt_containers(self):
        d = self.fresh("d")
        c1, k1 = self.call(self.angle())
        c2, k2 = self.call(self.angle())
        self.emit('%s = {"a": %s, "b": [%s, %d]}' % (d, c1, c2, self.r.randint(0, 5)))
        self.emit("print(len(%s), keys(%s))" % (d, d))
        if "fails" not in (k1, k2):
            self.emit('try { print(%s == {"a": 0, "b": [0, 0]}, str(%s)) } catch e { print("error:", e) }' % (d, d))
        else:
            self.emit('try { print(str(%s["b"])) } catch e { print("caught:", e) }' % d)

    def stmt_sweep(self):
        ts = ", ".join("%.3f" % self.r.uniform(-2, 2) for _ in range(self.r.randint(2, 6)))
        name, kind = self.r.choice([q for q in self.qfns if q[1] != "fnarg"] or self.qfns)
        if kind == "fnarg":
            return
        var = self.fresh("t")
        style = self.r.random()
        if style < 0.4:
            self.emit("for %s in [%s] { print(show(%s(%s))) }" % (var, ts, name, var))
        elif style < 0.7:
            self.emit("for %s in range(%d) {" % (var, self.r.randint(2, 5)))
            self.emit("    th = %s * %.2f + k" % (var, self.r.uniform(-1, 1)))
            self.emit("    r = %s(th)" % name)
            self.emit("    try { print(show(r)) } catch e { print(\"caught:\", e) }")
            self.emit("}")
        else:
            acc = self.fresh("acc")
            self.emit("%s = []" % acc)
            self.emit("for %s in [%s] { append(%s, %s(%s)) }" % (var, ts, acc, name, var))
            self.emit("try { print(str(%s)) } catch e { print(\"caught:\", e) }" % acc)

    def stmt_hazard(self):
        """a loop the lookahead may run ahead while something the early call
        copied changes in a way equality does not see (or the callee is not
        what it seems): the early call must not be reused"""
        n = self.r.randint(3, 5)
        q, v = self.fresh("hq"), self.fresh("hv")
        flip = "[%s]" % ", ".join(str(self.r.randint(0, 1)) for _ in range(n))
        kind = self.r.choice(["order", "zero", "kind", "dtype", "mask", "alias", "global", "rebind",
                              "template"])
        if kind == "order":
            self.emit("qfn %s(d) on hz { s = 0; j = 1; for x in keys(d) { s = s + j * d[x]; j = j + 1 }; "
                      "RY(s, 0); return expval(PauliZ(0)) }" % q)
            keys = ["a", "b", "c"][: self.r.randint(2, 3)]
            self.emit("%s = {%s}" % (v, ", ".join('"%s": %s' % (k, self.angle()) for k in keys)))
            k = self.r.choice(keys)
            self.emit('for i in range(%d) { print(f17(%s(%s))); if %s[i] == 1 { x = pop(%s, "%s"); %s["%s"] = x } }'
                      % (n, q, v, flip, v, k, v, k))
        elif kind == "zero":
            self.emit("qfn %s(z) on hz { RY(0.5, 0); return str(atan2(z, -1)) + \" \" + str(1 / (z * 0 + 1)) }" % q)
            self.emit("%s = [0.0]" % v)
            self.emit("for i in range(%d) { print(%s(%s[0])); if %s[i] == 1 { %s[0] = -%s[0] } }" % (n, q, v, flip, v, v))
        elif kind == "kind":
            self.emit("qfn %s(x) on hz { RY(0.5, 0); return type(x) + \" \" + str(x) }" % q)
            self.emit("%s = [1]" % v)
            forms = ["1", "complex(1, 0)", "true", "1.0"]
            self.emit("%s = [%s]" % (v + "f", ", ".join(self.r.choice(forms) for _ in range(n))))
            self.emit("for i in range(%d) { print(%s(%s[0])); %s[0] = %sf[i] }" % (n, q, v, v, v))
        elif kind == "dtype":
            self.emit("qfn %s(a) on hz { RY(0.5, 0); return str(a * 1) }" % q)
            self.emit("%s = [array([1, 0])]" % v)
            self.emit("for i in range(%d) { print(%s(%s[0])); %s[0] = array([complex(1, 0), 0]) if %s[i] == 1 else array([1, 0]) }"
                      % (n, q, v, v, flip))
        elif kind == "mask":
            self.emit("qfn %s(m) on hz { RY(0.5, 0); return str(array([5, 6])[m]) }" % q)
            self.emit("%s = [array([1, 0])]" % v)
            self.emit("for i in range(%d) { print(%s(%s[0])); %s[0] = array([1, 0]) > 0 if %s[i] == 1 else array([1, 0]) }"
                      % (n, q, v, v, flip))
        elif kind == "alias":
            self.emit("qfn %s(p) on hz { p[0][0] = 5; RY(p[1][0], 0); return expval(PauliZ(0)) }" % q)
            self.emit("%s = [[1.0], [1.0]]" % v)
            self.emit("for i in range(%d) { print(f17(%s(%s))); %s[1] = %s[0] if %s[i] == 1 else [1.0] }"
                      % (n, q, v, v, v, flip))
        elif kind == "global":
            g = self.fresh("G")
            self.emit("%s = [%s, %s]" % (g, self.angle(), self.angle()))
            self.emit("qfn %s(t) on hz { RY(t + %s[0], 0); RX(%s[1], 0); return expval(PauliZ(0)) }" % (q, g, g))
            self.emit("for i in range(%d) { print(f17(%s(i))); if %s[i] == 1 { %s[i %% 2] = -%s[i %% 2] } }"
                      % (n, q, flip, g, g))
        elif kind == "rebind":
            w, lg = self.fresh("hw"), self.fresh("logged")
            self.emit("qfn %s(t) on hz { RY(t, 0); return expval(PauliZ(0)) }" % q)
            self.emit("qfn %s(t) on hz { RX(t, 0); return expval(PauliZ(0)) }" % w)
            self.emit('fn %s(t) { print("plain", t); return %s(2 * t) }' % (lg, w))
            self.emit("for i in range(%d) { print(f17(%s(i))) }" % (n, q))
            self.emit("%s = %s" % (q, lg))
            self.emit("for i in range(%d) { e = %s(i); r = %s(i); print(f17(r), f17(e)) }" % (n, w, q))
        else:
            tm = self.fresh("tmpl")
            self.emit("qfn %s(m) on hz { QubitUnitary(m, wires=0); return expval(PauliZ(0)) }" % q)
            self.emit('fn %s(t) { print("template", t); RY(t + rand(1)[0], 0) }' % tm)
            self.emit("for i in range(%d) { r = %s(matrix(%s, i)); print(f17(r)) }" % (n, q, tm))
            self.emit("print(f17(rand(1)[0]))")

    def stmt_straight(self):
        """straight-line code (lang/async.md, "Straight-line code"): pairs `e =
        q(x); print(e)` whose later calls start while an earlier print waits,
        with something the early call copied changed in between through
        another name bound to the same object (which the analysis does not
        see: the exact reuse check must), or a call the analysis must refuse
        (a name rebound later, a template in an argument, a call in a branch)"""
        q, v, al = self.fresh("sq"), self.fresh("sv"), self.fresh("sa")
        flip = [self.r.randint(0, 1) for _ in range(self.r.randint(2, 4))]
        kind = self.r.choice(["plain", "order", "zero", "kind", "dtype", "alias", "global", "rebind",
                              "template", "cond"])
        arg, change = v, None
        if kind == "order":
            self.emit("qfn %s(d) on hz { s = 0; j = 1; for x in keys(d) { s = s + j * d[x]; j = j + 1 }; "
                      "RY(s, 0); return expval(PauliZ(0)) }" % q)
            self.emit('%s = {"a": %s, "b": %s}' % (v, self.angle(), self.angle()))
            change = 'x = pop(%s, "a"); %s["a"] = x' % (al, al)
        elif kind == "zero":
            self.emit("qfn %s(l) on hz { RY(0.5, 0); return str(atan2(l[0], -1)) }" % q)
            self.emit("%s = [0.0]" % v)
            change = "%s[0] = -%s[0]" % (al, al)
        elif kind == "kind":
            self.emit("qfn %s(l) on hz { RY(0.5, 0); return type(l[0]) + \" \" + str(l[0]) }" % q)
            self.emit("%s = [1]" % v)
            change = "%s[0] = %s" % (al, self.r.choice(["complex(1, 0)", "true", "1.0", "1"]))
        elif kind == "dtype":
            self.emit("qfn %s(l) on hz { RY(0.5, 0); return str(l[0] * 1) }" % q)
            self.emit("%s = [array([1, 0])]" % v)
            change = "%s[0] = %s" % (al, self.r.choice(["array([complex(1, 0), 0])", "array([1, 0]) > 0"]))
        elif kind == "alias":
            self.emit("qfn %s(p) on hz { p[0][0] = 5; RY(p[1][0], 0); return expval(PauliZ(0)) }" % q)
            self.emit("%s = [[1.0], [1.0]]" % v)
            change = "%s[1] = %s[0]" % (al, al)
        elif kind == "global":
            self.emit("%s = [%s, %s]" % (v, self.angle(), self.angle()))
            self.emit("qfn %s(t) on hz { RY(t + %s[0], 0); RX(%s[1], 0); return expval(PauliZ(0)) }" % (q, v, v))
            arg = self.angle()
            change = "%s[0] = -%s[0]" % (al, al)
        else:
            self.emit("qfn %s(t) on hz { RY(t, 0); return expval(PauliZ(0)) }" % q)
            self.emit("%s = %s" % (v, self.angle()))
        self.emit("%s = %s" % (al, v))
        for i, f in enumerate(flip):
            if kind == "template":
                tm = self.fresh("tmpl")
                self.emit('fn %s(t) { print("template", t); RY(t + rand(1)[0], 0) }' % tm)
                self.emit("e = %s(matrix(%s, %s)[0][0])" % (q, tm, self.angle()))
                self.emit("print(str(e))")
                continue
            call = "%s(%s)" % (q, arg if kind not in ("plain", "rebind", "cond") else self.angle())
            if kind == "cond" and f:
                self.emit("if %s > 0 { e = %s }" % (v, call))
            else:
                self.emit("e = %s" % call)
            self.emit("print(show(e))" if kind in ("zero", "kind", "dtype") else "print(f17(e))")
            if f and change:
                self.emit(change)
        if kind == "rebind":
            lg = self.fresh("logged")
            self.emit('fn %s(t) { print("plain", t); return 2 * t }' % lg)
            self.emit("%s = %s" % (q, lg))
            self.emit("e = %s(%s)" % (q, self.angle()))
            self.emit("print(f17(e))")
        if kind == "template":
            self.emit("print(f17(rand(1)[0]))")

    def stmt_grad(self):
        name = self.fresh("g")
        nq = self.nq
        self.emit("qfn %s(t) on dev {" % name)
        for g in self.gates("t", self.r.randint(1, 3), nq):
            self.emit("    " + g)
        self.emit("    return expval(%s)" % self.obs(nq))
        self.emit("}")
        c, kind = self.call(self.angle())
        arg = c if kind == "num" else self.angle()
        method = self.r.choice(["adjoint", "parameter-shift", "finite-diff"])
        self.emit('print(f17(grad(%s, method="%s")(%s)))' % (name, method, arg))

    def stmt_classical(self):
        v = self.fresh("c")
        self.emit("%s = 0" % v)
        self.emit("for i in range(%d) { %s = %s + i * %d }" % (self.r.randint(1, 30), v, v, self.r.randint(1, 9)))
        self.emit("print(%s, sorted([%s %% 7, 3, %s %% 5]))" % (v, v, v))

    def stmt_big(self):
        name = self.fresh("b")
        self.emit("qfn %s(t) on big {" % name)
        self.emit("    for w in range(5) { RY(t + w, w) }")
        self.emit("    for w in range(4) { CNOT(wires=[w, w + 1]) }")
        self.emit("    return expval(PauliZ(0) @ PauliZ(4))")
        self.emit("}")
        self.emit("print(f17(%s(%s)))" % (name, self.angle()))

    def program(self):
        self.header()
        for _ in range(self.r.randint(2, 5)):
            self.qfn()
        parts = [self.stmt_calls, self.stmt_calls, self.stmt_containers, self.stmt_sweep, self.stmt_sweep,
                 self.stmt_grad, self.stmt_classical, self.stmt_big, self.stmt_hazard, self.stmt_hazard,
                 self.stmt_straight, self.stmt_straight]
        for _ in range(self.r.randint(3, 9)):
            self.r.choice(parts)()
        if self.r.random() < 0.3:
            self.emit("sync()")
        self.emit('print("end")')
        return "\n".join(self.lines) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.stdout.write(Gen(int(sys.argv[1])).program())


if __name__ == "__main__":
    main()
