"""``docs/results/status.json``: one current figure per block, and the README table.

One row per block of :data:`flows.verilog.BLOCKS`, then the scaled KV pool's
(:data:`KVPOOL`, ``hw/kvpool/``: not one of those blocks, since its Verilog at
the defaults is too large for the generic per-block flows; its figures come
from its own reports, :func:`kvpool_row`).

Each block's row names its RTL (from :data:`flows.verilog.BLOCKS`), golden
twin, testbench and doc page, and carries four figures, each with its source
and date or the sentence saying it was not measured:

- ``depth``: gate levels between registers, from ``synth.json``'s generic part;
- ``fmax_mhz``: ECP5 Fmax, from ``synth.json``'s FPGA part when it has the block,
  else from the committed ``docs/results/ecp5_measured.json``;
- ``cycles``: the SPEC §6 count the block's testbench measured (its records'
  ``latency`` at the block's default parameters, read with :attr:`BlockInfo.pattern`);
- ``tests``: the block's testbench records (cocotb tests x parameter sets) and
  their mismatches.

:func:`render_table` turns the JSON alone into the README's table, so the
README can be checked against the committed file (:func:`readme_matches`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from flows import verilog
from flows.report.page import fmt, load_json, not_measured
from flows.report.sources import Context, load_testbench_records, rel
from flows.report.stamp import file_date

__all__ = [
    "BEGIN",
    "BLOCK_INFO",
    "END",
    "HEADER",
    "KVPOOL",
    "KVPOOL_CYCLES_AT",
    "BlockInfo",
    "build",
    "kvpool_row",
    "readme_matches",
    "render_table",
    "replace_region",
]

BEGIN = "<!-- status:begin -->"
END = "<!-- status:end -->"
HEADER = (
    "block",
    "RTL",
    "golden twin",
    "testbench",
    "depth (levels)",
    "ECP5 Fmax (MHz)",
    "cycles (SPEC §6)",
    "doc",
)


@dataclass(frozen=True)
class BlockInfo:
    """What the status table says about a block besides its measured figures.

    Attributes
    ----------
    golden : tuple of str
        Dotted names of the golden twin(s) the testbench compares against.
    testbench : str
        Path of the testbench (file or folder).
    spec : str
        SPEC §6's cycle target, as the table states it.
    pattern : str or None
        Regular expression over the testbench records' ``latency`` strings whose
        groups fill ``measured``; ``None``: the testbench records no cycle count.
    measured : str
        ``str.format`` template of the measured count (group values in order).
    """

    golden: tuple[str, ...]
    testbench: str
    spec: str
    pattern: str | None = None
    measured: str = ""


BLOCK_INFO: dict[str, BlockInfo] = {
    "tree_mask_gen": BlockInfo(
        ("golden.tree.mask_rows",),
        "tb/test_tree_mask_gen.py",
        "n + at most 2",
        r"^(\d+) \(<=",
        "n + {0}",
    ),
    "rng_lanes": BlockInfo(
        ("golden.rng.LaneRNG",),
        "tb/test_rng_lanes.py",
        "",
        r"seed (\d+) cyc, advance (\d+) cyc",
        "advance {1}, seeding {0} (no SPEC §6 row)",
    ),
    "accept_sampler": BlockInfo(
        ("golden.accept.decide",),
        "tb/test_accept_sampler.py",
        "1 + at most 2 after the last node",
        r"^result (\d+) \(<=",
        "result beat {0} edges after the last node",
    ),
    "token_sampler": BlockInfo(
        ("golden.sampler.sample_weights",),
        "tb/test_token_sampler.py",
        "2 ceil(V/LANES) + at most 4",
        r"^(\d+) \(<=",
        "2 ceil(V/LANES) + {0}",
    ),
    "token_select": BlockInfo(
        ("golden.sampler.select_one_pass", "golden.sampler.sample_weights"),
        "tb/test_token_select.py",
        "ceil(V/LANES) + at most 8 from the decision (spec §3.12)",
        r"^ceil\(V/LANES\) \+ (\d+) \(<=",
        "ceil(V/LANES) + {0} from sel to token",
    ),
    "tree_manager": BlockInfo(
        (
            "golden.tree",
            "golden.rng",
            "golden.accept",
            "golden.sampler",
            "golden.topk",
            "golden.dynamic",
            "golden.builder.FixedTopologyOptimiser",
        ),
        "tb/test_tree_manager.py",
        "",
    ),
    "kv_pool": BlockInfo(
        ("golden.kvcache.BlockTable",),
        "tb/kv_pool/",
        "operation 1, lookup 1, insert 1 per cycle",
        r"lookup (\d+), op (\d+), result (\d+), insert (\S+)",
        "operation {1} (result beat {2}), lookup {0}, insert {3}",
    ),
    "topk": BlockInfo(
        ("golden.topk.topk",),
        "tb/test_topk.py",
        "",
        r"^result (\d+) \(<=",
        "result {0} after the last beat, a beat per cycle (no SPEC §6 row)",
    ),
    "topology_optimiser": BlockInfo(
        ("golden.optimiser.solve", "golden.builder.FixedTopologyOptimiser"),
        "tb/test_topology_optimiser.py",
        "DP re-solve <= 2**18 cycles at M=64, D=8, K=8",
        r"^re-solve (\d+) \(<=",
        "re-solve {0} at M=64, D=8, K=8 (no SPEC §6 row)",
    ),
    "tree_builder": BlockInfo(
        ("golden.topk.build_static", "golden.dynamic.build_dynamic"),
        "tb/test_tree_builder.py",
        "static n + 4, dynamic C + M + 8 after the last distribution beat (issue targets)",
        r"^static n ([+-] (?:\d+|-)) \(<= n \+ 4\), dynamic C \+ M ([+-] (?:\d+|-)) \(",
        "static n {0}, dynamic C + M {1} after the last distribution beat (no SPEC §6 row)",
    ),
    "specdecode_top": BlockInfo(
        ("sim.python_backend.PythonTreeManager", "sim.python_backend.PythonKV"),
        "tb/test_specdecode_top.py",
        "",
    ),
    # the scaled pool (not in flows.verilog.BLOCKS): spec §4.9's targets, read by kvpool_row
    "kvpool": BlockInfo(
        ("golden.kvpool.KVPool",),
        "tb/kvpool/",
        "lookup 1, miss at most 4 more, insert 1/cycle, commit/release/fork/score 1, "
        "spill 10 + 12 v + passes, fill 17, share n + 4 p + c + 15",
    ),
}

#: the scaled KV pool's row (Verilog module, testbench record block and doc name)
KVPOOL = "kvpool"
#: the ``kvpool_cycles.json`` record the row shows: the one whose parameters include
#: these (the testbench's ``medium`` set: the largest trees it measures);
#: without one, the record nearest the pool's defaults (:func:`_nearest_defaults`)
KVPOOL_CYCLES_AT: dict[str, int] = {"PAGES": 64, "N_NODES": 64}


def _figure(value: object, text: str, source: str, date: str = "") -> dict[str, object]:
    return {"value": value, "text": text, "source": source, "date": date, "missing": False}


def _missing(target: str, source: str) -> dict[str, object]:
    return {"value": None, "text": not_measured(target), "source": source, "missing": True}


def _rtl_path(ctx: Context, block: str) -> str:
    mod = verilog.BLOCKS[block].split(":")[0].replace(".", "/")
    for cand in (f"{mod}.py", f"{mod}/"):
        if (ctx.repo / cand).exists():
            return cand
    return f"{mod}.py"


def _depth(ctx: Context, synth: Mapping, block: str) -> dict[str, object]:
    src = rel(ctx, ctx.reports / "synth.json")
    gen = synth.get("generic") or {}
    row = next((r for r in gen.get("blocks", []) if r.get("block") == block), None)
    if row is None:
        return _missing("make synth", src)
    if row.get("status") != "ok":
        return _figure(None, str(row.get("status")), src, gen.get("date", ""))
    return _figure(row["depth"], str(row["depth"]), src, gen.get("date", ""))


def _fmax_text(row: Mapping) -> str:
    f = row.get("fmax_mhz")
    if f is None:
        return f"- ({row.get('note', 'not placed')})"
    extra = []
    if row.get("target_mhz"):
        extra.append(f"target {row['target_mhz']}" + (", missed" if f < row["target_mhz"] else ""))
    if row.get("config_short"):
        extra.append(row["config_short"])
    elif row.get("params"):  # a synth.json row: the parameters it was placed with
        extra.append(", ".join(f"{k}={v}" for k, v in row["params"].items()))
    if len(row.get("seeds") or []) > 1:
        extra.append(f"median of {len(row['seeds'])} seeds")
    return f"{f:.1f}" + (f" ({'; '.join(extra)})" if extra else "")


def _fmax(ctx: Context, synth: Mapping, block: str) -> dict[str, object]:
    fp = synth.get("fpga") or {}
    row = next((r for r in fp.get("blocks", []) if r.get("block") == block), None)
    if row is not None and row.get("status") == "ok":
        src = rel(ctx, ctx.reports / "synth.json")
        return _figure(row["fmax_mhz"], _fmax_text(row), src, fp.get("date", ""))
    path = ctx.out / "ecp5_measured.json"
    meas = load_json(path) or {}
    row = next((r for r in meas.get("blocks", []) if r.get("block") == block), None)
    if row is None:
        return _missing("make synth-fpga", rel(ctx, path))
    return _figure(row.get("fmax_mhz"), _fmax_text(row), rel(ctx, path), row.get("date", ""))


def _defaults(block: str) -> dict[str, object]:
    try:
        return verilog.block_params(block)
    except (ValueError, ImportError, AttributeError):
        return {}


def _at_defaults(recs: Sequence[Mapping], block: str) -> list[Mapping]:
    d = _defaults(block)
    return [r for r in recs if all((r.get("params") or {}).get(k) == v for k, v in d.items())]


def _largest(values: set[str]) -> str:
    """The largest of a group's counts (``12``; ``+ 5``, ``- 3`` signed, as the tree
    builder's bench prints them; a record without one, ``-``, left out), or the
    values joined when none is a count."""
    nums = [m for v in values if (m := re.fullmatch(r"([+-] )?(\d+)", v))]
    if not nums:
        return "/".join(sorted(values))
    best = max(int(m[2]) * (-1 if m[1] == "- " else 1) for m in nums)
    if all(m[1] for m in nums):
        return f"+ {best}" if best >= 0 else f"- {-best}"
    return str(best)


def _cycles(ctx: Context, recs: Sequence[Mapping], block: str) -> dict[str, object]:
    info = BLOCK_INFO.get(block)
    src = rel(ctx, ctx.reports / "sim") + "/*.json"
    if info is None or info.pattern is None:
        return _figure(None, "its blocks' counts", src)
    at = _at_defaults(recs, block)
    groups: list[set[str]] = []
    for r in at or recs:
        m = re.search(info.pattern, str(r.get("latency", "")))
        if m:
            groups = groups or [set() for _ in m.groups()]
            for g, v in zip(groups, m.groups(), strict=True):
                g.add(v)
    if not groups:
        return _missing("make sim", src)
    vals = [_largest(g) for g in groups]
    text = info.measured.format(*vals) + ("" if at else " (test parameters)")
    return _figure(vals, text, src, _newest(at or recs))


def _tests(ctx: Context, recs: Sequence[Mapping], block: str) -> dict[str, object]:
    src = rel(ctx, ctx.reports / "sim") + "/*.json"
    if not recs:
        return _missing("make sim", src)
    bad = sum(r.get("mismatches") or 0 for r in recs if isinstance(r.get("mismatches"), int))
    text = f"{len(recs)} runs, " + ("bit-exact" if bad == 0 else f"{bad} mismatches")
    return _figure(len(recs), text, src, _newest(recs))


def _newest(recs: Sequence[Mapping]) -> str:
    return max((file_date(r["_path"]) for r in recs if "_path" in r), default="")


# ---------------------------------------------------------------------- the scaled pool
def _headline(status: object) -> str:
    """A report's status up to its first ``": "`` (the details are on its results page)."""
    return str(status).split(": ", 1)[0]


