"""The configuration of a chip run: four groups of parameters behind one flat constructor.

:class:`ChipConfig` holds :class:`TimingParams` (how the run is timed),
:class:`PolicyParams` (how trees are shaped), :class:`DecodeParams` (what is
decoded) and :class:`BlockParams` (the blocks and their SPEC §5 parameters). It
is built and read with the flat names of every group's fields
(``ChipConfig(nodes=24, n_nodes=32)``, ``cfg.n_nodes`` is
``cfg.blocks.n_nodes``) and validated as a whole on construction: every bad
field is a ``ValueError`` naming it, checked in a fixed order (:func:`validate`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from checks import boolean, choice
from checks import integer as _int
from golden import trees as _trees
from golden.decoder import MODES
from golden.draft import CHILDREN_RULES
from golden.tree import sibling_rank as _sibling_rank
from golden.tree import validate as _validate_tree
from sim.cycles import check_select_lanes
from sim.timing import Profile, known_profiles, load_profile
from sim.workloads import WORKLOADS

__all__ = [
    "BACKENDS",
    "BUILDERS",
    "STATIC_BRANCHING",
    "TREES",
    "BlockParams",
    "ChipConfig",
    "DecodeParams",
    "PolicyParams",
    "TimingParams",
    "static_parents",
    "validate",
]

BACKENDS = ("python", "rtl")
#: Who shapes the trees: ``software`` (the float policies of :mod:`golden.trees`
#: and :mod:`sim.topology`) or ``hardware`` (the tree builder and topology
#: optimiser of spec §3.6 - §3.11, in fixed point: :mod:`golden.builder`).
BUILDERS = ("software", "hardware")
#: Tree policies: ``plain`` (root only), ``chain``, ``static``, ``sequoia``
#: (topology optimiser: Sequoia DP re-solved every K steps, with fallback),
#: ``eagle2`` (dynamic).
TREES = ("plain", "chain", "static", "sequoia", "eagle2")
DEFAULT_CHILDREN = {
    "plain": "iid",
    "chain": "iid",
    "static": "swor",
    "sequoia": "swor",
    "eagle2": "topk",
}
#: Largest ``context_offset``: the timing model's largest context (:func:`sim.timing.check_step`).
MAX_CONTEXT = 1 << 24
#: Static shape's branching per depth before truncation to ``nodes`` (breadth first).
STATIC_BRANCHING = (4, 2, 2, 1, 1, 1, 1, 1)


@dataclass(frozen=True)
class TimingParams:
    """How the run is timed.

    Attributes
    ----------
    profile : str
        SpecDecode-1 timing profile (:func:`sim.timing.known_profiles`).
    overlap : str
        ``none``, ``prefetch`` or ``speculative`` (:mod:`sim.timing.step`).
    context_offset : int or None
        Tokens of history the timing assumes before the prompt, ``0 .. 2**24``
        (default: the profile's ``workload.context_len``).
    """

    profile: str = "specdecode1-7b"
    overlap: str = "prefetch"
    context_offset: int | None = None


@dataclass(frozen=True)
class PolicyParams:
    """How the draft trees are shaped.

    Attributes
    ----------
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
    builder : str
        ``software`` or ``hardware`` (:data:`BUILDERS`); ``hardware`` builds
        ``topk`` children (the default rule then), ``topk`` at most 16.
    """

    tree: str = "sequoia"
    nodes: int = 32
    depth: int = 8
    children: str | None = None
    parents: tuple[int, ...] | None = None
    initial_acc: tuple[float, ...] = (0.6, 0.15, 0.05, 0.02)
    update_every: int = 16
    window: int = 32
    fallback: bool = True
    topk: int = 4
    builder: str = "software"


@dataclass(frozen=True)
class DecodeParams:
    """What is decoded.

    Attributes
    ----------
    mode : str
        ``sample`` or ``greedy``.
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
        one, used by every sequence), ``0 .. 2**64 - 1``.
    shared_prompt : bool
        Every sequence decodes the same prompt (with its own seed): parallel
        sampling, the whole prompt prefix shared through ``fork``. ``True`` or
        ``False`` (no truthiness: ``"no"`` is refused).
    layers : int
        Modelled layers: KV entries per token position, ``1 .. 2**layer_bits``.
    """

    mode: str = "sample"
    seed: int = 1
    tokens: int = 160
    workload: str = "code"
    prompt_len: int = 64
    batch: int = 1
    prompt_seed: int = 1
    shared_prompt: bool = False
    layers: int = 1


@dataclass(frozen=True)
class BlockParams:
    """The blocks: which backend simulates them, and their parameters.

    Attributes
    ----------
    backend : str
        ``python`` or ``rtl``.
    n_nodes, entries, pages, seqs, layer_bits, pos_bits : int
        ``N_NODES``, ``ENTRIES``, ``PAGES``, ``SEQS``, ``LAYER_BITS``,
        ``POS_BITS`` (SPEC §5).
    prob_bits, rand_bits, weight_bits : int
        Fixed-point widths (SPEC §3.3, §3.5), ``8 .. 32``.
    lanes : int
        Token-sampler lanes (``LANES``), ``1 .. 16``.
    select_lanes : int
        ``SELECT_LANES``: ``0`` draws the extra token with the two-pass token
        sampler (SPEC §3.5, ``lanes`` weights per cycle); a power of two
        ``1 .. 128`` with the one-pass token select (spec §3.12): every node's
        residual total before the decision, one selection pass after it.
    lookup_ports : int
        KV lookup ports a batch of lookups is spread over (SPEC §4.2: 2).
    """

    backend: str = "python"
    n_nodes: int = 64
    entries: int = 256
    pages: int = 256
    seqs: int = 8
    layer_bits: int = 5
    pos_bits: int = 17
    prob_bits: int = 16
    rand_bits: int = 16
    weight_bits: int = 16
    lanes: int = 4
    select_lanes: int = 0
    lookup_ports: int = 2

    def hdl_params(self) -> dict[str, Any]:
        """The parameters the tree manager and the KV pool are built with (all but
        ``backend`` and the python KV pool's ``lookup_ports``)."""
        skip = ("backend", "lookup_ports")
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}


