"""``make soak`` in shards (:mod:`tb.soak_shards`, :mod:`tb.kv_pool.soak`,
:mod:`tb.kvpool.soak`).

The plan (operations split, seeds ``base + i``), the merge (sums, every shard
listed, a shard with a nonzero count or an error fails the run, named with its
seed), the echo of the simulators' progress lines, and real sharded soaks: the
flat pool's smallest set, 2 shards of 300 operations each, on the serial
executor (then again, from the cache), and the scaled pool's ``small`` set, 2
shards of 200 transactions (a few seconds each on the Verilator builds that
``make test`` shares; each build takes a minute or two when missing).
"""

import json
import os
import re
import time
from pathlib import Path

import pytest

from cluster.executor import Executor
from tb import soak_shards as shards
from tb.kv_pool import soak as kv_soak
from tb.kvpool import soak as kvpool_soak

#: the flat pool's smallest set of tb/kv_pool/test_kv_pool.py (in make test)
KV_SMALL = {"ENTRIES": 24, "PAGES": 16, "SEQS": 3, "N_NODES": 6, "LAYER_BITS": 2, "POS_BITS": 4}


def _fig(index: int, seed: int, ops: int, **counts) -> dict:
    """A shard's result as a soak's shard function returns it."""
    c = {"leaks": 0, "lost_committed": 0, "mismatches": 0} | counts
    return {"index": index, "seed": seed, "ops": ops, "operations": ops, "failed": None,
            "codes": {"NONE": ops - 1, "SAME_SEQ": 1}, **c}  # fmt: skip


def fake_shard(ops: int, seed: int, index: int) -> dict:
    """A shard function for :func:`tb.soak_shards.run`: shard 1 raises."""
    if index == 1:
        print(f"the log of seed {seed}")
        raise RuntimeError("the simulator fell over")
    return _fig(index, seed, ops)


# ------------------------------------------------------------------ plan and merge
def test_plan_splits_the_operations_and_derives_the_seeds() -> None:
    p = shards.plan(10, 3, 100)
    assert [s["ops"] for s in p] == [4, 3, 3] and sum(s["ops"] for s in p) == 10
    assert [s["seed"] for s in p] == [100, 101, 102] and [s["index"] for s in p] == [0, 1, 2]
    for bad in [(2, 3, 0), (5, 0, 0), (5, 2, -1)]:
        with pytest.raises(ValueError):
            shards.plan(*bad)


def test_merge_sums_and_lists_every_shard() -> None:
    plan = shards.plan(1001, 2, 7)
    res = [_fig(s["index"], s["seed"], s["ops"]) for s in plan]
    m = shards.merge(res, plan, tallies=("codes",))
    assert m["operations"] == 1001 and m["passed"] and m["failed_shards"] == []
    assert (m["leaks"], m["lost_committed"], m["mismatches"]) == (0, 0, 0)
    assert m["codes"] == {"NONE": 999, "SAME_SEQ": 2}
    assert [(s["seed"], s["ops"], s["status"]) for s in m["shards"]] == [
        (7, 501, "passed"),
        (8, 500, "passed"),
    ]
    assert shards.failures(m, "rerun {seed}") == []


@pytest.mark.parametrize("count", shards.CHECKED)
def test_merge_fails_on_a_shard_with_a_nonzero_count(count: str) -> None:
    plan = shards.plan(400, 4, 50)
    res = [_fig(s["index"], s["seed"], s["ops"]) for s in plan]
    res[2][count] = 3
    m = shards.merge(res, plan)
    assert not m["passed"] and m["failed_shards"] == [2] and m[count] == 3
    assert m["shards"][2]["status"] == "failed"
    (line,) = shards.failures(m, "soak --shards 1 --ops {ops} --seed {seed}")
    assert line.startswith(f"shard 2 (seed 52, 100 operations): {count} 3")
    assert line.endswith("soak --shards 1 --ops 100 --seed 52")


def test_merge_fails_on_a_failed_test_or_a_missing_count() -> None:
    plan = shards.plan(20, 2, 0)
    res = [_fig(0, 0, 10, failed="1 of 1 cocotb tests failed"), _fig(1, 1, 10)]
    del res[1]["mismatches"]
    m = shards.merge(res, plan)
    assert m["failed_shards"] == [0, 1]
    assert m["shards"][0]["problems"] == ["test failed: 1 of 1 cocotb tests failed"]
    assert m["shards"][1]["problems"] == ["mismatches None"]


