"""The figures the documentation quotes, filled from the reports of the runs
that measure them.

A figure in a page under ``docs/`` or in ``README.md`` is written between
markers, ``<!--fig:chip.tokens_per_s-->3,139<!--/fig-->`` (invisible when the
Markdown is rendered). :data:`FIGURES` says where each one comes from: a
documented run of :data:`RUNS` (``python -m sim`` or ``python -m sim.timing``
with fixed arguments, each writing a JSON report under ``build/reports``), a
path into that report and a format. ``make figures`` (``python -m
flows.report.figures``) performs the runs, rewrites every marked figure and
copies the runs' pictures that the docs show (:attr:`Run.docs_pngs`, 80 dpi);
``tests/test_figures.py`` performs them again and fails when a page states
a figure the code no longer gives.

A run's printed output is quoted the same way, as a fenced block between
``<!--output:RUN-->`` and ``<!--/output-->`` (:func:`clean_output` drops
what differs from run to run: the model's own speed and elapsed time).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checks import cli_parser, out_dir_arg

__all__ = [
    "FIGURES",
    "MARK",
    "OUTPUT",
    "RUNS",
    "Figure",
    "Run",
    "clean_output",
    "fill",
    "figure_texts",
    "marked_pages",
    "run_reports",
]

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Run:
    """A documented command: ``python -m <module> <args> --out DIR`` writes ``DIR/<report>``
    and, with PNGs, the pictures ``docs_pngs`` that ``docs/`` shows (copied there, small)."""

    module: str
    args: tuple[str, ...]
    report: str
    docs_pngs: tuple[str, ...] = ()

    def argv(self, out: Path, *, pngs: bool = False) -> list[str]:
        """The command's arguments writing into ``out``, without progress; PNGs (at
        the docs' 80 dpi) only with ``pngs`` and ``docs_pngs``."""
        quiet = ("--quiet",) if self.module == "sim" else ()
        plots = ("--dpi", "80") if pngs and self.docs_pngs else ("--no-plots",)
        return [*self.args, *quiet, *plots, "--out", str(out)]


_PHASED = (
    "--workload", "phased", "--tokens", "384", "--prompt-len", "4", "--entries", "512",
    "--pages", "512", "--update-every", "8", "--window", "16", "--nodes", "16",
    "--overlap", "none",
)  # fmt: skip

#: The runs the documentation quotes, by name (the first part of a figure's key).
RUNS: dict[str, Run] = {
    "chip": Run("sim", (), "chip.json", ("chip_timeline.png",)),
    "phased": Run("sim", (*_PHASED, "--prefix", "phased"), "phased.json", ("phased_topology.png",)),
    "phased_nofallback": Run(
        "sim",
        (*_PHASED, "--no-fallback", "--prefix", "phased_nofallback"),
        "phased_nofallback.json",
    ),  # fmt: skip
    "perf": Run("sim.timing", (), "perf.json", ("calibration.png",)),
    # the claims are bytes per token; the full grid (make context, ~50 s) is checked by
    # tests/test_context.py against build/reports/context.json
    "context": Run(
        "sim.context",
        (
            "--profile",
            "specdecode1-7b",
            "--pool-gib",
            "1",
            "--contexts",
            "64",
            "--steps",
            "1",
            "--quiet",
        ),
        "context.json",
    ),  # fmt: skip
}


@dataclass(frozen=True)
class Figure:
    """``format(value * scale, fmt)`` of ``report[path[0]][path[1]]...`` of run ``run``."""

    run: str
    path: tuple[str | int, ...]
    fmt: str
    scale: float = 1.0

    def text(self, reports: Mapping[str, Any]) -> str:
        """The figure as the documentation writes it."""
        v: Any = reports[self.run]
        for k in self.path:
            v = v[k]
        return format(v * self.scale if self.scale != 1.0 else v, self.fmt)


def _perf(profile: str, *path: str | int, fmt: str = ",.0f", scale: float = 1.0) -> Figure:
    return Figure("perf", ("profiles", profile, *path), fmt, scale)


_7B, _70B = "specdecode1-7b", "specdecode1-70b"


def _claim(key: str, field: str, fmt: str = ",d", scale: float = 1.0) -> Figure:
    return Figure("context", ("claims", key, field), fmt, scale)


def _kib(key: str, field: str) -> Figure:
    return _claim(key, field, ".0f", 1 / 1024)