def _synth_figure(value: object, text: str, src: str, rep: Mapping) -> dict[str, object]:
    """A figure of ``kvpool_synth.json``: its date, and its commit and ``measured_at``
    (which RTL was measured) where the report records them."""
    fig = _figure(value, text, src, str(rep.get("date", "")))
    fig |= {k: rep[k] for k in ("commit", "measured_at") if rep.get(k)}
    return fig


def _kvpool_depth(ctx: Context, rep: Mapping) -> dict[str, object]:
    """The pool's depth at each configuration of ``kvpool_synth.json``'s ``pool`` part,
    then the deepest leaf of its ``units`` part (leaves at the pool's defaults, or at
    reduced parameters where the report says so) and how many leaves were measured."""
    src = rel(ctx, ctx.reports / "kvpool_synth.json")
    pool = [r for r in rep.get("pool") or [] if isinstance(r, Mapping)]
    units = [r for r in rep.get("units") or [] if isinstance(r, Mapping)]
    if not pool and not units:
        return _missing("make synth-kvpool", src)
    parts, by_config = [], {}
    for r in pool:
        cfg = r.get("config", "?")
        if r.get("status") == "ok" and isinstance(r.get("depth"), int):
            by_config[cfg] = r["depth"]
            parts.append(f"{r['depth']} ({cfg} config)")
        else:
            parts.append(f"- ({cfg} config: {_headline(r.get('status'))})")
    done = [r for r in units if r.get("status") == "ok" and isinstance(r.get("depth"), int)]
    leaves_max = max((r["depth"] for r in done), default=None)
    if units:
        limited = sum(1 for r in done if r.get("limit"))
        of = f"{len(done)} of {len(units)} measured"
        if leaves_max is None:
            parts.append(f"leaves: none of {len(units)} measured")
        elif limited:
            parts.append(f"leaves ≤ {leaves_max} ({of}, {limited} at reduced parameters)")
        else:
            parts.append(f"leaves at the defaults ≤ {leaves_max} ({of})")
    value = {"pool": by_config, "leaves_max": leaves_max, "leaves_measured": len(done)}
    return _synth_figure(value, "; ".join(parts), src, rep)


