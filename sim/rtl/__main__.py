"""``python -m sim.rtl [NAME=VALUE ...]``: build the co-simulation (timed) and benchmark
its backends (wall clock; not a test).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
from collections.abc import Sequence

from checks import cli_parser, int_arg
from golden.kvcache import KVError
from sim.rtl.backends import open_rtl
from sim.rtl.build import build_top, hdl_params


# ----------------------------------------------------------------------------- benchmark
def bench(steps: int = 200, ops: int = 2000, vocab: int = 256, **params: int) -> dict:
    """Throughput of the backends on one co-simulation (wall clock; not a test).

    Tree-manager steps with random full-size trees and ``vocab`` residual
    weights; single KV operations (inserts, then releases); batched lookups
    (64 per call) and single ones. Returns figures per second, the start-up
    time and the simulated cycles per second.
    """
    rng = random.Random(1)
    out: dict = {"params": hdl_params(**dict(params))}
    t = time.perf_counter()
    with open_rtl(**params) as (tm, kv):
        out["start_s"] = time.perf_counter() - t
        n = tm.n_nodes
        w = [rng.randrange(1, 1 << 12) for _ in range(vocab)]
        tm.seed(1)
        c0, t = tm._sim.cycle, time.perf_counter()
        for k in range(steps):
            par = [-1] + [rng.randint(max(0, i - 3), i - 1) for i in range(1, n)]
            full = (1 << tm.prob_bits) - 1
            pt = [0] + [rng.randint(full // 2, full) for _ in range(1, n)]
            qt = [0] + [rng.randint(0, full) for _ in range(1, n)]
            tm.step(par, [0] + [rng.randrange(vocab) for _ in range(1, n)], pt, qt, lambda last: w)
            if (k + 1) % max(1, steps // 4) == 0:
                print(f"  tree steps {k + 1}/{steps}", file=sys.stderr, flush=True)
        dt = time.perf_counter() - t
        out["steps_per_s"] = steps / dt
        out["step_cycles_per_s"] = (tm._sim.cycle - c0) / dt
        seqs, L = kv.seqs, 1 << kv.layer_bits
        t = time.perf_counter()
        done = 0
        while done < ops:
            for s in range(seqs):
                k = 0
                while kv.free_pages and done < ops and k < kv.pages // seqs:
                    kv.insert(s, k % L, k // L, 0, True)
                    k += 1
                    done += 1
            for s in range(seqs):
                with contextlib.suppress(KVError):
                    kv.release(s)
                    done += 1
        dt = time.perf_counter() - t
        out["kv_ops_per_s"] = done / dt
        for s in range(seqs):  # something to find
            kv.insert(s, 0, s, 0, True)
        qs = [(rng.randrange(seqs), 0, rng.randrange(seqs), 0) for _ in range(64)]
        t = time.perf_counter()
        for _ in range(ops // 64):
            kv.lookups(qs)
        out["lookups_per_s_batched_64"] = (ops // 64) * 64 / (time.perf_counter() - t)
        t = time.perf_counter()
        for q in qs * (ops // 640 + 1):
            kv.lookup(*q)
        out["lookups_per_s_single"] = len(qs) * (ops // 640 + 1) / (time.perf_counter() - t)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim.rtl``."""
    ap = cli_parser("python -m sim.rtl", __doc__)
    ap.add_argument(
        "params",
        nargs="*",
        metavar="NAME=VALUE",
        help="open_rtl parameters, e.g. entries=64 pages=64",
    )
    ap.add_argument("--steps", type=int_arg(1), default=200, help="tree steps timed")
    ap.add_argument("--ops", type=int_arg(1), default=2000, help="KV operations timed")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; nothing built.

    ``overrides``: the ``NAME=VALUE`` parameters as integers (each name once);
    ``hdl``: ``Top``'s parameters (:func:`sim.rtl.build.hdl_params`: an unknown
    name or a value out of range is a usage error).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    args.overrides = {}
    for a in args.params:
        k, eq, v = a.partition("=")
        if not eq or not k.isidentifier():
            ap.error(f"{a!r}: expected NAME=INTEGER")
        if k in args.overrides:
            ap.error(f"{k}: given twice")
        try:
            args.overrides[k] = int(v, 0)
        except ValueError:
            ap.error(f"{a!r}: expected NAME=INTEGER")
    try:  # every parameter checked before anything is built
        args.hdl = hdl_params(**dict(args.overrides))
    except ValueError as e:
        ap.error(str(e))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sim.rtl [NAME=VALUE ...]``: build (timed) and benchmark (2 on a bad
    argument, :func:`parse_args`)."""
    args = parse_args(argv)
    params, hdl = args.overrides, args.hdl
    print(f"building specdecode_top {hdl} (cached after the first time) ...", flush=True)
    t = time.perf_counter()
    build_top(hdl)
    print(f"  build {time.perf_counter() - t:.1f} s", flush=True)
    res = bench(args.steps, args.ops, **params)
    for k, v in res.items():
        print(f"  {k}: {v:,.1f}" if isinstance(v, float) else f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
