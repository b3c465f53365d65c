"""The KV pool at the architecture's scale (SPEC §4.4 - §4.9, decision 0016).

:class:`KVPool` is the golden model of the scaled pool: ``(seq, pos)`` ->
page for 2^20 pages and more, with segments and block tables for committed
positions, tree slots for speculative ones, a free FIFO, GCLOCK spill to HBM,
a tree-PLRU TLB per lookup port and CRC-64 dedup tags. Every operation
returns a :class:`Result` or raises a :class:`PoolError` (a ``ValueError``
with a :class:`PoolErr` ``code``) and then changes nothing.

Modules: :mod:`~golden.kvpool.pool` (the operations and the choices made
where the SPEC is silent), :mod:`~golden.kvpool.view` (readers, snapshot),
:mod:`~golden.kvpool.segments`, :mod:`~golden.kvpool.trees`,
:mod:`~golden.kvpool.pages`, :mod:`~golden.kvpool.tlb`,
:mod:`~golden.kvpool.tags`, :mod:`~golden.kvpool.crc`,
:mod:`~golden.kvpool.params`, :mod:`~golden.kvpool.errors`,
:mod:`~golden.kvpool.result`; ``python -m golden.kvpool.bench`` measures
its speed at 2^20 pages.

The flat pool of SPEC §4.1 - §4.3 (:mod:`golden.kvcache`) is unchanged.
"""

from golden.kvpool.errors import PoolErr, PoolError
from golden.kvpool.params import BLOCK, CMAX, DEFAULTS, RANGES, PoolParams
from golden.kvpool.pool import KVPool
from golden.kvpool.result import Result

__all__ = [
    "BLOCK",
    "CMAX",
    "DEFAULTS",
    "RANGES",
    "KVPool",
    "PoolErr",
    "PoolError",
    "PoolParams",
    "Result",
]
