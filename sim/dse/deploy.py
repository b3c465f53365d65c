"""The deployment comparison: every deployment of :mod:`sim.timing.deploy` over batch
sizes and chain lengths, per scenario of ``sim/dse/deploy.toml``, and the model's
interactivity ratios beside seed 000's (``python -m sim.dse.deploy``, ``make dse``).

Configuration (:func:`load_config`), computation (:func:`sweep`, :func:`ratios`)
and report (:mod:`sim.dse.deploy_report`) are apart. A point the profiles refuse
(a batch whose KV cache does not fit beside the weights, a vocabulary SpecDecode-1
cannot sample) is kept as a row with its reason instead of numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from checks import cli_parser, out_dir_arg
from sim.dse import deploy_report
from sim.timing.deploy import DEPLOYMENTS, DraftDevice, Link, deploy_point
from sim.timing.profiles import known_profiles, load_profile

__all__ = [
    "Config",
    "Scenario",
    "front",
    "line",
    "load_config",
    "main",
    "ratio_at",
    "ratios",
    "sweep",
]

DEFAULT = Path(__file__).with_name("deploy.toml")
_HELP = "Deployments of speculative decoding over batch sizes and chains (make dse)."


@dataclass(frozen=True)
class Scenario:
    """One target on one GPU: its deployments and chains ``(verified, accepted)``."""

    name: str
    gpu: str
    spec: str
    chains: tuple[tuple[int, int], ...]
    deployments: tuple[str, ...]


@dataclass(frozen=True)
class Config:
    """``deploy.toml``: batch sizes, context, scenarios, the draft device and its link,
    and the published claims (``published``)."""

    batches: tuple[int, ...]
    gpus: tuple[int, ...]
    context_len: int
    calibrated: bool
    scenarios: tuple[Scenario, ...]
    device: DraftDevice
    link: Link
    published: dict[str, Any]


def _ints(key: str, v: object, lo: int, hi: int) -> tuple[int, ...]:
    if (
        not isinstance(v, list)
        or not v
        or not all(isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi for x in v)
    ):
        raise ValueError(f"{key} = {v!r}: must be a non-empty list of integers in {lo}..{hi}")
    return tuple(v)


def _scenario(i: int, raw: dict) -> Scenario:
    key = f"scenario[{i}]"
    for f in ("gpu", "spec"):
        if raw.get(f) not in known_profiles():
            raise ValueError(f"{key}.{f} = {raw.get(f)!r}: not a profile in sim/profiles")
    chains = raw.get("chains")
    if not isinstance(chains, list) or not chains:
        raise ValueError(f"{key}.chains = {chains!r}: must be a list of [verified, accepted]")
    for c in chains:
        ok = isinstance(c, list) and len(c) == 2 and all(isinstance(x, int) for x in c)
        if not ok or not 1 <= c[0] <= 1023 or not 0 <= c[1] <= c[0]:
            raise ValueError(
                f"{key}.chains: {c!r} must be [verified, accepted], 0 <= accepted <= verified"
            )
    deps = raw.get("deployments")
    if not isinstance(deps, list) or not deps or any(d not in DEPLOYMENTS for d in deps):
        raise ValueError(
            f"{key}.deployments = {deps!r}: must be a list of {', '.join(DEPLOYMENTS)}"
        )
    return Scenario(str(raw.get("name", key)), raw["gpu"], raw["spec"],
                    tuple((c[0], c[1]) for c in chains), tuple(deps))  # fmt: skip


def load_config(path: Path = DEFAULT) -> Config:
    """Read and check ``path``; ``ValueError`` naming the field."""
    with Path(path).open("rb") as fh:
        raw = tomllib.load(fh)
    unknown = set(raw) - {"batches", "gpus_per_device", "context_len", "calibrated", "scenario",
                          "device", "link", "published"}  # fmt: skip
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: unknown field of {path}")
    ctx = raw.get("context_len", 2048)
    if not isinstance(ctx, int) or isinstance(ctx, bool) or not 0 <= ctx <= 1 << 24:
        raise ValueError(f"context_len = {ctx!r}: must be an integer in 0..16777216")
    scen = raw.get("scenario")
    if not isinstance(scen, list) or not scen:
        raise ValueError(f"scenario = {scen!r}: must be a list of [[scenario]] tables")
    try:
        device = DraftDevice(**raw["device"])
        link = Link(**raw["link"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"device, link: {e}") from None
    return Config(
        batches=_ints("batches", raw.get("batches"), 1, 4096),
        gpus=_ints("gpus_per_device", raw.get("gpus_per_device", [1]), 1, 64),
        context_len=ctx,
        calibrated=bool(raw.get("calibrated", True)),
        scenarios=tuple(_scenario(i, s) for i, s in enumerate(scen)),
        device=device,
        link=link,
        published=dict(raw.get("published", {})),
    )


def line(dep: str, gpus: int) -> str:
    """A curve's name: the deployment, with the GPUs sharing the draft device."""
    return f"{dep}/{gpus}" if dep == "gpu_accel_draft" else dep


def _point(cfg: Config, gpu, spec, dep: str, b: int, v: int, a: int, g: int) -> dict:
    try:
        p = deploy_point(
            dep, gpu=gpu, spec=spec, device=cfg.device, link=cfg.link, batch=b, verified=v,
            accepted=a, context_len=cfg.context_len, gpus=g,
        )  # fmt: skip
    except ValueError as e:
        return {"error": str(e)}
    return {"error": None, "step_us": p.step_us, "tokens_per_s_user": p.tokens_per_s_user,
            "tokens_per_s": p.tokens_per_s, "watts": p.watts,
            "tokens_per_s_per_kw": p.tokens_per_s_per_kw, "phases": p.phases}  # fmt: skip


