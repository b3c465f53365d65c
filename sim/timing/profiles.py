"""Device profiles of the timing model: the TOML schema, its loader and its checks.

A profile is a TOML file in ``sim/profiles`` describing a device running a
target model (every number there cites its source): ``kind`` (``"specdecode"``
or ``"gpu"``), the overlap modes it supports, and the sections ``[hardware]``,
``[target]``, ``[draft]``, ``[workload]`` and, for SpecDecode-1 only,
``[draft_accel]``, ``[kv_pool]``, ``[tree_manager]`` and ``[article]``. Each
section is one frozen dataclass below; :func:`load_profile` reads, overrides
and validates them, raising ``ValueError`` naming the offending field.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from checks import choice
from sim.timing.models import ModelSpec

__all__ = [
    "OVERLAP_MODES",
    "PRECISIONS",
    "PROFILE_DIR",
    "ArticleSpec",
    "Calibration",
    "DraftAccel",
    "Hardware",
    "KVPoolTiming",
    "ModelSpec",
    "Power",
    "Profile",
    "TreeManagerTiming",
    "Workload",
    "build_section",
    "check_number",
    "check_step",
    "known_profiles",
    "load_profile",
]

PROFILE_DIR = Path(__file__).resolve().parent.parent / "profiles"
OVERLAP_MODES = ("none", "prefetch", "speculative")
#: Named weight precisions (bytes per parameter) accepted by ``load_profile(precision=...)``.
PRECISIONS: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}
_KINDS = ("specdecode", "gpu")


@dataclass(frozen=True)
class Hardware:
    """Clock, HBM and tensor throughput of a device (``[hardware]``)."""

    clock_hz: float
    hbm_bw: float
    hbm_bytes: float
    tensor_flops_16: float
    tensor_flops_8: float
    verifier_sram_bytes: float
    pass_overhead_us: float
    cpu_round_trip_us: float

    def tensor_flops(self, bytes_per_param: float) -> float:
        """Dense FLOP/s for weights of ``bytes_per_param`` (8-bit math at <= 1 byte)."""
        return self.tensor_flops_8 if bytes_per_param <= 1.0 else self.tensor_flops_16


@dataclass(frozen=True)
class DraftAccel:
    """SpecDecode-1's draft accelerator (``[draft_accel]``)."""

    macs_per_cycle: int
    sram_bytes: float
    sram_bw: float


@dataclass(frozen=True)
class KVPoolTiming:
    """SpecDecode-1's shared KV-cache pool as the timing model sees it (``[kv_pool]``)."""

    bytes: float
    bw: float
    lookup_ports: int


@dataclass(frozen=True)
class TreeManagerTiming:
    """The token tree manager's parameters in the timing model (``[tree_manager]``)."""

    max_nodes: int
    lanes: int
    latency: str


@dataclass(frozen=True)
class Workload:
    """The stated example step both views are computed on (``[workload]``)."""

    tree_nodes: int
    tree_depth: int
    draft_evals: int
    accepted: int
    context_len: int
    overlap: str


@dataclass(frozen=True)
class ArticleSpec:
    """The article's own per-step figures (``[article]``)."""

    draft_us_per_token: float
    draft_tokens: int
    verify_us: float
    accept_us: float
    tokens_per_step: float
    overlap: str
    claimed_step_us: float
    claimed_tokens_per_s: float
    gpu_claimed_tokens_per_s: tuple[float, float]


@dataclass(frozen=True)
class Calibration:
    """A GPU baseline's efficiency factors (``[calibration]``), fitted to published
    measurements by :mod:`sim.timing.calibration` (decision 0044).

    Attributes
    ----------
    hbm_efficiency : float
        Fraction of the peak HBM bandwidth a batch-1 decode pass streams at (0 < x <= 1).
    pass_overhead_us : float
        Time of a forward pass beyond its HBM stream (graph launch, sampling, sync).
    cpu_round_trip_us : float
        A speculative step's work outside its forward passes (the software loop).
    """

    hbm_efficiency: float
    pass_overhead_us: float
    cpu_round_trip_us: float


