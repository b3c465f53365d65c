"""Block backends of the chip model: the interface both backends implement.

The chip model (:mod:`sim.chip`) is written once against two protocols:

* :class:`TreeManagerBackend`: the token tree manager of SPEC §1 (RNG lanes,
  tree mask generator, acceptance sampler, token sampler) for one
  verification step;
* :class:`KVBackend`: the shared KV-cache pool of SPEC §4, with exactly the
  operations and signatures of :class:`golden.kvcache.BlockTable` (which is
  itself the ``python`` backend's pool), plus a batched lookup.

Two implementations: ``python`` (the golden fixed-point functions and
``golden.kvcache.BlockTable``, cycles from :mod:`sim.cycles`) and ``rtl``
(:mod:`sim.rtl`: ``hw/specdecode_top.py`` simulated on Verilator through cocotb,
cycles counted on the simulated clock). For the same inputs both return the
same values, bit for bit; errors raise :class:`golden.kvcache.KVError` (a
``ValueError``) with the same ``code`` in both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["TreeStep", "TreeManagerBackend", "KVBackend", "Query"]


@dataclass(frozen=True)
class TreeStep:
    """What the tree manager returns for one step.

    Members
    -------
    rows : list[int]
        Mask rows of nodes ``0 .. n-1`` (SPEC §2; bit ``j`` of row ``i`` set
        when ``j`` is ``i`` or an ancestor of ``i``), as streamed to the verifier.
    last : int
        Deepest accepted node (SPEC §3.2); ``0`` when nothing was accepted.
    path_mask : int
        ``rows[last]``.
    accepted_tokens : list[int]
        The accepted draft tokens in depth order (``len == depth(last)``).
    extra : int
        The extra token drawn from the residual weights of ``last`` (SPEC §3.5).
    cycles : dict[str, int]
        Clock cycles per phase, keys as the fields of
        :class:`sim.cycles.AcceptCycles` that the backend can count (at least
        ``"mask"``, ``"accept"``, ``"sampler"``).
    """

    rows: list[int]
    last: int
    path_mask: int
    accepted_tokens: list[int]
    extra: int
    cycles: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class TreeManagerBackend(Protocol):
    """The token tree manager for one sequence (SPEC §1 phase 3).

    Parameters of the implementation: ``N_NODES``, ``PROB_BITS``,
    ``RAND_BITS``, ``WEIGHT_BITS``, ``TOKEN_BITS`` (SPEC §5), as attributes
    named in lower case.
    """

    n_nodes: int
    prob_bits: int
    rand_bits: int
    weight_bits: int

    def seed(self, seed: int) -> None:
        """Seed the lanes: afterwards they run as ``golden.rng.LaneRNG(seed, n_nodes)``."""
        ...

    def step(
        self,
        parents: Sequence[int],
        tokens: Sequence[int],
        pt: Sequence[int],
        qt: Sequence[int],
        residual: Callable[[int], Sequence[int]],
    ) -> TreeStep:
        """One verification step.

        Advances every lane once (the step's randomness is that output, as
        ``golden.rng.LaneRNG.next()``), streams the tree (``parents[0] == -1``,
        ``tokens[0]``, ``pt[0]``, ``qt[0]`` ignored; ``pt`` / ``qt`` fixed
        point of ``prob_bits``), decides (``golden.accept.decide`` with
        ``u[i] = out[i] >> (32 - rand_bits)``), then calls ``residual(last)``
        for the residual weights of ``last`` (``weight_bits`` integers, one per
        vocabulary entry; the verifier's answer) and draws the extra token
        (``golden.sampler.sample_weights(weights, out[0])``). A backend with the
        one-pass token select (spec §3.12) may call ``residual`` for every node
        before the decision (its totals pass); the token is the same.
        Raises ``ValueError`` naming the field for a tree larger than
        ``n_nodes``, an invalid parent list or out-of-range values.
        """
        ...


#: one lookup: ``(seq, layer, pos, view)``
Query = tuple[int, int, int, int]


@runtime_checkable
class KVBackend(Protocol):
    """The shared KV-cache pool: ``golden.kvcache.BlockTable``'s operations.

    ``cycles`` counts the pool's clock cycles spent so far (operations, one
    each, plus lookups, one per query per port; see SPEC §6).
    """

    cycles: int

    @property
    def free_pages(self) -> int: ...

    @property
    def valid_entries(self) -> int: ...

    def lookup(self, seq: int, layer: int, pos: int, view: int = 0) -> int | None: ...

    def lookups(self, queries: Sequence[Query]) -> list[int | None]:
        """Many lookups (in order; the rtl backend spreads them over both ports)."""
        ...

    def insert(
        self, seq: int, layer: int, pos: int, owner: int = 0, committed: bool = False
    ) -> int: ...

    def commit(self, seq: int, accept: int) -> list[int]: ...

    def fork(self, src: int, dst: int) -> None: ...

    def release(self, seq: int) -> list[int]: ...
