"""``make soak`` in shards: a long random run against golden split into simulator
runs of their own seeds, run on the project's executor (:mod:`cluster.executor`).

The soaks (:mod:`tb.kv_pool.soak`, :mod:`tb.kvpool.soak`) use it the same way:

* **Plan.** ``ops`` operations become ``shards`` runs (:func:`plan`): shard ``i``
  has seed ``base + i`` and ``ops // shards`` operations, the first ``ops %
  shards`` shards one more. ``base`` is ``--seed``, else ``SIM_SEED``, else drawn
  at random (:func:`base_seed`); the soak prints it first, so that ``--seed``
  repeats (or resumes) the run. A shard's seed is cocotb's regression seed
  (``SIM_SEED``): its testbench derives its test's seed from it.
* **Build.** The soak builds its Verilator model on the client before the
  shards; every shard runs its cocotb test on that build in a run directory of
  its own (:func:`run_cocotb`), so that no two shards share a build or a run
  directory. A worker that does not see the build (another machine) builds it
  itself, under :func:`flows.toolchain.build`'s file lock.
* **Shards.** One :class:`cluster.executor.Task` per shard (:func:`run`): a
  module-level function of the soak, ``fn(*args, ops, seed, index)``, that
  returns the shard's figures as a dict. Its result is cached in
  ``build/soak/`` by a hash of the RTL sources (:func:`flows.synth.cache.hw_sources`),
  the testbench and golden sources, the soak, its parameters, the shard's seed
  and operations (:func:`cache_file`): an interrupted soak started again with
  the same ``--seed`` resumes. Only a passing shard is reused; a failing one
  runs again. While the shards run, the progress lines of their simulator logs
  are echoed (:func:`follow`), besides the executor's line per shard.
* **Merge.** :func:`merge` sums the shards' figures and lists every shard (its
  seed, operations, figures, problems); :func:`failures` names each failing
  shard with its seed and the command line that reruns it alone. A shard fails
  if its function raised (an error result: its log is kept), if any of
  :data:`CHECKED` is not 0, or if its cocotb test failed.

:func:`add_args` / :func:`check_args` are the soaks' shared options (``--shards``,
``--ops``, ``--seed``, and :func:`cluster.cli.add_args`' ``--jobs``, ``--scheduler``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from checks import int_arg, integer
from checks.values import SEED_MAX
from cluster import cli as cluster_cli
from cluster.executor import LOG_TAIL, Executor, Task

__all__ = [
    "CACHE",
    "CHECKED",
    "add_args",
    "base_seed",
    "cache_file",
    "check_args",
    "default_shards",
    "failures",
    "follow",
    "is_built",
    "merge",
    "plan",
    "run",
    "run_cocotb",
    "shard_problems",
    "write_report",
]

REPO = Path(__file__).resolve().parent.parent
#: where shard results are cached
CACHE = REPO / "build" / "soak"
#: the counts every shard must report as 0
CHECKED = ("leaks", "lost_committed", "mismatches")
#: bump when what a shard measures changes (part of every cache key)
SOAK_VERSION = 1
#: the most shards of one soak, and the most operations
MAX_SHARDS = 1024
MAX_OPS = 10**9
#: base seeds drawn when none is given: ``0 .. 2**32 - 1`` (cocotb's own are times)
DRAWN_SEED_BITS = 32


# ------------------------------------------------------------------ options
def add_args(ap: argparse.ArgumentParser, *, ops_env: str, ops_default: int) -> None:
    """``--shards``, ``--ops`` (default ``$ops_env``, else ``ops_default``), ``--seed``
    (default ``$SIM_SEED``) and :func:`cluster.cli.add_args`' ``--jobs``, ``--scheduler``;
    :func:`check_args` completes them (the defaults from the environment)."""
    ap.add_argument(
        "--shards", type=int_arg(1, MAX_SHARDS), default=None,
        help="simulator runs the operations are split into (none: --jobs, else the "
        "machine's cores; at least 2)",
    )  # fmt: skip
    ap.add_argument(
        "--ops", type=int_arg(1, MAX_OPS), default=None,
        help=f"operations in all, over the shards (none: ${ops_env}, else {ops_default:,})",
    )  # fmt: skip
    ap.add_argument(
        "--seed", type=int_arg(0, SEED_MAX), default=None,
        help="base seed: shard i runs with seed + i (none: $SIM_SEED, else drawn and printed)",
    )  # fmt: skip
    cluster_cli.add_args(ap)


def default_shards(jobs: int | None) -> int:
    """The shards when ``--shards`` is not given: ``jobs`` (``--jobs``), else the
    machine's cores, and at least 2."""
    return max(2, jobs or os.cpu_count() or 1)


