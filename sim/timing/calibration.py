"""GPU baselines calibrated on published measurements (decision 0044).

The roofline GPU profiles stream weights at the datasheet's peak HBM bandwidth
and assume their overheads; no measured GPU figure anchors them. This module
holds them to published, measured batch-1 decode throughputs
(``sim/profiles/published/gpu.toml``: every figure with its source, quote and
setting) through three efficiency factors, each with a physical reason
(:class:`~sim.timing.profiles.Calibration`):

* ``hbm_efficiency``: the fraction of peak HBM bandwidth a batch-1 decode pass
  sustains (matrix-vector kernels do not reach the datasheet's peak);
* ``pass_overhead_us``: the time of a forward pass beyond its HBM stream
  (graph launch, sampling, host synchronisation);
* ``cpu_round_trip_us``: a speculative step's work outside its forward passes
  (tree construction, masks, acceptance, KV bookkeeping: the software loop the
  architecture article puts at 1-5 ms).

The model is the timing model itself (:func:`sim.timing.step.ar_token_time`,
:func:`sim.timing.step.step_time` on a GPU profile of each measurement's device
and model), so every pass is HBM-bound at batch 1 and its time is linear in
the three factors: ``t = HBM time / hbm_efficiency + passes * pass_overhead +
[speculative] * cpu_round_trip``. :func:`fit` solves that by least squares in
relative error over the fitted measurements; the GPU baselines' ``[calibration]``
sections hold the result (``tests/test_calibration.py`` checks that they do, and
that every measurement is reproduced within :data:`TOLERANCE`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from sim.timing.profiles import (
    PROFILE_DIR,
    Calibration,
    Hardware,
    ModelSpec,
    Profile,
    Workload,
    build_section,
    load_profile,
)
from sim.timing.step import ar_token_time, step_time

__all__ = [
    "KINDS",
    "PUBLISHED",
    "TOLERANCE",
    "Comparison",
    "Measurement",
    "Published",
    "compare",
    "comparison_table",
    "fit",
    "load_published",
    "model_tokens_per_s",
    "roofline_assumptions",
    "setting_profile",
    "summary",
]

#: the published measurements and the devices and models they ran on
PUBLISHED = PROFILE_DIR / "published" / "gpu.toml"
#: the largest relative error of the calibrated model on a fitted measurement
TOLERANCE = 0.15
#: ``plain``: one target pass per token; ``spec``: speculative decoding
KINDS = ("plain", "spec")

_TEXT = ("id", "kind", "gpu", "model", "stack", "source", "quote", "setting")
_SPEC_ONLY = ("draft", "draft_passes", "tree_nodes", "tokens_per_step")


@dataclass(frozen=True)
class Measurement:
    """One published figure and the setting it was measured in (module docstring).

    ``tokens_per_step`` is the published mean acceptance length (1 for plain
    decoding); ``draft``, ``draft_passes`` and ``tree_nodes`` are empty or 0 for
    plain decoding.
    """

    id: str
    kind: str
    gpu: str
    model: str
    bytes_per_param: float
    context_len: int
    tokens_per_s: float
    stack: str
    source: str
    quote: str
    setting: str
    draft: str = ""
    draft_passes: int = 0
    tree_nodes: int = 1
    tokens_per_step: float = 1.0


@dataclass(frozen=True)
class Published:
    """``gpu.toml``: devices (peak figures), models, fitted and excluded measurements."""

    gpus: dict[str, Hardware]
    models: dict[str, dict[str, Any]]
    measurements: tuple[Measurement, ...]
    excluded: tuple[Measurement, ...]


def _measurement(where: str, raw: dict[str, Any], gpus: dict, models: dict) -> Measurement:
    for key in _TEXT:
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ValueError(f"{where}.{key} = {raw.get(key)!r}: must be a non-empty string")
    if raw["kind"] not in KINDS:
        raise ValueError(f"{where}.kind = {raw['kind']!r}: must be one of {', '.join(KINDS)}")
    if raw["gpu"] not in gpus:
        raise ValueError(f"{where}.gpu = {raw['gpu']!r}: not in [gpus] ({', '.join(gpus)})")
    spec = raw["kind"] == "spec"
    for key in ("model", *(("draft",) if spec else ())):
        if raw.get(key) not in models:
            raise ValueError(f"{where}.{key} = {raw.get(key)!r}: not in [models]")
    if not spec and any(k in raw for k in _SPEC_ONLY):
        raise ValueError(f"{where}: {', '.join(_SPEC_ONLY)} are for kind = 'spec' only")
    known = {f for f in Measurement.__dataclass_fields__}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field")
    m = Measurement(**raw)
    checks = {
        "bytes_per_param": 0 < m.bytes_per_param <= 4,
        "context_len": isinstance(m.context_len, int) and 0 <= m.context_len <= 1 << 20,
        "tokens_per_s": 0 < m.tokens_per_s < 1e6,
        "draft_passes": isinstance(m.draft_passes, int) and (m.draft_passes >= 1) == spec,
        "tree_nodes": isinstance(m.tree_nodes, int) and 1 <= m.tree_nodes <= 1024,
        "tokens_per_step": 1 <= m.tokens_per_step <= max(1, m.tree_nodes),
    }
    for key, ok in checks.items():
        if not ok:
            raise ValueError(f"{where}.{key} = {getattr(m, key)!r}: out of range")
    return m


def load_published(path: Path = PUBLISHED) -> Published:
    """Read and check ``path`` (default :data:`PUBLISHED`); ``ValueError`` naming the
    entry and field of any bad value."""
    with Path(path).open("rb") as fh:
        data = tomllib.load(fh)
    gpus = {}
    for key, raw in data.get("gpus", {}).items():
        hw = {k: v for k, v in raw.items() if k != "name"}
        hw |= {"clock_hz": 1.0e9, "verifier_sram_bytes": 1.0}  # unused on a GPU profile
        hw |= {"pass_overhead_us": 0.0, "cpu_round_trip_us": 0.0}
        gpus[key] = build_section(f"gpus.{key}", Hardware, hw)
    models = {}
    for key, raw in data.get("models", {}).items():
        # checked as a ModelSpec with the precision a measurement gives it
        build_section(f"models.{key}", ModelSpec, {**raw, "bytes_per_param": 2.0, "kv_bytes": 2.0})
        models[key] = dict(raw)

    def entries(section: str) -> tuple[Measurement, ...]:
        return tuple(
            _measurement(f"{section}[{i}]", raw, gpus, models)
            for i, raw in enumerate(data.get(section, []))
        )

    return Published(gpus, models, entries("measurements"), entries("excluded"))


def setting_profile(m: Measurement, pub: Published, cal: Calibration | None = None) -> Profile:
    """A GPU profile of ``m``'s device and model, at peak (``cal`` None) or calibrated.

    The weights and KV are at ``m.bytes_per_param`` (at least one byte for KV);
    plain decoding gets a one-parameter stand-in draft, which it never runs.
    """
    hw = pub.gpus[m.gpu]
    if cal is not None:
        hw = replace(
            hw,
            hbm_bw=hw.hbm_bw * cal.hbm_efficiency,
            pass_overhead_us=cal.pass_overhead_us,
            cpu_round_trip_us=cal.cpu_round_trip_us,
        )
    kv = max(1.0, m.bytes_per_param)

    def model(key: str) -> ModelSpec:
        raw = {**pub.models[key], "bytes_per_param": m.bytes_per_param, "kv_bytes": kv}
        return build_section(key, ModelSpec, raw)

    draft = model(m.draft) if m.draft else replace(model(m.model), name="none", params=1.0)
    n = m.tree_nodes
    return Profile(
        name=m.id,
        kind="gpu",
        description=m.setting,
        overlap_modes=("none",),
        hardware=hw,
        target=model(m.model),
        draft=draft,
        workload=Workload(n, m.draft_passes, max(0, n - 1), 0, m.context_len, "none"),
    )


def model_tokens_per_s(m: Measurement, pub: Published, cal: Calibration | None = None) -> float:
    """The timing model's tokens/s for ``m``'s setting (:func:`setting_profile`): plain
    decoding's :func:`~sim.timing.step.ar_token_time`, or ``tokens_per_step`` over a
    speculative :func:`~sim.timing.step.step_time` (``draft_passes`` draft passes of
    ``tree_nodes - 1`` evaluations, one verification of ``tree_nodes`` tokens)."""
    p = setting_profile(m, pub, cal)
    if m.kind == "plain":
        return ar_token_time(p, context_len=m.context_len, overlap="none").tokens_per_s
    st = step_time(
        p,
        tree_nodes=m.tree_nodes,
        tree_depth=m.draft_passes,
        accepted=0,  # a GPU step's time does not depend on it: tokens come from m
        context_len=m.context_len,
        draft_evals=m.tree_nodes - 1,
    )
    return m.tokens_per_step / st.total_us * 1e6


def _features(m: Measurement, pub: Published) -> tuple[float, float, float]:
    """``(HBM time at peak, passes, speculative)`` of ``m``, in us: its time on the
    calibrated model is ``x[0] / hbm_efficiency + x[1] * pass_overhead + x[2] * cpu``."""
    zero = Calibration(1.0, 0.0, 0.0)
    peak_us = m.tokens_per_step / model_tokens_per_s(m, pub, zero) * 1e6
    spec = m.kind == "spec"
    return peak_us, float(m.draft_passes + 1), 1.0 if spec else 0.0


def fit(pub: Published | None = None) -> Calibration:
    """The three factors (module docstring) that minimise the squared relative error of
    the step time over ``pub.measurements`` (default: :func:`load_published`).

    Raises
    ------
    ValueError
        Fewer than three measurements with at least one speculative, or a fit outside
        the factors' physical ranges (efficiency in (0, 1], overheads >= 0).
    """
    pub = load_published() if pub is None else pub
    ms = pub.measurements
    if len(ms) < 3 or not any(m.kind == "spec" for m in ms):
        raise ValueError(f"measurements: {len(ms)} given, need 3 or more, one speculative")
    X = np.array([_features(m, pub) for m in ms])
    t = np.array([m.tokens_per_step / m.tokens_per_s * 1e6 for m in ms])
    (inv_eff, o, cpu), *_ = np.linalg.lstsq(X / t[:, None], np.ones(len(ms)), rcond=None)
    if not (inv_eff >= 1 and o >= 0 and cpu >= 0):
        raise ValueError(
            f"fit: efficiency {1 / inv_eff:.3f}, pass overhead {o:.1f} us, "
            f"CPU {cpu:.1f} us: outside the physical ranges"
        )
    return Calibration(float(1 / inv_eff), float(o), float(cpu))


@dataclass(frozen=True)
class Comparison:
    """A published figure beside the model's, at peak and calibrated.

    ``error`` is the calibrated model's relative error (model / published - 1).
    """

    measurement: Measurement
    roofline_tokens_per_s: float
    model_tokens_per_s: float

    @property
    def error(self) -> float:
        return self.model_tokens_per_s / self.measurement.tokens_per_s - 1.0


def roofline_assumptions(baseline: str = "h100-7b") -> Calibration:
    """The roofline GPU baseline's own assumptions as factors: the peak bandwidth and
    ``baseline``'s assumed pass overhead and CPU round trip."""
    hw = load_profile(baseline).hardware
    return Calibration(1.0, hw.pass_overhead_us, hw.cpu_round_trip_us)


