"""The checks and command line that every leaf proof of the scaled pool shares.

A leaf proof (:mod:`formal.kvpool_tlb`, :mod:`formal.kvpool_alloc`,
:mod:`formal.kvpool_seg`, :mod:`formal.kvpool_seg_derived`) has a harness
with a ``run(task, *, variant=..., reach=..., **params)`` function
(:func:`formal.sat.solve`'s :class:`~formal.sat.Outcome`) and the same
checks, in this order:

* ``prove`` (and ``prove:larger`` with a second size): k-induction, must
  close (``PASS``);
* any checks of the leaf's own (``extra``), as required by each;
* ``negated``: a false property, must be refuted (``FAIL``);
* ``unprotected``: the properties without the pool's protocol, must fail
  (the proof rests on the assumptions);
* ``reach:<state>``: a witness of each state of ``reach`` (its absence
  asserted, so the BMC's counterexample shows the assumptions allow it).

:class:`LeafChecks` states them once; the module's ``CHECKS``,
``build_parser``, ``parse_args`` and ``main`` are its attributes.
"""

import argparse
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from amaranth import Cat, Const, Module, Signal, Value
from amaranth.hdl import Assert, Assume

from formal.sat import Outcome, checks_parser, free_inputs, parse_checks, run_checks

__all__ = ["LeafChecks", "Harness", "check_run", "check_goals", "in_goal", "describe"]

#: a check's answer: (outcome, as required, what it shows)
Answer = tuple[Outcome, bool, str]


def check_run(
    variant: str, reach: str | None, variants: Sequence[str], states: dict[str, str]
) -> None:
    """A harness's run: ``variant`` one of ``variants``, ``reach`` ``None`` or one of the
    witnessed ``states``.

    Raises
    ------
    ValueError
        Naming the argument and quoting its value.
    """
    if variant not in variants:
        raise ValueError(f"variant = {variant!r}: must be one of {tuple(variants)}")
    if reach is not None and reach not in states:
        raise ValueError(f"reach = {reach!r}: must be one of {sorted(states)}")


def describe(unit: str, config: dict) -> str:
    """A configuration of ``unit`` described (``"pool PAGES=16, ..."``), as the rows
    state it."""
    return f"{unit} " + ", ".join(f"{k}={v}" for k, v in config.items())


def in_goal(label: str, goal: tuple[str, ...]) -> bool:
    """``label`` matches one of ``goal``'s regular expressions whole."""
    return any(re.fullmatch(pattern, label) for pattern in goal)


def check_goals(labels: Sequence[str], goals: dict[str, tuple[str, ...]]) -> None:
    """Each of a harness's asserted ``labels`` (:attr:`Harness.asserted`) in exactly one
    of ``goals`` (name -> its labels' regular expressions, :func:`in_goal`), and each
    goal with a label: a proof split into goals then proves every assertion once.

    Raises
    ------
    ValueError
        Naming a label in no goal or in two, or a goal without labels.
    """
    for label in labels:
        found = [name for name, goal in goals.items() if in_goal(label, goal)]
        if len(found) != 1:
            raise ValueError(f"label {label!r}: in goals {found}, must be in one of {goals}")
    for name, goal in goals.items():
        if not any(in_goal(label, goal) for label in labels):
            raise ValueError(f"goal {name!r}: no label matches any of {goal}")