def _kvpool_fmax(ctx: Context, rep: Mapping) -> dict[str, object]:
    """ECP5 Fmax of ``kvpool_synth.json``'s ``fpga`` part: its configuration, target
    and seeds, or the status it stopped with."""
    src = rel(ctx, ctx.reports / "kvpool_synth.json")
    fp = rep.get("fpga")
    if not isinstance(fp, Mapping):
        return _missing("make synth-kvpool", src)
    extra = []
    if isinstance(fp.get("target_mhz"), int | float):
        extra.append(f"target {fp['target_mhz']:g}")
    extra.append(f"{fp.get('config', 'fpga')} config")
    f = fp.get("fmax_mhz")
    if fp.get("status") != "ok" or not isinstance(f, int | float):
        text = f"- ({', '.join(extra)}: {_headline(fp.get('status', 'no Fmax'))})"
        return _synth_figure(None, text, src, rep)
    if len(fp.get("seeds") or []) > 1:
        extra.append(f"median of {len(fp['seeds'])} seeds")
    return _synth_figure(f, f"{f:.1f} ({'; '.join(extra)})", src, rep)


def _nearest_defaults(records: Sequence[Mapping]) -> Mapping | None:
    """The record whose ``params`` are nearest :class:`hw.kvpool.pool.ScaledPool`'s
    defaults (sum of the log2 distances over the parameters it states)."""
    try:
        from hw.kvpool.pool import ScaledPool

        defaults = {k: p.default for k, p in ScaledPool.PARAMS.items()}
    except (ImportError, AttributeError):
        defaults = {}

    def dist(r: Mapping) -> float:
        p = r.get("params") or {}
        return sum(
            abs(math.log2(max(1, int(p[k]))) - math.log2(max(1, int(v))))
            for k, v in defaults.items()
            if isinstance(p.get(k), int)
        )

    return min(records, key=dist, default=None)


