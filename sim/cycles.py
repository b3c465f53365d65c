"""Cycle model of the token tree manager and the KV-cache pool for one decode step.

A pure function of a step's quantities (tree size, vocabulary, sampler lanes,
accepted tokens, KV-table traffic) so that the chip model can call it every
step. The formulas are SPEC §6's cycle targets; the latencies default to the
values the RTL measures (README, one section per block), and ``SPEC_LATENCY``
gives SPEC §6's upper bounds instead.

Phases of one step (``n`` tree nodes, vocabulary ``V``, ``LANES`` sampler lanes):

============  =====================================  ==========================================
phase         cycles                                 source
============  =====================================  ==========================================
``mask``      ``n + mask``                           SPEC §6 "n cycles + at most 2"; README: rows
                                                     on ``n`` consecutive cycles, the last 2
                                                     after the end beat. Before verification:
                                                     the verifier's tree-attention mask.
``load``      ``n + mask``                           after verification the nodes (with ``pt``,
                                                     ``qt``) stream through the mask generator
                                                     into the acceptance sampler, one per cycle
                                                     (README, tree manager composition).
``decide``    ``decide`` (1 + 2)                     SPEC §6 "1 cycle after the last node is
                                                     loaded; path and last within 2 more";
                                                     README: E1, E3.
``sampler``   ``2 * ceil(V / LANES) + sampler``      SPEC §6 (``+ at most 4``); README: token
                                                     taken at edge ``2N + 2``. Starts when
                                                     ``last`` is known (it samples ``last``'s
                                                     residual).
``tokens``    ``accepted + tokens`` (0 if none)      README: tokens from E6, last at
                                                     E5 + accepted, i.e. ``accepted + 2`` after
                                                     E3. In parallel with the sampler.
``commit``    ``1 + commit_result``                  SPEC §4.2/§6 one cycle; README: result beat
                                                     2 cycles after. In parallel with the
                                                     sampler (it needs only ``row[last]``).
``inserts``   ``inserts`` (1 per cycle)              SPEC §6 "1 per cycle, sustained"; during
                                                     verification (each layer's new KV).
``lookups``   ``ceil(lookups / lookup_ports)``       SPEC §6 "KV lookup 1 cycle", one per port
                                                     per cycle; during verification.
============  =====================================  ==========================================

``pre_verify = mask``; ``post_verify = load + decide + 1 + max(sampler,
tokens, commit)`` is what the step's critical path pays after the verifier's
last output (the next draft needs the extra token; the ``+ 1``: ``last`` is
registered at the end of ``decide`` and usable from the next cycle, so the
residual weights' first beat is taken one cycle later, as measured on the RTL
by :mod:`sim.rtl`); ``during_verify = max(inserts,
lookups)`` runs under the verifier and binds only if it outlasts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from checks import integer, power_of_two

__all__ = [
    "RTL_LATENCY",
    "SPEC_LATENCY",
    "AcceptCycles",
    "Latency",
    "accept_cycles",
    "ONE_PASS_LATENCY",
    "SELECT_HANDOFF",
    "ONE_PASS_MAX_LANES",
    "check_select_lanes",
    "SAMPLERS",
    "mask_cycles",
    "sampler_cycles",
    "totals_cycles",
]

#: Largest tree (SPEC §5 ``N_NODES`` range) and vocabulary (``TOKEN_BITS = 17``).
MAX_NODES = 1024
MAX_VOCAB = 1 << 17
#: SPEC §5 ``LANES`` range.
MIN_LANES, MAX_LANES = 1, 16
#: token samplers: SPEC §3.5's two passes after the decision (``hw/token_sampler.py``), or
#: spec §3.12's one pass after it, the totals before (``hw/token_select.py``)
SAMPLERS = ("two_pass", "one_pass")
#: the one-pass sampler's lanes (a power of two) and its cycles beyond ``ceil(V / LANES)``
#: from the decision (the ``result`` beat taken) to the token taken: the tree manager's
#: hand-off (``SELECT_HANDOFF``, ``result`` taken -> ``sel`` taken) and the block's ``sel``
#: to token (7), measured by ``tb/test_tree_manager.py`` and ``tb/test_token_select.py``
#: (rtl); spec §6's target
ONE_PASS_MAX_LANES = 128
ONE_PASS_LATENCY = {"rtl": 8, "spec": 8}
SELECT_HANDOFF = 1
#: the scaled pool's TLB miss: its reply 3 cycles after the query against 1 for a hit
#: (``hw.kvpool``, measured by ``tb/kvpool``'s cycle test into ``kvpool_cycles.json``;
#: docs/spec.md §6 allows 4 more), and replies stay in order: 2 cycles more per miss
TLB_MISS_CYCLES = 2


@dataclass(frozen=True)
class Latency:
    """Fixed latencies (cycles) added to each block's streaming time.

    Attributes
    ----------
    mask : int
        Tree mask generator: last row this many cycles after the end beat.
    decide : int
        Acceptance sampler: path and ``last`` this many cycles after the last node.
    sampler : int
        Token sampler: token this many cycles after ``2 * ceil(V / LANES)``.
    tokens : int
        Accepted tokens: the last one ``accepted + tokens`` cycles after ``last``.
    commit_result : int
        KV commit: result beat this many cycles after the one-cycle operation.
    """

    mask: int
    decide: int
    sampler: int
    tokens: int
    commit_result: int


#: Latencies the RTL measures (README: mask gen, acceptance sampler, token sampler, KV pool).
RTL_LATENCY = Latency(mask=2, decide=3, sampler=2, tokens=2, commit_result=2)
#: SPEC §6 upper bounds (the commit counted as its one cycle, as SPEC §6 states it).
SPEC_LATENCY = Latency(mask=2, decide=3, sampler=4, tokens=2, commit_result=0)

_LATENCIES = {"rtl": RTL_LATENCY, "spec": SPEC_LATENCY}


@dataclass(frozen=True)
class AcceptCycles:
    """Per-phase cycle counts of one step's tree-manager and KV-pool work.

    Attributes
    ----------
    mask, load, decide, sampler, tokens, commit, inserts, lookups : int
        The phases of the module docstring's table.
    build, optimise, stream : int
        The hardware tree builder's and topology optimiser's cycles
        (:mod:`sim.build_cycles`; 0 when software shapes the trees): ``build``
        before verification, ``optimise`` after the decision, ``stream`` under
        the draft.
    totals : int
        The one-pass sampler's totals, under verification (0 with the two-pass one).
    """

    mask: int
    load: int
    decide: int
    sampler: int
    tokens: int
    commit: int
    inserts: int
    lookups: int
    build: int = 0
    optimise: int = 0
    stream: int = 0
    totals: int = 0

    @property
    def pre_verify(self) -> int:
        """Cycles between the end of drafting and the start of verification (the
        tree builder's tail, then the mask)."""
        return self.build + self.mask

    @property
    def post_verify(self) -> int:
        """Cycles after the verifier's last output until the next step can start
        (a topology optimiser's re-solve included)."""
        return (
            self.load + self.decide + 1 + max(self.sampler, self.tokens, self.commit)
            + self.optimise
        )  # fmt: skip

    @property
    def during_verify(self) -> int:
        """KV-table (and one-pass totals) cycles that run under verification (binding
        only if longer)."""
        return max(self.inserts, self.lookups, self.totals)

    @property
    def critical(self) -> int:
        """Cycles the tree manager adds to a step's critical path (pre + post)."""
        return self.pre_verify + self.post_verify


def _latency(latency: Latency | str) -> Latency:
    if isinstance(latency, Latency):
        return latency
    if latency in _LATENCIES:
        return _LATENCIES[latency]
    raise ValueError(f"latency = {latency!r}: must be a Latency or one of {sorted(_LATENCIES)}")


def mask_cycles(n_nodes: int, latency: Latency | str = RTL_LATENCY) -> int:
    """Tree mask generator cycles for ``n_nodes`` nodes: ``n + 2`` (SPEC §6).

    Parameters
    ----------
    n_nodes : int
        Tree nodes, root included, ``1..1024``.
    latency : Latency or {"rtl", "spec"}
        Fixed latencies.

    Returns
    -------
    int
    """
    n = integer("n_nodes", n_nodes, 1, MAX_NODES)
    return n + _latency(latency).mask


def check_select_lanes(value: object, name: str = "select_lanes") -> int:
    """``SELECT_LANES`` of the chip's blocks: 0 (the two-pass sampler) or a power of two
    up to :data:`ONE_PASS_MAX_LANES` (the one-pass select); ``ValueError`` naming
    ``name`` otherwise (the RTL's own check: ``hw.tree_manager.check_select_lanes``)."""
    return power_of_two(name, value, ONE_PASS_MAX_LANES, zero="two-pass sampler")


def _lanes(lanes: int, kind: str) -> int:
    if kind not in SAMPLERS:
        raise ValueError(f"sampler = {kind!r}: must be one of {', '.join(SAMPLERS)}")
    if kind == "two_pass":
        return integer("lanes", lanes, MIN_LANES, MAX_LANES)
    return power_of_two("lanes", lanes, ONE_PASS_MAX_LANES)


def sampler_cycles(
    vocab: int,
    lanes: int = 4,
    latency: Latency | str = RTL_LATENCY,
    *,
    sampler: str = "two_pass",
) -> int:
    """Token sampler cycles for one draw, from the decision to the token.

    Parameters
    ----------
    vocab : int
        Vocabulary size ``V``, ``1..131072``.
    lanes : int
        Weights per cycle: ``1..16`` (SPEC §5) for ``two_pass``; a power of two in
        ``1..128`` for ``one_pass``.
    latency : Latency or {"rtl", "spec"}
        ``rtl``: the RTL's measured latency; ``spec``: SPEC §6's bound.
    sampler : {"two_pass", "one_pass"}
        ``two_pass`` (SPEC §3.5): ``2 * ceil(V / LANES)`` + 2 (rtl) or + 4 (spec);
        ``one_pass`` (spec §3.12): ``ceil(V / LANES)`` + 7 (rtl) or + 8 (spec).

    Returns
    -------
    int
    """
    v = integer("vocab", vocab, 1, MAX_VOCAB)
    ln = _lanes(lanes, sampler)
    lat = _latency(latency)
    if sampler == "one_pass":
        return math.ceil(v / ln) + ONE_PASS_LATENCY["spec" if lat == SPEC_LATENCY else "rtl"]
    return 2 * math.ceil(v / ln) + lat.sampler


def totals_cycles(n_nodes: int, vocab: int, lanes: int) -> int:
    """The one-pass sampler's totals (spec §3.12) for a tree: every node's weights at one
    beat per cycle, ``n * ceil(V / LANES)`` cycles, under verification."""
    n = integer("n_nodes", n_nodes, 1, MAX_NODES)
    v = integer("vocab", vocab, 1, MAX_VOCAB)
    return n * math.ceil(v / _lanes(lanes, "one_pass"))


def accept_cycles(
    n_nodes: int,
    vocab: int,
    lanes: int = 4,
    accepted: int = 0,
    *,
    inserts: int = 0,
    lookups: int = 0,
    lookup_ports: int = 1,
    latency: Latency | str = RTL_LATENCY,
    sampler: str = "two_pass",
) -> AcceptCycles:
    """Per-phase cycles of one step's tree-manager and KV-pool work (module docstring).

    Parameters
    ----------
    n_nodes : int
        Tree nodes this step, root included, ``1..1024``.
    vocab : int
        Vocabulary size, ``1..131072``.
    lanes : int
        Token-sampler lanes (:func:`sampler_cycles`).
    accepted : int
        Draft tokens accepted this step (excluding the extra token), ``0..n_nodes - 1``.
    inserts : int
        KV-table inserts this step (speculative KV of the tree nodes, one per node
        and layer), ``>= 0``.
    lookups : int
        KV-table lookups this step on the ports counted by ``lookup_ports``, ``>= 0``.
    lookup_ports : int
        Lookup ports sharing ``lookups``, ``>= 1``.
    latency : Latency or {"rtl", "spec"}
        ``RTL_LATENCY`` (default, README's measurements) or ``SPEC_LATENCY``.
    sampler : {"two_pass", "one_pass"}
        The token sampler (:func:`sampler_cycles`); ``one_pass`` adds its totals
        under verification (:func:`totals_cycles`).

    Returns
    -------
    AcceptCycles

    Raises
    ------
    ValueError
        Naming the argument that is out of range.
    """
    n = integer("n_nodes", n_nodes, 1, MAX_NODES)
    a = integer("accepted", accepted, 0, n - 1)
    ins = integer("inserts", inserts, 0)
    lk = integer("lookups", lookups, 0)
    ports = integer("lookup_ports", lookup_ports, 1)
    lat = _latency(latency)
    return AcceptCycles(
        mask=mask_cycles(n, lat),
        load=n + lat.mask,
        decide=lat.decide,
        sampler=sampler_cycles(vocab, lanes, lat, sampler=sampler),
        tokens=a + lat.tokens if a else 0,
        commit=1 + lat.commit_result,
        inserts=ins,
        lookups=math.ceil(lk / ports),
        totals=totals_cycles(n, vocab, lanes) if sampler == "one_pass" else 0,
    )