def compare(
    cal: Calibration, pub: Published | None = None, *, excluded: bool = False
) -> list[Comparison]:
    """Every fitted measurement (or, with ``excluded``, every excluded one) against the
    model under the roofline baseline's assumptions (:func:`roofline_assumptions`) and
    with ``cal``."""
    pub = load_published() if pub is None else pub
    ms = pub.excluded if excluded else pub.measurements
    peak = roofline_assumptions()
    return [
        Comparison(m, model_tokens_per_s(m, pub, peak), model_tokens_per_s(m, pub, cal)) for m in ms
    ]


def comparison_table(cal: Calibration, pub: Published | None = None) -> str:
    """The fitted measurements, then the excluded ones, each beside the model under the
    roofline's assumptions and calibrated with ``cal`` (text)."""
    from sim.timing.text import table

    pub = load_published() if pub is None else pub
    rows = []
    for tag, excluded in (("", False), (" (excluded)", True)):
        for c in compare(cal, pub, excluded=excluded):
            m = c.measurement
            rows.append(
                [
                    m.id + tag,
                    f"{m.tokens_per_step:g}",
                    f"{m.tokens_per_s:,.1f}",
                    f"{c.roofline_tokens_per_s:,.1f}",
                    f"{c.model_tokens_per_s:,.1f}",
                    f"{c.error:+.1%}",
                ]
            )
    head = (
        f"calibration: HBM efficiency {cal.hbm_efficiency:.3f}, pass overhead "
        f"{cal.pass_overhead_us:.1f} us, speculative step overhead "
        f"{cal.cpu_round_trip_us / 1e3:.2f} ms (fitted within {TOLERANCE:.0%}: every "
        "non-excluded row)"
    )
    header = ["published measurement", "tok/step", "published", "roofline", "calibrated", "error"]
    return head + "\n" + table(header, rows)