#: the cycle figures the row shows: label -> the measurements it is the worst of
_KVPOOL_CYCLES: dict[str, tuple[str, ...]] = {
    "lookup hit": ("hit_latency",),
    "miss": ("miss_latency",),
    "insert": ("insert_per_cycle",),
    "commit": ("commit_to_next", "commit_wide_to_next", "commit_block_to_next"),
    "release": ("release_to_next", "release_tree_to_next", "release_long_to_next"),
    "fork": ("fork_to_next",),
    "score": ("score_to_next", "score_then_op_to_next"),
    "fill": ("fill_to_next",),
    "share": ("share_to_next",),
    "spill(1)": ("spill_to_next",),
}


def _kvpool_cycles(ctx: Context) -> dict[str, object]:
    """Spec §4.9's counts from ``kvpool_cycles.json`` (the testbench's ``cycles`` test,
    one record per parameter set): the record of :data:`KVPOOL_CYCLES_AT`, else the
    one nearest the defaults; its parameters are named. A commit or release is the
    worst of its variants (plain, wide tree, block end; short, wide tree, long
    sequence); the share's tokens (n) and prefix found (M), the spill's spill-queue
    passes are stated."""
    path = ctx.reports / "kvpool_cycles.json"
    src = rel(ctx, path)
    data = load_json(path)
    recs = [r for r in (data or {}).values() if isinstance(r, Mapping)]
    recs = [r for r in recs if isinstance(r.get("cycles"), Mapping)]
    at = [r for r in recs if KVPOOL_CYCLES_AT.items() <= (r.get("params") or {}).items()]
    rec = _nearest_defaults(at or recs)
    if rec is None:
        return _missing("make sim", src)
    c, p = rec["cycles"], rec.get("params") or {}
    vals: dict[str, object] = {}
    for label, keys in _KVPOOL_CYCLES.items():
        got = [c[k] for k in keys if isinstance(c.get(k), int | float)]
        if got:
            vals[label] = max(got)
    if not vals:
        return _missing("make sim", src)
    parts = {k: f"{k} {v:g}" + ("/cycle" if k == "insert" else "") for k, v in vals.items()}
    if "miss" in vals and "lookup hit" in vals:  # spec §4.9 counts a miss past a hit
        parts["miss"] += f" (hit + {vals['miss'] - vals['lookup hit']:g})"
    if "share" in vals and isinstance(c.get("share_tokens"), int):  # n tokens, M found
        parts["share"] += f" (n {c['share_tokens']}, M {c.get('share_found', '-')})"
    if "spill(1)" in vals and isinstance(c.get("spill_queue_pops"), int):
        parts["spill(1)"] += f" over {c['spill_queue_pops']} spill-queue passes"
    named = [f"{k} {p[k]}" for k in ("PAGES", "N_NODES") if k in p]
    text = ", ".join(parts.values()) + (f"; at {', '.join(named)}" if named else "")
    value = {**vals, "params": dict(p)}
    return _figure(value, text, src, file_date(path))


