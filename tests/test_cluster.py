"""The executor (cluster.executor) on its three back ends: in this process, a local Dask
cluster of 2 workers, and a real scheduler with 2 worker processes started here on
localhost. A tiny synthesis sweep gives the serial run's results on each; a second run is
served from the cache; a failing task is reported and the others go on; a worker killed
while it works has its task run again elsewhere."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cluster import cli as cluster_cli
from cluster import probe
from cluster.executor import ENV, Executor, Task
from flows.synth import runner

#: the tiny sweep: the mask generator at 4 and 8 nodes (a second or two of Yosys each)
SWEEP = [("tree_mask_gen", {"N_NODES": 4}), ("tree_mask_gen", {"N_NODES": 8})]
_TIMING = ("yosys_s", "path_s", "cached")


def _same(a: list[dict], b: list[dict]) -> bool:
    strip = lambda r: {k: v for k, v in r.items() if k not in _TIMING}  # noqa: E731
    return [strip(r) for r in a] == [strip(r) for r in b]


@pytest.fixture
def cache(monkeypatch, tmp_path) -> Path:
    """The synthesis results' cache in a folder of the test's own (the client stores
    every result: the workers never see it)."""
    monkeypatch.setattr(runner, "CACHE", tmp_path / "cache")
    monkeypatch.delenv(ENV, raising=False)
    return tmp_path / "cache"


def _squares(xs, seconds: float = 0.0, cache_dir: Path | None = None) -> list[Task]:
    return [
        Task(
            probe.square,
            (x, seconds),
            label=f"square {x}",
            params={"x": x},
            cache=cache_dir / f"sq{x}.json" if cache_dir else None,
        )  # fmt: skip
        for x in xs
    ]


def test_serial_cache_and_a_failing_task(cache) -> None:
    lines: list[str] = []
    with Executor(scheduler="serial", log=lambda *a, **k: lines.append(a[0])) as ex:
        res = ex.run(_squares([3, -1, 5], cache_dir=cache))
        assert [r.get("y") for r in res] == [9, None, 25] and ex.sent == 3
        err = res[1]
        assert (err["status"], err["params"], err["task"]) == ("error", {"x": -1}, "square -1")
        assert "ValueError: x = -1" in err["error"] and "square(-1) in process" in err["log"]
        assert any("square -1: ERROR {'x': -1}" in ln for ln in lines)
        again = ex.run(_squares([3, -1, 5], cache_dir=cache))
        # the results are served from the cache; the failed task runs again
        assert [r["cached"] for r in again] == [True, False, True] and ex.sent == 4
        assert not (cache / "sq-1.json").exists() and json.loads((cache / "sq3.json").read_text())


def test_bad_executor_arguments() -> None:
    with pytest.raises(ValueError, match="workers = 0"):
        Executor(workers=0)
    with pytest.raises(ValueError, match="scheduler = 'localhost:8786'"):
        Executor(scheduler="localhost:8786")
    assert cluster_cli.scheduler_arg("tcp://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    for bad in ("localhost:8786", "tcp://", "://x"):
        with pytest.raises(Exception, match="'serial' or PROTOCOL://HOST:PORT"):
            cluster_cli.scheduler_arg(bad)


def test_tiny_sweep_on_a_local_cluster(cache) -> None:
    with Executor(scheduler="serial") as ex:
        serial = runner.run_jobs(SWEEP, force=True, executor=ex)
    assert [r["status"] for r in serial] == ["ok", "ok"]
    with Executor(workers=2) as ex:
        assert len(ex.client.scheduler_info()["workers"]) == 2
        local = runner.run_jobs(SWEEP, force=True, executor=ex)
        assert _same(local, serial) and ex.sent == 2
        again = runner.run_jobs(SWEEP, executor=ex)
        assert _same(again, serial) and ex.sent == 2 and all(r["cached"] for r in again)


def _start(args: list[str], log: Path) -> subprocess.Popen:
    exe = Path(sys.executable).parent / "dask"
    out = log.open("w")
    return subprocess.Popen([str(exe), *args], stdout=out, stderr=subprocess.STDOUT,
                            cwd=log.parent)  # fmt: skip


def _wait_for(pred, what: str, timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(what)
        time.sleep(0.2)


@pytest.fixture
def dask_cluster(tmp_path):
    """A ``dask scheduler`` and two ``dask worker`` processes (no nanny: a killed worker
    stays dead) on localhost; yields the scheduler's address and the worker processes."""
    sfile = tmp_path / "scheduler.json"
    host = ["--host", "127.0.0.1"]
    procs = [_start(["scheduler", *host, "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sfile)], tmp_path / "scheduler.log")]  # fmt: skip
    try:
        _wait_for(lambda: sfile.exists() and sfile.stat().st_size > 0, "scheduler file")
        address = json.loads(sfile.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for i in range(2):
            procs.append(_start(["worker", address, *host, "--nthreads", "1", "--no-nanny",
                                 "--name", f"w{i}"], tmp_path / f"worker{i}.log"))  # fmt: skip
        yield address, procs[1:]
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_a_real_scheduler_and_a_killed_worker(cache, dask_cluster, monkeypatch) -> None:
    address, workers = dask_cluster
    with Executor(scheduler="serial") as ex:
        serial = runner.run_jobs(SWEEP, force=True, executor=ex)
    monkeypatch.setenv(ENV, address)  # as a user points the flows at a cluster
    with Executor() as ex:
        assert ex.address == address
        _wait_for(lambda: len(ex.client.scheduler_info()["workers"]) == 2, "two workers")
        info = ex.client.run(probe.worker_info)
        assert len(info) == 2 and all(i["python"].startswith("3.11") for i in info.values())
        remote = runner.run_jobs(SWEEP, force=True, executor=ex)
        assert _same(remote, serial) and ex.sent == 2
        # 4 tasks of 1 s on 2 workers; one worker killed while it runs its first
        by_pid = {p.pid: p for p in workers}
        tasks = _squares(range(4), seconds=1.0)
        futs = [ex.client.submit(probe.square, 100 + i, 0.5, pure=False) for i in range(2)]
        pids = {f.result()["pid"] for f in futs}
        assert pids == set(by_pid), (pids, set(by_pid))  # both workers serve tasks
        victim = workers[0]

        killer = threading.Timer(0.5, os.kill, (victim.pid, signal.SIGKILL))
        killer.start()
        res = ex.run(tasks, heartbeat=5.0)
        killer.join()
        assert victim.wait(timeout=10) == -signal.SIGKILL
        assert [r["y"] for r in res] == [x * x for x in range(4)]
        assert {r["pid"] for r in res} == {workers[1].pid}  # the victim finished none