#: The groups of :class:`ChipConfig`: attribute name -> class.
GROUPS: dict[str, type] = {
    "timing": TimingParams,
    "policy": PolicyParams,
    "decode": DecodeParams,
    "blocks": BlockParams,
}
#: Every flat field name -> the group that holds it.
FIELDS: dict[str, str] = {f.name: g for g, cls in GROUPS.items() for f in fields(cls)}


@dataclass(frozen=True, init=False)
class ChipConfig:
    """Everything that defines a chip run; every field is validated on construction.

    Construct with keywords, the fields of the four groups (module docstring):
    ``ChipConfig(profile=..., tree=..., nodes=..., backend=..., ...)``; an
    unknown keyword is a ``TypeError``, as for any dataclass. Every field reads
    as a flat attribute (``cfg.nodes``) and through its group
    (``cfg.policy.nodes``).

    Attributes
    ----------
    timing : TimingParams
        ``profile``, ``overlap``, ``context_offset``.
    policy : PolicyParams
        ``tree``, ``nodes``, ``depth``, ``children``, ``parents``,
        ``initial_acc``, ``update_every``, ``window``, ``fallback``, ``topk``.
    decode : DecodeParams
        ``mode``, ``seed``, ``tokens``, ``workload``, ``prompt_len``, ``batch``,
        ``prompt_seed``, ``shared_prompt``, ``layers``.
    blocks : BlockParams
        ``backend``, ``n_nodes``, ``entries``, ``pages``, ``seqs``,
        ``layer_bits``, ``pos_bits``, ``prob_bits``, ``rand_bits``,
        ``weight_bits``, ``lanes``, ``select_lanes``, ``lookup_ports``.

    Raises
    ------
    ValueError
        The first bad field, named (:func:`validate`).
    """

    timing: TimingParams
    policy: PolicyParams
    decode: DecodeParams
    blocks: BlockParams

    def __init__(self, **kwargs: Any) -> None:
        for key in kwargs:
            if key not in FIELDS:
                raise TypeError(f"ChipConfig.__init__() got an unexpected keyword argument {key!r}")
        for group, cls in GROUPS.items():
            mine = {f.name: kwargs[f.name] for f in fields(cls) if f.name in kwargs}
            object.__setattr__(self, group, cls(**mine))
        validate(self)

    def as_kwargs(self) -> dict[str, Any]:
        """The flat keywords that construct this configuration."""
        return {name: getattr(getattr(self, group), name) for name, group in FIELDS.items()}

    @property
    def children_rule(self) -> str:
        """The ``children`` rule in effect (the hardware builder: ``topk``)."""
        if self.children is not None:
            return self.children
        return "topk" if self.builder == "hardware" else DEFAULT_CHILDREN[self.tree]

    def timing_profile(self) -> Profile:
        """The :class:`sim.timing.Profile` named by ``profile``."""
        known = known_profiles()
        if not isinstance(self.profile, str) or self.profile not in known:
            raise ValueError(
                f"profile = {self.profile!r}: unknown profile; known profiles are "
                f"{', '.join(known)}"
            )
        return load_profile(self.profile)

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
        return ChipConfig(**{**self.as_kwargs(), **changes})