@dataclass(frozen=True)
class Power:
    """A device's power (``[power]``): what an energy figure divides by.

    Attributes
    ----------
    watts : float
        The device's board power at full load (its TDP), > 0.
    source : str
        Where the figure comes from (a datasheet, the article), quoted.
    """

    watts: float
    source: str


@dataclass(frozen=True)
class Profile:
    """A device running a target model: everything the timing model needs.

    Attributes
    ----------
    name, kind, description : str
        ``kind`` is ``"specdecode"`` or ``"gpu"``.
    overlap_modes : tuple[str, ...]
        Overlap modes the device supports (GPUs: ``("none",)``).
    gpu_baseline : str or None
        The GPU profile this one is compared with.
    hardware, target, draft, workload
        Sections of the TOML file.
    draft_accel, kv_pool, tree_manager, article
        SpecDecode-1 only (``None`` for GPUs).
    calibration : Calibration or None
        A GPU baseline's fitted efficiency factors.
    power : Power or None
        The device's power with its source (``None``: not stated).
    """

    name: str
    kind: str
    description: str
    overlap_modes: tuple[str, ...]
    hardware: Hardware
    target: ModelSpec
    draft: ModelSpec
    workload: Workload
    gpu_baseline: str | None = None
    draft_accel: DraftAccel | None = None
    kv_pool: KVPoolTiming | None = None
    tree_manager: TreeManagerTiming | None = None
    article: ArticleSpec | None = None
    calibration: Calibration | None = None
    power: Power | None = None

    @property
    def is_gpu(self) -> bool:
        """True for a GPU baseline (draft on the same device, CPU acceptance)."""
        return self.kind == "gpu"

    def calibrated(self) -> Profile:
        """This GPU baseline with its ``[calibration]`` applied (named ``<name>-calibrated``):
        the HBM bandwidth scaled by ``hbm_efficiency``, the two overheads replaced.

        Raises
        ------
        ValueError
            The profile has no ``[calibration]`` section.
        """
        c = self.calibration
        if c is None:
            raise ValueError(f"profile {self.name!r} has no [calibration] section")
        hw = replace(
            self.hardware,
            hbm_bw=self.hardware.hbm_bw * c.hbm_efficiency,
            pass_overhead_us=c.pass_overhead_us,
            cpu_round_trip_us=c.cpu_round_trip_us,
        )
        return replace(self, name=f"{self.name}-calibrated", hardware=hw, calibration=None)


_SECTIONS: dict[str, type] = {
    "hardware": Hardware,
    "draft_accel": DraftAccel,
    "kv_pool": KVPoolTiming,
    "tree_manager": TreeManagerTiming,
    "target": ModelSpec,
    "draft": ModelSpec,
    "workload": Workload,
    "article": ArticleSpec,
    "calibration": Calibration,
    "power": Power,
}
_REQUIRED = {
    "specdecode": (
        "hardware",
        "draft_accel",
        "kv_pool",
        "tree_manager",
        "target",
        "draft",
        "workload",
        "article",
    ),
    "gpu": ("hardware", "target", "draft", "workload"),
}
# Fields that may be zero (all other numbers must be > 0).
_MAY_BE_ZERO = {
    "expert_params",
    "experts",
    "experts_per_token",
    "expert_bytes_per_param",
    "pass_overhead_us",
    "cpu_round_trip_us",
    "accepted",
    "context_len",
    "tree_depth",
    "draft_evals",
    "accept_us",
}
#: the magnitudes a profile's non-zero numbers may take (SI units: Hz, B/s, FLOP/s, us)
_MAGNITUDE = (1e-12, 1e30)
_ALIASES = {"weight_bytes": "target.bytes_per_param", "draft_weight_bytes": "draft.bytes_per_param"}


