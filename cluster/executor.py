"""The one executor of the project's long jobs, on Dask (``dask.distributed``).

A long job is a list of :class:`Task`: a module-level function, its
arguments, the parameters it stands for, and (optionally) the file its
result is cached in, named by a content hash. :class:`Executor` runs them:

* **Where.** By default on a :class:`distributed.LocalCluster` of
  ``workers`` single-threaded worker processes (the machine's cores when not
  given); with ``scheduler="tcp://HOST:PORT"`` (or ``DASK_SCHEDULER_ADDRESS``
  in the environment) on an existing cluster, whose workers need this
  repository and its ``.venv`` (``docs/flows.md``); with
  ``scheduler="serial"`` in this process, one task after another (the
  reference the distributed runs are tested against).
* **Cache.** A task whose cache file holds a reusable result (the flow's own
  rule, ``Task.reusable``) is served from it and never sent; a result that
  comes back is stored there by this process (the client), so a cluster's
  workers need no shared file system, and a job interrupted and restarted
  resumes where it stopped.
* **Failures.** A task whose function raises is reported (its parameters,
  the exception, its last output) as a result with ``status`` ``"error"``,
  not cached, and the others go on. A worker that dies has its tasks run
  again elsewhere by the scheduler (``distributed.scheduler.allowed-failures``
  times; then the task is an error like any other).
* **Progress.** The dashboard's address once the cluster is up, a line per
  result (``[done/total]``, the task, its summary, where it came from) and,
  when nothing finishes for ``heartbeat`` seconds, a line with the time and
  the counts.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ENV", "Executor", "Task", "check_scheduler", "run_task"]

#: the environment variable naming a scheduler, as Dask's own tools read it
ENV = "DASK_SCHEDULER_ADDRESS"
#: characters of a failed task's output kept in its error result
LOG_TAIL = 3000


@dataclass(frozen=True)
class Task:
    """One unit of a long job: ``fn(*args)``, a JSON-able ``dict``.

    Parameters
    ----------
    fn : callable
        A module-level function (a worker imports it by name).
    args : tuple
        Its arguments (sent to the worker: keep them to what it needs).
    label : str
        The task in progress lines and errors, e.g. ``"tree_mask_gen N_NODES=8"``.
    params : dict
        The parameters it stands for (JSON-able), in error results.
    cache : pathlib.Path, optional
        The file its result is stored in (a content hash in its name); none:
        not cached.
    reusable : callable, optional
        Whether a stored result may be reused (default: any).
    """

    fn: Callable[..., dict]
    args: tuple = ()
    label: str = ""
    params: dict = field(default_factory=dict)
    cache: Path | None = None
    reusable: Callable[[dict], bool] | None = None

    def cached(self) -> dict | None:
        """The stored result, with ``cached=True``, if there is a reusable one."""
        if self.cache is None or not self.cache.exists():
            return None
        res = json.loads(self.cache.read_text())
        return {**res, "cached": True} if self.reusable is None or self.reusable(res) else None

    def store(self, res: dict) -> None:
        """Write ``res`` to the cache file (whole or not at all)."""
        if self.cache is None or res.get("status") == "error":
            return
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache.with_name(f".{self.cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({k: v for k, v in res.items() if k != "cached"}, indent=1))
        tmp.replace(self.cache)


class _Tee(io.StringIO):
    """Output kept (for an error result) and passed on to ``stream`` (the worker's own:
    a local cluster's and this process' appear on the terminal)."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(text)
        return super().write(text)

    def flush(self) -> None:
        self.stream.flush()


