#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Which of a module's undefined symbols reach the real clock or a timer.

  clockrefs.py OBJDUMP VMLINUX MODULE.ko...

For each undefined symbol of each module (after vclock.sh's renaming), the
code it resolves to in VMLINUX is disassembled, and so is that of every
function it calls or jumps to, DEPTH (4) calls deep. A symbol reaches the
clock if that code reads jiffies, jiffies_64 or the TSC, or calls a
function that reads a clock or arms a timer (CLOCK below). Prints one line
per such symbol: "MODULE SYMBOL: PATH" (the calls from the symbol to
the clock). Symbols that are not in VMLINUX (another module's: the
virtual clock's own) are not followed. Indirect calls (function pointers,
static calls) cannot be followed: what fq reaches through them is the
qdisc core's, the same for both implementations.
"""
import re
import subprocess
import sys

DEPTH = 4
# Reading these, or calling these, is reading the clock or arming a timer.
CLOCK = re.compile(
    r"^(jiffies|jiffies_64|ktime_get(_\w+)?|sched_clock(_\w+)?|local_clock(_\w+)?"
    r"|__hrtimer_start_range_ns|hrtimer_start_range_ns|hrtimer_cancel|hrtimer_try_to_cancel"
    r"|__mod_timer|mod_timer(_\w+)?|add_timer(_\w+)?|timer_reduce|__netif_schedule"
    r"|qdisc_watchdog_schedule_range_ns|qdisc_watchdog_cancel)$")
# Past these nothing is followed: the lock and debug machinery every
# function reaches, which reads no clock fq's observations depend on.
STOP = re.compile(r"^(_raw_spin_\w+|trace_hardirqs_\w+|lockdep_\w+|lock_acquire|lock_release"
                  r"|__sanitizer_\w+|__ubsan_\w+|__x86_\w+|__fentry__|__stack_chk_fail"
                  r"|rcu_\w+|__rcu_\w+|preempt_\w+|__preempt_\w+|debug_\w+|__warn\w*|warn_\w+)$")
REF = re.compile(r"<([A-Za-z_.$][\w.$]*)(\+0x[0-9a-f]+)?>")


def disasm(objdump, vmlinux, syms):
    """{symbol: (callees, clock references)} of SYMS, from VMLINUX."""
    out = {}
    if not syms:
        return out
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn",
                           "--disassemble-symbols=" + ",".join(sorted(syms)), vmlinux],
                          check=True, capture_output=True, text=True).stdout
    cur = None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            cur = m.group(1)
            out[cur] = (set(), set())
            continue
        if cur is None or "\t" not in line:
            continue
        insn = line.split("\t", 1)[1]
        if re.match(r"\s*rdtscp?\b", insn):
            out[cur][1].add("rdtsc")
        for ref, off in REF.findall(insn):
            if ref == cur:
                continue
            if CLOCK.match(ref):
                out[cur][1].add(ref)
            elif not off and re.match(r"\s*(callq|jmp|jmpq)\b", insn):
                out[cur][0].add(ref)
    return out


def reach(objdump, vmlinux, defined, roots):
    """{root: [(path, clock references)]} of each of ROOTS."""
    # The call graph DEPTH calls deep from all roots, disassembled once.
    graph, frontier = {}, set(roots)
    for _ in range(DEPTH + 1):
        code = disasm(objdump, vmlinux, frontier)
        graph.update(code)
        frontier = {c for callees, _ in code.values() for c in callees
                    if c not in graph and c in defined and not STOP.match(c)
                    and not CLOCK.match(c)}
    out = {}
    for r in roots:
        # Breadth first from R: the shortest path to each function.
        path, frontier, out[r] = {r: [r]}, [r], []
        for _ in range(DEPTH + 1):
            nxt = []
            for f in frontier:
                callees, clock = graph.get(f, (set(), set()))
                if clock:
                    out[r].append((path[f], clock))
                for c in sorted(callees):
                    if c in graph and c not in path:
                        path[c] = path[f] + [c]
                        nxt.append(c)
            frontier = nxt
    return out


def main():
    objdump, vmlinux, mods = sys.argv[1], sys.argv[2], sys.argv[3:]
    defined = set()
    with subprocess.Popen(["nm", "--defined-only", vmlinux], stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            w = line.split()
            if len(w) == 3 and w[1] in "tTwW":
                defined.add(w[2])
    undef = {}
    for mod in mods:
        syms = subprocess.run(["nm", "-u", mod], check=True, capture_output=True,
                              text=True).stdout.split()
        undef[mod] = sorted(s for s in syms if s != "U" and s in defined)
    # Modules import much the same: each root is followed once.
    found = reach(objdump, vmlinux, defined, sorted(set().union(*undef.values())))
    for mod in mods:
        for root in undef[mod]:
            for p, clock in sorted(found[root], key=lambda pc: len(pc[0])):
                print("%s %s: %s -> %s" % (mod.rsplit("/", 1)[-1], root, " -> ".join(p),
                                           ",".join(sorted(clock))))


if __name__ == "__main__":
    main()
