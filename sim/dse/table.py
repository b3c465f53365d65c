"""The design-space table: one row per run and context, its schema, the area join and
the Pareto front.

Every column is in :data:`SCHEMA` (name, type, unit, meaning); the CSV is
written with a header in that order and the schema beside it as JSON, so a
reader needs neither this code nor pandas. **Area** is joined from the
synthesis reports (:func:`areas`): the tree manager's measured area
(``make synth-tree``: memories as N5 SRAM macros, the one-pass select at 64
lanes) at the smallest measured node count that holds the run's largest tree,
plus the on-chip pool's SRAM (``pool_gib``, the N5 bit cell of
:data:`flows.kvpool_report.SRAM`) and the TLB's (one 64-bit entry each). The
join is by the run's parameters; a tree larger than any measured point has no
area (empty).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from flows.kvpool_report import sram_mm2

__all__ = ["AREA_SOURCES", "SCHEMA", "TLB_ENTRY_BITS", "areas", "pareto", "rows", "write"]

#: (column, type, unit, meaning), in the CSV's order
SCHEMA: tuple[tuple[str, str, str, str], ...] = (
    ("profile", "str", "", "SpecDecode-1 timing profile"),
    ("tree", "str", "", "tree policy"),
    ("nodes", "int", "nodes", "tree budget, root included (chain: depth + 1)"),
    ("depth", "int", "", "largest draft depth"),
    ("select_lanes", "int", "lanes", "one-pass token select lanes (0: two-pass sampler)"),
    ("workload", "str", "", "decoded workload"),
    ("pool_gib", "int", "GiB", "on-chip KV pool"),
    ("tlb_entries", "int", "entries", "verifier port's TLB"),
    ("context", "int", "tokens", "committed context before the measured steps"),
    ("accepted_per_step", "float", "tokens", "accepted draft tokens per step (chip run)"),
    ("tokens_per_step", "float", "tokens", "emitted tokens per step (accepted + 1)"),
    ("tokens_per_s", "float", "tokens/s", "throughput at this context, pool traffic included"),
    ("unbounded_tokens_per_s", "float", "tokens/s", "the same steps, a pool that never fills"),
    ("us_per_step", "float", "us", "step time at this context"),
    ("spills_per_step", "float", "pages", "pages spilled to HBM per step"),
    ("hbm_reads_per_step", "float", "positions", "HBM-resident positions read per step"),
    ("tlb_hit_rate", "float", "", "verifier TLB hits / lookups during the steps"),
    (
        "gpu_spec_tokens_per_s",
        "float",
        "tokens/s",
        "calibrated GPU, spec decode of these trees at this context",
    ),
    ("tokens_per_s_per_w", "float", "tokens/s/W", "tokens_per_s over the chip's power"),
    ("gpu_spec_tokens_per_s_per_w", "float", "tokens/s/W", "the GPU's over its power"),
    ("tree_manager_mm2", "float", "mm2", "tree manager, measured (make synth-tree)"),
    ("pool_mm2", "float", "mm2", "KV pool SRAM, N5 macros"),
    ("tlb_mm2", "float", "mm2", "TLB SRAM, N5 macros"),
    ("area_mm2", "float", "mm2", "tree manager + pool + TLB"),
    ("tokens_per_s_per_mm2", "float", "tokens/s/mm2", "tokens_per_s / area_mm2"),
    ("pareto", "bool", "", "on the Pareto front of tokens/s against area at this context"),
)
#: bits of one TLB entry (a position tag and a page number: the scaled pool's ~64)
TLB_ENTRY_BITS = 64
#: where the tree manager's measured areas are read, first found wins: this checkout's
#: ``make synth-tree`` report, else the repository's committed copy of its tree-manager
#: rows (``docs/results/synth_tree_measured.json``, refreshed with the results pages)
_REPO = Path(__file__).resolve().parents[2]
AREA_SOURCES = (
    _REPO / "build" / "reports" / "synth_tree.json",
    _REPO / "docs" / "results" / "synth_tree_measured.json",
)


def areas(sources: Iterable[Path] | None = None) -> dict[int, float]:
    """The tree manager's measured area (mm²) by node count, from the first report of
    ``sources`` (default :data:`AREA_SOURCES`) that exists (empty if none)."""
    for src in AREA_SOURCES if sources is None else sources:
        if src.exists():
            rep = json.loads(src.read_text())
            return {
                p["nodes"]: p["area_mm2"]
                for p in rep.get("points", [])
                if p["block"] == "tree_manager" and p["status"] == "ok"
            }
    return {}


def _area(tm: dict[int, float], nodes: int, pool_gib: int, tlb: int) -> dict[str, float | None]:
    fit = [n for n in tm if n >= nodes]
    tree = tm[min(fit)] if fit else None
    pool = sram_mm2(pool_gib * 2**30 * 8)["macro_mm2"]
    tlb_mm2 = sram_mm2(tlb * TLB_ENTRY_BITS)["macro_mm2"]
    total = None if tree is None else tree + pool + tlb_mm2
    return {"tree_manager_mm2": tree, "pool_mm2": pool, "tlb_mm2": tlb_mm2, "area_mm2": total}


def _per(x: float, watts: float | None) -> float | None:
    return x / watts if watts else None


def rows(results: Sequence[dict[str, Any]], tm_areas: dict[int, float]) -> list[dict[str, Any]]:
    """One row per run and context of the ``ok`` results (:data:`SCHEMA`'s columns),
    the Pareto flags set per context."""
    out = []
    for r in results:
        if r.get("status") != "ok":
            continue
        run, chip = r["run"], r["chip"]
        nodes = chip["max_tree_nodes"] if run.get("tree") == "chain" else run.get("nodes", 32)
        base = {
            "profile": run.get("profile", "specdecode1-7b"),
            "tree": run.get("tree", "sequoia"),
            "nodes": nodes,
            "depth": run.get("depth", 8),
            "select_lanes": run.get("select_lanes", 0),
            "workload": run.get("workload", "code"),
            "pool_gib": run["pool_gib"],
            "tlb_entries": run["tlb_entries"],
            "accepted_per_step": chip["accepted_per_step"],
            "tokens_per_step": chip["tokens_per_step"],
            **_area(tm_areas, chip["max_tree_nodes"], run["pool_gib"], run["tlb_entries"]),
        }
        for c in r["contexts"]:
            row = {**base, **{k: c[k] for k in c}}
            a = row["area_mm2"]
            row["tokens_per_s_per_mm2"] = row["tokens_per_s"] / a if a else None
            row["tokens_per_s_per_w"] = _per(row["tokens_per_s"], chip.get("chip_watts"))
            g = (chip.get("gpu_spec_by_context") or {}).get(str(c["context"]))
            row["gpu_spec_tokens_per_s"] = g
            row["gpu_spec_tokens_per_s_per_w"] = _per(g, chip.get("gpu_watts")) if g else None
            out.append(row)
    for ctx in {r["context"] for r in out}:
        pareto([r for r in out if r["context"] == ctx])
    return out


def pareto(points: list[dict[str, Any]]) -> None:
    """Set ``pareto`` on each point: no other has at most its area and more tokens/s
    (or less area and as many); points without an area are never on the front."""
    for p in points:
        a, t = p["area_mm2"], p["tokens_per_s"]
        p["pareto"] = a is not None and not any(
            q is not p
            and q["area_mm2"] is not None
            and q["area_mm2"] <= a
            and q["tokens_per_s"] >= t
            and (q["area_mm2"] < a or q["tokens_per_s"] > t)
            for q in points
        )


def write(table: list[dict[str, Any]], csv_path: Path) -> Path:
    """The table as CSV (:data:`SCHEMA`'s columns) and its schema as
    ``<name>.schema.json`` beside it; returns the schema's path."""
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    cols = [c for c, *_ in SCHEMA]
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in table:
            w.writerow({k: ("" if r.get(k) is None else r[k]) for k in cols})
    schema = csv_path.with_suffix(".schema.json")
    fields = [{"name": n, "type": t, "unit": u, "description": d} for n, t, u, d in SCHEMA]
    schema.write_text(json.dumps({"file": csv_path.name, "fields": fields}, indent=1) + "\n")
    return schema
