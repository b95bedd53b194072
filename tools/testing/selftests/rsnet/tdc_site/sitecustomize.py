# SPDX-License-Identifier: GPL-2.0
"""tdc in the emulated test VM: no pyroute2, its netns ready, scapy lean.

tdc_fq.sh puts this directory on PYTHONPATH, so Python imports this module
at startup. tdc's files stay unmodified; this module changes, as they are
imported, how nsPlugin makes a test's netns and which layers scapy loads.

pyroute2 is hidden. tdc's nsPlugin uses pyroute2 when it can import it, and
iproute2 (one `ip -b -` process fed the setup commands) when it cannot. In
the single-threaded TCG guest the pyroute2 path cost more than the tests:
the import alone took 25 s, and each test's netns was made by a forked
helper that pyroute2 gave two seconds to answer, which CI once saw time
out.

nsPlugin's iproute2 path is made to wait for its own setup. It writes each
test's commands (netns add, the veth, dummy and ifb made and moved into the
netns, each brought up, the veth's outer end $DEV0 up last) to the `ip -b -`
process and returns once /run/netns/NS exists, which the first command
makes; ip then still works through the rest while tdc runs the test. Under
TCG the rest took 1.6 to 4.0 s, while tdc reached the scapy send of case
9479 on $DEV0 1.7 to 3.9 s after writing them: when ip was later, sendp()
raised ENETDOWN ($DEV0 still down), an exception tdc does not catch, so
tdc died before printing any result and every case of the file was lost.
With pyroute2 the same setup is synchronous; here the plugin returns once
ip has carried out the batch's last line ($DEV0 up; ip runs the lines in
order and exits at a failing one, which tdc's _proc_check reports).

Most of that batch's time went to its three `netns exec NS ip link set X
up` lines: each a fork and exec of ip, in a mount namespace of its own
with sysfs mounted again. Each is folded into the line that moved X into
the netns, `link set X netns NS up`: one RTM_NEWLINK that moves the device
and then sets IFF_UP (do_setlink() changes the netns before the flags), in
the ip process already running. Same devices, same names, same state at
the end; the wait for it (above) went from 87.8 s to 19.1 s for the 19 cases
(the second under the higher host load: load average 10 against 7).

scapy loads only the layers fq.json's packets are made of. tdc's scapy
plugin does `from scapy.all import *` and eval()s each case's packet in
that namespace; scapy.all imports every layer of conf.load_layers (about
70: bluetooth, dns, dot11, tls, ...). fq.json's one packet is
Ether/IP/TCP: scapy.layers.l2 and scapy.layers.inet. Measured in the guest
(a loaded host): `import scapy.all` 53 and 55 s, with those two layers 23
and 27 s. A case whose packet needs another layer fails (NameError).
"""

import importlib.abc
import importlib.machinery
import re
import sys
import time

IFF_UP = 0x1
# How long ip may take for one test's batch before the test fails (TCG,
# a loaded host: 4 s seen).
BATCH_TIMEOUT = 60


class _NoPyroute2(importlib.abc.MetaPathFinder):
    """Makes `import pyroute2` fail as if it were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "pyroute2" or name.startswith("pyroute2."):
            raise ImportError(f"{name} is hidden from tdc (tdc_site)", name=name)
        return None


def _is_up(dev):
    try:
        with open(f"/sys/class/net/{dev}/flags") as f:
            return int(f.read(), 16) & IFF_UP != 0
    except FileNotFoundError:
        return False


def _fold_ups(cmds):
    """Each `netns exec NS IP link set X up` folded into `link set X netns NS`.

    Returns the commands unchanged if one has no such line before it.
    """
    out = list(cmds)
    for c in cmds:
        m = re.fullmatch(r"netns exec (\S+) \S+ link set (\S+) up", c)
        if not m:
            continue
        ns, dev = m.groups()
        move = f"link set {dev} netns {ns}"
        if move not in out or out.index(move) > out.index(c):
            return list(cmds)
        out[out.index(move)] = move + " up"
        out.remove(c)
    return out


def _patch_ns_plugin(mod):
    """nsPlugin's _ipr2_ns_create returns once ip has carried it out."""
    cls = mod.SubPlugin
    cmds = cls._ipr2_ns_create_cmds
    cls._ipr2_ns_create_cmds = lambda self: _fold_ups(cmds(self))
    create = cls._ipr2_ns_create
    # The last line of the batch is $DEV0 up (then $DEV2's, with -d,
    # which tdc_fq.sh does not use).
    if not cls._ipr2_ns_create_cmds(_Probe())[-1].endswith("link set DEV0 up"):
        raise RuntimeError("tdc_site: nsPlugin's batch no longer ends with $DEV0 up")

    def ipr2_ns_create(self):
        create(self)
        dev0 = self.args.NAMES["DEV0"]
        deadline = time.monotonic() + BATCH_TIMEOUT
        while not _is_up(dev0):
            self._proc_check()  # ip exited at a failing line
            if time.monotonic() > deadline:
                raise TimeoutError(f"tdc_site: {dev0} not up {BATCH_TIMEOUT} s "
                                   "after nsPlugin's setup was written")
            time.sleep(0.01)

    cls._ipr2_ns_create = ipr2_ns_create


class _Probe:
    """A stand-in plugin to read nsPlugin's batch with placeholder names."""

    class args:
        device = None
        NAMES = {"NS": "NS", "DEV0": "DEV0", "DEV1": "DEV1", "DUMMY": "DUMMY",
                 "IFB": "IFB", "IP": "IP"}

    def _replace_keywords(self, cmd):
        for k in sorted(self.args.NAMES, key=len, reverse=True):
            cmd = cmd.replace("$" + k, self.args.NAMES[k])
        return cmd


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a function on a module as it is imported, after its code."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_then(module):
            exec_module(module)
            self.then(module)

        spec.loader.exec_module = exec_and_then
        return spec


# The layers fq.json's packets use (see above).
SCAPY_LAYERS = ["l2", "inet"]


def _set_scapy_layers(config):
    config.conf.load_layers = list(SCAPY_LAYERS)


sys.meta_path.insert(0, _NoPyroute2())
# tdc's plugin-lib/nsPlugin.py is patched, and scapy's conf.load_layers
# set, as each is imported.
sys.meta_path.insert(0, _AfterImport("plugin-lib.nsPlugin", _patch_ns_plugin))
sys.meta_path.insert(0, _AfterImport("scapy.config", _set_scapy_layers))