class Harness:
    """What a proof harness around one device (``dut``) shares: the device's inputs as
    the solver's free ports, and assertions that a counterexample names."""

    dut: object
    #: while set, :meth:`_chk` (and :attr:`_stmt`) assume instead of asserting: a
    #: harness states there the facts another induction proved (sound when that proof's
    #: assumptions are among this one's)
    _assuming = False
    #: while set (with :attr:`_assuming`), what is assumed holds in the cycles before
    #: each one, not in it (:meth:`assuming`'s ``past``)
    _past = False
    #: the conditions assumed of the cycles before (:meth:`latch_past`)
    _past_oks: list[Signal]
    #: the labels :meth:`_chk` asserts, as regular expressions a label matches whole
    #: (``None``: every label): an assertion outside the goal is assumed of the cycles
    #: before instead, so a proof split into goals holds when each goal's proof does and
    #: every label is in one goal (:func:`check_goals`)
    goal: tuple[str, ...] | None = None
    #: every label :meth:`_chk` stated as an assertion or in place of one (outside the
    #: goal), in the order stated
    asserted: list[str]

    @contextmanager
    def assuming(self, variant: str | None = None, *, past: bool = False) -> Iterator[None]:
        """Within it :meth:`_chk` and :attr:`_stmt` assume: the facts another induction
        proved, stated by that harness's own methods (with the harness's ``variant`` set
        to ``variant`` meanwhile, if given: the one that proof ran).

        With ``past``, each fact is assumed of every cycle before the current one only
        (:meth:`latch_past` registers them): what a proof may assume of facts proved
        under an assumption that it itself discharges in the current cycle, so that
        the two proofs' induction on time is well founded."""
        saved = self._assuming, self._past, getattr(self, "variant", None)
        self._assuming, self._past = True, past
        if variant is not None:
            self.variant = variant
        try:
            yield
        finally:
            self._assuming, self._past = saved[:2]
            if variant is not None:
                self.variant = saved[2]

    @property
    def _stmt(self) -> Callable[[Value], object]:
        """:class:`~amaranth.hdl.Assume` while :attr:`_assuming` (a condition kept for
        :meth:`latch_past` while :attr:`_past`), else :class:`~amaranth.hdl.Assert`."""
        if not self._assuming:
            return Assert
        return self._keep_past if self._past else Assume

    def _keep_past(self, cond: Value) -> object:
        """The statement keeping ``cond`` for :meth:`latch_past`: a signal that is 1
        where the statement does not apply (outside its ``If`` blocks)."""
        if "_past_oks" not in self.__dict__:
            self._past_oks = []
        ok = Signal(init=1, name=f"fvp_{len(self._past_oks)}")
        self._past_oks.append(ok)
        return ok.eq(cond)

    def latch_past(self, m: Module) -> None:
        """Assume, in each cycle, that every condition kept while :attr:`_past` held in
        the cycle before (one register of their conjunction, 1 in the first cycle)."""
        oks = self.__dict__.get("_past_oks", [])
        if not oks:
            return
        prev = Signal(init=1, reset_less=True, name="fvp_prev")
        m.d.sync += prev.eq(Cat(*oks).all())
        m.d.comb += Assume(prev)
        self._past_oks = []  # a later elaboration keeps its own

    def ports(self) -> list[Signal]:
        """The device's inputs (free for the solver)."""
        return free_inputs(self.dut)

    def _chk(self, m: Module, label: str, guard: Value, conds: list) -> None:
        """Assert (assume, while :attr:`_assuming`) ``guard -> cond`` for each of
        ``conds``, each through a signal named ``fva_<label>_<k>`` (a counterexample's
        trace shows which one failed)."""
        stmt, holds = self._stmt, None
        if not self._assuming:
            self.__dict__.setdefault("asserted", []).append(label)
            if self.goal is not None and not in_goal(label, self.goal):
                stmt = self._keep_past
            elif self.goal is not None:
                holds = self.__dict__.setdefault("_goal_holds", [])
        for k, cond in enumerate(conds):
            ok = Signal(name=f"fva_{label}_{k}")
            m.d.comb += [ok.eq(~guard | cond), stmt(ok)]
            if holds is not None:  # the goal's assertion, 1 outside its If blocks
                hold = Signal(init=1, name=f"fvg_{label}_{k}")
                m.d.comb += hold.eq(ok)
                holds.append(hold)

    def name_asserted(self, m: Module) -> None:
        """With a :attr:`goal` (every label's ``(".*",)`` for the whole harness): the
        kept signal ``fv_asserted`` (:data:`formal.induct.ASSERTED`), the goal's
        assertions hold (1 where one does not apply), which
        :func:`formal.induct.induct` assumes in the induction hypothesis' cycles.

        Raises
        ------
        ValueError
            No goal set (the assertions were not gathered).
        """
        if self.goal is None:
            raise ValueError("goal = None: name_asserted needs a goal (('.*',): every label)")
        asserted = Signal(name="fv_asserted", attrs={"keep": 1})
        m.d.comb += asserted.eq(Cat(*self.__dict__.get("_goal_holds", []), Const(1, 1)).all())