def sweep(cfg: Config) -> list[dict[str, Any]]:
    """Every scenario x chain x deployment (x GPUs per draft device) x batch: one row
    each (``error`` set where the profiles refuse the point)."""
    rows = []
    for sc in cfg.scenarios:
        gpu = load_profile(sc.gpu)
        gpu = gpu.calibrated() if cfg.calibrated and gpu.calibration else gpu
        spec = load_profile(sc.spec)
        for verified, accepted in sc.chains:
            for dep in sc.deployments:
                for g in cfg.gpus if dep == "gpu_accel_draft" else (1,):
                    for b in cfg.batches:
                        row = {
                            "scenario": sc.name,
                            "verified": verified,
                            "accepted": accepted,
                            "deployment": dep,
                            "gpus": g,
                            "line": line(dep, g),
                            "batch": b,
                        }
                        rows.append({**row, **_point(cfg, gpu, spec, dep, b, verified,
                                                     accepted, g)})  # fmt: skip
    return rows


def front(rows: list[dict], x: str, y: str) -> list[dict]:
    """The points no other point beats on both ``x`` and ``y`` (a deployment's useful
    curve: a larger batch that lowers both is never chosen), by increasing ``y``."""
    ok = [r for r in rows if not r["error"]]
    keep = [r for r in ok if not any(o[x] >= r[x] and o[y] > r[y] or o[x] > r[x] and o[y] >= r[y]
                                     for o in ok)]  # fmt: skip
    return sorted(keep, key=lambda r: r[y])


def _interp(curve: list[tuple[float, float]], t: float) -> float | None:
    """The curve's log ``x`` at log ``y = t`` (linear in log-log), or ``None`` outside."""
    if len(curve) == 1 and curve[0][0] == t:
        return curve[0][1]
    for (y0, x0), (y1, x1) in zip(curve, curve[1:], strict=False):
        if y0 <= t <= y1 and y1 > y0:
            return x0 + (x1 - x0) * (t - y0) / (y1 - y0)
    return None


def ratio_at(rows_a: list[dict], rows_b: list[dict], *, at: str, of: str, n: int = 41) -> list:
    """``[(value of at, of_a / of_b)]`` over the range of ``at`` both fronts cover
    (``n`` points, log-spaced): e.g. the interactivity ratio at equal throughput per kW."""
    ca = [(math.log(r[at]), math.log(r[of])) for r in front(rows_a, of, at)]
    cb = [(math.log(r[at]), math.log(r[of])) for r in front(rows_b, of, at)]
    if not ca or not cb:
        return []
    lo, hi = max(ca[0][0], cb[0][0]), min(ca[-1][0], cb[-1][0])
    out = []
    for k in range(n if hi > lo else 0):
        t = lo + (hi - lo) * k / (n - 1)
        xa, xb = _interp(ca, t), _interp(cb, t)
        if xa is not None and xb is not None:
            out.append((math.exp(t), math.exp(xa - xb)))
    return out


def ratios(rows: list[dict]) -> list[dict[str, Any]]:
    """Per scenario and chain: interactivity ratios at equal throughput per kW (each
    draft-device curve over the GPU's own speculation; speculation over plain decoding;
    SpecDecode-1 over the GPU's speculation), as ``[(tokens/s/kW, ratio)]``."""
    out = []
    keys = list(dict.fromkeys((r["scenario"], r["verified"]) for r in rows
                              if r["deployment"] != "gpu_plain"))  # fmt: skip
    for sc, v in keys:
        sel: dict[str, list[dict]] = {}
        for r in rows:
            if r["scenario"] == sc and (r["verified"] == v or r["deployment"] == "gpu_plain"):
                sel.setdefault(r["line"], []).append(r)
        pairs = [(a, "gpu_spec") for a in sel if a.startswith("gpu_accel_draft")]
        pairs += [("gpu_spec", "gpu_plain"), ("specdecode", "gpu_spec")]
        for a, b in pairs:
            if a in sel and b in sel:
                rs = ratio_at(sel[a], sel[b], at="tokens_per_s_per_kw", of="tokens_per_s_user")
                out.append({"scenario": sc, "verified": v, "a": a, "b": b, "curve": rs})
    return out


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (reports name no checkout)."""
    try:
        return str(path.resolve().relative_to(DEFAULT.parents[2]))
    except ValueError:
        return str(path)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim.dse.deploy``."""
    ap = cli_parser("python -m sim.dse.deploy", _HELP)
    ap.add_argument("--config", default=str(DEFAULT), help="deployment grid (TOML)")
    ap.add_argument("--out", type=out_dir_arg, default="build/reports", help="report folder")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parsed arguments, the configuration loaded and checked (``args.config``: a
    :class:`Config`); a bad one is a usage error naming the field."""
    ap = build_parser()
    args = ap.parse_args(argv)
    args.path = args.config
    try:
        args.config = load_config(Path(args.config))
    except (OSError, ValueError, tomllib.TOMLDecodeError) as e:
        ap.error(f"argument --config: {e}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Sweep, ratios, ``deploy.json`` and the report in ``--out``."""
    args = parse_args(argv)
    cfg: Config = args.config
    rows = sweep(cfg)
    rep = {"config": _shown(Path(args.path)), "device": asdict(cfg.device),
           "link": asdict(cfg.link), "context_len": cfg.context_len,
           "published": cfg.published, "rows": rows, "ratios": ratios(rows)}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "deploy.json").write_text(json.dumps(rep, indent=1) + "\n")
    deploy_report.write(rep, args.out)
    print(f"deploy: {len(rows)} points -> {args.out}/deploy.{{json,md,png}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