def _from_env(ap: argparse.ArgumentParser, option: str, env: str, parse, default):
    """The value of ``$env`` by ``parse`` (an ``argparse`` type), else ``default``; a
    usage error naming ``option`` and ``env`` if it is malformed."""
    text = os.environ.get(env, "")
    if not text:
        return default
    try:
        return parse(text)
    except argparse.ArgumentTypeError as exc:
        ap.error(f"argument {option}: ${env}: {exc}")


def check_args(
    ap: argparse.ArgumentParser, args: argparse.Namespace, *, ops_env: str, ops_default: int
) -> argparse.Namespace:
    """``args`` of :func:`add_args` completed: ``ops`` (``$ops_env``, else
    ``ops_default``), ``seed`` (``$SIM_SEED``, else ``None``: drawn later) and
    ``shards`` (:func:`default_shards`) if not given; a usage error naming the
    option (``--ops`` and ``--shards`` if there are fewer operations than shards).

    Raises
    ------
    SystemExit
        Status 2 (``ap.error``).
    """
    if args.ops is None:
        args.ops = _from_env(ap, "--ops", ops_env, int_arg(1, MAX_OPS), ops_default)
    if args.seed is None:
        args.seed = _from_env(ap, "--seed", "SIM_SEED", int_arg(0, SEED_MAX), None)
    if args.shards is None:
        args.shards = default_shards(args.jobs)
    if args.ops < args.shards:
        ap.error(
            f"argument --ops: {args.ops} operations for {args.shards} shards (--shards): "
            "at least one per shard"
        )
    return args


def base_seed(given: int | None) -> int:
    """``given``, else a seed drawn at random in ``0 .. 2**32 - 1``."""
    if given is not None:
        return integer("seed", given, 0)
    return random.SystemRandom().randrange(1 << DRAWN_SEED_BITS)


# ------------------------------------------------------------------ plan and cache
def plan(ops: int, shards: int, base: int) -> list[dict]:
    """The shards of a soak: ``[{"index": i, "seed": base + i, "ops": n_i}]``, the
    ``n_i`` as equal as can be (the first ``ops % shards`` one more), summing to ``ops``.

    Raises
    ------
    ValueError
        If ``shards < 1``, ``ops < shards`` or ``base < 0``.
    """
    shards = integer("shards", shards, 1)
    ops = integer("ops", ops, shards)
    base = integer("base", base, 0)
    q, r = divmod(ops, shards)
    return [{"index": i, "seed": base + i, "ops": q + (i < r)} for i in range(shards)]


def _sources_hash() -> str:
    """Hash of the RTL sources and of the testbench and golden model sources."""
    from flows.synth.cache import hw_sources, sha

    files = sorted(p for d in ("tb", "golden") for p in (REPO / d).rglob("*.py"))
    return sha(hw_sources(), *(str(f.relative_to(REPO)) + f.read_text() for f in files))


def cache_file(
    soak: str, params: Mapping, shard: Mapping, sources: str, cache_dir: Path | None = None
) -> Path:
    """The cache file of one shard: ``<cache_dir>/<soak>-<index>-<hash>.json``, the
    hash of :data:`SOAK_VERSION`, ``sources`` (the sources' hash), ``soak``,
    ``params`` (JSON), the shard's seed and operations (default dir :data:`CACHE`)."""
    from flows.synth.cache import sha

    key = sha(
        str(SOAK_VERSION),
        sources,
        soak,
        json.dumps(params, sort_keys=True),
        str(shard["seed"]),
        str(shard["ops"]),
    )
    return (cache_dir or CACHE) / f"{soak}-{shard['index']}-{key[:16]}.json"


# ------------------------------------------------------------------ one shard
def is_built(bdir: str | Path) -> bool:
    """Whether ``bdir`` holds a finished Verilator build (:func:`flows.toolchain.build`)."""
    return (Path(bdir) / ".built").exists()


