#!/usr/bin/env python3
"""check_pictures.py — qh's pictures are valid SVG that renders as stored:
each case below saves pictures with save_svg (draw's circuits, hist of
counts and of probabilities, plot of a list, of xs and ys with a label,
and of optimize.minimize's history); each file is parsed by an XML parser
(the SVG namespace, its size, the marks the case must have: bars, control
dots, a polyline with its points), rasterised to PNG by rsvg-convert
(librsvg2-bin) and compared with the PNG stored beside this script by a
tolerant pixel difference (fonts may antialias differently: a mean
difference under 0.5% and under 0.3% of the pixels off by more than a
quarter of the range; the line charts of two different cases differ by
1.5% and 2.2%).

Usage: check_pictures.py PATH/TO/qh [--update]   (--update: store the PNGs)
Exits 77 without rsvg-convert or Pillow (python3-pil)."""
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
NS = "{http://www.w3.org/2000/svg}"

CASES = {
    "circuit": ('dev = device("statevector", wires=3)\n'
                'qfn c(t) on dev {\n    Hadamard(0)\n    CNOT(0, 1)\n    RX(t, 2)\n    Toffoli(0, 1, 2)\n'
                '    return [expval(PauliZ(0)), probs(wires=[1, 2])]\n}\n'
                'd = draw(c, 0.5)\nprint(d)\nsave_svg(d, OUT)\n',
                {"circle": 3, "rect": 4}),
    "hist_counts": ('dev = device("statevector", wires=2, shots=1000, seed=7)\n'
                    'qfn bell() on dev {\n    Hadamard(0)\n    CNOT(0, 1)\n    return counts()\n}\n'
                    'c = bell()\nh = hist(c, title="Bell counts")\nprint(h)\nsave_svg(h, OUT)\n',
                    {"title_rects": 2}),
    "hist_probs": ('save_svg(hist([0.1, 0.2, 0.3, 0.4]), OUT)\n', {"title_rects": 4}),
    "plot_list": ('save_svg(plot([3, 2.5, 1.2, 0.8, 0.5, 0.45, 0.44], label="cost"), OUT)\n',
                  {"polyline": 1, "circle": 7}),
    "plot_xy": ('xs = linspace(0, 6.283185307179586, 100)\n'
                'save_svg(plot(xs, sin(xs), label="sin", title="sin(x)", xlabel="x", ylabel="y"), OUT)\n',
                {"polyline": 1, "circle": 0}),
    "plot_minimize": ('import optimize\n'
                      'dev = device("statevector", wires=1)\n'
                      'qfn cost(x) on dev {\n    RX(x[0], 0)\n    RY(x[1], 0)\n    return expval(PauliZ(0))\n}\n'
                      'r = optimize.minimize(cost, array([0.3, 0.2]), method="adam", steps=40, lr=0.1)\n'
                      'save_svg(plot(r), OUT)\n',
                      {"polyline": 1}),
}


def skip(why):
    print("skipped:", why)
    sys.exit(77)


def main():
    qh = os.path.abspath(sys.argv[1])
    update = "--update" in sys.argv
    if not shutil.which("rsvg-convert"):
        skip("rsvg-convert is not installed (apt-get install librsvg2-bin)")
    try:
        from PIL import Image, ImageChops, ImageStat
    except ImportError:
        skip("Pillow is not installed (apt-get install python3-pil)")
    tmp = tempfile.mkdtemp(prefix="qh-pictures-")
    bad = 0
    for name, (code, want) in CASES.items():
        svg = os.path.join(tmp, name + ".svg")
        png = os.path.join(tmp, name + ".png")
        prog = os.path.join(tmp, name + ".qh")
        open(prog, "w").write('OUT = "%s"\n' % svg + code)
        r = subprocess.run([qh, prog], capture_output=True, text=True)
        why = []
        if r.returncode != 0:
            why.append("qh exit %d: %s" % (r.returncode, r.stderr.strip()))
        else:
            try:
                root = ET.parse(svg).getroot()
            except ET.ParseError as e:
                root = None
                why.append("not XML: %s" % e)
            if root is not None:
                if root.tag != NS + "svg" or not root.get("width") or not root.get("viewBox"):
                    why.append("not an SVG root: %s %s" % (root.tag, root.attrib))
                counts = {
                    "circle": len(root.findall(".//%scircle" % NS)),
                    "rect": len([e for e in root.findall(".//%srect" % NS) if e.get("fill") == "#dce9f7"]),
                    "polyline": len(root.findall(".//%spolyline" % NS)),
                    "title_rects": len([e for e in root.findall(".//%srect" % NS) if e.find(NS + "title") is not None]),
                }
                for k, n in want.items():
                    if counts[k] != n:
                        why.append("%d %s, want %d" % (counts[k], k, n))
                for pl in root.findall(".//%spolyline" % NS):
                    pts = pl.get("points").split()
                    if len(pts) < 2 or not all("," in p for p in pts):
                        why.append("a polyline with bad points")
            rr = subprocess.run(["rsvg-convert", "-b", "white", svg, "-o", png], capture_output=True, text=True)
            if rr.returncode != 0:
                why.append("rsvg-convert: %s" % rr.stderr.strip())
            else:
                stored = os.path.join(HERE, name + ".png")
                if update:
                    shutil.copy(png, stored)
                elif not os.path.exists(stored):
                    why.append("no stored %s (run with --update)" % stored)
                else:
                    a = Image.open(png).convert("RGB")
                    b = Image.open(stored).convert("RGB")
                    if a.size != b.size:
                        why.append("size %s, stored %s" % (a.size, b.size))
                    else:
                        diff = ImageChops.difference(a, b)
                        mean = sum(ImageStat.Stat(diff).mean) / 3 / 255
                        grey = diff.convert("L")
                        far = sum(1 for p in grey.getdata() if p > 64) / (a.size[0] * a.size[1])
                        if mean > 0.005 or far > 0.003:
                            why.append("differs from the stored picture: mean %.4f, far %.4f" % (mean, far))
                            shutil.copy(png, os.path.join(tmp, name + ".got.png"))
        if why:
            bad += 1
            print("FAIL %s: %s (files in %s)" % (name, "; ".join(why), tmp))
        else:
            print("ok   %s" % name)
    if bad:
        return 1
    shutil.rmtree(tmp)
    print("all %d pictures valid and as stored" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