def _kvpool_tests(ctx: Context, recs: Sequence[Mapping]) -> dict[str, object]:
    """The pool's testbench records (block ``kvpool``: ``tb/kvpool/test_pool.py`` against
    ``golden.kvpool.KVPool``) counted as every row's; the records of its leaves'
    testbenches in the same folder (blocks ``kvpool_*``, each leaf against its own
    model) are counted apart, stated after them and kept under ``leaves``."""
    pool = [r for r in recs if r["block"] == KVPOOL]
    leaves = [r for r in recs if str(r["block"]).startswith(KVPOOL + "_")]
    fig = _tests(ctx, pool, KVPOOL)
    fig["source"] = rel(ctx, ctx.reports / "sim") + f"/{KVPOOL}__*.json"
    lf = _tests(ctx, leaves, KVPOOL)
    lf["source"] = rel(ctx, ctx.reports / "sim") + f"/{KVPOOL}_*__*.json"
    if not fig["missing"] and not lf["missing"]:
        fig["text"] = f"{fig['text']}; leaves (`{KVPOOL}_*`): {lf['text']}"
    return {**fig, "leaves": lf}


def kvpool_row(ctx: Context, recs: Sequence[Mapping]) -> dict[str, object]:
    """The scaled KV pool's row: depth and ECP5 Fmax from ``kvpool_synth.json``
    (``make synth-kvpool``), cycles from ``kvpool_cycles.json`` and runs from the
    testbench records ``recs`` (``make sim``); each figure says it was not measured
    when its report is absent."""
    info = BLOCK_INFO[KVPOOL]
    rep = load_json(ctx.reports / "kvpool_synth.json")
    rep = rep if isinstance(rep, Mapping) else {}
    return {
        "block": KVPOOL,
        "rtl": f"hw/{KVPOOL}/",
        "golden": list(info.golden),
        "testbench": info.testbench,
        "doc": f"docs/blocks/{KVPOOL}.md",
        "depth": _kvpool_depth(ctx, rep),
        "fmax_mhz": _kvpool_fmax(ctx, rep),
        "cycles": {**_kvpool_cycles(ctx), "spec": info.spec, "spec_ref": "spec §4.9"},
        "tests": _kvpool_tests(ctx, recs),
    }