#: Every figure the documentation may quote, by key.
FIGURES: dict[str, Figure] = {
    "chip.accepted": Figure("chip", ("mean_accepted",), ".1f"),
    "chip.emitted": Figure("chip", ("emitted_per_step",), ".1f"),
    "chip.tree_nodes": Figure("chip", ("tree_nodes", -1), "d"),
    "chip.tokens_per_s": Figure("chip", ("projections", "prefetch", "tokens_per_s"), ",.0f"),
    "chip.vs_own_ar": Figure("chip", ("projections", "prefetch", "vs_own_ar"), ".1f"),
    "chip.vs_gpu_ar": Figure("chip", ("projections", "prefetch", "vs_gpu_ar"), ".1f"),
    "chip.vs_gpu_ar_roofline": Figure(
        "chip", ("projections", "prefetch", "vs_gpu_ar_roofline"), ".1f"
    ),
    "chip.vs_gpu_spec": Figure("chip", ("projections", "prefetch", "vs_gpu_spec"), ".1f"),
    "perf.cal.hbm_efficiency": Figure("perf", ("calibration", "factors", "hbm_efficiency"), ".0%"),
    "perf.cal.pass_overhead_us": Figure(
        "perf", ("calibration", "factors", "pass_overhead_us"), ".0f"
    ),
    "perf.cal.cpu_ms": Figure("perf", ("calibration", "factors", "cpu_round_trip_us"), ".1f", 1e-3),
    "perf.7b.gpu_ar": _perf(_7B, "gpu_autoregressive_tokens_per_s"),
    "perf.7b.one_pass_64_cycles": _perf(_7B, "extra_token", 2, "sampler_cycles"),
    "perf.7b.one_pass_64_us": _perf(_7B, "extra_token", 2, "post_verify_us", fmt=".2f"),
    "perf.7b.one_pass_128_us": _perf(_7B, "extra_token", 3, "post_verify_us", fmt=".2f"),
    "perf.7b.gpu_ar_roofline": _perf(_7B, "gpu_autoregressive_roofline_tokens_per_s"),
    "phased.first_plain_step": Figure("phased", ("optimiser", "first_plain_step"), "d"),
    "phased.probe_every": Figure("phased", ("optimiser", "update_every"), "d"),
    "phased.largest_tree": Figure("phased", ("optimiser", "tree_sizes", -1), "d"),
    "phased.tokens_per_s": Figure("phased", ("projections", "none", "tokens_per_s"), ",.0f"),
    "phased_nofallback.tokens_per_s": Figure(
        "phased_nofallback", ("projections", "none", "tokens_per_s"), ",.0f"
    ),
    "perf.7b.weights_gb": _perf(_7B, "weights_gb", fmt=".1f"),
    "perf.7b.weight_stream_us": _perf(_7B, "weight_stream_us"),
    "perf.7b.draft_eval_us": _perf(_7B, "draft_eval_us"),
    "perf.7b.ridge_nodes": _perf(_7B, "ridge_nodes"),
    "perf.7b.verify_needs_tb_s": _perf(_7B, "verify_needs_tb_s", fmt=".1f"),
    "perf.7b.article_tokens_per_s": _perf(_7B, "article", "tokens_per_s"),
    "perf.7b.roofline_tokens_per_s": _perf(_7B, "roofline", "none", "tokens_per_s"),
    "perf.7b.vocab": _perf(_7B, "vocab"),
    "perf.7b.lanes": _perf(_7B, "lanes", fmt="d"),
    "perf.7b.accept_us": _perf(_7B, "accept_us"),
    "perf.70b.article_tokens_per_s": _perf(_70B, "article", "tokens_per_s"),
    "perf.70b.roofline_tokens_per_s": _perf(_70B, "roofline", "prefetch", "tokens_per_s"),
    "perf.70b.weights_gb": _perf(_70B, "weights_gb"),
    "perf.70b.weight_stream_ms": _perf(_70B, "weight_stream_us", fmt=".1f", scale=1e-3),
    "context.70b_4gib.tokens_fit": _claim("70b_4gib_32k", "tokens_fit"),
    "context.70b_4gib.ratio": _claim("70b_4gib_32k", "ratio", ".2f"),
    "context.70b_4gib.needed_kib": _kib("70b_4gib_32k", "needed_bytes_per_token"),
    "context.70b.kv_kib": _kib("70b_4gib_32k", "kv_bytes_per_token"),
    "context.7b_4gib.tokens_fit": _claim("7b_4gib_128k", "tokens_fit"),
    "context.7b_4gib.ratio": _claim("7b_4gib_128k", "ratio", ".2f"),
    "context.7b_4gib.needed_kib": _kib("7b_4gib_128k", "needed_bytes_per_token"),
    "context.7b.kv_kib": _kib("7b_4gib_128k", "kv_bytes_per_token"),
    "context.70b_1gib.tokens_fit": _claim("70b_1gib_16k", "tokens_fit"),
    "context.70b_1gib.ratio": _claim("70b_1gib_16k", "ratio", ".2f"),
    "context.70b_1gib.needed_kib": _kib("70b_1gib_16k", "needed_bytes_per_token"),
}

