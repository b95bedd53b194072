#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Watch one `make check` run and judge it from the files its VMs leave.

  judge.py RESULTS DURATIONS

RESULTS holds one directory per VM (vm1, vm2, ...; see check.sh and
guest-check.sh): the programs it runs (tests), its progress events, each
program's KTAP (TEST.ktap), and at the end its dmesg.log, kmemleak.log and
done; check.sh adds vm.rc when the VM is gone. While the VMs run, this
prints a line as each program starts and ends (with its wall time) and the
program's KTAP once it ended. When every VM is gone it writes the merged
KTAP of the run to RESULTS/ktap.log, prints a table of wall times (with the
expected ones from DURATIONS), adds a judgement per VM (it finished; its
kernel log is clean) and, last, `N passed, N failed[, N skipped]`; it exits
1 if anything failed.

Counting: each KUnit case of the built-in suites (boot.log; once, however
many VMs ran it) and of each run of a test module's suite (dmesg.log),
each program's own results (a program that failed without a
failing result of its own, e.g. a timeout, counts as one failure), one
failure per program that never ran, one per VM that did not finish and one
per kernel log with a splat. RSNET_HOST_RESULTS names a file of results
computed on the host ("ok ..."/"not ok ..." lines, e.g. .ci/run's make vm
checks) that are printed and counted too.
"""
import os
import pathlib
import re
import sys
import time

# What makes a kernel log dirty: the first line of each kind of report.
SPLAT = re.compile(
    r"(BUG:|WARNING:|Oops|general protection fault|KASAN:|UBSAN:"
    r"|possible recursive locking|possible circular locking"
    r"|inconsistent lock state|suspicious RCU usage"
    r"|unreferenced object|Kernel panic|kernel BUG at|INFO: task .* blocked"
    r"|rcu: INFO: rcu_.* stall)"
)
# What guest-check.sh writes to the kernel log once it saved boot.log.
BOOT_MARK = "rsnet: boot log saved"
# Banner lines that only name a checker are not reports.
NOT_SPLAT = re.compile(r"(Lock dependency validator|RCU lockdep checking is enabled)")


def say(msg=""):
    print(msg, flush=True)


def ktap_counts(text):
    """(passed, failed, skipped) of the runner's KTAP for some programs."""
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
            sub_fail = 0
    return passed, failed + prog_failed_alone, skipped


def kunit_runs(text):
    """KUnit's suite runs in a kernel log, in order: a list of (suite,
    results, missing), results a list of (case, "ok"|"fail"|"skip") in which
    each step of a parameterised case counts as "case/step" instead of the
    case, missing the cases of the plan that never reported (e.g. the
    kernel died in one)."""
    runs = []
    suite = None

    def status_of(word, rest):
        if word == "not ok":
            return "fail"
        return "skip" if "# SKIP" in rest else "ok"

    def close():
        if suite is not None:
            runs.append((suite, results, max(plan - seen, 0)))

    for line in text.splitlines():
        line = re.sub(r"^\[[^]]*\] ?", "", line)
        m = re.match(r"^    # Subtest: (\S+)$", line)
        if m:
            close()
            suite, plan, seen, results, steps = m.group(1), 0, 0, [], []
            continue
        if suite is None:
            continue
        m = re.match(r"^    1\.\.(\d+)$", line)
        if m:
            plan = int(m.group(1))
            continue
        m = re.match(r"^        (not ok|ok) \d+ (.*?)( # SKIP.*)?$", line)
        if m:
            steps.append((m.group(2), status_of(m.group(1), m.group(3) or "")))
            continue
        m = re.match(r"^    (not ok|ok) \d+ (\S+)(.*)$", line)
        if m:
            seen += 1
            if steps:
                results += [(f"{m.group(2)}/{step}", st) for step, st in steps]
            else:
                results.append((m.group(2), status_of(m.group(1), m.group(3))))
            steps = []
            continue
        if re.match(r"^(not ok|ok) \d+ ", line):
            close()
            suite = None
    close()
    return runs


