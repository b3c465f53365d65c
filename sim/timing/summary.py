"""The timing model's figures as data: ``build/reports/perf.json``.

``python -m sim.timing`` (``make perf``) prints its tables and writes this
report; ``make report`` fills the documentation's figures from it
(:mod:`flows.report.figures`). One entry per profile: the article's own
arithmetic, the roofline in every overlap mode, plain decoding, and the
numbers the disagreements quote (:func:`sim.timing.disagreements.facts`); and
the calibrated GPU baseline against the published measurements
(:func:`calibration_summary`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sim.timing.calibration import summary as _calibration
from sim.timing.disagreements import disagreements, facts
from sim.timing.extra_token import extra_token_rows
from sim.timing.profiles import Profile, load_profile

__all__ = ["CALIBRATED_BASELINE", "calibration_summary", "profile_summary", "write_summary"]


def _step(st: Any) -> dict[str, float]:
    return {
        "draft_us": st.draft_us,
        "verify_us": st.verify_us,
        "accept_us": st.accept_us,
        "step_us": st.total_us,
        "tokens_per_step": st.tokens_per_step,
        "tokens_per_s": st.tokens_per_s,
    }


def profile_summary(profile: Profile) -> dict[str, Any]:
    """The figures of one SpecDecode-1 profile (times in us, rates per second)."""
    f = facts(profile)
    av, rv, t, hw, st = f["av"], f["rv"], f["t"], f["hw"], f["st"]
    out: dict[str, Any] = {
        "article": {
            "step_us": av.step_us,
            "verify_us": av.verify_us,
            "tokens_per_step": av.tokens_per_step,
            "tokens_per_s": av.tokens_per_s,
            "claimed_tokens_per_s": av.claimed_tokens_per_s,
        },
        "roofline": {mode: _step(s) for mode, s in rv.steps.items()},
        "roofline_mode": rv.overlap,
        "autoregressive_tokens_per_s": rv.ar.tokens_per_s,
        "weights_gb": f["W"] / 1e9,
        "weight_stream_us": f["w_pass_s"] * 1e6,
        "hbm_tb_s": hw.hbm_bw / 1e12,
        "verify_needs_tb_s": f["need_bw"] / 1e12,
        "ridge_nodes": f["ridge_nodes"],
        "draft_us_per_token": f["draft_us_tok"],
        "draft_eval_us": f["draft_attn_us"],
        "vocab": t.vocab,
        "lanes": f["tm"].lanes,
        "accept_cycles": st.cycles.post_verify,
        "sampler_cycles": st.cycles.sampler,
        "accept_us": st.accept_us,
        "lanes_for_1us": f["lanes_1us"],
        "disagreements": [
            {
                "topic": d.topic,
                "ratio": d.ratio,
                "article": d.article,
                "first_principles": d.first_principles,
            }
            for d in disagreements(profile)
        ],
    }
    out["extra_token"] = [asdict(r) for r in extra_token_rows(profile)]
    if f["gpu"]:
        out["gpu_autoregressive_tokens_per_s"] = f["cv"].ar.tokens_per_s
        out["vs_gpu_autoregressive"] = f["vs_gpu_ar"]
        out["gpu_autoregressive_roofline_tokens_per_s"] = f["gv"].ar.tokens_per_s
        out["vs_gpu_autoregressive_roofline"] = f["vs_gpu_ar_roofline"]
    return out


#: the GPU baseline whose ``[calibration]`` the report compares with the measurements
CALIBRATED_BASELINE = "h100-7b"


def calibration_summary() -> dict[str, Any]:
    """The calibrated baseline's factors (:data:`CALIBRATED_BASELINE`) against every
    published measurement (:func:`sim.timing.calibration.summary`)."""
    cal = load_profile(CALIBRATED_BASELINE).calibration
    if cal is None:
        raise ValueError(f"profile {CALIBRATED_BASELINE!r} has no [calibration] section")
    return {"baseline": CALIBRATED_BASELINE, **_calibration(cal)}


def _finite(x: Any) -> Any:
    """``x`` with every infinite or NaN float as ``None`` (JSON has neither)."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_summary(profiles: Sequence[Profile], path: str | Path) -> Path:
    """Write ``{"profiles": {name: profile_summary(p)}}`` as JSON to ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = _finite(
        {
            "profiles": {p.name: profile_summary(p) for p in profiles},
            "calibration": calibration_summary(),
        }
    )
    out.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    return out