def summary(cal: Calibration, pub: Published | None = None) -> dict[str, Any]:
    """The factors and every comparison as data (``perf.json``'s ``calibration``)."""
    pub = load_published() if pub is None else pub

    def entry(c: Comparison, excluded: bool) -> dict[str, Any]:
        m = c.measurement
        return {
            "id": m.id,
            "kind": m.kind,
            "source": m.source,
            "published_tokens_per_s": m.tokens_per_s,
            "roofline_tokens_per_s": c.roofline_tokens_per_s,
            "calibrated_tokens_per_s": c.model_tokens_per_s,
            "error": c.error,
            "excluded": excluded,
        }

    return {
        "factors": {
            "hbm_efficiency": cal.hbm_efficiency,
            "pass_overhead_us": cal.pass_overhead_us,
            "cpu_round_trip_us": cal.cpu_round_trip_us,
        },
        "tolerance": TOLERANCE,
        "measurements": [entry(c, False) for c in compare(cal, pub)]
        + [entry(c, True) for c in compare(cal, pub, excluded=True)],
    }


def main() -> int:
    """``python -m sim.timing.calibration``: the fit and the comparison (the values the GPU
    baselines' ``[calibration]`` sections hold)."""
    pub = load_published()
    cal = fit(pub)
    print(comparison_table(cal, pub))
    for name in ("h100-7b", "h100-70b"):
        print(f"{name}: [calibration] holds {load_profile(name).calibration}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
