"""The design-space grid (sim.dse): the grid file's checks, its runs, the Pareto front, the
area join, and a tiny grid end to end (table, schema, figures, the cache)."""

import csv
import json

import pytest

from cluster.executor import Executor
from sim.dse import __main__ as dse_cli
from sim.dse import grid as g
from sim.dse import report as dse_report
from sim.dse import table

TINY = """
[axes]
tree = ["chain", "sequoia"]
nodes = [8, 16]
pool_gib = [1]

[contexts]
tokens = [256, 1024]

[fixed]
tokens = 24
"""


def _grid(text: str) -> g.Grid:
    import tomllib

    return g.parse(tomllib.loads(text), "test")


@pytest.mark.parametrize(
    "text, msg",
    [
        ("[axes]\nbogus = [1]", "axes.bogus: not a grid field"),
        ("[axes]\nbackend = ['rtl']", "axes.backend: not a grid field"),
        ("[axes]\ntlb_entries = [1000]", "tlb_entries = 1000: 4 x a power of two"),
        ("[axes]\npool_gib = [0]", "axes.pool_gib"),
        ("[axes]\ntree = ['chain', 'chain']", "repeated values"),
        ("[axes]\ntree = []", "non-empty list"),
        ("[axes]\ntree = ['oak']", "tree = 'oak'"),
        ("[axes]\nnodes = [8]\n[fixed]\nnodes = 8", "fixed.nodes: also an axis"),
        ("[axes]\nnodes = [8]\n[contexts]\ntokens = [1024, 256]", "strictly increasing"),
        ("[axes]\nnodes = [8]\n[contexts]\nmode = 'lazy'", "contexts.mode"),
        ("[axes]\nnodes = [8]\n[extra]\nx = 1", "unknown table(s) ['extra']"),
        ("[fixed]\nnodes = 8", "[axes] is empty"),
    ],
)
def test_bad_grids_name_the_field(text: str, msg: str) -> None:
    with pytest.raises(ValueError) as e:
        _grid(text)
    assert msg in str(e.value)


def test_runs_of_a_grid() -> None:
    runs = _grid(TINY).runs()
    # the chain has no budget: one run, not one per node count
    assert [r.chip_kwargs["tree"] for r in runs] == ["chain", "sequoia", "sequoia"]
    assert "nodes" not in runs[0].chip_kwargs and runs[2].chip_kwargs["nodes"] == 16
    big = _grid("[axes]\nnodes = [256]").runs()
    assert big[0].chip_kwargs["n_nodes"] == 256  # the tree manager sized to the budget
    assert len(g.load(g.DEFAULT).runs()) > 20 and len(g.load(g.LARGE).runs()) > 500


def test_pareto_front() -> None:
    pts = [{"area_mm2": a, "tokens_per_s": t} for a, t in
           [(1, 10), (2, 30), (3, 20), (4, 40), (2, 25), (5, 40), (None, 99)]]  # fmt: skip
    table.pareto(pts)
    assert [p["pareto"] for p in pts] == [True, True, False, True, False, False, False]


def _result(nodes: int, gib: int, tps: float) -> dict:
    return {"status": "ok", "run": {"tree": "sequoia", "nodes": nodes, "pool_gib": gib,
                                    "tlb_entries": 4096},
            "chip": {"max_tree_nodes": nodes, "accepted_per_step": 2.0, "tokens_per_step": 3.0,
                     "chip_watts": 700.0, "gpu_watts": 500.0,
                     "gpu_spec_by_context": {"1024": 100.0}},
            "contexts": [{"context": 1024, "tokens_per_s": tps, "unbounded_tokens_per_s": tps,
                          "spills_per_step": 0.0}]}  # fmt: skip


