"""``python -m golden.kvpool.bench`` (``make bench``): the scaled pool's golden model speed.

A seeded operation mix on a pool of ``--pages`` pages (default 2^20, the full
configuration of SPEC §4.9): a prefill of committed inserts to 97 % of the
pages (24 sequences: a 512-token prompt written once and shared by ``share``,
then each sequence's own tokens), then decode steps on random sequences
(speculative inserts of a 16-node tree, lookups through node views on both
ports, scores, commit of an ancestor chain, committed inserts), with forks,
releases (of forked or shared sequences only, so that the pool stays
full), shares, ``spill(n)`` and fills of spilled positions mixed in; once the
free pages run out, every allocation spills a victim. Some operations fail on purpose
(``PoolError``: a fork to a busy sequence, a fill of a position on chip):
they count as operations.

The calls are first generated against a shadow pool (their arguments depend
on the state), then replayed on a fresh pool, timed: the rates are the
model's own, wall clock and CPU (``time.process_time``), without the
generator's cost. The replay's results must equal the shadow's (checked
after the clock stops). Writes ``build/reports/kvpool_bench.json``. A
benchmark, not a test: nothing asserts a time (the target, 100,000 mixed
operations per second at 2^20 pages, is printed with the result).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from checks import cli_parser, int_arg, out_file_arg
from golden import tree as tree_mod
from golden.kvpool.errors import PoolError
from golden.kvpool.params import RANGES
from golden.kvpool.pool import KVPool

REPORTS = Path(__file__).resolve().parents[2] / "build" / "reports"
#: the issue's target: mixed operations per second at 2^20 pages
TARGET_OPS_PER_S = 100_000
PROMPT = 512
#: the draft tree of every step (16 nodes, depth 5)
PARENTS = [-1, 0, 0, 0, 1, 1, 2, 3, 4, 4, 5, 6, 8, 9, 10, 12]

Call = tuple[str, tuple]


class _Generator:
    """Generates the calls of the mix against a shadow pool."""

    def __init__(self, pages: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pool = KVPool(pages=pages)
        self.calls: list[Call] = []
        self.results: list[object] = []
        self.rows = tree_mod.mask_rows(PARENTS)
        self.depths = tree_mod.depths(PARENTS)
        self.seqs = self.pool.params.seqs
        self.active = 24  # prefilled sequences, never released
        self.prompt = [self.rng.randrange(1 << 17) for _ in range(PROMPT)]

    def call(self, op: str, *args: object) -> object:
        try:
            r = getattr(self.pool, op)(*args)
            out: object = r.value
        except PoolError as e:
            out = int(e.code)
        self.calls.append((op, args))
        self.results.append(out)
        return out

    def prefill(self, active: int) -> None:
        """``active`` sequences filled with committed positions to 97 % of the pages
        (the prompt counted once)."""
        own = (int(0.97 * self.pool.params.pages) - PROMPT) // active
        per = min(own + PROMPT, 2**17 - 8192)
        tok = self.rng.randrange
        for s in range(active):
            if s == 0:
                for pos, t in enumerate(self.prompt):
                    self.call("insert", 0, pos, 0, True, t)
            else:
                self.call("share", s, self.prompt)
            for pos in range(self.pool.seq_len(s), per):
                self.call("insert", s, pos, 0, True, tok(1 << 17))

    def step(self, s: int) -> None:
        """One decode step of ``s``: a tree, lookups, scores, a commit."""
        rng, pool = self.rng, self.pool
        n = pool.seq_len(s)
        k = rng.randrange(1, len(PARENTS) + 1)
        for j in range(k):
            self.call("insert", s, n + self.depths[j], j, False, rng.randrange(1 << 17))
        for _ in range(2 * k):
            port = rng.randrange(2)
            j = rng.randrange(k)
            if rng.random() < 0.5:
                pos = n + rng.randrange(-3, self.depths[j] + 1)
            else:
                pos = rng.randrange(n)  # anywhere in the context: TLB misses
            self.call("lookup", port, s, max(pos, 0), self.rows[j])
        for _ in range(rng.randrange(4)):
            self.call("score", s, rng.randrange(max(n - 64, 0), n), rng.randrange(1, 4))
        self.call("commit", s, self.rows[rng.randrange(k)])
        if rng.random() < 0.3:
            self.call("insert", s, pool.seq_len(s), 0, True, rng.randrange(1 << 17))

    def extras(self, live: list[int]) -> None:
        """Now and then: a fork, a release, a share, a spill, fills."""
        rng, pool = self.rng, self.pool
        idle = [s for s in range(self.seqs) if s not in live]
        r = rng.random()
        if r < 0.005 and idle:  # each fork costs its source a segment for good
            dst = rng.choice(idle)
            self.call("fork", rng.choice(live), dst)
            live.append(dst)
        elif r < 0.025 and len(live) > self.active:
            s = rng.choice(live[self.active :])  # a forked or shared one: the pool stays full
            self.call("release", s)
            live.remove(s)
        elif r < 0.045 and idle:
            dst = rng.choice(idle)
            tail = [rng.randrange(1 << 17) for _ in range(rng.randrange(64))]
            self.call("share", dst, self.prompt[: rng.randrange(PROMPT + 1)] + tail)
            if pool.seq_len(dst):
                live.append(dst)
        elif r < 0.10:
            self.call("spill", rng.randrange(1, 9))
        elif r < 0.16:
            s = rng.choice(live)
            n = pool.seq_len(s)
            for _ in range(4):
                pos = rng.randrange(n)
                if pool.pte(s, pos)[0] == 1 or rng.random() < 0.1:
                    self.call("fill", s, pos)
                    break
        if rng.random() < 0.05:  # a busy destination, on purpose
            self.call("fork", rng.choice(live), rng.choice(live))


def generate(pages: int, ops: int, seed: int) -> tuple[list[Call], list[object], int]:
    """The calls of the mix (prefill first), the shadow's results, and how many
    of the calls are the prefill."""
    gen = _Generator(pages, seed)
    gen.prefill(gen.active)
    n_prefill = len(gen.calls)
    live = list(range(gen.active))
    while len(gen.calls) < n_prefill + ops:
        gen.step(gen.rng.choice(live))
        gen.extras(live)
    return gen.calls[: n_prefill + ops], gen.results[: n_prefill + ops], n_prefill


def _replay(pool: KVPool, calls: list[Call]) -> tuple[list[object], float, float]:
    bound = [(getattr(pool, op), args) for op, args in calls]
    out: list[object] = []
    push = out.append
    w0, c0 = time.perf_counter(), time.process_time()
    for f, args in bound:
        try:
            push(f(*args).value)
        except PoolError as e:
            push(int(e.code))
    return out, time.perf_counter() - w0, time.process_time() - c0


def run(pages: int = 2**20, ops: int = 1_000_000, seed: int = 0) -> dict:
    """Generate the mix, replay it timed; the report's dictionary.

    Raises
    ------
    AssertionError
        If the replay's results differ from the shadow pool's (the model is
        not deterministic).
    """
    calls, expected, n_prefill = generate(pages, ops, seed)
    w0, c0 = time.perf_counter(), time.process_time()
    pool = KVPool(pages=pages)
    build = (time.perf_counter() - w0, time.process_time() - c0)
    pre, pre_wall, pre_cpu = _replay(pool, calls[:n_prefill])
    mixed, wall, cpu = _replay(pool, calls[n_prefill:])
    if pre + mixed != expected:
        raise AssertionError("the replay's results differ from the shadow pool's")
    mix = Counter(op for op, _ in calls[n_prefill:])
    errors = sum(isinstance(r, int) for r in mixed)
    return {
        "pages": pages,
        "seed": seed,
        "construction": {"wall_s": build[0], "cpu_s": build[1]},
        "prefill": _rates(n_prefill, pre_wall, pre_cpu),
        "mixed": _rates(len(mixed), wall, cpu) | {"errors": errors},
        "mix": dict(sorted(mix.items())),
        "after": {
            "free_pages": pool.free_pages,
            "spec_pages": pool.spec_pages,
            "committed_pages": pool.committed_pages,
            "hbm_used": pool.hbm_used,
            "tlb_hits_misses": [pool.tlb_counts(0), pool.tlb_counts(1)],
        },
        "target_ops_per_s": TARGET_OPS_PER_S,
    }


def _rates(n: int, wall: float, cpu: float) -> dict:
    return {
        "ops": n,
        "wall_s": wall,
        "cpu_s": cpu,
        "ops_per_s": n / wall if wall else 0.0,
        "ops_per_cpu_s": n / cpu if cpu else 0.0,
    }


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m golden.kvpool.bench``."""
    ap = cli_parser("python -m golden.kvpool.bench", __doc__.splitlines()[0])
    lo, hi = RANGES["pages"]
    ap.add_argument("--pages", type=int_arg(max(lo, 1024), hi), default=2**20, help="PAGES")
    ap.add_argument(
        "--ops", type=int_arg(1, 10**8), default=1_000_000, help="operations of the timed mix"
    )
    ap.add_argument("--seed", type=int_arg(0, 2**64 - 1), default=0, help="the mix's seed")
    ap.add_argument(
        "--out", type=out_file_arg, default=REPORTS / "kvpool_bench.json", help="JSON report"
    )
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done: ``--pages`` an integer
    in 1024 .. 2**22, ``--ops`` in 1 .. 10**8, ``--seed`` in 0 .. 2**64 - 1,
    ``--out`` a file.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print its rates and write the JSON report."""
    args = parse_args(argv)
    print(f"generating {args.ops:,} operations at {args.pages:,} pages ...", flush=True)
    r = run(args.pages, args.ops, args.seed)
    r["machine"] = {
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
    }
    m, p = r["mixed"], r["prefill"]
    print(f"construction: {r['construction']['wall_s'] * 1e3:.1f} ms")
    print(
        f"prefill: {p['ops']:,} committed inserts, {p['ops_per_s']:,.0f} ops/s wall, "
        f"{p['ops_per_cpu_s']:,.0f} per CPU second"
    )
    print(
        f"mixed: {m['ops']:,} operations ({m['errors']:,} errors), {m['ops_per_s']:,.0f} ops/s "
        f"wall, {m['ops_per_cpu_s']:,.0f} per CPU second "
        f"(target {TARGET_OPS_PER_S:,} at 2^20 pages: "
        f"{'met' if m['ops_per_s'] >= TARGET_OPS_PER_S else 'MISSED'})"
    )
    print("mix: " + ", ".join(f"{k} {v:,}" for k, v in r["mix"].items()))
    print(f"after: {r['after']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(r, indent=2) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
