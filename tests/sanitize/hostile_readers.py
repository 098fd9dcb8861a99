#!/usr/bin/env python3
"""Hostile and unusual inputs for every reader of qh (issue 26), each run of
qh under a time and memory limit: it must never crash, hang or trip a
sanitizer, and never read data differently from NumPy or Python.

  npy   headers NumPy writes and headers it does not (repeated, shadowed,
        unknown and missing keys, Python 2's 'L', comments, escapes,
        implicit concatenation, non-dicts, deep nesting, truncation,
        oversized headers, short data): qh's load() must give NumPy's
        array exactly (compared as values) where numpy.load accepts the
        file and an error naming the file where it refuses it.
  csv   NUL bytes in fields, long valid numbers: as numpy.loadtxt.
  json  invalid UTF-8 and lone surrogates refused, as Python's json.
  path  an embedded NUL refused by every builtin taking a path.
  repl  a NUL byte in a line refused, not cut.
  files /dev/zero read up to a limit with a message (builtins, `qh FILE`).
  qasm  OpenQASM nested a million deep, exponential gate expansions,
        powers of empty gates, many registers and gate definitions (hashed
        look-ups: a few seconds, not minutes), comparison values and
        versions past the integer range.

Needs the python3 with numpy (/usr/bin/python3 on Debian).
Usage: hostile_readers.py PATH/TO/qh
"""
import io, os, resource, subprocess, sys, tempfile

import numpy as np

QH = os.path.abspath(sys.argv[1])
LIMIT_S, LIMIT_MB = 60, 2048
failures = []
checked = 0


def limits():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_MB << 20, LIMIT_MB << 20))


def qh(code, cwd):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1')
    sanitized = 'ASAN_OPTIONS' in env or 'TSAN_OPTIONS' in env
    try:
        p = subprocess.run([QH, '-e', code], cwd=cwd, capture_output=True, timeout=LIMIT_S * 3,
                           env=env, preexec_fn=None if sanitized else limits)
    except subprocess.TimeoutExpired:
        return None, '', 'timeout'
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def bad(name, why):
    failures.append('%s: %s' % (name, why))


def judge_crash(name, rc, err):
    if rc is None:
        bad(name, 'timed out')
        return True
    if rc >= 128 or rc < 0 or 'Sanitizer' in err or 'runtime error:' in err:
        bad(name, 'crashed (status %s): %s' % (rc, err[-400:]))
        return True
    return False


def npy_bytes(header, data, version=1, raw=False):
    h = header if raw else header.encode('latin1' if version < 3 else 'utf-8')
    if version == 1 and len(h) > 65535:
        version = 2
    if version == 1:
        return b'\x93NUMPY\x01\x00' + len(h).to_bytes(2, 'little') + h + data
    return b'\x93NUMPY' + bytes([version, 0]) + len(h).to_bytes(4, 'little') + h + data