def run_cocotb(
    bdir: Path,
    toplevel: str,
    module: str,
    *,
    testcase: str,
    run_dir: Path,
    env: Mapping[str, str],
    seed: int,
    report_env: str,
) -> dict:
    """Run one shard's cocotb test in ``run_dir`` (its own); return the figures it wrote.

    The test writes its figures (JSON) to the file named by the environment
    variable ``report_env`` (``run_dir/shard.json``). A failed test whose figures
    were written is a result (``failed``: the failure's text); ``seed`` of the
    figures (cocotb's test seed) becomes ``test_seed``.

    Returns
    -------
    dict
        The figures, ``test_seed``, ``failed`` (``None`` if the test passed),
        ``run_dir``.

    Raises
    ------
    RuntimeError
        If no figures were written (the simulator's log tail is printed first).
    """
    from flows import toolchain

    run_dir.mkdir(parents=True, exist_ok=True)
    out, log = run_dir / "shard.json", run_dir / "sim.log"
    out.unlink(missing_ok=True)
    log.unlink(missing_ok=True)
    failed = None
    try:
        toolchain.run(
            bdir,
            toplevel,
            module,
            test_dir=run_dir,
            testcase=testcase,
            extra_env={**env, report_env: str(out)},
            seed=seed,
        )
    except AssertionError as exc:
        failed = str(exc)[-LOG_TAIL:]
    if not out.exists():
        print(log.read_text(errors="replace")[-LOG_TAIL:] if log.exists() else "(no sim.log)")
        raise RuntimeError(f"seed {seed}: no figures written in {run_dir}; {failed}")
    fig = json.loads(out.read_text())
    fig["test_seed"] = fig.pop("seed", None)
    return {**fig, "failed": failed, "run_dir": str(run_dir)}


# ------------------------------------------------------------------ progress
def _echo(tag: str, log: Path, state: tuple | None, since: float, pattern, out: TextIO):
    """Print the new complete lines of ``log`` that match ``pattern``; the new state
    ``(inode, position)``, or ``None`` while the file is missing or older than ``since``."""
    try:
        st = log.stat()
    except FileNotFoundError:
        return None
    if st.st_mtime < since:
        return None  # an earlier run's log (a cached shard, or not started yet)
    pos = state[1] if state and state[0] == st.st_ino and st.st_size >= state[1] else 0
    with log.open("rb") as f:
        f.seek(pos)
        data = f.read()
    cut = data.rfind(b"\n") + 1
    for line in data[:cut].decode(errors="replace").splitlines():
        if pattern.search(line):
            m = re.search(r"cocotb\.\S+\s+(.*)", line)
            print(f"  {tag}: {(m.group(1) if m else line).strip()}", file=out, flush=True)
    return st.st_ino, pos + cut


@contextlib.contextmanager
def follow(logs: Mapping[str, Path], pattern: re.Pattern, every: float = 5.0) -> Iterator[None]:
    """While the block runs, echo every ``every`` seconds (and once at its end) the
    lines matching ``pattern`` that the logs ``{tag: path}`` gained (logs written
    since it began), each after its tag, to this moment's ``sys.stdout`` (the
    serial executor redirects ``sys.stdout`` while a task runs)."""
    stop, since, out = threading.Event(), time.time(), sys.stdout

    def loop() -> None:
        state: dict[str, tuple | None] = {}
        done = False
        while not done:
            done = stop.wait(every)  # then one last look: the lines written since
            for tag, log in logs.items():
                state[tag] = _echo(tag, log, state.get(tag), since, pattern, out)

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join()


# ------------------------------------------------------------------ the shards
def _importable(fn: Callable) -> Callable:
    """``fn`` as a worker imports it by name: a function of a module run as
    ``python -m`` (``__main__``) taken from that module under its own name."""
    if fn.__module__ != "__main__":
        return fn
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    if spec is None:
        raise ValueError(f"{fn.__name__}: defined in a script, not importable by a worker")
    return getattr(importlib.import_module(spec.name), fn.__name__)


def shard_problems(res: Mapping) -> list[str]:
    """Why a shard's result fails: an error result, a count of :data:`CHECKED` that
    is not 0 (or missing), a failed test; ``[]`` if it passed."""
    if res.get("status") == "error":
        return [f"error: {(res.get('error') or '?').strip().splitlines()[-1]}"]
    out = [f"{k} {res.get(k)}" for k in CHECKED if res.get(k) != 0]
    if res.get("failed"):
        out.append(f"test failed: {str(res['failed']).strip().splitlines()[0]}")
    return out


def _summary(res: dict) -> str:
    """A shard's progress line."""
    counts = ", ".join(f"{k} {res.get(k)}" for k in CHECKED)
    bad = shard_problems(res)
    return f"{res.get('operations', 0):,} operations; {counts}" + (" -- FAILED" if bad else "")