def build(ctx: Context) -> dict[str, object]:
    """The status of every block of :data:`flows.verilog.BLOCKS`, then of the scaled
    pool (:func:`kvpool_row`), from the reports of ``ctx``."""
    synth = load_json(ctx.reports / "synth.json") or {}
    recs = load_testbench_records(ctx.reports)
    rows = []
    for block in verilog.BLOCKS:
        info = BLOCK_INFO.get(block)
        mine = [r for r in recs if r["block"] == block]
        doc = f"docs/blocks/{block}.md"  # the final name of every block's page
        rows.append(
            {
                "block": block,
                "rtl": _rtl_path(ctx, block),
                "golden": list(info.golden) if info else [],
                "testbench": info.testbench if info else "",
                "doc": doc,
                "depth": _depth(ctx, synth, block),
                "fmax_mhz": _fmax(ctx, synth, block),
                "cycles": {**_cycles(ctx, mine, block), "spec": info.spec if info else ""},
                "tests": _tests(ctx, mine, block),
            }
        )
    rows.append(kvpool_row(ctx, recs))
    return {"generated": ctx.env.as_dict(), "columns": list(HEADER), "blocks": rows}


def _cell(fig: Mapping) -> str:
    return fmt(fig.get("text")) if not fig.get("missing") else f"*{fmt(fig.get('text'))}*"


def render_table(status: Mapping) -> str:
    """The README's status table (between :data:`BEGIN` and :data:`END`) from ``status``."""
    lines = ["| " + " | ".join(status.get("columns", HEADER)) + " |", "|" + "---|" * len(HEADER)]
    for b in status["blocks"]:
        golden = ", ".join(f"`{g}`" for g in b["golden"]) or "-"
        tb = f"`{b['testbench']}`" if b["testbench"] else "-"
        tests = b["tests"]
        if not tests.get("missing"):
            tb += f": {_cell(tests)}"
        doc = f"[{b['block']}]({b['doc']})" if b["doc"] else "-"
        cyc = b["cycles"]
        ref = cyc.get("spec_ref", "SPEC §6")
        cycles = _cell(cyc) + (f" ({ref}: {cyc['spec']})" if cyc.get("spec") else "")
        cells = [f"`{b['block']}`", f"`{b['rtl']}`", golden, tb, _cell(b["depth"])]
        lines.append("| " + " | ".join([*cells, _cell(b["fmax_mhz"]), cycles, doc]) + " |")
    lines += [
        "",
        "Generated by `make report` from `docs/results/status.json`; each figure's source, "
        "commit and date are in that file, the reports themselves in "
        "[docs/results/](docs/results/README.md).",
    ]
    return "\n".join(lines)


def replace_region(text: str, table: str) -> str | None:
    """``text`` with the part between :data:`BEGIN` and :data:`END` replaced by
    ``table``; ``None`` when the markers are absent or out of order."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        return None
    return text[: i + len(BEGIN)] + "\n" + table + "\n" + text[j:]


def readme_matches(readme: Path, status: Mapping) -> bool | None:
    """Whether ``readme``'s status region equals :func:`render_table` of ``status``;
    ``None`` when it has no markers."""
    text = readme.read_text()
    new = replace_region(text, render_table(status))
    return None if new is None else new == text
