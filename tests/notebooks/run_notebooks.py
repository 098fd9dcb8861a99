#!/usr/bin/env python3
"""run_notebooks.py — executes examples/notebooks/*.ipynb end to end with
nbclient (python3-nbclient) on qh's kernel (its spec written by
qh --install-kernel --prefix) and checks their outputs: no cell fails, the
VQE reaches H2's ground energy and draws its circuit and cost curve as SVG,
the QAOA's histogram of samples is an SVG bar chart of 100 samples whose
most frequent cut is a maximum one, and the async sweep's futures were
shown running and then replaced in place by their values (nbclient applies
update_display_data to the cell that showed them) while the next cell ran.

Usage: run_notebooks.py PATH/TO/qh NOTEBOOK_DIR   (exit 77: no kernel or nbclient)"""
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernel"))
from kernel_util import install_spec, skip  # noqa: E402

NS = "{http://www.w3.org/2000/svg}"
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else " %r" % (detail,)))
    if not cond:
        failures.append(name)


def outs(nb, i, kind=None):
    return [o for o in nb.cells[i].outputs if kind is None or o.output_type == kind]


def stdout(nb, i):
    return "".join(o.text for o in outs(nb, i, "stream") if o.name == "stdout")


def svg_of(o):
    s = o.get("data", {}).get("image/svg+xml")
    if not s:
        return None
    try:
        root = ET.fromstring(s)
    except ET.ParseError:
        return None
    return root if root.tag == NS + "svg" else None


def run(path):
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="qh", timeout=120, allow_errors=False).execute()
    return nb


def check_vqe(nb):
    svg = [svg_of(o) for o in outs(nb, 2, "execute_result")]
    check("vqe: draw() is an SVG circuit", len(svg) == 1 and svg[0] is not None
          and len(svg[0].findall(".//%srect" % NS)) >= 2, svg)
    check("vqe: the ground energy", "E = -1.136189 Ha" in stdout(nb, 3), stdout(nb, 3))
    svg = [svg_of(o) for o in outs(nb, 4, "execute_result")]
    check("vqe: the cost curve", len(svg) == 1 and svg[0] is not None
          and len(svg[0].findall(".//%spolyline" % NS)) == 1, svg)
    text = outs(nb, 4, "execute_result")[0]["data"]["text/plain"] if svg else ""
    check("vqe: the cost curve's text form", "\u2502*" in text and "\u2514" in text, text)


def check_qaoa(nb):
    check("qaoa: <C> = 4", "<C> = 4.000" in stdout(nb, 2), stdout(nb, 2))
    res = outs(nb, 4, "execute_result")
    root = svg_of(res[0]) if res else None
    bars = [r for r in root.findall(".//%srect" % NS) if r.find(NS + "title") is not None] if root is not None else []
    total = 0
    best = (None, -1)
    for b in bars:
        label, n = b.find(NS + "title").text.rsplit(": ", 1)
        total += float(n)
        if float(n) > best[1]:
            best = (label, float(n))
    check("qaoa: a histogram of 100 samples", root is not None and total == 100, (total, len(bars)))
    check("qaoa: the most frequent cut is a maximum cut", best[0] in ('"0101"', '"1010"', "0101", "1010"), best)
    text = res[0]["data"]["text/plain"] if res else ""
    check("qaoa: the histogram's text form", "\u2588" in text, text)


def check_async(nb):
    shown = outs(nb, 2, "display_data")
    check("async: seven futures displayed", len(shown) == 7, len(shown))
    ids = [o.get("transient", {}).get("display_id") for o in shown]
    texts = [o["data"]["text/plain"] for o in shown]
    check("async: each replaced in place by its value", all(t and not t.startswith("<future") for t in texts)
          and all(abs(float(t) - v) < 1e-6 for t, v in zip(texts, [1, 0.877583, 0.540302, 0.0707372, -0.416147,
                                                                     -0.801144, -0.989992])), texts)
    del ids
    check("async: the classical cell ran meanwhile", "classical work done" in stdout(nb, 3), stdout(nb, 3))
    res = outs(nb, 4, "execute_result")
    check("async: the sweep's plot", res and svg_of(res[0]) is not None, res)


def main():
    qh = os.path.abspath(sys.argv[1])
    nbdir = sys.argv[2]
    try:
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError:
        skip("python3-nbclient is not installed")
    os.environ["JUPYTER_PATH"] = install_spec(qh)
    for name, checker in [("vqe_h2.ipynb", check_vqe), ("qaoa_maxcut.ipynb", check_qaoa),
                          ("async_sweep.ipynb", check_async)]:
        try:
            nb = run(os.path.join(nbdir, name))
        except Exception as e:  # a cell failed: nbclient says which
            check("%s runs" % name, False, str(e)[-2000:])
            continue
        check("%s runs" % name, True)
        checker(nb)
    if failures:
        print("%d failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
