#!/usr/bin/env python3
# objcmp.py LINEDIFF PRISTINE_DUMP SERIES_DUMP: compare two dumps of one
# object (objcmp.sh's dump(): llvm-objdump -d -r without offsets, then the
# global symbols), function by function. Prints each function or symbol
# table that differs, one a line, and exits 1 if any does.
#
# One difference is allowed, and counted on stderr: an immediate operand
# that is a source line number. The kernel passes __LINE__ as an argument
# to lockdep_rcu_suspicious() (RCU_LOCKDEP_WARN), __might_sleep() and
# their kind, and the series' added lines (even those #ifdef'd out) move
# the lines after them. An instruction whose only difference is its
# immediate is taken for such a line when the pristine value is a line of
# a file the series changes that the series left as it was, and the
# series' value is where that line is now (LINEDIFF: git diff -U0 of the
# series). Any other difference fails.
import re
import sys


def line_maps(path):
    """Per file: (old_start, old_count, new_start, new_count) hunks."""
    maps, cur = {}, None
    for line in open(path, errors='replace'):
        if line.startswith('+++ '):
            cur = maps.setdefault(line[4:].strip().removeprefix('b/'), [])
        m = re.match(r'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@', line)
        if m and cur is not None:
            cur.append(tuple(int(g) if g is not None else 1 for g in m.groups()))
    return maps


def moved(maps, old, new):
    """Is line old of some changed file, left as it was, line new now?"""
    for hunks in maps.values():
        shift, ok = 0, True
        for os_, oc, ns, nc in hunks:
            # A pure insertion (-N,0) comes after old line N.
            first_changed = os_ if oc else os_ + 1
            if old >= first_changed + oc:
                shift += nc - oc
            elif old >= first_changed:
                ok = False
                break
        if ok and old + shift == new:
            return True
    return False


def funcs(path):
    out, cur = {}, None
    for line in open(path):
        m = re.match(r'^<(.+)>:$', line.strip())
        if m:
            cur = m.group(1)
            out[cur] = []
        elif line.startswith('== global symbols'):
            cur = '(global symbols)'
            out[cur] = []
        elif line.startswith('Disassembly of section'):
            cur = None
        elif cur is not None:
            out[cur].append(line.rstrip('\n'))
    return out


IMM = re.compile(r'^(?P<bytes>(?:[0-9a-f]{2} )+)\s*(?P<op>\S+)\s+\$0x(?P<imm>[0-9a-f]+),(?P<rest>.*?)(?:\s*# imm = 0x[0-9A-F]+)?$')


def line_number_change(maps, a, b):
    ma, mb = IMM.match(a.strip()), IMM.match(b.strip())
    if not (ma and mb) or ma['op'] != mb['op'] or ma['rest'] != mb['rest']:
        return False
    if len(ma['bytes'].split()) != len(mb['bytes'].split()):
        return False
    return moved(maps, int(ma['imm'], 16), int(mb['imm'], 16))


def main():
    maps = line_maps(sys.argv[1])
    a, b = funcs(sys.argv[2]), funcs(sys.argv[3])
    bad, lines = [], 0
    for name in sorted(set(a) | set(b)):
        fa, fb = a.get(name), b.get(name)
        if fa == fb:
            continue
        if fa is None or fb is None or len(fa) != len(fb):
            bad.append(name + (' (new)' if fa is None else ' (gone)' if fb is None else ''))
            continue
        n = 0
        for x, y in zip(fa, fb):
            if x == y:
                continue
            if not line_number_change(maps, x, y):
                bad.append(name)
                break
            n += 1
        else:
            lines += n
    if lines:
        print(f'{lines} line number immediate(s) moved with the source', file=sys.stderr)
    for name in bad:
        print(name)
    sys.exit(1 if bad else 0)


main()
