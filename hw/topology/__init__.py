"""The topology optimiser's engines (SPEC §3.10, §3.11), built by
:class:`hw.topology_optimiser.TopologyOptimiser`.

* :mod:`hw.topology.seq`: :class:`SeqMul` (shift-and-add multiplier) and
  :class:`SeqDiv` (restoring divider), one bit per cycle;
* :mod:`hw.topology.stats`: :class:`Window`, the statistics window of §3.10;
* :mod:`hw.topology.estimate`: :class:`Estimator`, the smoothed and raw
  estimates of §3.10, normalised, from the window's sums;
* :mod:`hw.topology.dp`: :class:`DPEngine`, the fixed-point Sequoia DP of
  §3.11 over memories, the budgets' values and the chosen budget's tree
  (breadth first, with its value under the raw estimate);
* :mod:`hw.topology.config`: :class:`ConfigCheck`, the active configuration
  and the check of a configuration beat (built into the optimiser's own
  module and main FSM, not a submodule), and the configuration's widths.

Note: these modules declare no ``wiring.Component`` and may use ordinary
annotations.
"""

from hw.topology.config import ConfigCheck
from hw.topology.dp import DPEngine
from hw.topology.estimate import Estimator
from hw.topology.seq import SeqDiv, SeqMul
from hw.topology.stats import Window

__all__ = ["SeqMul", "SeqDiv", "Window", "Estimator", "DPEngine", "ConfigCheck"]
