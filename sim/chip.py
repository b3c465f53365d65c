"""The behavioural SpecDecode-1 chip: the four-phase loop of SPEC §1 on swappable blocks.

One chip step serves every active sequence of the batch (up to ``SEQS``),
each through the four phases:

1. **Draft** (draft accelerator, behavioural). The sequence's tree policy
   (:mod:`golden.trees`: chain, static, Sequoia DP re-solved by the topology
   optimiser of :mod:`sim.topology`, EAGLE-2) shapes the tree and the draft
   model draws its tokens from the sequence's own numpy stream
   (``default_rng([seed, golden.decoder.DRAFT_STREAM])``, as the golden
   decoder). The tree builder inserts one speculative KV entry per node and
   modelled layer (``owner`` = node, ``pos = tip + depth``; the root's, owner 0,
   is the KV the verifier computes for the last emitted token) and writes the
   node's token into the entry's page.
2. **Verify** (verifier engine, behavioural). The tree mask generator's rows
   (the backend's ``mask`` pass when it has one) are the tree-attention masks.
   Each node's context is read **from the KV pool**: the committed prefix of
   the target's window once, then, for every node, the tree positions of its
   window looked up with the node's row as the ``view`` (a lookup hits the
   ancestor that wrote that position, never a sibling). The pages' tokens form
   the context tails the target model scores (``probs_tails``); a miss masks
   that position and everything before it out of the node's context, so a
   wrong mask row or a wrong lookup changes the output, as it would on the
   chip. The verifier then computes the residual-adjusted ``pt``/``qt`` of
   every node with the golden fixed-point functions (SPEC §3.2 parallel form,
   :func:`golden.accept.precompute`; greedy: :func:`golden.accept.greedy_pt_qt`).
3. **Accept** (token tree manager, a backend). Lanes, decision, and the extra
   token from the residual weights of ``last`` that the verifier returns
   (the residual, else ``p_last``, else ``argmax p_last``: SPEC §3.5's fallback,
   exactly as the golden decoder).
4. **Commit** (KV pool, a backend). ``commit(seq, row[last])`` keeps the
   accepted path's entries and frees the rest. A finished sequence is released.

Backends (``ChipConfig.backend``): ``python`` (:mod:`sim.python_backend`, the
golden functions) or ``rtl`` (:func:`sim.rtl.open_rtl`, the Amaranth
blocks on Verilator). The step above is the same code for both. For the same
seed and configuration a sequence's tokens equal
``golden.decoder.speculative_generate(..., arith="fixed", seed=seed)``.

KV mapping (SPEC §4 leaves it to the chip model): one entry per token position
and modelled layer, ``(seq, layer, pos) -> page``; the page holds that
position's token (the behavioural "KV": the n-gram target's key is its
token). ``layers`` modelled layers (default 1) multiply the entries; every
layer is read and must agree. Prefill writes the prompt's positions
``0 .. P-2`` as committed entries (the last prompt token is the first root).
A batch's common prompt prefix is written once by sequence 0 and shared by
``fork`` (zero copy); each sequence then writes the rest of its prompt. The
pool must hold, at every sequence's last step, ``P + T - 2 + nodes``
positions per layer (prompt ``P``, ``T`` new tokens, the tree's speculative
nodes), shared prefix counted once: a longer context is a ``ValueError``
before anything runs.

Timing (:mod:`sim.perf`): each chip step is timed with
:func:`sim.perf.step_time` on the profile from its measured quantities (tree
size and depth, draft evaluations, accepted tokens, and the tree manager's
cycles from the backend: mask, load, decide, tokens; the token sampler's
``2 * ceil(V / LANES)`` and the KV-table traffic are re-counted for the
profile's model, its 32,000-token vocabulary and its layers, since the
functional workload is a byte-level n-gram). The context of the timing is the
profile's stated history (``workload.context_len``) plus the sequence's own
tokens. A batch is one verifier pass over every sequence's tree.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from golden import accept as _acc
from golden import trees as _trees
from golden.decoder import DRAFT_STREAM, MODES
from golden.draft import CHILDREN_RULES, StepRecord, TreePolicy
from golden.sampler import quantize, quantize_weights
from golden.tree import structure as _structure
from golden.tree import validate as _validate_tree
from sim import perf
from sim.backend import KVBackend, TreeManagerBackend
from sim.cycles import RTL_LATENCY, SPEC_LATENCY, AcceptCycles, sampler_cycles
from sim.cycles import accept_cycles as cycle_model
from sim.cycles import check_int as _int
from sim.topology import TopologyOptimiser
from sim.workloads import WORKLOADS, load_workload

__all__ = [
    "BACKENDS",
    "TREES",
    "Chip",
    "ChipConfig",
    "ChipResult",
    "ChipStep",
    "SeqResult",
    "SeqStep",
    "make_policy",
]

BACKENDS = ("python", "rtl")
#: Tree policies: ``plain`` (root only), ``chain``, ``static``, ``sequoia``
#: (topology optimiser: Sequoia DP re-solved every K steps, with fallback),
#: ``eagle2`` (dynamic).
TREES = ("plain", "chain", "static", "sequoia", "eagle2")
_DEFAULT_CHILDREN = {
    "plain": "iid",
    "chain": "iid",
    "static": "swor",
    "sequoia": "swor",
    "eagle2": "topk",
}
#: Static shape's branching per depth before truncation to ``nodes`` (breadth first).
STATIC_BRANCHING = (4, 2, 2, 1, 1, 1, 1, 1)


def _choice(name: str, value: object, options: Sequence[str]) -> str:
    if value not in options:
        raise ValueError(f"{name} = {value!r}: must be one of {', '.join(options)}")
    return str(value)


@dataclass(frozen=True)
class ChipConfig:
    """Everything that defines a chip run; every field is validated on construction.

    Attributes
    ----------
    profile : str
        SpecDecode-1 timing profile (:func:`sim.perf.known_profiles`).
    tree : str
        Tree policy, one of :data:`TREES`.
    nodes : int
        Tree budget, root included, ``1 .. n_nodes`` (``chain``: ignored, the
        chain has ``depth + 1`` nodes).
    depth : int
        Largest draft-node depth (``chain``: its length), ``>= 1``.
    children : str or None
        ``iid``, ``swor`` or ``topk`` (SPEC §3.1); ``None``: the policy's
        usual rule (``eagle2``: ``topk``, ``static``/``sequoia``: ``swor``,
        else ``iid``).
    parents : tuple of int or None
        ``static``: the shape (default: :data:`STATIC_BRANCHING` truncated to
        ``nodes`` breadth first).
    mode : str
        ``sample`` or ``greedy``.
    overlap : str
        ``none``, ``prefetch`` or ``speculative`` (:mod:`sim.perf`).
    backend : str
        ``python`` or ``rtl``.
    seed : int
        Seed of sequence 0 (sequence ``b`` uses ``seed + b``).
    tokens : int
        New tokens per sequence, ``>= 1``.
    workload : str
        ``code`` (default) or ``phased`` (:mod:`sim.workloads`).
    prompt_len : int
        Prompt tokens per sequence of the workload, ``>= 1``.
    batch : int
        Sequences decoded together, ``1 .. seqs``.
    prompt_seed : int
        Selects the workload's prompts (``batch`` of them; with ``shared_prompt``
        one, used by every sequence).
    shared_prompt : bool
        Every sequence decodes the same prompt (with its own seed): parallel
        sampling, the whole prompt prefix shared through ``fork``.
    n_nodes, entries, pages, seqs, layer_bits, pos_bits : int
        ``N_NODES``, ``ENTRIES``, ``PAGES``, ``SEQS``, ``LAYER_BITS``,
        ``POS_BITS`` (SPEC §5).
    layers : int
        Modelled layers: KV entries per token position, ``1 .. 2**layer_bits``.
    prob_bits, rand_bits, weight_bits : int
        Fixed-point widths (SPEC §3.3, §3.5), ``8 .. 32``.
    lanes : int
        Token-sampler lanes (``LANES``), ``1 .. 16``.
    lookup_ports : int
        KV lookup ports a batch of lookups is spread over (SPEC §4.2: 2).
    initial_acc : tuple of float
        ``sequoia``/``static``: the acceptance vector before any observation.
    update_every : int
        ``sequoia``: steps between re-solves (``K``).
    window : int
        ``sequoia``: steps in the optimiser's statistics window.
    fallback : bool
        ``sequoia``: allow the fallback to plain decoding.
    topk : int
        ``eagle2``: children per expanded node and nodes expanded per round.
    context_offset : int or None
        Tokens of history the timing assumes before the prompt (default: the
        profile's ``workload.context_len``).
    """

    profile: str = "specdecode1-7b"
    tree: str = "sequoia"
    nodes: int = 32
    depth: int = 8
    children: str | None = None
    parents: tuple[int, ...] | None = None
    mode: str = "sample"
    overlap: str = "prefetch"
    backend: str = "python"
    seed: int = 1
    tokens: int = 160
    workload: str = "code"
    prompt_len: int = 64
    batch: int = 1
    prompt_seed: int = 1
    shared_prompt: bool = False
    n_nodes: int = 64
    entries: int = 256
    pages: int = 256
    seqs: int = 8
    layers: int = 1
    layer_bits: int = 5
    pos_bits: int = 17
    prob_bits: int = 16
    rand_bits: int = 16
    weight_bits: int = 16
    lanes: int = 4
    lookup_ports: int = 2
    initial_acc: tuple[float, ...] = (0.6, 0.15, 0.05, 0.02)
    update_every: int = 16
    window: int = 32
    fallback: bool = True
    topk: int = 4
    context_offset: int | None = None

    def __post_init__(self) -> None:
        prof = self.timing_profile()  # unknown profile: ValueError listing the known ones
        if prof.is_gpu:
            raise ValueError(
                f"profile = {self.profile!r}: a GPU baseline; the chip needs a SpecDecode-1 "
                f"profile ({', '.join(n for n in perf.known_profiles() if 'specdecode' in n)})"
            )
        _choice("tree", self.tree, TREES)
        _choice("mode", self.mode, MODES)
        _choice("backend", self.backend, BACKENDS)
        _choice("workload", self.workload, WORKLOADS)
        if self.overlap not in prof.overlap_modes:
            raise ValueError(
                f"overlap = {self.overlap!r}: profile {prof.name} supports "
                f"{', '.join(prof.overlap_modes)}"
            )
        if self.children is not None:
            _choice("children", self.children, CHILDREN_RULES)
        if self.tree == "eagle2" and self.children_rule != "topk":
            raise ValueError(f"children = {self.children!r}: tree 'eagle2' builds top-k trees")
        n_nodes = _int("n_nodes", self.n_nodes, 1, 1024)
        _int("entries", self.entries, 1, 4096)
        _int("pages", self.pages, 1, 4096)
        seqs = _int("seqs", self.seqs, 1, 64)
        lb = _int("layer_bits", self.layer_bits, 1, 16)
        _int("pos_bits", self.pos_bits, 1, 32)
        _int("layers", self.layers, 1, 1 << lb)
        for name in ("prob_bits", "rand_bits", "weight_bits"):
            _int(name, getattr(self, name), 8, 32)
        _int("lanes", self.lanes, 1, 16)
        _int("lookup_ports", self.lookup_ports, 1)
        _int("seed", self.seed, 0, 2**64 - 64)
        _int("tokens", self.tokens, 1)
        _int("prompt_len", self.prompt_len, 1)
        _int("batch", self.batch, 1, seqs)
        _int("prompt_seed", self.prompt_seed, 0)
        _int("depth", self.depth, 1)
        _int("update_every", self.update_every, 1)
        _int("window", self.window, 1)
        _int("topk", self.topk, 1)
        if self.context_offset is not None:
            _int("context_offset", self.context_offset, 0)
        nodes = _int("nodes", self.nodes, 1)
        if nodes > n_nodes:
            raise ValueError(
                f"nodes = {nodes!r}: a tree larger than N_NODES = {n_nodes} (n_nodes)"
            )
        if self.tree == "chain" and self.depth + 1 > n_nodes:
            raise ValueError(
                f"depth = {self.depth!r}: a chain of {self.depth + 1} nodes is larger than "
                f"N_NODES = {n_nodes} (n_nodes)"
            )
        if self.parents is not None:
            if self.tree != "static":
                raise ValueError(f"parents = {self.parents!r}: only for tree = 'static'")
            _validate_tree(self.parents, max_nodes=n_nodes)
        acc = _trees._check_acc(self.initial_acc, "initial_acc")
        if acc.size > 8:
            raise ValueError(f"initial_acc = {self.initial_acc!r}: at most 8 ranks")
        if self.backend == "rtl" and self.batch > 1:
            raise ValueError(
                f"batch = {self.batch!r}: the rtl backend holds one sequence's lane state "
                "(use backend = 'python' for batches)"
            )

    @property
    def children_rule(self) -> str:
        """The ``children`` rule in effect."""
        return self.children if self.children is not None else _DEFAULT_CHILDREN[self.tree]

    def timing_profile(self) -> perf.Profile:
        """The :class:`sim.perf.Profile` named by ``profile``."""
        if not isinstance(self.profile, str):
            raise ValueError(f"profile = {self.profile!r}: must be a profile name")
        return perf.load_profile(self.profile)

    @property
    def max_tree_nodes(self) -> int:
        """Largest tree the policy can build (root included)."""
        if self.tree == "plain":
            return 1
        if self.tree == "chain":
            return self.depth + 1
        if self.tree == "static":
            return len(static_parents(self))
        return self.nodes

    def replace(self, **changes: Any) -> ChipConfig:
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)


def static_parents(cfg: ChipConfig) -> list[int]:
    """The ``static`` policy's shape: ``cfg.parents`` or the truncated default tree."""
    if cfg.parents is not None:
        return list(cfg.parents)
    full = _trees.full_tree(STATIC_BRANCHING[: cfg.depth])
    return full[: cfg.nodes]  # breadth first: a prefix is a tree


def make_policy(cfg: ChipConfig, profile: perf.Profile | None = None) -> TreePolicy:
    """A fresh tree policy for one sequence (each sequence adapts on its own)."""
    if cfg.tree == "plain":
        return _trees.Chain(0)
    if cfg.tree == "chain":
        return _trees.Chain(cfg.depth)
    if cfg.tree == "static":
        return _trees.StaticTree(static_parents(cfg))
    if cfg.tree == "eagle2":
        return _trees.Eagle2Tree(cfg.nodes, cfg.depth, cfg.topk)
    prof = profile or cfg.timing_profile()
    return TopologyOptimiser(
        prof,
        cfg.nodes,
        cfg.depth,
        list(cfg.initial_acc),
        overlap=cfg.overlap,
        update_every=cfg.update_every,
        window=cfg.window,
        fallback=cfg.fallback,
        context_len=prof.workload.context_len
        if cfg.context_offset is None
        else cfg.context_offset,
    )


# --------------------------------------------------------------------------- results


@dataclass
class SeqStep:
    """One sequence's share of a chip step.

    Attributes
    ----------
    seq : int
        Batch slot (the KV pool's sequence number).
    n_nodes, depth, draft_evals, accepted, last, path_mask : int
        The tree and the decision.
    emitted : list[int]
        Accepted draft tokens, then the extra token.
    context_len : int
        Tokens in the sequence before the step.
    tm_cycles : dict[str, int]
        The tree manager's cycles (backend).
    kv_cycles : int
        KV-pool cycles of the step (inserts, lookups, commit, release).
    inserts, lookups, misses : int
        KV traffic of the step and the lookups that missed.
    predicted : bool or None
        ``speculative`` overlap: the draft's predicted tip was right (the
        accepted path is the first-child chain to its leaf and the extra token
        is the draft's top guess there); ``None`` in other modes.
    probe : bool
        A fallback probe step of the topology optimiser.
    """

    seq: int
    n_nodes: int
    depth: int
    draft_evals: int
    accepted: int
    last: int
    path_mask: int
    emitted: list[int]
    context_len: int
    tm_cycles: dict[str, int]
    kv_cycles: int
    inserts: int
    lookups: int
    misses: int
    predicted: bool | None = None
    probe: bool = False


@dataclass
class ChipStep:
    """One chip step: every active sequence's step and the step's timing."""

    index: int
    seqs: list[SeqStep]
    timing: perf.StepTiming | None = None

    @property
    def emitted(self) -> int:
        """Tokens emitted by the step (all sequences)."""
        return sum(len(s.emitted) for s in self.seqs)


@dataclass
class SeqResult:
    """One sequence's decode.

    Attributes
    ----------
    seq, seed : int
    prompt, tokens : list[int]
        The prompt and the new tokens (at least ``tokens`` of them).
    accepted : list[int]
        Accepted draft tokens per step.
    """

    seq: int
    seed: int
    prompt: list[int]
    tokens: list[int]
    accepted: list[int] = field(default_factory=list)

    @property
    def mean_accepted(self) -> float:
        return float(np.mean(self.accepted)) if self.accepted else 0.0


@dataclass
class ChipResult:
    """What :meth:`Chip.run` returns.

    Attributes
    ----------
    config : ChipConfig
    sequences : list[SeqResult]
    steps : list[ChipStep]
    tm_cycles : dict[str, int]
        Tree-manager cycles per phase, summed.
    kv_cycles, prefill_kv_cycles : int
        KV-pool cycles of the decode steps and of the prefill.
    mask_mismatches : int
        Steps whose mask rows from the tree manager's step differ from the
        rows the verifier used (0 on a healthy chip).
    policies : list[TreePolicy]
        Each sequence's policy after the run (e.g. the optimiser's ``history``).
    elapsed_s : float
        Wall-clock time of the decode loop, after the backends are open and the
        prompts prefilled (the model's own speed).
    """

    config: ChipConfig
    sequences: list[SeqResult]
    steps: list[ChipStep]
    tm_cycles: dict[str, int]
    kv_cycles: int
    prefill_kv_cycles: int
    mask_mismatches: int
    policies: list[TreePolicy]
    elapsed_s: float

    @property
    def tokens(self) -> list[int]:
        """Sequence 0's new tokens."""
        return self.sequences[0].tokens

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def seq_steps(self) -> list[SeqStep]:
        """Every sequence step, in order."""
        return [s for st in self.steps for s in st.seqs]

    @property
    def total_us(self) -> float:
        """Projected decode time on the profile (sum of the steps' expected times)."""
        return sum(s.timing.total_us for s in self.steps if s.timing is not None)

    @property
    def emitted(self) -> int:
        return sum(s.emitted for s in self.steps)

    @property
    def tokens_per_s(self) -> float:
        """Projected tokens/s on the profile (all sequences)."""
        return self.emitted / self.total_us * 1e6 if self.total_us else 0.0

    @property
    def us_per_token(self) -> float:
        return self.total_us / self.emitted if self.emitted else 0.0

    @property
    def mean_accepted(self) -> float:
        acc = [s.accepted for s in self.seq_steps]
        return float(np.mean(acc)) if acc else 0.0

    @property
    def steps_per_s(self) -> float:
        """Chip-model steps per wall-clock second (sequence steps)."""
        return len(self.seq_steps) / self.elapsed_s if self.elapsed_s else 0.0


# --------------------------------------------------------------------------- the chip


@dataclass
class _Seq:
    slot: int
    seed: int
    prompt: list[int]
    ctx: list[int]
    out: list[int]
    policy: TreePolicy
    tm: TreeManagerBackend
    rng: np.random.Generator
    accepted: list[int]
    predicted: bool = False
    done: bool = False


class Chip:
    """The behavioural SpecDecode-1 (module docstring).

    Parameters
    ----------
    config : ChipConfig
    target, draft : Model, optional
        The models (default: the workload's, :func:`sim.workloads.load_workload`).
        The target must define ``context_window`` (the verifier reads that many
        positions from the KV pool per node).

    Raises
    ------
    ValueError
        A model without ``context_window``, or models of different vocabularies.
    """

    def __init__(self, config: ChipConfig, *, target: Any = None, draft: Any = None) -> None:
        if not isinstance(config, ChipConfig):
            raise ValueError(f"config = {config!r}: must be a ChipConfig")
        self.config = config
        self.profile = config.timing_profile()
        self._prompts: list[list[int]] | None = None
        if target is None or draft is None:
            n = 1 if config.shared_prompt else config.batch
            t, d, prompts = load_workload(config.workload, n, config.prompt_len, config.prompt_seed)
            target = t if target is None else target
            draft = d if draft is None else draft
            self._prompts = prompts * config.batch if config.shared_prompt else prompts
        w = getattr(target, "context_window", None)
        if w is None or isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 0:
            raise ValueError(f"target.context_window = {w!r}: the verifier needs an integer >= 0")
        if int(draft.vocab_size) != int(target.vocab_size):
            raise ValueError(
                f"draft.vocab_size = {draft.vocab_size} differs from "
                f"target.vocab_size = {target.vocab_size}"
            )
        self.target = target
        self.draft = draft
        self.window = int(w)
        self.vocab = int(target.vocab_size)
        self._tails = callable(getattr(target, "probs_tails", None))

    # ------------------------------------------------------------------ backends
    @contextmanager
    def open_backends(
        self,
    ) -> Iterator[tuple[Callable[[], TreeManagerBackend], KVBackend]]:
        """Open the configured backend: yields ``(make_tree_manager, kv)``.

        ``make_tree_manager()`` returns the tree manager of the next sequence
        (the ``python`` backend: one per sequence, each with its own lanes;
        ``rtl``: the one in ``hw/top.py``). Subclasses may override this (the
        tests inject faulty blocks here).
        """
        c = self.config
        kw = dict(
            n_nodes=c.n_nodes,
            entries=c.entries,
            pages=c.pages,
            seqs=c.seqs,
            layer_bits=c.layer_bits,
            pos_bits=c.pos_bits,
            prob_bits=c.prob_bits,
            rand_bits=c.rand_bits,
            weight_bits=c.weight_bits,
            lanes=c.lanes,
        )
        if c.backend == "python":
            from sim.python_backend import PythonKV, PythonTreeManager

            kv = PythonKV(
                c.entries,
                c.pages,
                c.seqs,
                c.n_nodes,
                c.layer_bits,
                c.pos_bits,
                lookup_ports=c.lookup_ports,
            )

            def make() -> TreeManagerBackend:
                return PythonTreeManager(
                    c.n_nodes,
                    prob_bits=c.prob_bits,
                    rand_bits=c.rand_bits,
                    weight_bits=c.weight_bits,
                    lanes=c.lanes,
                    latency=self.profile.tree_manager.latency,
                )

            yield make, kv
            return
        try:
            from sim.rtl import open_rtl
        except ImportError as exc:  # pragma: no cover - depends on the tree's state
            raise ValueError(f"backend = 'rtl': sim.rtl is not available ({exc})") from exc
        with open_rtl(**kw) as (tm, kv):
            handed = []

            def make_rtl() -> TreeManagerBackend:
                if handed:
                    raise ValueError("backend = 'rtl': one tree manager, one sequence")
                handed.append(tm)
                return tm

            yield make_rtl, kv

    # ------------------------------------------------------------------ checks
    def check_capacity(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> int:
        """Check that the pool holds the whole decode; returns the entries it needs.

        Raises
        ------
        ValueError
            A context longer than the pool holds (``entries``/``pages``), or a
            position beyond ``POS_BITS``.
        """
        c = self.config
        nmax = c.max_tree_nodes
        shared = _shared_prefix(prompts)
        per = [len(p) + max_new_tokens - 2 + nmax for p in prompts]
        need = c.layers * (shared + sum(x - shared for x in per))
        cap = min(c.entries, c.pages)
        if need > cap:
            raise ValueError(
                f"context: {len(prompts)} sequence(s) of prompt {max(len(p) for p in prompts)} "
                f"+ {max_new_tokens} new tokens + a {nmax}-node tree need {need} KV entries "
                f"({c.layers} layer(s), {shared} shared prefix positions); the pool holds "
                f"entries = {c.entries}, pages = {c.pages}"
            )
        top = max(len(p) for p in prompts) + max_new_tokens + nmax
        if top > 1 << c.pos_bits:
            raise ValueError(
                f"context: positions up to {top} do not fit pos_bits = {c.pos_bits}"
            )
        return need

    # ------------------------------------------------------------------ run
    def run(
        self,
        prompts: Sequence[Sequence[int]] | None = None,
        max_new_tokens: int | None = None,
        *,
        seeds: Sequence[int] | None = None,
        progress: Callable[[int, int], None] | None = None,
        max_steps: int | None = None,
        timing: bool = True,
    ) -> ChipResult:
        """Decode ``max_new_tokens`` per prompt (defaults: the configuration's workload).

        Parameters
        ----------
        prompts : sequence of sequences of int, optional
            One prompt per sequence (``1 .. seqs``), each non-empty.
        max_new_tokens : int, optional
            Default ``config.tokens``.
        seeds : sequence of int, optional
            Per sequence; default ``config.seed + b``.
        progress : callable, optional
            Called after every chip step with ``(tokens done, tokens wanted)``.
        max_steps : int, optional
            Also stop after this many chip steps.
        timing : bool
            Time every step on the profile (the benchmark can skip it).

        Returns
        -------
        ChipResult

        Raises
        ------
        ValueError
            Bad prompts, seeds or counts; a context longer than the pool holds.
        """
        c = self.config
        if prompts is None:
            if self._prompts is None:
                raise ValueError("prompts: none given and the chip has no workload prompts")
            prompts = self._prompts
        prompts = [list(p) for p in prompts]
        if not 1 <= len(prompts) <= c.seqs:
            raise ValueError(f"prompts: {len(prompts)} sequences, must be 1 .. seqs = {c.seqs}")
        if c.backend == "rtl" and len(prompts) > 1:
            raise ValueError(f"prompts: {len(prompts)} sequences; the rtl backend runs one")
        for b, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompts[{b}] is empty: the first root is the last prompt token")
            for i, t in enumerate(p):
                if isinstance(t, bool) or not isinstance(t, numbers.Integral) or not (
                    0 <= t < self.vocab
                ):
                    raise ValueError(f"prompts[{b}][{i}] = {t!r}: token out of range "
                                     f"0 .. {self.vocab - 1}")
        T = c.tokens if max_new_tokens is None else _int("max_new_tokens", max_new_tokens, 1)
        if seeds is None:
            seeds = [c.seed + b for b in range(len(prompts))]
        seeds = [_int(f"seeds[{b}]", s, 0, 2**64 - 1) for b, s in enumerate(seeds)]
        if len(seeds) != len(prompts):
            raise ValueError(f"seeds has {len(seeds)} entries for {len(prompts)} prompts")
        if max_steps is not None:
            _int("max_steps", max_steps, 0)
        self.check_capacity(prompts, T)

        with self.open_backends() as (make_tm, kv):
            pages: dict[int, int] = {}
            seqs: list[_Seq] = []
            for b, (p, s) in enumerate(zip(prompts, seeds, strict=True)):
                tm = make_tm()
                tm.seed(s)
                seqs.append(
                    _Seq(b, s, p, list(p), [], make_policy(c, self.profile), tm,
                         np.random.default_rng([s, DRAFT_STREAM]), [])
                )
            kv0 = kv.cycles
            self._prefill(kv, pages, prompts)
            prefill_cycles = kv.cycles - kv0
            t_start = time.perf_counter()
            steps: list[ChipStep] = []
            tm_cycles: dict[str, int] = {}
            mismatches = 0
            prev_predicted = False
            wanted = T * len(seqs)
            while any(not s.done for s in seqs) and (max_steps is None or len(steps) < max_steps):
                recs = []
                for st in seqs:
                    if st.done:
                        continue
                    rec, bad = self._seq_step(st, kv, pages, T)
                    mismatches += bad
                    for k, v in rec.tm_cycles.items():
                        tm_cycles[k] = tm_cycles.get(k, 0) + v
                    recs.append(rec)
                step = ChipStep(len(steps), recs)
                if timing:
                    step.timing = self._time_step(recs, prev_predicted)
                if c.overlap == "speculative":
                    prev_predicted = all(bool(r.predicted) for r in recs)
                steps.append(step)
                if progress is not None:
                    progress(sum(min(len(s.out), T) for s in seqs), wanted)
            for st in seqs:  # stopped by max_steps: give the pages back
                if not st.done and kv.valid_entries:
                    try:
                        kv.release(st.slot)
                    except ValueError:
                        pass
            kv_total = kv.cycles - kv0 - prefill_cycles
            leak = kv.valid_entries
            elapsed = time.perf_counter() - t_start
        if leak:
            raise RuntimeError(f"KV pool: {leak} entries still valid after every release")
        return ChipResult(
            config=c,
            sequences=[SeqResult(s.slot, s.seed, s.prompt, s.out, s.accepted) for s in seqs],
            steps=steps,
            tm_cycles=tm_cycles,
            kv_cycles=kv_total,
            prefill_kv_cycles=prefill_cycles,
            mask_mismatches=mismatches,
            policies=[s.policy for s in seqs],
            elapsed_s=elapsed,
        )

    # ------------------------------------------------------------------ phases
    def _prefill(self, kv: KVBackend, pages: dict[int, int], prompts: list[list[int]]) -> None:
        """Committed KV of positions ``0 .. P-2`` of every prompt; common prefix by ``fork``."""
        L = self.config.layers
        shared = _shared_prefix(prompts) if len(prompts) > 1 else 0
        start = [0] * len(prompts)
        if shared:
            for pos in range(shared):
                for layer in range(L):
                    pages[kv.insert(0, layer, pos, 0, True)] = prompts[0][pos]
            for b in range(1, len(prompts)):
                kv.fork(0, b)
            start = [shared] * len(prompts)
        for b, p in enumerate(prompts):
            for pos in range(start[b], len(p) - 1):
                for layer in range(L):
                    pages[kv.insert(b, layer, pos, 0, True)] = p[pos]

    def _seq_step(
        self, st: _Seq, kv: KVBackend, pages: dict[int, int], T: int
    ) -> tuple[SeqStep, int]:
        c = self.config
        L = c.layers
        seq = st.slot
        probe = bool(getattr(st.policy, "is_probe_step", lambda: False)())
        # 1. draft: the policy shapes the tree, the draft model draws its tokens
        dt = st.policy.build(self.draft, st.ctx, c.children_rule, st.rng)
        par = list(dt.parents)
        n = len(par)
        if n > c.n_nodes:
            raise ValueError(
                f"the policy built a tree of {n} nodes, more than N_NODES = {c.n_nodes}"
            )
        tok = np.asarray(dt.tokens, dtype=np.int64)
        if n > 1 and ((tok[1:] < 0) | (tok[1:] >= self.vocab)).any():
            i = int(np.flatnonzero((tok[1:] < 0) | (tok[1:] >= self.vocab))[0]) + 1
            raise ValueError(f"tokens[{i}] = {int(tok[i])}: out of range 0 .. {self.vocab - 1}")
        toks = tok.tolist()
        S = _structure(par)
        dep = S.depths
        tip = len(st.ctx) - 1  # the root's position
        cyc0 = kv.cycles
        # the tree builder writes every node's speculative KV entry (owner = node)
        for i in range(n):
            for layer in range(L):
                pages[kv.insert(seq, layer, tip + dep[i], i, False)] = toks[i]
        # 2. verify: mask rows, the KV walk through each node's view, the target, pt/qt
        mask = getattr(st.tm, "mask", None)
        rows = list(mask(par)) if callable(mask) else list(S.rows)
        tails, n_look, misses = self._kv_walk(kv, pages, seq, tip, dep, rows)
        if self._tails:
            p = np.asarray(self.target.probs_tails(tails), dtype=np.float64)
        else:
            p = np.asarray(
                self.target.probs([[t for t in row if t >= 0] for row in tails.tolist()]),
                dtype=np.float64,
            )
        greedy = c.mode == "greedy"
        if greedy:
            ptf, qtf = _acc.greedy_pt_qt(p, par, tok)
            pt, qt = quantize(ptf, c.prob_bits), quantize(qtf, c.prob_bits)
        else:
            pre = _acc.precompute(
                p, dt.q, par, tok, c.children_rule, q_index=dt.q_index,
                prob_bits=c.prob_bits, weight_bits=c.weight_bits, residuals=False,
            )
            pt, qt = pre.pt_fixed, pre.qt_fixed
        wb = c.weight_bits
        children = c.children_rule

        def residual(last: int) -> list[int]:
            p_last = p[last]
            if greedy:
                w = np.zeros(self.vocab, dtype=np.int64)
                w[int(np.argmax(p_last))] = 1
                return w.tolist()
            r = _acc.residual_at(p, dt.q, par, tok, last, children, q_index=dt.q_index)
            w = quantize_weights(r, wb)
            if not w.any():  # zero residual (quantisation): SPEC §3.5's fallback to p_last
                w = quantize_weights(p_last, wb)
                if not w.any():
                    w = np.zeros(self.vocab, dtype=np.int64)
                    w[int(np.argmax(p_last))] = 1
            return w.tolist()

        # 3. accept: the tree manager
        ts = st.tm.step(par, toks, pt.tolist(), qt.tolist(), residual)
        path = [j for j in range(n) if (ts.path_mask >> j) & 1]
        if ts.accepted_tokens != [toks[j] for j in path[1:]] or path[-1] != ts.last:
            raise RuntimeError(
                f"tree manager: accepted tokens {ts.accepted_tokens} / last {ts.last} do not "
                f"match path mask {ts.path_mask:#x}"
            )
        bad = int(list(ts.rows) != rows)
        # 4. commit
        kv.commit(seq, ts.path_mask)
        emitted = list(ts.accepted_tokens) + [int(ts.extra)]
        predicted = None
        if c.overlap == "speculative":
            predicted = self._predicted_tip(st, S, path, toks, int(ts.extra))
        ctx_before = len(st.ctx)
        st.ctx.extend(emitted)
        st.out.extend(emitted)
        accepted = len(path) - 1
        st.accepted.append(accepted)
        st.policy.observe(StepRecord(par, toks, ts.last, path, accepted, emitted))
        if len(st.out) >= T:
            st.done = True
            kv.release(seq)
        rec = SeqStep(
            seq=seq,
            n_nodes=n,
            depth=max(dep),
            draft_evals=perf.draft_evals_of(par),
            accepted=accepted,
            last=ts.last,
            path_mask=ts.path_mask,
            emitted=emitted,
            context_len=ctx_before,
            tm_cycles=dict(ts.cycles),
            kv_cycles=kv.cycles - cyc0,
            inserts=n * L,
            lookups=n_look,
            misses=misses,
            predicted=predicted,
            probe=probe,
        )
        return rec, bad

    def _kv_walk(
        self,
        kv: KVBackend,
        pages: dict[int, int],
        seq: int,
        tip: int,
        dep: Sequence[int],
        rows: Sequence[int],
    ) -> tuple[np.ndarray, int, int]:
        """Every node's context tail, read from the KV pool through its view.

        Returns the ``(n, w)`` tails matrix, the number of lookups and of misses.
        """
        w = self.window
        n = len(dep)
        L = self.config.layers
        tails = np.full((n, w), -1, dtype=np.int64)
        if w == 0:
            return tails, 0, 0
        lo = max(0, tip - (w - 1))
        pre_pos = list(range(lo, tip))  # committed prefix in the window, read once
        queries = [(seq, layer, pos, 1) for layer in range(L) for pos in pre_pos]
        spans = []
        for i in range(n):
            d0 = max(0, dep[i] - (w - 1))
            span = range(tip + d0, tip + dep[i] + 1)
            spans.append(span)
            queries.extend((seq, layer, pos, rows[i]) for layer in range(L) for pos in span)
        got = kv.lookups(queries)
        vals = [None if g is None else pages.get(g) for g in got]
        misses = sum(v is None for v in vals)
        # layers must agree; layer 0's value is the context token
        k = 0
        pre = {}
        for layer in range(L):
            for pos in pre_pos:
                v = vals[k]
                k += 1
                if layer == 0:
                    pre[pos] = v
                elif v != pre[pos]:
                    raise RuntimeError(f"KV pool: layer {layer} and layer 0 disagree at {pos}")
        for i in range(n):
            span = spans[i]
            m = len(span)
            mine = vals[k : k + m * L]
            k += m * L
            for layer in range(1, L):
                if mine[layer * m : (layer + 1) * m] != mine[:m]:
                    raise RuntimeError(
                        f"KV pool: layer {layer} and layer 0 disagree for node {i}"
                    )
            # the window of node i: positions tip + dep[i] - (w - 1) .. tip + dep[i]
            row = tails[i]
            first = tip + dep[i] - (w - 1)
            for pos in range(max(first, 0), span.start):
                row[pos - first] = -2 if pre[pos] is None else pre[pos]
            for j, pos in enumerate(span):
                row[pos - first] = -2 if mine[j] is None else mine[j]
            hole = np.flatnonzero(row == -2)
            if hole.size:  # a miss: that position and everything before it are masked out
                row[: hole[-1] + 1] = -1
        return tails, len(queries), misses

    def _predicted_tip(
        self, st: _Seq, S: Any, path: list[int], toks: list[int], extra: int
    ) -> bool:
        """Was the tip the speculative draft started from right? (``speculative`` overlap)."""
        a, chain = 0, [0]
        while S.children[a]:
            a = S.children[a][0]
            chain.append(a)
        if path != chain:
            return False
        ctx = st.ctx + [toks[j] for j in chain[1:]]
        q = np.asarray(self.draft.probs([ctx[-max(1, self.window) :]])[0])
        return int(np.argmax(q)) == extra

    # ------------------------------------------------------------------ timing
    def _time_step(self, recs: list[SeqStep], prev_predicted: bool) -> perf.StepTiming:
        return time_step(self.profile, recs, overlap=self.config.overlap,
                         prev_predicted=prev_predicted,
                         context_offset=self.config.context_offset)


def time_step(
    profile: perf.Profile,
    recs: Sequence[SeqStep],
    *,
    overlap: str,
    prev_predicted: bool = False,
    context_offset: int | None = None,
    gpu: bool = False,
) -> perf.StepTiming:
    """Time one chip step (every sequence's tree in one verifier pass) on ``profile``.

    The tree manager's measured cycles (mask, load, decide, tokens) are kept;
    the token sampler and the KV-table traffic are counted for the profile's
    model (module docstring). ``gpu``: the profile is a GPU baseline (its own
    accept time, no cycles).
    """
    off = profile.workload.context_len if context_offset is None else context_offset
    n = sum(r.n_nodes for r in recs)
    depth = max(r.depth for r in recs)
    acc = min(depth, max(r.accepted for r in recs))
    ctx = off + int(round(sum(r.context_len for r in recs) / len(recs)))
    evals = sum(r.draft_evals for r in recs)
    kw: dict[str, Any] = {}
    if not gpu and profile.tree_manager is not None:
        tm = profile.tree_manager
        t = profile.target
        ports = profile.kv_pool.lookup_ports if profile.kv_pool else 1
        lat = RTL_LATENCY if tm.latency == "rtl" else SPEC_LATENCY
        tot = dict.fromkeys(("mask", "load", "decide", "tokens"), 0)
        for r in recs:
            cy = r.tm_cycles
            if not all(k in cy for k in tot):  # a backend that does not count them: the model
                m = cycle_model(r.n_nodes, t.vocab, tm.lanes, r.accepted, latency=tm.latency)
                cy = {"mask": m.mask, "load": m.load, "decide": m.decide, "tokens": m.tokens}
            for k in tot:
                tot[k] += int(cy[k])
        kw["accept_cycles"] = AcceptCycles(
            sampler=len(recs) * sampler_cycles(t.vocab, tm.lanes, tm.latency),
            commit=len(recs) * (1 + lat.commit_result),
            inserts=n * t.layers,
            lookups=math.ceil(ctx * t.layers * len(recs) / ports),
            **tot,
        )
    if overlap == "speculative":
        kw["p_right"] = 1.0 if prev_predicted else 0.0
    st = perf.step_time(
        profile,
        tree_nodes=n,
        tree_depth=depth,
        accepted=acc,
        context_len=ctx,
        overlap=overlap,
        draft_evals=evals,
        **kw,
    )
    return dataclasses.replace(st, tokens_per_step=float(sum(r.accepted + 1 for r in recs)))


def _shared_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """Positions of the common prefix that prefill can share (at most ``min(P) - 1``)."""
    if len(prompts) < 2:
        return 0
    lim = min(len(p) for p in prompts) - 1
    k = 0
    while k < lim and all(p[k] == prompts[0][k] for p in prompts):
        k += 1
    return k
