"""The behavioural SpecDecode-1 chip: the four-phase loop of SPEC §1 on swappable blocks.

``Chip(ChipConfig(...)).run()`` decodes the configured workload: every chip
step drafts a tree per sequence, verifies it through the KV pool, accepts on
the token tree manager and commits, on the ``python`` backend (the golden
functions) or the ``rtl`` backend (the Amaranth blocks on Verilator); the
tokens equal the golden decoder's for the same seed. Modules:

``config``
    :class:`ChipConfig`, its four parameter groups and their validation.
``policy``
    :func:`make_policy`: the tree policy of a sequence.
``loop``
    :class:`Chip`: the phases, the KV mapping, the backends (its docstring).
``verifier``
    The verify phase: the KV walk through each node's view, ``pt``/``qt``, residuals.
``result``
    :class:`ChipResult` and the per-step records.
``step_timing``
    :func:`time_step`: a chip step on the timing model (:mod:`sim.timing`).
"""

from sim.chip.config import (
    BACKENDS,
    BUILDERS,
    STATIC_BRANCHING,
    TREES,
    BlockParams,
    ChipConfig,
    DecodeParams,
    PolicyParams,
    TimingParams,
    static_parents,
)
from sim.chip.loop import Chip
from sim.chip.policy import make_policy
from sim.chip.result import ChipResult, ChipStep, SeqResult, SeqStep
from sim.chip.step_timing import time_step

__all__ = [
    "BACKENDS",
    "BUILDERS",
    "STATIC_BRANCHING",
    "TREES",
    "BlockParams",
    "Chip",
    "ChipConfig",
    "ChipResult",
    "ChipStep",
    "DecodeParams",
    "PolicyParams",
    "SeqResult",
    "SeqStep",
    "TimingParams",
    "make_policy",
    "static_parents",
    "time_step",
]
