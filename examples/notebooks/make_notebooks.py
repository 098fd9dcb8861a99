#!/usr/bin/env python3
"""make_notebooks.py — writes the example notebooks of this folder (their
cells are kept here, as text, so a change is a readable diff); run it after
editing, then tests/notebooks/run_notebooks.py executes them.

Usage: python3 examples/notebooks/make_notebooks.py"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

NOTEBOOKS = {
    "vqe_h2.ipynb": [
        ("md", "# VQE for H₂, with its cost curve\n\n"
               "The 4-qubit Hamiltonian of molecular hydrogen (`chem.h2`), the Hartree-Fock state "
               "rotated by one `DoubleExcitation(theta)`, and gradient descent with `optimize.minimize`. "
               "`plot(result)` draws the cost at every step."),
        ("code", "import chem\nimport optimize\n\nwires = [0, 1, 2, 3]\n\n"
                 "qfn energy(theta) on device(\"statevector\", wires=4) {\n"
                 "    BasisState(chem.h2_hf, wires=wires)\n"
                 "    DoubleExcitation(theta, wires=wires)\n"
                 "    return expval(chem.h2)\n}"),
        ("code", "draw(energy, 0.2)"),
        ("code", "result = optimize.minimize(energy, 0.0, method=\"gd\", lr=0.4, steps=40)\n"
                 "print(fmt(\"VQE energy E = %.6f Ha at theta = %.6f\", result[\"value\"], result[\"x\"]))"),
        ("code", "plot(result, title=\"VQE for H2: energy per step\")"),
    ],
    "qaoa_maxcut.ipynb": [
        ("md", "# QAOA for MaxCut, with a histogram of the samples\n\n"
               "The 4-node ring of PennyLane's tutorial; two QAOA layers optimised with Adam, then "
               "100 samples of the optimised state shown with `hist`."),
        ("code", "import optimize\n\nn = 4\nedges = [[0, 1], [0, 3], [1, 2], [2, 3]]\np = 2\n\n"
                 "C = 0.5 * len(edges) * Identity(0)\n"
                 "for e in edges { C = C - 0.5 * PauliZ(e[0]) @ PauliZ(e[1]) }\n\n"
                 "fn qaoa_layers(params) {\n"
                 "    for w in range(n) { Hadamard(w) }\n"
                 "    for k in range(p) {\n"
                 "        for e in edges { IsingZZ(-params[k], e[0], e[1]) }\n"
                 "        for w in range(n) { RX(2 * params[p + k], w) }\n"
                 "    }\n}\n\n"
                 "qfn neg_cut(params) on device(\"statevector\", wires=4) {\n"
                 "    qaoa_layers(params)\n    return -expval(C)\n}"),
        ("code", "r = optimize.minimize(neg_cut, array([0.4, 0.2, 0.8, 0.4]), method=\"adam\", steps=100, lr=0.05)\n"
                 "print(fmt(\"<C> = %.3f after %d Adam steps\", -r[\"value\"], r[\"steps\"]))"),
        ("code", "plot(r, title=\"-<C> per Adam step\")"),
        ("code", "qfn sample_cuts(params) on device(\"statevector\", wires=4, shots=100, seed=3) {\n"
                 "    qaoa_layers(params)\n    return counts()\n}\n"
                 "c = sample_cuts(r[\"x\"])\n"
                 "hist(c, title=\"100 samples of the optimised state\")"),
    ],
    "async_sweep.ipynb": [
        ("md", "# An asynchronous sweep: futures that update in place\n\n"
               "Each call of `slow` takes about a second (the device's `latency`). The cell that makes "
               "them ends at once and shows the futures as running; the next cells go on, and each "
               "future's output is replaced by its value when its call finishes."),
        ("code", "qfn slow(t) on device(\"statevector\", wires=2, latency=1.0) {\n"
                 "    RY(t, 0)\n    CNOT(0, 1)\n    return round(expval(PauliZ(1)), 6)\n}\n"
                 "ts = [0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]"),
        ("code", "fs = []\nfor t in ts { append(fs, slow(t)) }\n"
                 "for f in fs { display(f) }"),
        ("code", "# classical work meanwhile: the futures above update while this runs\n"
                 "m = randn(200, 200, seed=1)\nacc = 0\n"
                 "t0 = clock()\nwhile clock() - t0 < 3 { acc += trace(m @ m) }\n"
                 "print(\"classical work done\")"),
        ("code", "plot(ts, wait(fs), label=\"<Z1>\", xlabel=\"t\", title=\"the sweep\")"),
    ],
}


def cell(kind, text):
    lines = text.splitlines(True)
    if kind == "md":
        return {"cell_type": "markdown", "metadata": {}, "source": lines}
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines}


def main():
    for name, cells in NOTEBOOKS.items():
        nb = {
            "cells": [cell(k, t) for k, t in cells],
            "metadata": {
                "kernelspec": {"display_name": "qh", "language": "qh", "name": "qh"},
                "language_info": {"name": "qh", "file_extension": ".qh", "mimetype": "text/x-qh"},
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        for i, c in enumerate(nb["cells"]):
            c["id"] = "%s-%d" % (name.split(".")[0].replace("_", "-"), i)
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
