"""The chip model with the real context in the scaled KV pool (issue 20, item 6).

``python -m sim.context`` (``make context``) grows one long history per
profile, pool size and verifier read mode in a functional
:class:`golden.kvpool.KVPool` (2K to 128K tokens on the 7B and 70B profiles
with 1, 2 and 4 GiB pools), replays the chip model's trees and acceptance
over it, charges the pool's spill, fill and HBM-read traffic to HBM in each
step's time, and checks the article's context claims from bytes per token.
Configuration, compute and report are kept apart:

``config``
    :class:`ContextConfig`, :func:`geometry` (page size and counts of a
    profile's pool), :data:`CLAIMS`.
``study``
    :func:`run_series`: the functional run and its timing (the attention
    model, the read modes and the policies are stated there).
``report``
    :func:`run_study`, the JSON report, the claims check, the text table, the plot.
"""

from sim.context.config import CLAIMS, ContextConfig, PoolGeometry, geometry
from sim.context.study import Point, Series, TraceStep, chip_trace, run_series

__all__ = [
    "CLAIMS",
    "ContextConfig",
    "Point",
    "PoolGeometry",
    "Series",
    "TraceStep",
    "chip_trace",
    "geometry",
    "run_series",
]
