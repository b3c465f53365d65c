"""``deploy.md`` and ``deploy.png``: the deployment comparison's page and seed 000's plot
(throughput per kW against tokens/s per user), drawn from ``deploy.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["render", "write", "plot"]

_NAMES = {
    "gpu_plain": "GPU alone, no speculation",
    "gpu_spec": "GPU alone, speculative (draft on the GPU)",
    "gpu_accel_draft": "GPU target + draft accelerator over the link",
    "specdecode": "SpecDecode-1 alone",
}
_COLOURS = {"gpu_plain": "#8c8c8c", "gpu_spec": "#4c72b0", "gpu_accel_draft": "#dd8452",
            "specdecode": "#55a868"}  # fmt: skip


def _lines(rep: dict, sc: str) -> list[str]:
    return list(dict.fromkeys(r["line"] for r in rep["rows"] if r["scenario"] == sc))


def _label(ln: str) -> str:
    dep, _, g = ln.partition("/")
    return _NAMES[dep] + (f" ({g} GPU{'s' if g != '1' else ''} a device)" if g else "")


def _ok(rows: list[dict], **sel: Any) -> list[dict]:
    return [r for r in rows if not r["error"] and all(r[k] == v for k, v in sel.items())]


def _panels(rep: dict) -> list[tuple[str, int, int]]:
    seen = []
    for r in rep["rows"]:
        k = (r["scenario"], r["verified"], r["accepted"])
        if r["deployment"] != "gpu_plain" and k not in seen:
            seen.append(k)
    return seen


def plot(rep: dict, path: Path, *, dpi: int = 110) -> Path:
    """One panel per scenario and chain: a line per deployment over the batch sizes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    panels = _panels(rep)
    scen = list(dict.fromkeys(p[0] for p in panels))
    cols = max(sum(p[0] == s for p in panels) for s in scen)
    fig, axes = plt.subplots(len(scen), cols, figsize=(5.2 * cols, 4.2 * len(scen)),
                             squeeze=False)  # fmt: skip
    for sc_i, sc in enumerate(scen):
        for c_i, (_s, v, a) in enumerate(p for p in panels if p[0] == sc):
            ax = axes[sc_i][c_i]
            for ln in _lines(rep, sc):
                dep = ln.split("/")[0]
                sel = {"scenario": sc, "line": ln}
                pts = sorted(_ok(rep["rows"], **sel, **({} if dep == "gpu_plain" else
                                                           {"verified": v})),
                             key=lambda r: r["batch"])  # fmt: skip
                if not pts:
                    continue
                xs = [r["tokens_per_s_user"] for r in pts]
                ys = [r["tokens_per_s_per_kw"] for r in pts]
                style = "--" if ln.endswith("/1") else "-"  # one GPU a device: dashed
                ax.plot(xs, ys, style, marker="o", ms=3, color=_COLOURS[dep], label=_label(ln))
                ax.annotate(f"B={pts[-1]['batch']}", (xs[-1], ys[-1]), fontsize=7)
            ax.set(xscale="log", yscale="log", xlabel="tokens/s per user (interactivity)",
                   ylabel="tokens/s per kW (board power)",
                   title=f"{sc}: verify {v} tokens, {a} accepted")  # fmt: skip
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle("Throughput per kW against interactivity, over batch sizes (seed 000's plot)")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def _ends(rs: list) -> str:
    if not rs:
        return "no common throughput per kW"
    return (f"{rs[0][1]:.2f}x at {rs[0][0]:,.0f} (interactivity end), "
            f"{rs[-1][1]:.2f}x at {rs[-1][0]:,.0f} (energy end)")  # fmt: skip


def _verdict(rs: list, lo: float, hi: float) -> str:
    if not rs:
        return "not comparable"
    best = max(rs, key=lambda p: p[1])
    at = f"max {best[1]:.2f}x at {best[0]:,.0f} tokens/s/kW"
    if best[1] < lo:
        return f"does not reproduce: {at}, below {lo:g}x"
    inside = [t for t, x in rs if lo <= x <= hi]
    return (f"reproduces from {min(inside):,.0f} to {max(inside):,.0f} tokens/s/kW ({at})"
            if inside else f"above the claim: {at}")  # fmt: skip