F8 = np.arange(1.0, 7.0)
D = F8.tobytes()
GOOD = "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }"
HEADERS = [
    GOOD,
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'shape': (2, 3)}",
    "{'shape': (2, 3), 'descr': '<f8', 'fortran_order': False, 'shape': (3, 2)}",
    "{'descr': '<f8', 'fortran_order': True, 'fortran_order': False, 'shape': (2, 3)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'fortran_order': True}",
    "{'descr': '<i4', 'descr': '<f8', 'fortran_order': False, 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'x': 1}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'descrx': '<i4'}",
    "{'comment': \"'descr': '<i4'\", 'descr': '<f8', 'fortran_order': False, 'shape': (6,)}",
    "{'descr': '<f8', 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': False}",
    "{'fortran_order': False, 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6L,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,)} # a comment\n",
    "{'descr': '<f8', # x\n 'fortran_order': False, 'shape': (6,)}",
    "{'de' 'scr': '<f' '8', 'fortran_order': False, 'shape': (6,)}",
    "{'\\x64escr': '<f8', 'fortran_order': False, 'shape': (6,)}",
    "{u'descr': '<f8', 'fortran_order': False, 'shape': (6,)}",
    "{r'descr': '<f8', 'fortran_order': False, 'shape': (6,)}",
    "{b'descr': '<f8', 'fortran_order': False, 'shape': (6,)}",
    "{'''descr''': \"<f8\", \"fortran_order\": False, 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (0x6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (0b110,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (0o6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (+6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (-6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (--6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (1_0,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (06,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6.0,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (True, 6)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': [6]}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': 6}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': ((6),)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': ((6,),)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': ()}",
    "{'descr': '<f8', 'fortran_order': 0, 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': None, 'shape': (6,)}",
    "{'descr': ('<f8'), 'fortran_order': (False), 'shape': ((6,))}",
    "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,),}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,),,}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,)",
    "{'descr': '<f8', 'fortran_order': False, 'shape':",
    "{'descr': '<f8', 'fortran_order': False, 'shape': ",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,)} {}",
    "{'descr', 'fortran_order', 'shape'}",
    "['descr', '<f8']",
    "",
    "   \n",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 1: 2}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'x': [1, (2, {3: 4}), 5.5, 1+2j, None]}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'descr': 'float64'}",
    "{'descr': '>f8', 'fortran_order': False, 'shape': (6,)}",
    "{'descr': 'f8', 'fortran_order': False, 'shape': (6,)}",
    "{'descr': '<f8\\x00', 'fortran_order': False, 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'shape': (99999999999999999999999,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'shape': (3, 99)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (1,) * 6}",
    "{'descr': '<f8', 'fortran_order': Tru, 'shape': (6,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'e': '\\N{DIGIT ONE}'}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'descr': '<f8' b''}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6 L,)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,)}\\\n",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (" + "(" * 300 + "6" + ")" * 300 + ",)}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'x': " + "-" * 100000 + "1}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'x': " + "[" * 100000 + "}",
    "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'x': '" + "y" * 20000 + "'}",
]