def test_area_join() -> None:
    tm = {64: 0.1, 256: 0.2}
    rows = table.rows([_result(32, 1, 500.0), _result(100, 1, 600.0), _result(512, 1, 700.0),
                       {"status": "error"}], tm)  # fmt: skip
    assert [r["tree_manager_mm2"] for r in rows] == [0.1, 0.2, None]  # smallest measured >= N
    pool = rows[0]["pool_mm2"]
    assert pool == pytest.approx(2**33 * 0.021e-6 / 0.7)  # 1 GiB of N5 bit cells as macros
    assert rows[0]["area_mm2"] == pytest.approx(0.1 + pool + rows[0]["tlb_mm2"])
    assert rows[2]["area_mm2"] is None and rows[2]["pareto"] is False
    assert [r["pareto"] for r in rows[:2]] == [True, True]
    assert rows[0]["tokens_per_s_per_w"] == pytest.approx(500.0 / 700.0)
    assert rows[0]["gpu_spec_tokens_per_s_per_w"] == pytest.approx(100.0 / 500.0)
    text = "\n".join(dse_report.render({"grid": {"source": "g", "axes": {}, "contexts": [1024],
                                                  "mode": "dense"}, "runs": 3, "executor": "x",
                                         "wall_s": 1.0, "cached": 0, "failed": 0,
                                         "table": rows}))  # fmt: skip
    assert "~10 tokens/s/W" in text and "| 1,024 | sequoia 512" in text and "| 5.0x |" in text


def test_measured_areas_are_committed() -> None:
    """A fresh clone joins the area the repository measured (docs/results), not none."""
    tm = table.areas(table.AREA_SOURCES[1:])
    assert set(tm) == {64, 256, 1024} and 0 < tm[64] < tm[256] < tm[1024] < 5.0


@pytest.mark.parametrize("measured", [True, False])
def test_a_tiny_grid_end_to_end(tmp_path, monkeypatch, measured: bool) -> None:
    """The tiny grid through the command line, with the measured area and without any
    (a clone that has neither report: no area, no Pareto front, the figures still drawn)."""
    monkeypatch.setattr(dse_cli, "CACHE", tmp_path / "cache")
    if not measured:
        monkeypatch.setattr(table, "AREA_SOURCES", (tmp_path / "none.json",))
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    argv = ["--grid", str(f), "--scheduler", "serial", "--out", str(tmp_path / "r"),
            "--dpi", "40"]  # fmt: skip
    assert dse_cli.main(argv) == 0
    with (tmp_path / "r" / "dse.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    schema = json.loads((tmp_path / "r" / "dse.schema.json").read_text())
    assert list(rows[0]) == [f["name"] for f in schema["fields"]]
    assert len(rows) == 3 * 2 and {r["context"] for r in rows} == {"256", "1024"}
    assert all(float(r["tokens_per_s"]) > 0 for r in rows)
    # the GPU decodes the same trees more slowly with more context (each row its own)
    gpu = {(r["tree"], r["nodes"], r["context"]): float(r["gpu_spec_tokens_per_s"]) for r in rows}
    assert all(gpu[t, n, "1024"] < gpu[t, n, "256"] for t, n, _ in gpu)
    assert sorted(p.name for p in (tmp_path / "r").glob("*.png")) == [
        "dse_accepted.png", "dse_context.png", "dse_pareto.png"]  # fmt: skip
    md = (tmp_path / "r" / "dse.md").read_text()
    front = md.split("## Pareto front")[1].split("##")[0]
    assert md.startswith("# Design space") and ("| 1,024 | sequoia" in front) == measured
    assert all((r["area_mm2"] != "") == measured for r in rows)
    rep = json.loads((tmp_path / "r" / "dse.json").read_text())
    assert rep["runs"] == 3 and rep["cached"] == 0 and rep["failed"] == 0
    with Executor(scheduler="serial") as ex:  # a second run: every run from the cache
        again = dse_cli.run_grid(_grid(TINY), ex)
        assert ex.sent == 0 and ex.from_cache == 3
    assert [r["tokens_per_s"] for r in again["table"]] == [float(r["tokens_per_s"]) for r in rows]


def test_speedup_option_and_its_table(capsys) -> None:
    assert dse_cli.parse_args(["--speedup", "1,2"]).speedup == [1, 2]
    for bad in ("2,1", "0", "1,1", "x"):
        with pytest.raises(SystemExit):
            dse_cli.parse_args(["--speedup", bad])
        assert "increasing worker counts in 1 .. 256" in capsys.readouterr().err
    rep = {"grid": {"source": "g", "axes": {}, "contexts": [16], "mode": "dense"},
           "runs": 0, "executor": "x", "wall_s": 1.0, "cached": 0, "failed": 0, "table": [],
           "speedup": [{"workers": 1, "wall_s": 97.0, "speedup": 1.0},
                       {"workers": 2, "wall_s": 54.3, "speedup": 97.0 / 54.3}]}  # fmt: skip
    text = "\n".join(dse_report.render(rep))
    assert "| 1 | 97.0 | 1.00x |" in text and "| 2 | 54.3 | 1.79x |" in text