def test_an_erroring_shard_fails_the_run_and_the_others_go_on(tmp_path: Path) -> None:
    plan = shards.plan(30, 3, 40)
    with Executor(scheduler="serial", log=lambda *a, **k: None) as ex:
        res = shards.run(ex, fake_shard, (), plan, soak="fake", params={}, cache_dir=tmp_path)
    m = shards.merge(res, plan)
    assert [s["status"] for s in m["shards"]] == ["passed", "error", "passed"]
    assert m["operations"] == 20 and not m["passed"] and m["failed_shards"] == [1]
    err = m["shards"][1]
    assert err["seed"] == 41 and "the log of seed 41" in err["log"]
    assert "the simulator fell over" in err["error"]
    (line,) = shards.failures(m, "--seed {seed}")
    assert "shard 1 (seed 41" in line and "RuntimeError: the simulator fell over" in line
    assert len(list(tmp_path.glob("fake-*.json"))) == 2  # the passing shards cached


def test_follow_echoes_the_new_progress_lines(tmp_path: Path, capsys) -> None:
    old, new = tmp_path / "old.log", tmp_path / "new.log"
    old.write_text("  1.00ns INFO cocotb.kv_pool   500 operations (an earlier run)\n")
    then = time.time() - 60
    os.utime(old, (then, then))
    with shards.follow({"a": old, "b": new}, re.compile("operations"), every=0.05):
        new.write_text("  2.00ns INFO cocotb.kv_pool   10 / 20 operations\nnoise\n")
        time.sleep(0.3)
        with new.open("a") as f:
            f.write("  3.00ns INFO cocotb.kv_pool   20 operations, done\npartial")
    out = capsys.readouterr().out.splitlines()
    assert out == ["  b: 10 / 20 operations", "  b: 20 operations, done"]


# ------------------------------------------------------------------ command lines
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--ops", "1", "--shards", "2"], "--ops"),
        (["--shards", "0"], "--shards"),
        (["--seed", "-1"], "--seed"),
        (["--ops", "0"], "--ops"),
    ],
)
def test_bad_arguments_are_usage_errors_naming_the_option(argv, named, capsys) -> None:
    for module in (kv_soak, kvpool_soak):
        with pytest.raises(SystemExit) as e:
            module.parse_args(argv)
        assert e.value.code == 2 and f"argument {named}" in capsys.readouterr().err


def test_environment_defaults(monkeypatch) -> None:
    monkeypatch.setenv("KV_OPS", "1234")
    monkeypatch.setenv("SIM_SEED", "99")
    args = kv_soak.parse_args(["--jobs", "3"])
    assert (args.ops, args.seed, args.shards) == (1234, 99, 3)
    monkeypatch.setenv("KVPOOL_SOAK_SET", "small")
    monkeypatch.setenv("KVPOOL_SOAK_OPS", "x")
    with pytest.raises(SystemExit):
        kvpool_soak.parse_args([])
    assert kvpool_soak.parse_args(["--ops", "8"]).set == "small"


# ------------------------------------------------------------------ real shards
def _real(run, what, tmp_path: Path, ops: int, seed: int) -> dict:
    """A real 2-shard soak on the serial executor: its report, checked."""
    report = tmp_path / "report.json"
    with Executor(scheduler="serial") as ex:
        rc = run(what, ops, 2, seed, ex, report=report, cache_dir=tmp_path / "cache")
    rec = json.loads(report.read_text())
    assert rc == 0 and rec["passed"], rec
    assert [s["seed"] for s in rec["shards"]] == [seed, seed + 1]
    assert len({s["test_seed"] for s in rec["shards"]}) == 2
    assert rec["operations"] == sum(s["operations"] for s in rec["shards"]) >= ops
    assert rec["seed"] == seed
    assert [rec[k] for k in shards.CHECKED] == [0, 0, 0]
    return rec


def test_kv_pool_sharded_soak(tmp_path: Path, capsys) -> None:
    rec = _real(kv_soak.run_soak, KV_SMALL, tmp_path, 600, 11)
    assert [s["ops"] for s in rec["shards"]] == [300, 300] and rec["operations"] == 600
    assert sum(rec["codes"].values()) == 600 and rec["params"]["ENTRIES"] == 24
    assert "[2/2] kv_soak shard 1 (seed 12" in capsys.readouterr().out
    again = _real(kv_soak.run_soak, KV_SMALL, tmp_path, 600, 11)  # resumed: all cached
    assert all(s["cached"] for s in again["shards"]) and again["operations"] == 600


@pytest.mark.full  # make sim-full (decision 0054): the flat pool's sharded soak stays
def test_kvpool_sharded_soak(tmp_path: Path) -> None:
    rec = _real(kvpool_soak.run_soak, "small", tmp_path, 400, 21)
    assert rec["set"] == "small" and rec["params"]["PAGES"] == 32
    assert rec["sweep_lookups"] == sum(s["sweep_lookups"] for s in rec["shards"])
