"""The parameter sweep (``--sweep``) and the small configurations of the smoke test.

:data:`SWEEPS` (the points each block is swept over) is the synthesis flows'
only per-block parameter declaration; :func:`sweep` reads it through
:func:`sweep_plan`. A block's small configuration (:func:`small_params`) is
the ``small`` value of each of its parameters (``PARAMS``,
:class:`hw.common.Param`).
"""

from cluster.executor import Executor
from flows import verilog
from flows.synth.fit import sweep_fits
from flows.synth.fmt import fmt_s, now
from flows.synth.runner import run_jobs

__all__ = ["SWEEPS", "small_params", "sweep", "sweep_plan"]

#: sweeps: block -> (parameter(s) set together, values)
SWEEPS: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
    "tree_mask_gen": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "rng_lanes": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "accept_sampler": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "tree_manager": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
    "token_sampler": (("LANES",), (1, 2, 4, 8, 16)),
    "token_select": (("LANES",), (8, 16, 32, 64, 128)),
    "kv_pool": (("ENTRIES", "PAGES"), (16, 64, 256, 1024)),
    "topk": (("LANES",), (1, 2, 4, 8, 16)),
    # 1024 left out: the generic flow maps the DP's choice table (655,360 bits there) to
    # flip-flops, and 64 already takes Yosys about 8 minutes
    "topology_optimiser": (("N_MAX",), (16, 64, 256)),
    # 1024 left out: the static engine's top-K entry memory (N_NODES x 528 bits) and the
    # rerank list (N_NODES - 1 cells) become flip-flops and comparators in the generic flow
    "tree_builder": (("N_NODES",), (8, 16, 32, 64, 128, 256)),
}

#: what a sweep point keeps of a :func:`flows.synth.runner.measure` result
_POINT_KEYS = (
    "status",
    "cells",
    "ffs",
    "memory_bits",
    "transistors",
    "area_mm2",
    "depth",
    "yosys_s",
    "critical_path",
)


def small_params(name: str) -> dict[str, int]:
    """A small configuration of block ``name``: each of its parameters at its
    declared ``small`` value (CI smoke test: every block, seconds each)."""
    return {k: p.small for k, p in verilog.block_class(name).PARAMS.items()}


def sweep_plan(
    blocks: list[str] | None = None,
) -> dict[str, tuple[tuple[str, ...], tuple[int, ...]]]:
    """The sweep of each block of :data:`SWEEPS` that is registered (and in ``blocks``,
    if given): ``(parameters set together, values)``."""
    return {b: s for b, s in SWEEPS.items() if b in verilog.BLOCKS and (not blocks or b in blocks)}


def sweep(
    *,
    parallel: int,
    timeout: float,
    force: bool,
    blocks: list[str] | None,
    executor: Executor | None = None,
) -> dict:
    """Measure every point of :func:`sweep_plan` (on ``executor``, or ``parallel``
    local workers; ``timeout`` seconds each) and fit each block's growth.

    Returns
    -------
    dict
        The report's ``sweep`` part: ``date``, ``timeout_s`` and per block its
        ``params``, ``points`` (by parameter value ``x``), ``fits``
        (:func:`flows.synth.fit.sweep_fits`) and a ``note`` naming the skipped
        points (timeouts, crashes).
    """
    plan = sweep_plan(blocks)
    index = [(b, v) for b, (_, values) in plan.items() for v in values]
    jobs = [(b, dict.fromkeys(plan[b][0], v)) for b, v in index]
    res = run_jobs(jobs, parallel=parallel, timeout=timeout, force=force, executor=executor)
    out: dict = {"date": now(), "timeout_s": timeout, "blocks": {}}
    for (b, v), r in zip(index, res, strict=True):
        s = out["blocks"].setdefault(b, {"params": list(plan[b][0]), "points": []})
        s["points"].append({"x": v, **{k: r.get(k) for k in _POINT_KEYS}})
    for s in out["blocks"].values():
        s["points"].sort(key=lambda p: p["x"])
        s["fits"] = sweep_fits(s["points"])
        skipped = [p["x"] for p in s["points"] if p["status"] != "ok"]
        if skipped:
            s["note"] = (
                f"Skipped (Yosys crashed, did not finish within {fmt_s(timeout)}, or the task "
                "failed): "
                f"{', '.join(map(str, skipped))}."
            )
    return out