def numpy_view(blob):
    try:
        a = np.load(io.BytesIO(blob), allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - any refusal counts
        return None, '%s: %s' % (type(e).__name__, str(e)[:80])
    return a, None


def check_npy(tmp):
    global checked
    cases = []
    for i, h in enumerate(HEADERS):
        for v in (1, 2, 3):
            if v > 1 and i % 3:
                continue
            cases.append(('npy%d_v%d' % (i, v), npy_bytes(h, D, v)))
    # the header ends in the middle of a key or right after 'shape':
    for cut in (20, 40, 49, 50, 51, len(GOOD) - 1):
        h = GOOD[:cut].encode()
        cases.append(('npy_cut%d' % cut, b'\x93NUMPY\x01\x00' + len(h).to_bytes(2, 'little') + h))
    cases.append(('npy_short_data', npy_bytes(GOOD, D[:40])))
    cases.append(('npy_no_data', npy_bytes(GOOD, b'')))
    cases.append(('npy_len_past_end', b'\x93NUMPY\x01\x00\xff\x00' + GOOD.encode()))
    cases.append(('npy_version_1_1', b'\x93NUMPY\x01\x01' + npy_bytes(GOOD, D)[8:]))
    cases.append(('npy_bad_utf8_v3', npy_bytes(GOOD.encode()[:-2] + b"'x': '\xff'}", D, 3, raw=True)))
    cases.append(('npy_latin1_v1', npy_bytes(GOOD[:-2] + "'\xe9': 1}", D, 1)))
    # NumPy's own files of every supported dtype and order, and a wide header (version 2.0)
    for dt in ('<f8', '>f8', '<f4', '<f2', '<c16', '>c8', '<i8', '>i2', '|u1', '<u4', '|b1', '|i1'):
        for order in ('C', 'F'):
            a = (np.arange(12).reshape(3, 4) % 5).astype(dt, order=order)
            if a.dtype.kind == 'c':
                a = a + 1j * a[::-1]
            bio = io.BytesIO()
            np.save(bio, a)
            cases.append(('npy_%s_%s' % (dt.replace('<', 'le').replace('>', 'be').replace('|', ''),
                                          order), bio.getvalue()))
    bio = io.BytesIO()
    np.lib.format.write_array(bio, np.zeros((1,) * 32), version=(2, 0))
    cases.append(('npy_v2_32d', bio.getvalue()))
    prog = []
    for name, blob in cases:
        with open(os.path.join(tmp, name + '.npy'), 'wb') as f:
            f.write(blob)
        prog.append('try { x = load("%s.npy"); s = []; if type(x) == "array" { s = shape(x) } else { x = array([x]) };'
                    ' print("%s|OK|" + json_dump(s) + "|" +'
                    ' json_dump(tolist(real(x))) + "|" + json_dump(tolist(imag(x)))) }'
                    ' catch e { print("%s|ERR|" + str(e)) }' % (name, name, name))
    rc, out, err = qh('\n'.join(prog), tmp)
    if judge_crash('npy', rc, err):
        return
    got = {}
    for line in out.splitlines():
        parts = line.split('|')
        if len(parts) >= 3:
            got[parts[0]] = parts[1:]
    import json
    for name, blob in cases:
        checked += 1
        ref, why = numpy_view(blob)
        if name not in got:
            bad(name, 'no output line')
            continue
        kind, rest = got[name][0], got[name][1:]
        if ref is None:
            if kind != 'ERR':
                bad(name, 'numpy refuses it (%s) but qh read %s' % (why, rest))
            elif "'%s.npy'" % name not in rest[0]:
                bad(name, 'the error does not name the file: ' + rest[0])
            continue
        if kind != 'OK':
            # qh's own limits, refused with a message (never read differently)
            if ref.ndim > 8 and 'dimensions' in rest[0] and "'%s.npy'" % name in rest[0]:
                continue
            if (ref.dtype.names or ref.dtype.kind not in 'fciub') and 'unsupported dtype' in rest[0]:
                continue
            bad(name, 'numpy reads it (shape %s) but qh refused: %s' % (ref.shape, rest[0]))
            continue
        shp = tuple(json.loads(rest[0]))
        re_ = np.array(json.loads(rest[1]), dtype=float)
        im_ = np.array(json.loads(rest[2]), dtype=float)
        want = ref.astype(complex)
        if ref.ndim == 0:
            re_, im_ = re_.reshape(()), im_.reshape(())
        if shp != ref.shape or re_.shape != ref.shape or not np.array_equal(re_, want.real) \
                or not np.array_equal(im_, want.imag):
            bad(name, 'qh read shape %s values %s %s, numpy %s %s' % (shp, rest[1][:60], rest[2][:60],
                                                                     ref.shape, ref.ravel()[:6]))


def check_csv(tmp):
    """NUL bytes in fields and long numbers, as numpy.loadtxt reads them."""
    global checked
    cases = {
        'nul_mid': b'1\x009,2\n3,4\n',
        'nul_line': b'\x00\x00\x00\n',
        'nul_field': b'1,\x00\n',
        'nul_end': b'1,2\x00\n',
        'nul_quoted': b'"1\x00",2\n',
        'long_number': ('0.' + '1' * 450 + ',2\n').encode(),
        'long_exp': ('1' * 200 + 'e-200,' + '0' * 300 + '1\n').encode(),
        'long_bad': ('1' * 500 + 'x,2\n').encode(),
        'plain': b'1,2\n3,4\n',
    }
    prog = []
    for name, text in cases.items():
        with open(os.path.join(tmp, name + '.csv'), 'wb') as f:
            f.write(text)
        prog.append('try { x = load_csv("%s.csv", ","); print("%s OK", json_dump(tolist(x))) }'
                    ' catch e { print("%s ERR", e) }' % (name, name, name))
    rc, out, err = qh('\n'.join(prog), tmp)
    if judge_crash('csv', rc, err):
        return
    got = {l.split(' ', 2)[0]: l.split(' ', 2)[1:] for l in out.splitlines()}
    import json
    for name, text in cases.items():
        checked += 1
        try:
            ref = np.loadtxt(io.StringIO(text.decode('latin1')), delimiter=',', ndmin=2)
        except Exception:  # noqa: BLE001
            ref = None
        g = got.get(name)
        if not g:
            bad('csv_' + name, 'no output')
        elif ref is None:
            if g[0] != 'ERR':
                bad('csv_' + name, 'numpy.loadtxt refuses it, qh read ' + ' '.join(g[1:])[:100])
            elif "'%s.csv'" % name not in g[1]:
                bad('csv_' + name, 'the error does not name the file: ' + g[1])
        elif g[0] != 'OK':
            bad('csv_' + name, 'numpy reads it, qh refused: ' + ' '.join(g[1:]))
        elif not np.array_equal(np.array(json.loads(g[1]), dtype=float), ref):
            bad('csv_' + name, 'qh read %s, numpy %s' % (g[1][:80], ref))


def check_json(tmp):
    """Python's json refuses invalid UTF-8; qh also refuses lone surrogates
    (its strings are UTF-8), and json_dump escapes none of valid text."""
    global checked
    cases = {
        'bad_byte': b'["\xff"]',
        'overlong': b'["\xc0\xaf"]',
        'cesu_surrogate': b'["\xed\xa0\x80"]',
        'truncated_seq': b'["\xe2\x82"]',
        'bad_outside': b'[1, \xff]',
        'lone_high': b'["\\ud800"]',
        'lone_low': b'["\\udc00x"]',
        'high_then_high': b'["\\ud800\\ud800"]',
        'pair': b'["\\ud83d\\ude00"]',
        'utf8_ok': '["é€😀"]'.encode(),
        'deep': b'[' * 100000 + b']' * 100000,
    }
    prog = []
    for name, text in cases.items():
        with open(os.path.join(tmp, name + '.json'), 'wb') as f:
            f.write(text)
        prog.append('try { x = json_parse(read_text("%s.json")); print("%s OK", json_dump(x)) }'
                    ' catch e { print("%s ERR", e) }' % (name, name, name))
    rc, out, err = qh('\n'.join(prog), tmp)
    if judge_crash('json', rc, err):
        return
    got = {l.split(' ', 2)[0]: l.split(' ', 2)[1:] for l in out.splitlines()}
    import json
    for name, text in cases.items():
        checked += 1
        try:
            ref = json.loads(text.decode('utf-8'))
            ok = not any('\ud800' <= ch <= '\udfff' for ch in json.dumps(ref, ensure_ascii=False))
        except Exception:  # noqa: BLE001
            ok = False
            ref = None
        g = got.get(name)
        if not g:
            bad('json_' + name, 'no output')
        elif not ok and g[0] != 'ERR':
            bad('json_' + name, 'Python refuses it (or it holds a lone surrogate); qh read ' + g[1][:80])
        elif ok and (g[0] != 'OK' or g[1] != json.dumps(ref, ensure_ascii=False)):
            bad('json_' + name, 'qh gave %s, Python %s' % (g, json.dumps(ref, ensure_ascii=False)))


def check_paths(tmp):
    """Every builtin taking a path refuses one with a NUL (Python: 'embedded null byte')."""
    global checked
    calls = ['read_text("a\\0b")', 'read_lines("a\\0b")', 'write_text("a\\0b", "x")',
             'save("a\\0b.npy", array([1]))', 'load("a\\0b.npy")', 'load_csv("a\\0b")',
             'qasm_file("a\\0b")']
    prog = ['try { %s; print("OK") } catch e { print("ERR", e) }' % c for c in calls]
    rc, out, err = qh('\n'.join(prog), tmp)
    if judge_crash('paths', rc, err):
        return
    lines = out.splitlines()
    for c, l in zip(calls, lines + [''] * len(calls)):
        checked += 1
        if not l.startswith('ERR') or 'null byte' not in l:
            bad('path ' + c, 'not refused for its NUL: ' + l)
    if os.path.exists(os.path.join(tmp, 'a')):
        bad('path', "a file 'a' was written (the name cut at the NUL)")


def check_qasm(tmp):
    global checked
    H = 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\ncreg c[64];\n'
    expo = ''.join('gate g%d a { g%d a; g%d a; }\n' % (i + 1, i, i) for i in range(60))
    cases = {
        # name: (text, a piece of the expected error, or None: must be read)
        'parens': (H + 'rx(' + '(' * 1000000 + '0.5' + ')' * 1000000 + ') q[0];\n', 'nested deeper'),
        'minus': (H + 'rx(' + '-' * 1000000 + '0.5) q[0];\n', 'nested deeper'),
        'func': (H + 'rx(' + 'sin(' * 300000 + '0.5' + ')' * 300000 + ') q[0];\n', 'nested deeper'),
        'power': (H + 'rx(' + '2**' * 300000 + '1) q[0];\n', 'nested deeper'),
        'ok_nesting': (H + 'rx(' + '(' * 200 + '0.5' + ')' * 200 + ') q[0];\n', None),
        'expo': (H + 'gate g0 a { x a; }\n' + expo + 'g60 q[0];\n', 'expands to more than'),
        'expo_ctrl': (H + 'gate g0 a { x a; }\n' + expo + 'ctrl @ g60 q[1], q[0];\n',
                      'expands to more than'),
        'pow_empty': (H + 'gate a x { }\ngate b x { pow(1000000) @ a x; }\n'
                      'gate c x { pow(1000000) @ b x; }\nc q[0];\n', 'expands to more than'),
        'pow_big': (H + 'pow(1000000) @ x q[0];\npow(1000000) @ x q[0];\n', 'expands to more than'),
        'ok_expand': (H + 'gate g0 a { x a; }\n' + expo[:expo.index('gate g17')] + 'g16 q[0];\n', None),
        'regs': ('OPENQASM 2.0;\n' + ''.join('qreg r%d[1];\n' % i for i in range(60000)) +
                 ''.join('x r%d[0];\n' % (i * 7 % 60000) for i in range(60000)), None),
        'cregs': ('OPENQASM 2.0;\nqreg q[1];\n' + ''.join('creg c%d[1];\n' % i for i in range(60000)) +
                  ''.join('measure q[0] -> c%d[0];\n' % (i * 7 % 60000) for i in range(30000)), None),
        'defs': ('OPENQASM 2.0;\nqreg q[1];\n' + ''.join('gate d%d a { x a; }\n' % i for i in range(60000)) +
                 ''.join('d%d q[0];\n' % (i * 7 % 60000) for i in range(60000)), None),
        'cond_2_64': (H + 'if (c == 18446744073709551616) x q[0];\n', 'does not fit'),
        'cond_big': (H + 'if (c == 1e300) x q[0];\n', 'does not fit'),
        'cond_max': (H + 'if (c == 18446744073709551615) x q[0];\n', None),
        'cond_small': ('OPENQASM 2.0;\nqreg q[1];\ncreg c[3];\nif (c == 8) x q[0];\n', 'does not fit'),
        'version_big': ('OPENQASM 1e300;\nqreg q[1];\n', 'unsupported OpenQASM version'),
        'version_neg': ('OPENQASM -1e300;\nqreg q[1];\n', 'version'),
        'index_big': (H + 'x q[1e300];\n', 'out of range'),
        'ctrl_many': (H + 'ctrl(32) @ ctrl(32) @ x q[0];\n', 'too many controls'),
        'reg_huge': ('OPENQASM 2.0;\n' + ''.join('qreg r%d[4096];\n' % i for i in range(600)), 'more than'),
    }
    prog = []
    for name, (text, _) in cases.items():
        with open(os.path.join(tmp, name + '.qasm'), 'w') as f:
            f.write(text)
        prog.append('try { c = qasm_file("%s.qasm"); print("%s|OK") } catch e { print("%s|ERR|" + str(e)) }'
                    % (name, name, name))
    rc, out, err = qh('\n'.join(prog), tmp)
    if judge_crash('qasm', rc, err):
        return
    got = {l.split('|')[0]: l.split('|')[1:] for l in out.splitlines() if '|' in l}
    for name, (_, want) in cases.items():
        checked += 1
        g = got.get(name)
        if not g:
            bad('qasm_' + name, 'no output')
        elif want is None and g[0] != 'OK':
            bad('qasm_' + name, 'refused: ' + '|'.join(g[1:])[:200])
        elif want is not None and (g[0] != 'ERR' or want not in g[1] or "'%s.qasm'" % name not in g[1]):
            bad('qasm_' + name, 'wanted an error with %r naming the file, got %s' % (want, '|'.join(g)[:200]))


def check_streams(tmp):
    """Files without a known size (/dev/zero) are read up to a limit, with a
    message, by every reader and by the qh command itself."""
    global checked
    calls = ['read_text("/dev/zero")', 'read_lines("/dev/zero")', 'load("/dev/zero")',
             'load_csv("/dev/zero")', 'qasm_file("/dev/zero")']
    prog = ['try { %s; print("OK") } catch e { print("ERR", e) }' % c for c in calls]
    rc, out, err = qh('\n'.join(prog), tmp)
    if judge_crash('streams', rc, err):
        return
    lines = out.splitlines()
    for c, l in zip(calls, lines + [''] * len(calls)):
        checked += 1
        if not l.startswith('ERR') or '/dev/zero' not in l or 'more than' not in l:
            bad('stream ' + c, 'not refused at its limit: ' + l)
    checked += 1
    try:
        sanitized = 'ASAN_OPTIONS' in os.environ or 'TSAN_OPTIONS' in os.environ
        p = subprocess.run([QH, '/dev/zero'], capture_output=True, timeout=LIMIT_S * 3,
                           preexec_fn=None if sanitized else limits)
        e = p.stderr.decode('utf-8', 'replace')
        if p.returncode not in (1, 2) or '/dev/zero' not in e or 'larger than' not in e:
            bad('qh /dev/zero', 'status %d: %s' % (p.returncode, e[:200]))
    except subprocess.TimeoutExpired:
        bad('qh /dev/zero', 'timed out')


def check_repl(tmp):
    """A NUL byte in a line the REPL reads: the line is refused with a
    message, not cut at the NUL (the rest of the line silently dropped)."""
    global checked
    checked += 1
    p = subprocess.run([QH, '-i', os.devnull], input=b'x = 1\nprint(1)\x00print(2)\nprint(x + 2)\n',
                       capture_output=True, timeout=LIMIT_S)
    out, err = p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')
    if out != '3\n' or 'unexpected control character 0x00' not in err or p.returncode != 0:
        bad('repl NUL', 'status %d, stdout %r, stderr %r' % (p.returncode, out, err[-200:]))


KEEP = os.environ.get("HOSTILE_KEEP")
with (tempfile.TemporaryDirectory() if not KEEP else open(os.devnull)) as tmp:
    tmp = KEEP or tmp
    check_npy(tmp)
    check_csv(tmp)
    check_json(tmp)
    check_paths(tmp)
    check_qasm(tmp)
    check_streams(tmp)
    check_repl(tmp)

for f in failures:
    print('FAIL', f)
print('%d cases, %d failures' % (checked, len(failures)))
sys.exit(1 if failures else 0)