def run_task(fn: Callable[..., dict], args: tuple, label: str, params: dict) -> dict:
    """``fn(*args)`` on a worker, its output passed on and kept: the result, or an error
    result (``status`` ``"error"``, ``task``, ``params``, ``error``: the traceback,
    ``log``: the output's tail) if it raised."""
    out = _Tee(sys.stdout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            return fn(*args)
    except Exception:  # reported as a result: the other tasks go on
        return {
            "status": "error",
            "task": label,
            "params": params,
            "error": traceback.format_exc()[-LOG_TAIL:],
            "log": out.getvalue()[-LOG_TAIL:],
        }


def check_scheduler(address: str) -> str:
    """``address`` if it is ``"serial"`` or a scheduler's ``PROTOCOL://HOST:PORT``.

    Raises
    ------
    ValueError
        Naming ``scheduler`` and the value, otherwise.
    """
    proto, sep, rest = address.partition("://")
    if address == "serial" or (sep and proto.isalnum() and rest):
        return address
    raise ValueError(f"scheduler = {address!r}: 'serial' or PROTOCOL://HOST:PORT")


def _worker_lost(label: str, params: dict, exc: BaseException) -> dict:
    return {"status": "error", "task": label, "params": params, "error": repr(exc), "log": ""}


class Executor:
    """Runs :class:`Task` lists on Dask (the module docstring); a context manager.

    Parameters
    ----------
    scheduler : str, optional
        ``"tcp://HOST:PORT"`` of a running scheduler, ``"serial"`` (in this
        process), or none: ``DASK_SCHEDULER_ADDRESS`` if set, else a local
        cluster.
    workers : int, optional
        The local cluster's worker processes (default: the machine's cores).
    log : callable
        Where progress lines go (``print``'s signature).

    Raises
    ------
    ValueError
        If ``workers`` is not a positive integer or ``scheduler`` is neither
        ``"serial"`` nor an address ``PROTOCOL://HOST:PORT``.
    """

    def __init__(
        self, *, scheduler: str | None = None, workers: int | None = None, log=print
    ) -> None:
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise ValueError(f"workers = {workers!r}: a positive integer")
        address = scheduler or os.environ.get(ENV) or None
        self.address = None if address is None else check_scheduler(address)
        self.workers = workers or os.cpu_count() or 1
        self.log = log
        self.client: Any = None
        self._cluster: Any = None
        #: tasks sent to workers and served from the cache by :meth:`run`, all runs so far
        self.sent = 0
        self.from_cache = 0

    # ---------------------------------------------------------------- lifetime
    def __enter__(self) -> Executor:
        if self.address == "serial":
            self.log("executor: serial, in this process", flush=True)
            return self
        from distributed import Client, LocalCluster

        if self.address is None:
            self._cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=0,  # the flows' own peaks are measured; no nanny kills
                dashboard_address=":0",
            )
            self.client = Client(self._cluster)
            where = f"local cluster, {self.workers} workers"
        else:
            self.client = Client(self.address, timeout="30s")
            n = len(self.client.scheduler_info()["workers"])
            where = f"scheduler {self.address}, {n} workers"
        self.log(f"executor: {where}; dashboard {self.client.dashboard_link}", flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.client is not None:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
        self.client = self._cluster = None

    # ------------------------------------------------------------------ runs
    def run(
        self,
        tasks: Sequence[Task],
        *,
        on_result: Callable[[int, dict, int], None] | None = None,
        heartbeat: float = 60.0,
        summary: Callable[[dict], str] | None = None,
    ) -> list[dict]:
        """Every task's result, in the order of ``tasks`` (the module docstring).

        ``on_result(index, result, done)`` is called in this process as each
        result arrives (cached ones first); ``summary(result)`` is its progress
        line's text (default: its ``status``).
        """
        n = len(tasks)
        results: dict[int, dict] = {}
        what = summary or (lambda r: str(r.get("status", "done")))

        def finish(i: int, res: dict, where: str) -> None:
            results[i] = res
            if res.get("status") == "error":
                self.log(f"  [{len(results)}/{n}] {tasks[i].label}: ERROR {tasks[i].params}")
                self.log("    " + res["error"].strip().splitlines()[-1], flush=True)
            else:
                self.log(f"  [{len(results)}/{n}] {tasks[i].label}: {what(res)} ({where})")
            if on_result is not None:
                on_result(i, res, len(results))

        todo = []
        for i, t in enumerate(tasks):
            hit = t.cached()
            if hit is None:
                todo.append(i)
            else:
                self.from_cache += 1
                finish(i, hit, "cached")
        self.sent += len(todo)
        if self.client is None:
            for i in todo:
                t0 = time.monotonic()
                res = run_task(tasks[i].fn, tasks[i].args, tasks[i].label, tasks[i].params)
                tasks[i].store(res)
                finish(i, {**res, "cached": False}, f"{time.monotonic() - t0:.1f} s")
        else:
            self._distributed(tasks, todo, finish, heartbeat)
        errors = [results[i] for i in range(n) if results[i].get("status") == "error"]
        if errors:
            self.log(f"executor: {len(errors)} of {n} tasks failed:")
            for e in errors:
                self.log(f"  {e['task']} {e['params']}:\n{e['error']}\n  output: {e['log'][-500:]}")
        return [results[i] for i in range(n)]

    def _distributed(self, tasks: Sequence[Task], todo: list[int], finish, heartbeat: float):
        from distributed import TimeoutError as DaskTimeout
        from distributed import wait

        futs = {}
        for i in todo:
            t = tasks[i]
            f = self.client.submit(run_task, t.fn, t.args, t.label, t.params, pure=False)
            futs[f] = i
        pending, t_all = set(futs), time.monotonic()
        while pending:
            try:
                done, pending = wait(pending, timeout=heartbeat, return_when="FIRST_COMPLETED")
            except DaskTimeout:
                busy = sum(len(v) for v in self.client.processing().values())
                self.log(
                    f"  ... {time.monotonic() - t_all:.0f} s elapsed; {len(futs) - len(pending)}"
                    f"/{len(futs)} sent tasks done, {busy} running",
                    flush=True,
                )
                continue
            for f in done:
                i, t = futs[f], tasks[futs[f]]
                try:
                    res = f.result()
                except Exception as e:  # the task's workers died too often (KilledWorker)
                    res = _worker_lost(t.label, t.params, e)
                t.store(res)
                finish(i, {**res, "cached": False}, f"worker, at {time.monotonic() - t_all:.0f} s")
                f.release()