def run(
    ex: Executor,
    fn: Callable[..., dict],
    args: tuple,
    shards: Sequence[dict],
    *,
    soak: str,
    params: Mapping,
    logs: Mapping[str, Path] | None = None,
    progress: re.Pattern | None = None,
    cache_dir: Path | None = None,
) -> list[dict]:
    """Every shard's result, in the order of ``shards`` (:func:`plan`), run on ``ex``.

    Parameters
    ----------
    ex : cluster.executor.Executor
        Entered (a context manager).
    fn : callable
        The shard's module-level function, ``fn(*args, ops, seed, index) -> dict``.
    args : tuple
        Its leading arguments (the same for every shard).
    shards : sequence of dict
        :func:`plan`'s shards.
    soak : str
        The soak's name (labels, cache files).
    params : mapping
        What else the results depend on (parameter set, ...): cache key, error results.
    logs, progress
        The shards' simulator logs ``{tag: path}`` and the pattern of their lines
        to echo while they run (:func:`follow`); none: no echo.
    cache_dir : pathlib.Path, optional
        Where results are cached (default :data:`CACHE`).

    Returns
    -------
    list of dict
        The results; a shard whose function raised is an error result
        (``status`` ``"error"``, ``params`` holding its seed, ``error``, ``log``).
    """
    sources = _sources_hash()
    fn = _importable(fn)
    tasks = [
        Task(
            fn=fn,
            args=(*args, sh["ops"], sh["seed"], sh["index"]),
            label=f"{soak} shard {sh['index']} (seed {sh['seed']}, {sh['ops']:,} operations)",
            params={**sh, "soak": soak, **params},
            cache=cache_file(soak, params, sh, sources, cache_dir),
            reusable=lambda r: not shard_problems(r),
        )
        for sh in shards
    ]
    with follow(logs or {}, progress or re.compile("$^")):
        return ex.run(tasks, summary=_summary)


# ------------------------------------------------------------------ merge
def _record(shard: Mapping, res: Mapping) -> dict:
    """One shard in the merged report: its plan, its figures or error, its problems."""
    problems = shard_problems(res)
    head = {"index": shard["index"], "seed": shard["seed"], "ops": shard["ops"]}
    if res.get("status") == "error":
        return {**head, "status": "error", "problems": problems, **{
            k: res.get(k) for k in ("error", "log")
        }}  # fmt: skip
    figures = {k: v for k, v in res.items() if k not in (*head, "status")}
    return {**head, "status": "failed" if problems else "passed", "problems": problems, **figures}


def merge(
    results: Sequence[Mapping],
    shards: Sequence[Mapping],
    *,
    sums: Sequence[str] = ("operations", *CHECKED),
    tallies: Sequence[str] = (),
) -> dict:
    """The shards' results merged: ``sums`` summed, ``tallies`` (dicts of counts)
    added key by key, over the shards that returned figures; every shard listed.

    Parameters
    ----------
    results : sequence of dict
        :func:`run`'s results, in the order of ``shards``.
    shards : sequence of dict
        :func:`plan`'s shards.
    sums, tallies : sequence of str
        The figures to sum (numbers; a missing one counts 0 here and fails its
        shard if it is one of :data:`CHECKED`) and to add up (dicts).

    Returns
    -------
    dict
        The sums, the tallies, ``passed`` (every shard passed),
        ``failed_shards`` (their indices) and ``shards``: per shard ``index``,
        ``seed``, ``ops``, ``status`` (``"passed"``, ``"failed"``, ``"error"``),
        ``problems`` (:func:`shard_problems`) and its figures (or ``error``, ``log``).

    Raises
    ------
    ValueError
        If there are not as many results as shards.
    """
    if len(results) != len(shards):
        raise ValueError(f"results: {len(results)} for {len(shards)} shards")
    recs = [_record(sh, r) for sh, r in zip(shards, results, strict=True)]
    ok = [r for r in recs if r["status"] != "error"]
    out: dict = {k: sum(r.get(k) or 0 for r in ok) for k in sums}
    out = {k: round(v, 1) if isinstance(v, float) else v for k, v in out.items()}
    for k in tallies:
        t: Counter = Counter()
        for r in ok:
            t.update(r.get(k) or {})
        out[k] = dict(sorted(t.items()))
    failed = [r["index"] for r in recs if r["problems"]]
    return {**out, "passed": not failed, "failed_shards": failed, "shards": recs}


def failures(merged: Mapping, rerun: str) -> list[str]:
    """A line per failing shard of :func:`merge`'s report: its index, seed,
    operations, problems and ``rerun`` formatted with its fields (``{ops}``,
    ``{seed}``: the command line that runs it alone)."""
    return [
        f"shard {s['index']} (seed {s['seed']}, {s['ops']:,} operations): "
        f"{'; '.join(s['problems'])}\n  rerun it alone: {rerun.format(**s)}"
        for s in merged["shards"]
        if s["problems"]
    ]


def write_report(path: Path, rec: Mapping) -> None:
    """Write ``rec`` as JSON to ``path`` (whole or not at all; its folder created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    tmp.replace(path)
