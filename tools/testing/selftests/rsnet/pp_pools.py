#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The page pools netlink lists (the kernel's ynl library, netdev family),
for page_pool.sh: one process per question, with the retries inside it.

  pp_pools.py of IFINDEX
      prints "COUNT INFLIGHT DETACHED" of the page pools of IFINDEX
  pp_pools.py idle SECONDS IFINDEX...
      waits up to SECONDS until no page pool holds pages that belongs to one
      of the IFINDEXes or was destroyed (has a detach-time); otherwise prints
      the busy pools, one line each, and exits 1

  pp_pools.py serve
      answers such questions read from stdin, one a line ("of IFINDEX",
      "idle SECONDS IFINDEX..."), each answer followed by a line "rc N"
      (its exit status): one process for all of a test's questions, since
      starting Python and loading the netdev spec takes seconds in the
      emulated guest

Run it in the network namespace to ask about (ip netns exec). The ynl
library comes through ynl_fast.py (libyaml's parser).
"""
import os
import sys
import time

from ynl_fast import SPECS, YnlFamily

SPEC = os.path.join(SPECS, "netdev.yaml")


def dump(ynl):
    """Every page pool netlink lists now; None, said on stderr, if it fails."""
    try:
        return ynl.dump("page-pool-get", {})
    except Exception as e:  # pylint: disable=broad-except # NlError, OSError
        print("page-pool-get failed: %s" % e, file=sys.stderr)
        return None


def busy(pools, ifindexes):
    """Pools that hold pages and are the IFINDEXes' or destroyed."""
    return [p for p in pools if p.get("inflight", 0) > 0 and
            (p.get("ifindex") in ifindexes or "detach-time" in p)]


def answer(ynl, argv):
    """Answers one question; its exit status."""
    if len(argv) == 2 and argv[0] == "of":
        ifindex = int(argv[1])
        pools = [p for p in dump(ynl) or [] if p.get("ifindex") == ifindex]
        print(len(pools), sum(p.get("inflight", 0) for p in pools),
              sum("detach-time" in p for p in pools))
        return 0
    if len(argv) >= 2 and argv[0] == "idle":
        deadline = time.monotonic() + float(argv[1])
        ifindexes = {int(i) for i in argv[2:]}
        while True:
            pools = dump(ynl)
            left = busy(pools, ifindexes) if pools is not None else None
            # A destroyed pool's release is retried once a second.
            if left == [] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if left is None:
            print("page-pool-get failed")
            return 1
        for p in left:
            print("pool id %s ifindex %s inflight %s%s" % (
                p.get("id"), p.get("ifindex", "-"), p["inflight"],
                " detached" if "detach-time" in p else ""))
        return 1 if left else 0
    print(__doc__, file=sys.stderr)
    return 2


def main(argv):
    ynl = YnlFamily(SPEC, "")
    if argv != ["serve"]:
        return answer(ynl, argv)
    for line in sys.stdin:
        rc = answer(ynl, line.split())
        print("rc %d" % rc, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