def known_profiles() -> list[str]:
    """Names of the profiles in ``sim/profiles``."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def _number(key: str, value: object, *, integer: bool, zero_ok: bool) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} = {value!r}: must be a number")
    if integer and not (isinstance(value, int) or float(value).is_integer()):
        raise ValueError(f"{key} = {value!r}: must be an integer")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        finite = False
    if not finite:
        raise ValueError(f"{key} = {value!r}: must be finite")
    if value < 0 or (value == 0 and not zero_ok):
        raise ValueError(f"{key} = {value!r}: must be {'>= 0' if zero_ok else '> 0'}")
    if value != 0 and not _MAGNITUDE[0] <= value <= _MAGNITUDE[1]:
        # a rate of 1e-300 is positive, but every time it divides overflows
        lo, hi = _MAGNITUDE
        zero = "0 or " if zero_ok else ""
        raise ValueError(f"{key} = {value!r}: must be {zero}in {lo:g} .. {hi:g}")
    return int(value) if integer else float(value)


def check_number(key: str, value: object, *, zero_ok: bool = False) -> float:
    """``value`` as a float if it is a finite number ``> 0`` (``>= 0`` with ``zero_ok``)
    within the profiles' magnitudes; else ``ValueError`` naming ``key`` (the check every
    profile number passes)."""
    return float(_number(key, value, integer=False, zero_ok=zero_ok))


def _build(section: str, cls: type, raw: Mapping[str, Any]) -> Any:
    names = [f.name for f in fields(cls)]
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ValueError(f"{section}.{unknown[0]}: unknown field (known: {', '.join(names)})")
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        key = f"{section}.{f.name}"
        if f.name not in raw and f.default is not MISSING:
            continue  # an optional field (ModelSpec's experts)
        if f.name not in raw:
            raise ValueError(f"{key}: missing")
        value = raw[f.name]
        if f.type == "str":
            if not isinstance(value, str):
                raise ValueError(f"{key} = {value!r}: must be a string")
            kwargs[f.name] = value
        elif f.type.startswith("tuple"):
            if not isinstance(value, list | tuple) or len(value) != 2:
                raise ValueError(f"{key} = {value!r}: must be a [low, high] pair")
            kwargs[f.name] = tuple(_number(key, v, integer=False, zero_ok=False) for v in value)
        else:
            kwargs[f.name] = _number(
                key, value, integer=f.type == "int", zero_ok=f.name in _MAY_BE_ZERO
            )
    return cls(**kwargs)


def build_section(section: str, cls: type, raw: Mapping[str, Any]) -> Any:
    """Section ``cls`` (a dataclass above) from ``raw``, checked as :func:`load_profile`
    checks it: ``ValueError`` naming ``section.field`` of a missing, unknown or bad value."""
    return _build(section, cls, raw)


def _resolve_key(key: str, data: Mapping[str, Any]) -> tuple[str, str]:
    key = _ALIASES.get(key, key)
    if "." in key or "__" in key:
        section, _, name = key.replace("__", ".").partition(".")
        if section not in _SECTIONS or section not in data:
            raise ValueError(
                f"override {key!r}: unknown section {section!r} "
                f"(known: {', '.join(s for s in _SECTIONS if s in data)})"
            )
        return section, name
    hits = [  # [calibration] repeats [hardware]'s overheads: named with its section only
        s
        for s in _SECTIONS
        if s in data and s != "calibration" and key in {f.name for f in fields(_SECTIONS[s])}
    ]
    if not hits:
        raise ValueError(
            f"override {key!r}: unknown field (use section.field, or weight_bytes, precision)"
        )
    if len(hits) > 1:
        raise ValueError(
            f"override {key!r}: ambiguous, use one of {', '.join(f'{s}.{key}' for s in hits)}"
        )
    return hits[0], key


def load_profile(name: str, /, **overrides: Any) -> Profile:
    """Load ``sim/profiles/<name>.toml`` with optional overrides.

    Parameters
    ----------
    name : str
        One of :func:`known_profiles`.
    **overrides
        ``section.field=value`` (pass as ``**{"hardware.hbm_bw": 4e12}``),
        ``section__field=value``, a field name unique across the profile's
        sections (``hbm_bw=4e12``, ``context_len=8192``), ``weight_bytes``
        (target bytes per parameter), ``draft_weight_bytes`` or ``precision``
        (one of :data:`PRECISIONS`, for the target).

    Returns
    -------
    Profile

    Raises
    ------
    ValueError
        Unknown profile (listing the known ones); unknown, ambiguous or invalid
        override or field (naming it); impossible parameters (weights larger
        than HBM, GQA heads that do not divide, a workload the tree manager
        cannot run).
    """
    known = known_profiles()
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"name = {name!r}: unknown profile; known profiles are {', '.join(known)}")
    with (PROFILE_DIR / f"{name}.toml").open("rb") as fh:
        data: dict[str, Any] = tomllib.load(fh)
    for key, value in overrides.items():
        if key == "precision":
            key, value = "target.bytes_per_param", PRECISIONS[choice(key, value, PRECISIONS)]
        section, fname = _resolve_key(key, data)
        if fname not in {f.name for f in fields(_SECTIONS[section])}:
            raise ValueError(f"override {key!r}: {section} has no field {fname!r}")
        data[section] = {**data[section], fname: value}
    return _profile_from(name, data)


def _profile_from(name: str, data: Mapping[str, Any]) -> Profile:
    kind = data.get("kind")
    if kind not in _KINDS:
        raise ValueError(f"{name}: kind = {kind!r}: must be one of {', '.join(_KINDS)}")
    for section in _REQUIRED[kind]:
        if section not in data:
            raise ValueError(f"{name}: section [{section}] missing")
    built = {s: _build(s, _SECTIONS[s], data[s]) for s in _REQUIRED[kind]}
    if "calibration" in data:
        if kind != "gpu":
            raise ValueError(f"{name}: [calibration] is for GPU baselines only")
        built["calibration"] = cal = _build("calibration", Calibration, data["calibration"])
        if cal.hbm_efficiency > 1:
            raise ValueError(
                f"calibration.hbm_efficiency = {cal.hbm_efficiency!r}: must be in (0, 1]"
            )
    if "power" in data:
        built["power"] = _build("power", Power, data["power"])
    modes = tuple(data.get("overlap_modes", ()))
    bad = [m for m in modes if m not in OVERLAP_MODES]
    if not modes or bad:
        raise ValueError(
            f"overlap_modes = {list(modes)!r}: must be a non-empty subset of {OVERLAP_MODES}"
        )
    prof = Profile(
        name=name,
        kind=kind,
        description=str(data.get("description", "")),
        overlap_modes=modes,
        gpu_baseline=data.get("gpu_baseline"),
        **built,
    )
    _validate(prof)
    return prof


def _validate(p: Profile) -> None:
    for sec, m in (("target", p.target), ("draft", p.draft)):
        if m.bytes_per_param > 4:
            raise ValueError(f"{sec}.bytes_per_param = {m.bytes_per_param}: must be <= 4")
        if m.experts and not (
            0 < m.experts_per_token <= m.experts
            and 0 < m.expert_params < m.params
            and 0 < m.expert_bytes_per_param <= 4
        ):
            raise ValueError(
                f"{sec}.experts = {m.experts}: needs 0 < experts_per_token <= experts, "
                f"0 < expert_params < params and 0 < expert_bytes_per_param <= 4"
            )
        if m.n_heads % m.n_kv_heads:
            raise ValueError(
                f"{sec}.n_kv_heads = {m.n_kv_heads}: must divide {sec}.n_heads = {m.n_heads}"
            )
    resident = p.target.weight_bytes + (p.draft.weight_bytes if p.is_gpu else 0.0)
    if resident > p.hardware.hbm_bytes:
        raise ValueError(
            f"target.bytes_per_param = {p.target.bytes_per_param}: {resident / 1e9:.1f} GB of "
            f"weights exceed hardware.hbm_bytes = {p.hardware.hbm_bytes / 1e9:.1f} GB"
        )
    if p.tree_manager is not None:
        tm = p.tree_manager
        if not 1 <= tm.lanes <= 16:
            raise ValueError(f"tree_manager.lanes = {tm.lanes}: must be in 1..16 (SPEC §5)")
        if not 1 <= tm.max_nodes <= 1024:
            raise ValueError(f"tree_manager.max_nodes = {tm.max_nodes}: must be in 1..1024")
        if tm.latency not in ("rtl", "spec"):
            raise ValueError(f"tree_manager.latency = {tm.latency!r}: must be 'rtl' or 'spec'")
    if p.article is not None and p.article.overlap not in ("none", "prefetch"):
        raise ValueError(f"article.overlap = {p.article.overlap!r}: must be 'none' or 'prefetch'")
    if p.kind == "specdecode" and p.target.vocab > 1 << 17:
        raise ValueError(f"target.vocab = {p.target.vocab}: must be <= 131072 (TOKEN_BITS 17)")
    w = p.workload
    check_step(
        p,
        w.tree_nodes,
        w.tree_depth,
        w.accepted,
        w.context_len,
        w.draft_evals,
        w.overlap,
        prefix="workload.",
    )


def check_step(
    p: Profile,
    tree_nodes: object,
    tree_depth: object,
    accepted: object,
    context_len: object,
    draft_evals: object,
    overlap: object,
    prefix: str = "",
    batch: object = 1,
) -> None:
    """Check one step's quantities against profile ``p``.

    ``tree_nodes`` in ``1 .. max_nodes``, ``tree_depth`` in ``0 .. tree_nodes - 1``
    (``>= 1`` for more than one node), ``accepted`` in ``0 .. tree_depth``,
    ``context_len`` in ``0 .. 2**24``, ``draft_evals`` in ``tree_depth ..
    tree_nodes - 1``, ``overlap`` one of ``p.overlap_modes``, ``batch`` in ``1 ..
    4096``, and the KV cache of ``batch`` sequences' context and tree within the
    memory left beside the weights.

    Raises
    ------
    ValueError
        Naming the quantity (with ``prefix``, e.g. ``"workload."``).
    """

    if not isinstance(p, Profile):
        raise ValueError(f"p = {p!r}: must be a Profile (load_profile)")
    if not isinstance(prefix, str):
        raise ValueError(f"prefix = {prefix!r}: must be a string")

    def chk(name: str, v: object, lo: int, hi: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ValueError(f"{prefix}{name} = {v!r}: must be an integer")
        if not lo <= v <= hi:
            raise ValueError(f"{prefix}{name} = {v!r}: must be in {lo}..{hi}")
        return int(v)

    max_nodes = p.tree_manager.max_nodes if p.tree_manager else 1024
    n = chk("tree_nodes", tree_nodes, 1, max_nodes)
    d = chk("tree_depth", tree_depth, 1 if n > 1 else 0, n - 1)
    chk("accepted", accepted, 0, d)
    ctx = chk("context_len", context_len, 0, 1 << 24)
    b = chk("batch", batch, 1, 4096)
    # Each level's nodes come from expanding nodes of the level above: >= 1 draft
    # evaluation per level, and at most one per non-leaf node.
    chk("draft_evals", draft_evals, d, n - 1)
    if not isinstance(overlap, str) or overlap not in p.overlap_modes:
        raise ValueError(
            f"{prefix}overlap = {overlap!r}: profile {p.name} supports {', '.join(p.overlap_modes)}"
        )
    kv = b * (ctx + n) * p.target.kv_bytes_per_token
    room = p.hardware.hbm_bytes - p.target.weight_bytes + (p.kv_pool.bytes if p.kv_pool else 0)
    if kv > room:
        of = f"{prefix}batch = {b}, " if b > 1 else ""
        raise ValueError(
            f"{of}{prefix}context_len = {ctx}: {kv / 1e9:.1f} GB of KV cache exceed "
            f"the {room / 1e9:.1f} GB left for it"
        )
