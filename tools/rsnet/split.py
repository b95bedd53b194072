#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Split make check's test programs between its VMs by expected duration.

  split.py VMS DURATIONS TEST...

DURATIONS is tools/testing/selftests/rsnet/durations ("NAME SECONDS" lines,
"#" comments). Greedy, longest first: each program goes to the VM with the
least expected work so far. A program the table does not know is assumed to
take as long as the longest known one (a new test is more often long than
short, and an overestimate only costs balance) and named on stderr. A
program is never split: one that compares C and Rust fq switches between
them itself, in one VM.

Prints one line per VM that got work: the programs as NUM:NAME (NUM the
program's position in TEST..., its number in the run's KTAP), in the order
given, and the expected seconds on stderr.
"""
import sys


def main():
    vms, table, tests = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    known = {}
    with open(table) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if len(words) == 2:
                known[words[0]] = float(words[1])
    fallback = max(known.values(), default=60.0)
    expect = {}
    for t in tests:
        if t not in known:
            print(f"[rsnet] {t}: no expected duration in {table}, assuming {fallback:.0f} s",
                  file=sys.stderr)
        expect[t] = known.get(t, fallback)
    lanes = [[] for _ in range(max(1, min(vms, len(tests))))]
    load = [0.0] * len(lanes)
    for num, t in sorted(enumerate(tests, 1), key=lambda nt: -expect[nt[1]]):
        i = load.index(min(load))
        lanes[i].append((num, t))
        load[i] += expect[t]
    for i, lane in enumerate(lanes):
        print(" ".join(f"{n}:{t}" for n, t in sorted(lane)))
        print(f"[rsnet] vm{i + 1}: {len(lane)} programs, about {load[i]:.0f} s expected",
              file=sys.stderr)


if __name__ == "__main__":
    main()
