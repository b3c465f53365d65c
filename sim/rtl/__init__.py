"""The chip model's ``rtl`` backend: ``hw/specdecode_top.py`` simulated on Verilator through cocotb.

:func:`open_rtl` builds ``specdecode_top`` (:class:`hw.specdecode_top.Top`: the token
tree manager and the KV-cache pool side by side) for one parameter set
(Verilog and the Verilator model are cached under ``build/``), starts the
co-simulation in a child process and yields the two backends of
:mod:`sim.backend`, which share that one simulation:

* :class:`RTLTreeManager` (:class:`sim.backend.TreeManagerBackend`);
* :class:`RTLKVPool` (:class:`sim.backend.KVBackend`).

How it runs. The child process runs ``python -m sim.rtl.server`` through
:func:`flows.toolchain.run` (the one place that sets up Verilator's
environment); cocotb loads :mod:`sim.rtl.server` inside the simulator, whose
test connects back over a Unix socket (``COSIM_ADDR``) and serves one request
per backend call: it drives the top-level ports cycle by cycle for as long as
the operation takes and returns the outputs and the cycles they came at on
the simulated clock. Requests and replies are pickled dicts
(:mod:`multiprocessing.connection` framing).

Errors. Bad arguments raise ``ValueError`` naming the field before anything
is sent (as the golden functions do); the pool's RTL ``error`` results raise
:class:`golden.kvcache.KVError` with the RTL's ``code`` (numbered as
``KVErr``), the table unchanged. A simulation that dies, hangs past
``timeout`` or is closed raises :class:`RTLSimError` (a ``RuntimeError``)
with the tail of its log; the child's process group is then ended.

Deviation (the RTL's, SPEC §4.3, README): a commit that would leave a
sequence two committed entries at one ``(layer, pos)`` is not detected (the
golden model raises ``KVErr.TWO_COMMITTED``); the chip's commits use an
ancestor chain, which cannot cause it.
"""

from sim.rtl.backends import RTLKVPool, RTLTreeManager, open_rtl
from sim.rtl.build import build_top, hdl_params
from sim.rtl.cosim import Cosim, RTLSimError

__all__ = [
    "RTLSimError",
    "RTLTreeManager",
    "RTLKVPool",
    "Cosim",
    "open_rtl",
    "build_top",
    "hdl_params",
]
