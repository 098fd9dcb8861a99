#!/usr/bin/env python3
"""Every builtin against hostile arguments (issue 14): for each builtin of
src/*.c (read from the BuiltinDef tables) and each arity it takes (up to 3),
each argument position gets each hostile value in turn: a failed future, a
list or dict holding one, a callback that raises, one that changes a global
list, that list itself, nan/inf, huge and negative numbers, empty and
non-ASCII strings, a 1,500-deep list, self-referential lists and dicts,
devices, operators, arrays. Every call sits in try/catch, on the main
program and inside a qfn. qh must never crash, hang or trip a sanitizer:
exit status 0 or 1 (1: a failed future nobody read), and the program must
reach its last line.

Usage: hostile_builtins.py PATH/TO/qh SRC_DIR [--keep DIR]
"""
import glob, os, random, re, shutil, subprocess, sys, tempfile

HOSTILE = ['bad()', '[bad()]', '[1, bad()]', '{"a": bad()}', 'raiser', 'mut', 'G', 'nan', 'inf',
           '-inf', '-1', '1e300', '2**53', '""', '"é"', '[]', '{}', 'nil', 'deep', 'cyc', 'cycd',
           'dev1', 'PauliZ(0)', 'f1', '[[1, 2], [3]]', 'array([1, 2])', 'complex(1, 2)', '-0.5',
           '"x" * 3', 'true']
NORMAL = ['1', '[1, 2]', '"ab"']
SKIP = {'sleep', 'input', 'clock', 'error'}          # time, stdin, the error builtin itself
IMPURE = ('print(', 'write_text(', 'save(', 'read_text(', 'read_lines(', 'load(', 'load_csv(',
          'qasm_file(', 'json_dump(', 'display(', 'save_svg(')
PRELUDE = '''dev1 = device("statevector", wires=2)
qfn bad() on dev1 { PauliX(3); return 1 }
fn raiser(a, b=nil, c=nil) { error("raised") }
G = ["g" + str(1), "g" + str(2), "g" + str(3)]
fn mut(x, y=nil, z=nil) { if len(G) > 0 { pop(G) }; append(G, [x]); return 1 }
fn f1(x, y=nil, z=nil) { return x }
deep = []
for i in range(1500) { deep = [deep] }
cyc = [1]
append(cyc, cyc)
cycd = {"a": 1}
cycd["self"] = cycd
'''
PER_PROGRAM = 2000


def builtins(src):
    defs = []
    for f in sorted(glob.glob(os.path.join(src, '**', '*.c'), recursive=True)):
        text = open(f, encoding='utf-8').read()
        for m in re.finditer(r'^\s*\{ "([a-zA-Z_0-9]+)", ([a-zA-Z_0-9]+), (-?\d+), (-?\d+),', text, re.M):
            if m.group(2) != 'NULL':
                defs.append((m.group(1), int(m.group(3)), int(m.group(4))))
    return defs


def calls(defs):
    out = []
    for name, lo, hi in defs:
        if name in SKIP:
            continue
        hi = 3 if hi < 0 or hi > 3 else hi
        for n in range(lo, hi + 1):
            if n == 0:
                out.append(name + '()')
            for i in range(n):
                for h in HOSTILE:
                    for base in NORMAL:
                        args = [base] * n
                        args[i] = h
                        out.append('%s(%s)' % (name, ', '.join(args)))
        for h in HOSTILE:
            out.append('%s([3, 1, 2], key=%s)' % (name, h))
    random.Random(1).shuffle(out)
    return out


def programs(cs):
    for k in range(0, len(cs), PER_PROGRAM):
        chunk = cs[k:k + PER_PROGRAM]
        main = ['try { x = %s } catch e { }' % c for c in chunk]
        inq = ['  try { x = %s } catch e { }' % c for c in chunk if not c.startswith(IMPURE)][:PER_PROGRAM // 4]
        yield (PRELUDE + '\n'.join(main) + '\nqfn q() on dev1 {\n' + '\n'.join(inq) +
               '\n  return 1\n}\ntry { print(q()) } catch e { print("q failed:", e) }\nprint("end")\n')


def main():
    qh, src = os.path.abspath(sys.argv[1]), sys.argv[2]
    keep = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == '--keep' else None
    defs = builtins(src)
    cs = calls(defs)
    tmp = keep or tempfile.mkdtemp()
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1')
    fails = runs = 0
    bad = re.compile(r'ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:|SUMMARY: \w*Sanitizer')
    for i, text in enumerate(programs(cs)):
        path = os.path.join(tmp, 'hostile%03d.qh' % i)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
        for mode in ([], ['--sync']):
            runs += 1
            try:
                p = subprocess.run([qh] + mode + [path], cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=600)
            except subprocess.TimeoutExpired:
                fails += 1
                print('FAIL %s %s: timed out' % (path, ' '.join(mode)))
                continue
            err = p.stderr.decode('utf-8', 'replace')
            out = p.stdout.decode('utf-8', 'replace')
            why = None
            if bad.search(err):
                why = 'sanitizer report'
            elif p.returncode not in (0, 1):
                why = 'exit status %d' % p.returncode
            elif not out.endswith('end\n'):
                why = 'did not reach the end'
            elif 'q failed' in out:
                why = 'the qfn failed: ' + out[out.index('q failed'):].splitlines()[0]
            if why:
                fails += 1
                print('FAIL %s %s: %s' % (path, ' '.join(mode), why))
                print('\n'.join(['  | ' + l for l in err.splitlines() if 'never used' not in l][:30]))
    print('hostile builtins: %d builtins, %d calls, %d runs, %d failed' % (len(defs), len(cs), runs, fails))
    if not keep and not fails:
        shutil.rmtree(tmp)
    sys.exit(1 if fails else 0)


main()
