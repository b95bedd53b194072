# SPDX-License-Identifier: GPL-2.0
"""Longer pyroute2 timeouts for tdc in the emulated test VM.

tdc_fq.sh puts this directory on PYTHONPATH, so Python imports this module
at startup. tdc's nsPlugin creates each test's netns through pyroute2,
which forks a helper process and gives it two seconds to answer; under
single-threaded TCG a fork and the helper's start can take longer (CI saw
"TimeoutError: no response from the child pid"), which failed all 18 tests
before any of them ran. tdc itself stays unmodified.
"""

try:
    from pyroute2 import config
except ImportError:
    pass
else:
    config.default_communicate_timeout = 60
    config.default_create_socket_timeout = 120