def _ratio_rows(rep: dict) -> list[str]:
    pub = rep["published"]
    lo, hi = pub.get("interactivity_speedup", [2.0, 5.0])
    top = pub.get("energy_speedup_max", 10.0)
    out = ["| scenario | verify | curve / baseline | at the ends of the common range "
           "(tokens/s/kW) | against seed 000 |", "|---|---:|---|---|---|"]  # fmt: skip
    for q in rep["ratios"]:
        if q["a"].startswith("gpu_accel_draft"):
            vs = f"2-5x: {_verdict(q['curve'], lo, hi)}; up to {top:g}x: " + (
                f"max {max(x for _t, x in q['curve']):.2f}x" if q["curve"] else "-"
            )
        elif q["b"] == "gpu_plain":
            vs = f"more than {pub.get('plain_to_spec', 5):g}x: " + _verdict(
                q["curve"], pub.get("plain_to_spec", 5.0), float("inf")
            )
        else:
            vs = "(no published claim)"
        out.append(f"| {q['scenario']} | {q['verified']} | {_label(q['a'])} / {q['b']} | "
                   f"{_ends(q['curve'])} | {vs} |")  # fmt: skip
    return out


def _best_rows(rep: dict) -> list[str]:
    out = ["| scenario | verify | deployment | W | batch 1: tokens/s per user | "
           "best tokens/s per kW (batch per GPU, tokens/s per user) |",
           "|---|---:|---|---:|---:|---|"]  # fmt: skip
    for sc, v, _a in _panels(rep):
        for ln in _lines(rep, sc):
            extra = {} if ln == "gpu_plain" else {"verified": v}
            pts = _ok(rep["rows"], scenario=sc, line=ln, **extra)
            if not pts:
                continue
            one = min(pts, key=lambda r: r["batch"])
            top = max(pts, key=lambda r: r["tokens_per_s_per_kw"])
            out.append(f"| {sc} | {v} | {_label(ln)} | {one['watts']:,.0f} | "
                       f"{one['tokens_per_s_user']:,.0f} | {top['tokens_per_s_per_kw']:,.0f} "
                       f"(B={top['batch']}, {top['tokens_per_s_user']:,.0f}) |")  # fmt: skip
    return out


def _refused(rep: dict) -> list[str]:
    why: dict[str, list[str]] = {}
    for r in rep["rows"]:
        if r["error"]:
            e = r["error"]
            reason = ("the draft's KV cache does not fit the draft device" if "users" in e
                      else "the KV cache does not fit beside the weights" if "KV cache" in e
                      else e)  # fmt: skip
            why.setdefault(f"{r['scenario']}, {_label(r['line'])}: {reason}", []).append(
                str(r["batch"])
            )
    return [f"- {k} (batch {', '.join(dict.fromkeys(v))})" for k, v in why.items()]


def render(rep: dict) -> list[str]:
    """The page's Markdown lines."""
    d, ln, pub = rep["device"], rep["link"], rep["published"]
    lines = [
        "# Deployments: throughput per kW against interactivity",
        "",
        f"`python -m sim.dse.deploy` (`make dse`) from `{rep['config']}`: every deployment of "
        "`sim.timing.deploy` at every batch size, one user per sequence, "
        f"{rep['context_len']:,} tokens of context, the GPU profiles calibrated on published "
        "measurements (decision 0044). Energy is board power at full load (the profiles' "
        "`[power]`); hosts and the network are not counted.",
        "",
        f"- Draft accelerator: {d['name']}: {d['mem_bw'] / 1e12:,.0f} TB/s, "
        f"{d['mem_bytes'] / 1e9:g} GB, {d['flops_8'] / 1e12:,.0f} TFLOP/s FP8, "
        f"{d['pass_overhead_us']:g} us a pass, {d['watts']:,.0f} W ({d['source']}).",
        f"- Link: {ln['latency_us']:g} us a message, {ln['bandwidth'] / 1e9:g} GB/s "
        f"({ln['source']}).",
        "",
        "![deploy](deploy.png)",
        "",
        "## Each deployment's ends",
        "",
        *_best_rows(rep),
        "",
        "## Interactivity at equal throughput per kW, against seed 000",
        "",
        'Seed 000: the draft on Corsair gives "2-5X end-to-end request speedup" over the '
        "same draft on the GPU at equal energy for interactivity-optimised configurations, "
        f'"up to {pub.get("energy_speedup_max", 10):g}X" for energy-optimised ones; at '
        f"~{pub.get('tokens_per_s_per_kw', 60000):,.0f} tokens/s/kW speculation on the GPU is "
        f'"more than {pub.get("plain_to_spec", 5):g}X" faster than none and the draft on '
        f'Corsair "another {pub.get("spec_to_accel", 2.6):g}X". The model\'s ratios of '
        "tokens/s per user at equal tokens/s per kW (log-log interpolation over the batch "
        "sizes both curves cover):",
        "",
        *_ratio_rows(rep),
        "",
    ]
    ref = _refused(rep)
    if ref:
        lines += ["## Points the profiles refuse", "", *ref, ""]
    return lines


def write(rep: dict, out: Path) -> None:
    """``deploy.md`` and ``deploy.png`` in ``out``."""
    plot(rep, out / "deploy.png")
    (out / "deploy.md").write_text("\n".join(render(rep)) + "\n")