@dataclass(frozen=True)
class LeafChecks:
    """One leaf proof's checks and command line.

    Parameters
    ----------
    module : str
        The module (``"formal.kvpool_tlb"``): the command is ``python -m
        module``, the report's rows are its.
    title : str
        What it proves, printed first (``"TLB coherence"``).
    doc : str
        The module's docstring (its first line describes the command).
    config : dict
        The checked configuration (printed, in every row).
    run : callable
        The harness's ``run(task, *, variant=None, reach=None, **params)``.
    unit : str
        What is proved on (``"TLB"``): a configuration's description starts
        with it (:meth:`size`).
    props : str
        What ``prove`` proves (``"properties 1-3"``).
    negated, unprotected : str
        What the ``negated`` and ``unprotected`` runs show when they fail
        (``unprotected`` ``None``: no such check).
    reach : dict
        The witnessed states: name -> description.
    label : str
        The rows' task prefix (``"tlb:"``).
    larger : dict or None
        The overrides of ``prove:larger`` (no such check when ``None``).
    extra : dict
        The leaf's own checks: name -> a function giving its answer.
    """

    module: str
    title: str
    doc: str
    config: dict
    run: Callable[..., Outcome]
    unit: str
    props: str
    negated: str
    unprotected: str | None
    reach: dict[str, str]
    label: str
    larger: dict | None = None
    extra: dict[str, Callable[[], Answer]] = field(default_factory=dict)

    def size(self, params: dict) -> str:
        """The configuration with the overrides ``params``, described."""
        return describe(self.unit, {**self.config, **params})

    @property
    def checks(self) -> tuple[str, ...]:
        """Every check, in the order :func:`main` runs them."""
        prove = ("prove", "prove:larger") if self.larger is not None else ("prove",)
        unprotected = ("unprotected",) if self.unprotected is not None else ()
        rest = ("negated", *unprotected, *(f"reach:{w}" for w in self.reach))
        return (*prove, *self.extra, *rest)

    def check(self, name: str) -> Answer:
        """Run one of :attr:`checks`: ``(outcome, as required, what it shows)``."""
        if name in self.extra:
            return self.extra[name]()
        if name.startswith("prove"):
            params = (self.larger or {}) if name == "prove:larger" else {}
            o = self.run("prove", **params)
            what = f"{self.size(params)}: {self.props} by k-induction, closed at k = {o.steps}"
            return o, o.status == "PASS", what
        if name in ("negated", "unprotected"):
            o = self.run("bmc", variant=name)
            what = self.negated if name == "negated" else self.unprotected
            return o, o.status == "FAIL", f"{self.size({})}: {what} at step {o.steps}"
        w = name.split(":", 1)[1]
        o = self.run("bmc", reach=w)
        return o, o.status == "FAIL", f"{self.size({})}: {self.reach[w]}, first at step {o.steps}"

    def build_parser(self) -> argparse.ArgumentParser:
        """The command line ``python -m <module> [CHECK ...]``."""
        return checks_parser(f"python -m {self.module}", self.doc, self.checks)

    def parse_args(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """The checked arguments of :meth:`main` (``checks``: each one of
        :attr:`checks`, at most once); no work done.

        Raises
        ------
        SystemExit
            Status 2, with a one-line usage error on stderr, for a bad argument.
        """
        return parse_checks(self.build_parser(), self.checks, argv)

    def main(self, argv: Sequence[str] | None = None) -> int:
        """``python -m <module> [CHECK ...]``: every check by default; its rows into
        ``build/reports/formal_kvpool.json``; exit status 1 if a check does not show
        what it must (the induction closes; the false property, the unprotected run
        and each witness fail), 2 on a bad argument."""
        args = self.parse_args(argv)
        print(f"{self.title} ({self.module}), configuration {self.config}", flush=True)
        return run_checks(self.module, self.config, args.checks, self.check, label=self.label)