#: A marked figure: ``<!--fig:KEY-->TEXT<!--/fig-->``.
MARK = re.compile(r"<!--fig:(?P<key>[\w.]+)-->(?P<text>[^<]*)<!--/fig-->")
#: A quoted output: ``<!--output:RUN-->``, a fenced block, ``<!--/output-->``.
OUTPUT = re.compile(r"<!--output:(?P<run>\w+)-->\n```\n(?P<text>.*?)```\n<!--/output-->", re.S)
_VARYING = re.compile(r"; model speed [\d,.]+ steps/s|^(total [\d.]+ s|wrote .*)\n", re.M)


def clean_output(text: str) -> str:
    """A run's printed output without what varies between identical runs, and
    without trailing spaces."""
    text = _VARYING.sub("", text)
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def marked_pages(root: Path = ROOT) -> list[Path]:
    """``README.md`` and every page under ``docs/`` (generated results excepted)."""
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [p for p in pages if "results" not in p.relative_to(root).parts]


def figure_texts(reports: Mapping[str, Any]) -> dict[str, str]:
    """Every figure of :data:`FIGURES` whose run's report is in ``reports``."""
    return {k: f.text(reports) for k, f in FIGURES.items() if f.run in reports}


def fill(text: str, texts: Mapping[str, str], outputs: Mapping[str, str] | None = None) -> str:
    """``text`` with every marked figure whose key is in ``texts``, and every quoted
    output whose run is in ``outputs``, rewritten.

    Raises ``ValueError`` naming a marker whose key is not in :data:`FIGURES`
    or whose run is not in :data:`RUNS`.
    """
    outputs = outputs or {}

    def sub(m: re.Match[str]) -> str:
        key = m["key"]
        if key not in FIGURES:
            raise ValueError(f"figure {key!r}: not in flows.report.figures.FIGURES")
        return f"<!--fig:{key}-->{texts.get(key, m['text'])}<!--/fig-->"

    def sub_output(m: re.Match[str]) -> str:
        run = m["run"]
        if run not in RUNS:
            raise ValueError(f"output {run!r}: not in flows.report.figures.RUNS")
        return f"<!--output:{run}-->\n```\n{outputs.get(run, m['text'])}```\n<!--/output-->"

    return OUTPUT.sub(sub_output, MARK.sub(sub, text))


def run_reports(
    out: Path, names: Sequence[str] | None = None, *, pngs: bool = False
) -> tuple[dict[str, Any], dict[str, str]]:
    """Perform the runs of :data:`RUNS` (all, or ``names``) writing into ``out`` (with
    ``pngs``, also the pictures the docs show).

    Returns each run's report and its printed output (:func:`clean_output`).
    """
    import contextlib
    import importlib
    import io
    import json

    reports, outputs = {}, {}
    for name in names or list(RUNS):
        run = RUNS[name]
        main = importlib.import_module(f"{run.module}.__main__").main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            status = main(run.argv(out, pngs=pngs))
        if status:
            raise RuntimeError(f"python -m {run.module} {' '.join(run.args)}: exit {status}")
        reports[name] = json.loads((out / run.report).read_text())
        outputs[name] = clean_output(buf.getvalue())
    return reports, outputs


def build_parser() -> argparse.ArgumentParser:
    """The command line of :func:`main`."""
    ap = cli_parser("python -m flows.report.figures", __doc__.splitlines()[0])
    ap.add_argument(
        "--out",
        type=out_dir_arg,
        default=ROOT / "build" / "reports",
        help="directory of the runs' JSON reports",
    )
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; nothing written (``SystemExit(2)`` on a
    bad one)."""
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m flows.report.figures``: perform the runs, rewrite the marked figures."""
    args = parse_args(argv)
    reports, outputs = run_reports(args.out, pngs=True)
    for run in RUNS.values():
        for png in run.docs_pngs:
            shutil.copyfile(args.out / png, ROOT / "docs" / png)
            print(f"copied {png} to docs/")
    texts = figure_texts(reports)
    for page in marked_pages():
        old = page.read_text()
        new = fill(old, texts, outputs)
        if new != old:
            page.write_text(new)
            print(f"updated {page.relative_to(ROOT)}")
    print(f"{len(texts)} figures, {len(outputs)} outputs from {len(RUNS)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
