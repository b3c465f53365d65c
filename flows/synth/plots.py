"""The sweep's plots: area, cells and logic depth over each block's swept parameter.

matplotlib is imported when a plot is drawn, not with this module: it takes
seconds to import, and only ``--sweep`` draws (the generic and ECP5 runs and
the tests import the synthesis package without needing it).
"""

from pathlib import Path

from flows import depth

__all__ = ["plot_sweep"]

#: (report key, axis label, logarithmic y axis) of each plot
_PLOTS = (
    ("area_mm2", "area mm² (5 nm estimate)", True),
    ("cells", "cells (generic gates + flip-flops)", True),
    ("depth", "logic depth (gate levels)", False),
)


def plot_sweep(sw: dict, out: Path) -> list[str]:
    """Draw the ``sweep`` part of the report as ``synth_sweep_{area,cells,depth}.png``
    in ``out`` (which must exist); returns the file names."""
    from matplotlib.figure import Figure  # seconds to import: only when plotting

    names = []
    for metric, ylabel, logy in _PLOTS:
        fig = Figure(figsize=(7, 4.5))
        ax = fig.subplots()
        for block, s in sw["blocks"].items():
            ok = [p for p in s["points"] if p["status"] == "ok"]
            if not ok:
                continue
            ax.plot(
                [p["x"] for p in ok],
                [p[metric] for p in ok],
                "o-",
                label=f"{block} ({'='.join(s['params'])})",
            )
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        if metric == "depth":
            ax.axhline(depth.BUDGET, color="r", ls="--", lw=1, label=f"budget {depth.BUDGET}")
        ax.set_xlabel("parameter (N_NODES, LANES or ENTRIES = PAGES)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"synth_sweep_{metric.split('_')[0]}.png"
        fig.savefig(out / name, dpi=110)
        names.append(name)
    return names
