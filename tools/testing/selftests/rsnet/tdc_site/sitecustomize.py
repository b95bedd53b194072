# SPDX-License-Identifier: GPL-2.0
"""tdc without pyroute2, in the emulated test VM.

tdc_fq.sh puts this directory on PYTHONPATH, so Python imports this module
at startup. tdc's nsPlugin uses pyroute2 when it can import it, and
iproute2 (one `ip -b -` process fed the setup commands) when it cannot. In
the single-threaded TCG guest the pyroute2 path cost more than the tests:
the import alone took 25 s, and each test's netns was made by a forked
helper that pyroute2 gave two seconds to answer, which CI once saw time
out. tdc and its plugins stay unmodified; only pyroute2 is hidden.
"""

import importlib.abc
import sys


class _NoPyroute2(importlib.abc.MetaPathFinder):
    """Makes `import pyroute2` fail as if it were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "pyroute2" or name.startswith("pyroute2."):
            raise ImportError(f"{name} is hidden from tdc (tdc_site)", name=name)
        return None


sys.meta_path.insert(0, _NoPyroute2())
