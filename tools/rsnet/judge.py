#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge one `make check` run from the files the VM left behind.

Counts the KTAP results of the kselftests (each test program's own results;
a program that failed without a failing result of its own, e.g. a timeout,
counts as one failure), adds a failure for a VM that did not finish and for
a kernel log with a splat, prints `N passed, N failed[, N skipped]` and
exits 1 if anything failed.
"""
import pathlib
import re
import sys

# What makes a kernel log dirty: the first line of each kind of report.
SPLAT = re.compile(
    r"(BUG:|WARNING:|Oops|general protection fault|KASAN:|UBSAN:"
    r"|possible recursive locking|possible circular locking"
    r"|inconsistent lock state|suspicious RCU usage"
    r"|unreferenced object|Kernel panic|kernel BUG at|INFO: task .* blocked"
    r"|rcu: INFO: rcu_.* stall)"
)
# Banner lines that only name a checker are not reports.
NOT_SPLAT = re.compile(r"(Lock dependency validator|RCU lockdep checking is enabled)")


def ktap_counts(text):
    passed = failed = skipped = 0
    prog_failed_alone = 0
    sub_fail = 0
    for line in text.splitlines():
        m = re.match(r"^# (not ok|ok) \d+ (.*)$", line)
        if m:
            if "# SKIP" in m.group(2):
                skipped += 1
            elif m.group(1) == "ok":
                passed += 1
            else:
                failed += 1
                sub_fail += 1
            continue
        m = re.match(r"^(not ok|ok) \d+ selftests: (.*)$", line)
        if m:
            if m.group(1) == "not ok" and sub_fail == 0:
                prog_failed_alone += 1
                print(f"[rsnet] FAIL (whole program): {m.group(2)}")
            sub_fail = 0
    return passed, failed + prog_failed_alone, skipped


def main():
    res = pathlib.Path(sys.argv[1])
    read = lambda n: (res / n).read_text(errors="replace") if (res / n).exists() else ""
    passed, failed, skipped = ktap_counts(read("ktap-host.log") + read("ktap.log"))
    if passed + failed + skipped == 0:
        print("[rsnet] FAIL: no test result at all")
        failed += 1
    if not (res / "done").exists():
        print(f"[rsnet] FAIL: the VM did not finish the run; console log: {res}/console.log")
        failed += 1
    # The kernel log: dmesg if the VM got that far, else the console.
    log = read("dmesg.log") or read("console.log")
    splats = [l for l in log.splitlines() if SPLAT.search(l) and not NOT_SPLAT.search(l)]
    leaks = read("kmemleak.log").strip()
    if not log:
        print("[rsnet] FAIL: no kernel log to check")
        failed += 1
    elif splats or leaks:
        failed += 1
        print(f"[rsnet] FAIL: kernel log is not clean ({len(splats)} report lines"
              f"{', kmemleak: ' + str(leaks.count('unreferenced object')) + ' leaks' if leaks else ''}):")
        for l in (splats + leaks.splitlines())[:20]:
            print("    | " + l)
        print(f"[rsnet] full logs: {res}/dmesg.log {res}/kmemleak.log")
    else:
        print("ok kernel log clean (no BUG/WARNING/Oops/KASAN/lockdep/kmemleak report)")
        passed += 1
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