# Every field of every group reads as a flat, read-only attribute of ChipConfig.
for _name, _group in FIELDS.items():
    setattr(
        ChipConfig, _name, property(attrgetter(f"{_group}.{_name}"), doc=f"``{_group}.{_name}``")
    )
del _name, _group


def static_parents(cfg: ChipConfig) -> list[int]:
    """The ``static`` policy's shape: ``cfg.parents`` or the truncated default tree."""
    if cfg.parents is not None:
        return list(cfg.parents)
    full = _trees.full_tree(STATIC_BRANCHING[: cfg.depth])
    return full[: cfg.nodes]  # breadth first: a prefix is a tree


def _choice(name: str, value: object, options: Sequence[str]) -> str:
    """:func:`checks.choice` (an array is refused, not compared element-wise)."""
    return choice(name, value, options)  # type: ignore[return-value]


Bound = int | None | Callable[[Any], int]
#: Integer fields in the order they are checked: ``(name, lowest, highest)``; the
#: highest is ``None`` (unbounded) or may depend on fields checked before.
INT_BOUNDS: tuple[tuple[str, int, Bound], ...] = (
    ("n_nodes", 1, 1024),
    ("entries", 1, 4096),
    ("pages", 1, 4096),
    ("seqs", 1, 64),
    ("layer_bits", 1, 16),
    ("pos_bits", 1, 32),
    ("layers", 1, lambda c: 1 << int(c.layer_bits)),
    ("prob_bits", 8, 32),
    ("rand_bits", 8, 32),
    ("weight_bits", 8, 32),
    ("lanes", 1, 16),
    ("select_lanes", 0, 128),
    ("lookup_ports", 1, None),
    ("seed", 0, 2**64 - 64),
    ("tokens", 1, None),
    ("prompt_len", 1, None),
    ("batch", 1, lambda c: int(c.seqs)),
    ("prompt_seed", 0, 2**64 - 1),  # a numpy seed (golden.models.code_prompts)
    ("depth", 1, None),
    ("update_every", 1, None),
    ("window", 1, None),
    ("topk", 1, None),
)