def program_verdict(text):
    """The runner's verdict line for one program's KTAP, or None."""
    m = re.search(r"^((?:not )?ok \d+ selftests: .*)$", text, re.M)
    return m.group(1) if m else None


def parse_times(word):
    """Seconds of one of bash's times words, e.g. 15m35.762s."""
    m = re.fullmatch(r"(\d+)m(\d+)(?:[.,](\d+))?s", word)  # locale's decimal point
    return int(m[1]) * 60 + float(f"{m[2]}.{m[3] or 0}") if m else None


def fmt_secs(secs):
    return "-" if secs is None else f"{secs:.0f}"


class Vm:
    def __init__(self, d, expected):
        self.dir = d
        self.name = d.name
        self.tests = [(int(w.split(":", 1)[0]), w.split(":", 1)[1])
                      for w in (d / "tests").read_text().split()]
        self.t0 = (d / "tests").stat().st_mtime  # the VM is started right after
        self.expected = expected
        self.pos = 0
        self.boot = None        # seconds from VM start to its first program
        self.times = {}         # TEST -> seconds
        self.started = []       # TESTs started
        self.scan = None
        self.gone = None        # seconds from VM start to its end
        self.rc = None

    def cpu(self):
        """Host CPU seconds (user + system) of the VM's processes, or None."""
        secs = [parse_times(w) for w in self.read("vm.cpu").split()]
        return sum(secs) if len(secs) == 2 and None not in secs else None

    def read(self, name):
        p = self.dir / name
        return p.read_text(errors="replace") if p.exists() else ""

    def poll(self):
        """Prints what happened since the last poll; True once the VM is gone."""
        rc_file = self.dir / "vm.rc"
        gone = rc_file.exists()  # read before the progress: no event is missed
        try:
            with open(self.dir / "progress", "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            data = b""
        # Only whole lines: the guest may be writing the next one.
        data = data[:data.rfind(b"\n") + 1]
        self.pos += len(data)
        now = time.time() - self.t0
        for line in data.decode(errors="replace").splitlines():
            self.event(line.split(), now)
        if gone and self.gone is None:
            self.gone = now
            self.rc = rc_file.read_text().strip()
            say(f"[rsnet] {self.name}: VM gone {now:.0f} s after its start (exit {self.rc})")
            if self.rc != "0":
                for l in self.read("vm.out").splitlines()[-15:]:
                    say("    | " + l)
        return gone

    def event(self, w, now):
        if not w:
            return
        if w[0] == "boot":
            self.boot = now
            say(f"[rsnet] {self.name}: booted, first program {now:.0f} s after the VM's start"
                f" (guest uptime {float(w[1]):.0f} s)")
        elif w[0] == "start":
            t = w[2]
            self.started.append(t)
            say(f"[rsnet] {self.name}: {t} started (expected about {self.expected(t):.0f} s)")
        elif w[0] == "end":
            t, secs = w[2], float(w[3])
            self.times[t] = secs
            text = self.read(f"{t}.ktap")
            sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
            p, f, s = ktap_counts(text)
            verdict = program_verdict(text) or "no verdict"
            say(f"[rsnet] {self.name}: {t} ended in {secs:.0f} s: {p} passed, {f} failed"
                f"{f', {s} skipped' if s else ''} ({verdict.split(' selftests')[0]})")
            if f or not verdict.startswith("ok"):
                say(f"[rsnet] FAIL {t}: log {self.dir / (t + '.ktap')}")
        elif w[0] == "scan":
            self.scan = float(w[1])


def main():
    res = pathlib.Path(sys.argv[1])
    known = {}
    for line in pathlib.Path(sys.argv[2]).read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) == 2:
            known[words[0]] = float(words[1])
    fallback = max(known.values(), default=60.0)
    expected = lambda t: known.get(t, fallback)
    vms = [Vm(d, expected) for d in sorted(res.glob("vm[0-9]*"), key=lambda d: int(d.name[2:]))]
    ntests = sum(len(vm.tests) for vm in vms)
    say("TAP version 13")
    say(f"1..{ntests}")
    t0 = min(vm.t0 for vm in vms)
    while True:
        # Every VM polled in each round, so none waits behind another.
        if all([vm.poll() for vm in vms]):
            break
        time.sleep(0.5)
    wall = time.time() - t0

    # The run's KTAP as one document, in program order.
    blocks = sorted((n, t, vm) for vm in vms for n, t in vm.tests)
    with open(res / "ktap.log", "w") as f:
        f.write(f"TAP version 13\n1..{ntests}\n")
        for n, t, vm in blocks:
            f.write(vm.read(f"{t}.ktap"))

    passed = failed = skipped = 0
    say()
    say(f"[rsnet] wall time of each test program (s), {len(vms)} VMs:")
    say(f"    {'program':24} {'vm':4} {'expected':>8} {'took':>6}  results")
    for n, t, vm in blocks:
        text = vm.read(f"{t}.ktap")
        p, f, s = ktap_counts(text)
        if t not in vm.started:
            took, what = "-", "never ran"
            f += 1
        elif t not in vm.times:
            took, what = "-", "did not end (VM gone)"
            if not re.search(r"^not ok \d+ selftests:", text, re.M):
                f += 1
        else:
            took = f"{vm.times[t]:.0f}"
            what = f"{p} passed, {f} failed" + (f", {s} skipped" if s else "")
            verdict = program_verdict(text) or "no verdict"
            if not verdict.startswith("ok"):
                what += f" ({verdict})"
                # A program that failed (or gave no verdict) with no
                # failed test of its own, e.g. one that bailed out, fails.
                f = max(f, 1)
        if f:
            what += f"  log: {vm.dir / (t + '.ktap')}"
        say(f"    {t:24} {vm.name:4} {expected(t):8.0f} {took:>6}  {what}")
        passed, failed, skipped = passed + p, failed + f, skipped + s
    for vm in vms:
        tests = sum(vm.times.values())
        boot = f"{vm.boot:.0f}" if vm.boot is not None else "-"
        scan = f"{vm.scan:.0f}" if vm.scan is not None else "-"
        say(f"    {vm.name}: boot to first program {boot} s, programs {tests:.0f} s,"
            f" kmemleak scan and dmesg {scan} s, VM start to end {vm.gone:.0f} s,"
            f" host CPU {fmt_secs(vm.cpu())} s")
    say(f"    wall time, first VM start to last VM end: {wall:.0f} s")
    cpus = [vm.cpu() for vm in vms]
    if None not in cpus and len(vms) > 1:
        # CPU time is work that no split of the programs between VMs
        # takes off the cores this run may use.
        n = len(os.sched_getaffinity(0))
        say(f"    this run's VMs used {sum(cpus):.0f} CPU-s of the host: at least"
            f" {sum(cpus) / n:.0f} s on {n} cores")
    say()

    for vm in vms:
        if not (vm.dir / "done").exists():
            say(f"[rsnet] FAIL: {vm.name} did not finish the run (exit {vm.rc});"
                f" console log: {vm.dir}/console.log")
            failed += 1
        # The kernel log: dmesg if the VM got that far, else the console.
        log = vm.read("dmesg.log") or vm.read("console.log")
        splats = [l for l in log.splitlines() if SPLAT.search(l) and not NOT_SPLAT.search(l)]
        leaks = vm.read("kmemleak.log").strip()
        if not log:
            say(f"[rsnet] FAIL: no kernel log of {vm.name} to check")
            failed += 1
        elif splats or leaks:
            failed += 1
            say(f"[rsnet] FAIL: {vm.name}: kernel log is not clean ({len(splats)} report lines"
                f"{', kmemleak: ' + str(leaks.count('unreferenced object')) + ' leaks' if leaks else ''}):")
            for l in (splats + leaks.splitlines())[:20]:
                say("    | " + l)
            say(f"[rsnet] full logs: {vm.dir}/dmesg.log {vm.dir}/kmemleak.log")
        else:
            say(f"ok {vm.name}: kernel log clean (no BUG/WARNING/Oops/KASAN/lockdep/kmemleak report)")
            passed += 1

    # KUnit. The suites built into the kernel (the kernel crate's Rust
    # doctests) ran as each VM booted (boot.log): each case counts once,
    # failed if it failed in any VM, and a VM without them booted a kernel
    # that lacks CONFIG_KUNIT or CONFIG_RUST_KERNEL_DOCTESTS. A suite of a
    # test module runs each time a program loads it: each of those runs
    # (dmesg.log, after the boot log's marker) counts.
    rank = {"skip": 0, "ok": 1, "fail": 2}
    builtin, loaded, kmissing = {}, {}, 0
    for vm in vms:
        runs = kunit_runs(vm.read("boot.log") or vm.read("console.log"))
        if not any(suite == "rust_doctests_kernel" for suite, _, _ in runs):
            say(f"[rsnet] FAIL: {vm.name}: no KUnit results of rust_doctests_kernel in its boot log"
                " (the kernel needs CONFIG_KUNIT and CONFIG_RUST_KERNEL_DOCTESTS)")
            failed += 1
        dmesg = vm.read("dmesg.log")
        later = dmesg.split(BOOT_MARK, 1)[1] if BOOT_MARK in dmesg else ""
        for kind, runs in (("built in", runs), ("module", kunit_runs(later))):
            for n, (suite, results, missing) in enumerate(runs):
                if missing:
                    say(f"[rsnet] FAIL: {vm.name}: KUnit suite {suite}: {missing} cases did not report")
                    kmissing += missing
                for case, status in results:
                    if kind == "built in":
                        key = (suite, case)
                        if rank[status] > rank.get(builtin.get(key), -1):
                            builtin[key] = status
                    else:
                        loaded[(vm.name, n, suite, case)] = status
    kunit = [(k[0], k[1], st) for k, st in builtin.items()] + \
        [(k[2], k[3], st) for k, st in loaded.items()]
    for suite in sorted({k[0] for k in kunit}):
        sts = [st for su, _, st in kunit if su == suite]
        runs = len({k[:3] for k in loaded if k[2] == suite})
        where = "built in" if not runs else f"module, {runs} runs"
        say(f"[rsnet] KUnit {suite} ({where}): {sts.count('ok')} passed, {sts.count('fail')} failed"
            + (f", {sts.count('skip')} skipped" if sts.count("skip") else ""))
    for suite, case, st in kunit:
        if st == "fail":
            say(f"    not ok {suite}.{case}  log: boot.log or dmesg.log of the VMs under {res}")
    sts = [st for _, _, st in kunit]
    passed += sts.count("ok")
    failed += sts.count("fail") + kmissing
    skipped += sts.count("skip")

    # Host-side programs (compile_fail, see check.sh), in KTAP.
    text = (res / "host.ktap").read_text() if (res / "host.ktap").exists() else ""
    if text:
        p, f, s = ktap_counts(text)
        say(f"[rsnet] host: {p} passed, {f} failed" + (f", {s} skipped" if s else "")
            + ("" if not f else f"  log: {res / 'host.ktap'}"))
        passed, failed, skipped = passed + p, failed + f, skipped + s

    host = os.environ.get("RSNET_HOST_RESULTS")
    if host:
        lines = pathlib.Path(host).read_text().splitlines() if os.path.exists(host) else []
        results = [l for l in lines if re.match(r"^(not )?ok\b", l)]
        for l in results:
            say(l)
            if l.startswith("ok"):
                passed += 1
            else:
                failed += 1
        if not results:
            say(f"[rsnet] FAIL: no host-side result in {host}")
            failed += 1

    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    say(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
