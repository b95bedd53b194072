#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The kernel's ynl (tools/net/ynl/pyynl of $RSNET_KSRC), parsing specs with
libyaml when PyYAML has it: under TCG the pure-Python parser took most of
a ynl run's time (a tc.yaml request about 20 s).

  import ynl_fast; ynl_fast.YnlFamily(...)    the library (pp_pools.py)
  ynl_fast.py ARGS...                         the kernel's cli.py with ARGS
"""
import os
import runpy
import sys

import yaml

YNL_DIR = os.path.join(os.environ["RSNET_KSRC"], "tools/net/ynl/pyynl")
SPECS = os.path.join(os.environ["RSNET_KSRC"], "Documentation/netlink/specs")
sys.path.insert(0, YNL_DIR)
if getattr(yaml, "__with_libyaml__", False):
    yaml.safe_load = lambda stream: yaml.load(stream, Loader=yaml.CSafeLoader)
from lib import YnlFamily  # noqa: E402,F401 (after the path and loader are set)

if __name__ == "__main__":
    sys.argv[0] = os.path.join(YNL_DIR, "cli.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