def validate(cfg: ChipConfig) -> None:
    """Check every field of ``cfg``; ``ValueError`` naming the first bad one.

    Order: the profile (known, not a GPU baseline), the choices (``tree``,
    ``mode``, ``backend``, ``workload``, ``overlap`` against the profile,
    ``children``), the integers of :data:`INT_BOUNDS` (``select_lanes`` also 0 or
    a power of two), ``context_offset``, ``nodes`` against ``n_nodes``, a chain
    against ``n_nodes``, ``parents``, ``initial_acc``, the hardware builder's
    ranges (:func:`hw_builder_checks`), and the ``rtl`` backend's single sequence.
    """
    prof = cfg.timing_profile()  # unknown profile: ValueError listing the known ones
    if prof.is_gpu:
        raise ValueError(
            f"profile = {cfg.profile!r}: a GPU baseline; the chip needs a SpecDecode-1 "
            f"profile ({', '.join(n for n in known_profiles() if 'specdecode' in n)})"
        )
    _choice("tree", cfg.tree, TREES)
    _choice("mode", cfg.mode, MODES)
    _choice("backend", cfg.backend, BACKENDS)
    _choice("workload", cfg.workload, WORKLOADS)
    if not isinstance(cfg.overlap, str) or cfg.overlap not in prof.overlap_modes:
        raise ValueError(
            f"overlap = {cfg.overlap!r}: profile {prof.name} supports "
            f"{', '.join(prof.overlap_modes)}"
        )
    if cfg.children is not None:
        _choice("children", cfg.children, CHILDREN_RULES)
    _choice("builder", cfg.builder, BUILDERS)
    if cfg.tree == "eagle2" and cfg.children_rule != "topk":
        raise ValueError(f"children = {cfg.children!r}: tree 'eagle2' builds top-k trees")
    if cfg.builder == "hardware" and cfg.children_rule != "topk":
        raise ValueError(f"children = {cfg.children!r}: the hardware builder builds top-k trees")
    for name, lo, hi in INT_BOUNDS:
        _int(name, getattr(cfg, name), lo, hi(cfg) if callable(hi) else hi)
    check_select_lanes(cfg.select_lanes)
    boolean("fallback", cfg.fallback)  # "no" is truthy: only True / False
    boolean("shared_prompt", cfg.shared_prompt)
    if cfg.context_offset is not None:  # the timing's context_len is at most 2**24
        _int("context_offset", cfg.context_offset, 0, MAX_CONTEXT)
    n_nodes = int(cfg.n_nodes)
    nodes = _int("nodes", cfg.nodes, 1)
    if nodes > n_nodes:
        raise ValueError(f"nodes = {nodes!r}: a tree larger than N_NODES = {n_nodes} (n_nodes)")
    if cfg.tree == "chain" and cfg.depth + 1 > n_nodes:
        raise ValueError(
            f"depth = {cfg.depth!r}: a chain of {cfg.depth + 1} nodes is larger than "
            f"N_NODES = {n_nodes} (n_nodes)"
        )
    if cfg.parents is not None:
        if cfg.tree != "static":
            raise ValueError(f"parents = {cfg.parents!r}: only for tree = 'static'")
        _validate_tree(cfg.parents, max_nodes=n_nodes)
    acc = _trees._check_acc(cfg.initial_acc, "initial_acc")
    if acc.size > 8:
        raise ValueError(f"initial_acc = {cfg.initial_acc!r}: at most 8 ranks")
    if cfg.builder == "hardware":
        hw_builder_checks(cfg)
    if cfg.backend == "rtl" and cfg.batch > 1:
        raise ValueError(
            f"batch = {cfg.batch!r}: the rtl backend holds one sequence's lane state "
            "(use backend = 'python' for batches)"
        )


def hw_builder_checks(cfg: ChipConfig) -> None:
    """The hardware builder's ranges (spec §3.6 - §3.11): ``topk`` at most 16;
    a ``static`` shape with at most 16 children per node; ``sequoia``: ``nodes``
    at least 2, ``window`` at most 64, ``update_every`` at most ``2**16``; on
    the ``rtl`` backend, ``depth`` at most 32 (the RTL optimiser's ``D_MAX``)."""
    _int("topk", cfg.topk, 1, 16)
    if cfg.tree == "static":
        ranks = _sibling_rank(static_parents(cfg))
        if max(ranks[1:], default=0) >= 16:
            raise ValueError(
                f"parents = {cfg.parents!r}: a node with more than 16 children "
                "(the hardware builder's K)"
            )
    if cfg.tree == "sequoia":
        _int("nodes", cfg.nodes, 2)
        _int("window", cfg.window, 1, 64)
        _int("update_every", cfg.update_every, 1, 1 << 16)
        if cfg.backend == "rtl":
            _int("depth", cfg.depth, 1, 32)
