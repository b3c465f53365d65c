"""The chip loop: the four phases of SPEC §1 on swappable blocks (:class:`Chip`).

One chip step serves every active sequence of the batch (up to ``SEQS``),
each through the four phases:

1. **Draft** (draft accelerator, behavioural). The sequence's tree policy
   (:mod:`golden.trees`: chain, static, Sequoia DP re-solved by the topology
   optimiser of :mod:`sim.topology`, EAGLE-2) shapes the tree and the draft
   model draws its tokens from the sequence's own numpy stream
   (``default_rng([seed, golden.decoder.DRAFT_STREAM])``, as the golden
   decoder). The tree builder inserts one speculative KV entry per node and
   modelled layer (``owner`` = node, ``pos = tip + depth``; the root's, owner 0,
   is the KV the verifier computes for the last emitted token) and writes the
   node's token into the entry's page.
2. **Verify** (verifier engine, behavioural). The tree mask generator's rows
   (the backend's ``mask`` pass when it has one) are the tree-attention masks.
   Each node's context is read **from the KV pool**: the committed prefix of
   the target's window once, then, for every node, the tree positions of its
   window looked up with the node's row as the ``view`` (a lookup hits the
   ancestor that wrote that position, never a sibling). The pages' tokens form
   the context tails the target model scores (``probs_tails``); a miss masks
   that position and everything before it out of the node's context, so a
   wrong mask row or a wrong lookup changes the output, as it would on the
   chip. The verifier then computes the residual-adjusted ``pt``/``qt`` of
   every node with the golden fixed-point functions (SPEC §3.2 parallel form,
   :func:`golden.accept.precompute`; greedy: :func:`golden.accept.greedy_pt_qt`).
3. **Accept** (token tree manager, a backend). Lanes, decision, and the extra
   token from the residual weights of ``last`` that the verifier returns
   (the residual, else ``p_last``, else ``argmax p_last``: SPEC §3.5's fallback,
   exactly as the golden decoder).
4. **Commit** (KV pool, a backend). ``commit(seq, row[last])`` keeps the
   accepted path's entries and frees the rest. A finished sequence is released.

Backends (``ChipConfig.backend``): ``python`` (:mod:`sim.python_backend`, the
golden functions) or ``rtl`` (:func:`sim.rtl.open_rtl`, the Amaranth
blocks on Verilator). The step above is the same code for both. For the same
seed and configuration a sequence's tokens equal
``golden.decoder.speculative_generate(..., arith="fixed", seed=seed)``.

KV mapping (SPEC §4 leaves it to the chip model): one entry per token position
and modelled layer, ``(seq, layer, pos) -> page``; the page holds that
position's token (the behavioural "KV": the n-gram target's key is its
token). ``layers`` modelled layers (default 1) multiply the entries; every
layer is read and must agree. Prefill writes the prompt's positions
``0 .. P-2`` as committed entries (the last prompt token is the first root).
A batch's common prompt prefix is written once by sequence 0 and shared by
``fork`` (zero copy); each sequence then writes the rest of its prompt. The
pool must hold, at every sequence's last step, ``P + T - 2 + nodes``
positions per layer (prompt ``P``, ``T`` new tokens, the tree's speculative
nodes), shared prefix counted once: a longer context is a ``ValueError``
before anything runs.

Timing: every chip step is timed on the profile by
:func:`sim.chip.step_timing.time_step` (that module's docstring).
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from checks import integer as _int
from golden.decoder import DRAFT_STREAM
from golden.draft import StepRecord, TreePolicy, checked_model
from golden.tree import structure as _structure
from sim.backend import KVBackend, TreeManagerBackend
from sim.build_cycles import draft_cycles, resolve_cycles
from sim.chip.config import ChipConfig
from sim.chip.policy import make_policy
from sim.chip.result import ChipResult, ChipStep, SeqResult, SeqStep
from sim.chip.step_timing import time_step
from sim.chip.verifier import fixed_point, kv_walk
from sim.python_backend import PythonKV, PythonTreeManager
from sim.timing import StepTiming, draft_evals_of
from sim.workloads import load_workload

__all__ = ["Chip"]


@dataclass
class _Seq:
    slot: int
    seed: int
    prompt: list[int]
    ctx: list[int]
    out: list[int]
    policy: TreePolicy
    tm: TreeManagerBackend
    rng: np.random.Generator
    accepted: list[int]
    predicted: bool = False
    done: bool = False


class Chip:
    """The behavioural SpecDecode-1 (module docstring).

    Parameters
    ----------
    config : ChipConfig
    target, draft : Model, optional
        The models (default: the workload's, :func:`sim.workloads.load_workload`).
        The target must define ``context_window`` (the verifier reads that many
        positions from the KV pool per node).

    Raises
    ------
    ValueError
        A model without ``context_window``, or models of different vocabularies.
    """

    def __init__(self, config: ChipConfig, *, target: Any = None, draft: Any = None) -> None:
        if not isinstance(config, ChipConfig):
            raise ValueError(f"config = {config!r}: must be a ChipConfig")
        self.config = config
        self.profile = config.timing_profile()
        self._prompts: list[list[int]] | None = None
        if target is None or draft is None:
            n = 1 if config.shared_prompt else config.batch
            t, d, prompts = load_workload(config.workload, n, config.prompt_len, config.prompt_seed)
            target = t if target is None else target
            draft = d if draft is None else draft
            self._prompts = prompts * config.batch if config.shared_prompt else prompts
        w = getattr(target, "context_window", None)
        if w is None or isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 0:
            raise ValueError(f"target.context_window = {w!r}: the verifier needs an integer >= 0")
        if int(draft.vocab_size) != int(target.vocab_size):
            raise ValueError(
                f"draft.vocab_size = {draft.vocab_size} differs from "
                f"target.vocab_size = {target.vocab_size}"
            )
        # every output of either model checked at the boundary (golden.draft.CheckedModel)
        self.target = checked_model(target, "target")
        self.draft = checked_model(draft, "draft")
        self.window = int(w)
        self.vocab = int(target.vocab_size)
        self._tails = callable(getattr(target, "probs_tails", None))

    # ------------------------------------------------------------------ backends
    @contextmanager
    def open_backends(
        self,
    ) -> Iterator[tuple[Callable[[], TreeManagerBackend], KVBackend]]:
        """Open the configured backend: yields ``(make_tree_manager, kv)``.

        ``make_tree_manager()`` returns the tree manager of the next sequence
        (the ``python`` backend: one per sequence, each with its own lanes;
        ``rtl``: the one in ``hw/specdecode_top.py``). Subclasses may override this (the
        tests inject faulty blocks here).
        """
        c = self.config
        if c.backend == "python":
            kv = PythonKV(
                c.entries,
                c.pages,
                c.seqs,
                c.n_nodes,
                c.layer_bits,
                c.pos_bits,
                lookup_ports=c.lookup_ports,
            )

            def make() -> TreeManagerBackend:
                return PythonTreeManager(
                    c.n_nodes,
                    prob_bits=c.prob_bits,
                    rand_bits=c.rand_bits,
                    weight_bits=c.weight_bits,
                    lanes=c.lanes,
                    select_lanes=c.select_lanes,
                    latency=self.profile.tree_manager.latency,
                )

            yield make, kv
            return
        try:  # on use only: the co-simulation brings Amaranth and the Verilator toolchain
            from sim.rtl import open_rtl
        except ImportError as exc:  # pragma: no cover - depends on the tree's state
            raise ValueError(f"backend = 'rtl': sim.rtl is not available ({exc})") from exc
        extra = {}
        if c.builder == "hardware":  # the optimiser's window and depth as the twin's
            extra = {"win": c.window, "d_max": max(c.depth, 8)}
        with open_rtl(**c.blocks.hdl_params(), **extra) as (tm, kv):
            handed = []

            def make_rtl() -> TreeManagerBackend:
                if handed:
                    raise ValueError("backend = 'rtl': one tree manager, one sequence")
                handed.append(tm)
                return tm

            yield make_rtl, kv

    # ------------------------------------------------------------------ checks
    def check_capacity(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> int:
        """Check that the pool holds the whole decode; returns the entries it needs.

        Raises
        ------
        ValueError
            A context longer than the pool holds (``entries``/``pages``), or a
            position beyond ``POS_BITS``.
        """
        c = self.config
        nmax = c.max_tree_nodes
        shared = _shared_prefix(prompts)
        per = [len(p) + max_new_tokens - 2 + nmax for p in prompts]
        need = c.layers * (shared + sum(x - shared for x in per))
        cap = min(c.entries, c.pages)
        if need > cap:
            raise ValueError(
                f"context: {len(prompts)} sequence(s) of prompt {max(len(p) for p in prompts)} "
                f"+ {max_new_tokens} new tokens + a {nmax}-node tree need {need} KV entries "
                f"({c.layers} layer(s), {shared} shared prefix positions); the pool holds "
                f"entries = {c.entries}, pages = {c.pages}"
            )
        top = max(len(p) for p in prompts) + max_new_tokens + nmax
        if top > 1 << c.pos_bits:
            raise ValueError(f"context: positions up to {top} do not fit pos_bits = {c.pos_bits}")
        return need

    # ------------------------------------------------------------------ run
    def run(
        self,
        prompts: Sequence[Sequence[int]] | None = None,
        max_new_tokens: int | None = None,
        *,
        seeds: Sequence[int] | None = None,
        progress: Callable[[int, int], None] | None = None,
        max_steps: int | None = None,
        timing: bool = True,
    ) -> ChipResult:
        """Decode ``max_new_tokens`` per prompt (defaults: the configuration's workload).

        Parameters
        ----------
        prompts : sequence of sequences of int, optional
            One prompt per sequence (``1 .. seqs``), each non-empty.
        max_new_tokens : int, optional
            Default ``config.tokens``.
        seeds : sequence of int, optional
            Per sequence; default ``config.seed + b``.
        progress : callable, optional
            Called after every chip step with ``(tokens done, tokens wanted)``.
        max_steps : int, optional
            Also stop after this many chip steps.
        timing : bool
            Time every step on the profile (the benchmark can skip it).

        Returns
        -------
        ChipResult

        Raises
        ------
        ValueError
            Bad prompts, seeds or counts; a context longer than the pool holds.
        """
        c = self.config
        prompts, T, seeds = self._run_args(prompts, max_new_tokens, seeds, max_steps)
        self.check_capacity(prompts, T)

        with self.open_backends() as (make_tm, kv):
            pages: dict[int, int] = {}
            seqs: list[_Seq] = []
            for b, (p, s) in enumerate(zip(prompts, seeds, strict=True)):
                tm = make_tm()
                tm.seed(s)
                policy = make_policy(c, self.profile)
                on_rtl = getattr(tm, "hardware_policy", None)
                if c.builder == "hardware" and callable(on_rtl):
                    policy = on_rtl(policy)  # the rtl backend: trees from the RTL builder
                seqs.append(
                    _Seq(
                        b,
                        s,
                        p,
                        list(p),
                        [],
                        policy,
                        tm,
                        np.random.default_rng([s, DRAFT_STREAM]),
                        [],
                    )
                )
            kv0 = kv.cycles
            self._prefill(kv, pages, prompts)
            prefill_cycles = kv.cycles - kv0
            t_start = time.perf_counter()
            steps: list[ChipStep] = []
            tm_cycles: dict[str, int] = {}
            mismatches = 0
            prev_predicted = False
            wanted = T * len(seqs)
            while any(not s.done for s in seqs) and (max_steps is None or len(steps) < max_steps):
                recs = []
                for st in seqs:
                    if st.done:
                        continue
                    rec, bad = self._seq_step(st, kv, pages, T)
                    mismatches += bad
                    for k, v in rec.tm_cycles.items():
                        tm_cycles[k] = tm_cycles.get(k, 0) + v
                    recs.append(rec)
                step = ChipStep(len(steps), recs)
                if timing:
                    step.timing = self._time_step(recs, prev_predicted)
                if c.overlap == "speculative":
                    prev_predicted = all(bool(r.predicted) for r in recs)
                steps.append(step)
                if progress is not None:
                    progress(sum(min(len(s.out), T) for s in seqs), wanted)
            for st in seqs:  # stopped by max_steps: give the pages back
                if not st.done and kv.valid_entries:
                    try:
                        kv.release(st.slot)
                    except ValueError:
                        pass
            kv_total = kv.cycles - kv0 - prefill_cycles
            leak = kv.valid_entries
            elapsed = time.perf_counter() - t_start
        if leak:
            raise RuntimeError(f"KV pool: {leak} entries still valid after every release")
        return ChipResult(
            config=c,
            sequences=[SeqResult(s.slot, s.seed, s.prompt, s.out, s.accepted) for s in seqs],
            steps=steps,
            tm_cycles=tm_cycles,
            kv_cycles=kv_total,
            prefill_kv_cycles=prefill_cycles,
            mask_mismatches=mismatches,
            policies=[s.policy for s in seqs],
            elapsed_s=elapsed,
        )

    def _run_args(
        self,
        prompts: Sequence[Sequence[int]] | None,
        max_new_tokens: int | None,
        seeds: Sequence[int] | None,
        max_steps: int | None,
    ) -> tuple[list[list[int]], int, list[int]]:
        """:meth:`run`'s arguments checked: ``(prompts, new tokens, seeds)``."""
        c = self.config
        if prompts is None:
            if self._prompts is None:
                raise ValueError("prompts: none given and the chip has no workload prompts")
            prompts = self._prompts
        prompts = [list(p) for p in prompts]
        if not 1 <= len(prompts) <= c.seqs:
            raise ValueError(f"prompts: {len(prompts)} sequences, must be 1 .. seqs = {c.seqs}")
        if c.backend == "rtl" and len(prompts) > 1:
            raise ValueError(f"prompts: {len(prompts)} sequences; the rtl backend runs one")
        for b, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompts[{b}] is empty: the first root is the last prompt token")
            for i, t in enumerate(p):
                if (
                    isinstance(t, bool)
                    or not isinstance(t, numbers.Integral)
                    or not (0 <= t < self.vocab)
                ):
                    raise ValueError(
                        f"prompts[{b}][{i}] = {t!r}: token out of range 0 .. {self.vocab - 1}"
                    )
        T = c.tokens if max_new_tokens is None else _int("max_new_tokens", max_new_tokens, 1)
        if seeds is None:
            seeds = [c.seed + b for b in range(len(prompts))]
        seeds = [_int(f"seeds[{b}]", s, 0, 2**64 - 1) for b, s in enumerate(seeds)]
        if len(seeds) != len(prompts):
            raise ValueError(f"seeds has {len(seeds)} entries for {len(prompts)} prompts")
        if max_steps is not None:
            _int("max_steps", max_steps, 0)
        return prompts, T, seeds

    # ------------------------------------------------------------------ phases
    def _prefill(self, kv: KVBackend, pages: dict[int, int], prompts: list[list[int]]) -> None:
        """Committed KV of positions ``0 .. P-2`` of every prompt; common prefix by ``fork``."""
        L = self.config.layers
        shared = _shared_prefix(prompts) if len(prompts) > 1 else 0
        start = [0] * len(prompts)
        if shared:
            for pos in range(shared):
                for layer in range(L):
                    pages[kv.insert(0, layer, pos, 0, True)] = prompts[0][pos]
            for b in range(1, len(prompts)):
                kv.fork(0, b)
            start = [shared] * len(prompts)
        for b, p in enumerate(prompts):
            for pos in range(start[b], len(p) - 1):
                for layer in range(L):
                    pages[kv.insert(b, layer, pos, 0, True)] = p[pos]

    def _seq_step(
        self, st: _Seq, kv: KVBackend, pages: dict[int, int], T: int
    ) -> tuple[SeqStep, int]:
        """One sequence's step through the four phases (module docstring): its
        :class:`SeqStep`, and 1 if the tree manager's mask rows differ from the
        rows the verifier used, or those from golden's (else 0)."""
        c = self.config
        L = c.layers
        seq = st.slot
        probe = bool(getattr(st.policy, "is_probe_step", lambda: False)())
        # 1. draft: the policy shapes the tree, the draft model draws its tokens
        dt, par, tok = self._draft_tree(st)
        prof = self.profile
        lanes = prof.tree_manager.lanes if prof.tree_manager else c.lanes
        built = draft_cycles(st.policy, prof.target.vocab, lanes)
        n = len(par)
        toks = tok.tolist()
        S = _structure(par)
        dep = S.depths
        tip = len(st.ctx) - 1  # the root's position
        cyc0 = kv.cycles
        # the tree builder writes every node's speculative KV entry (owner = node)
        for i in range(n):
            for layer in range(L):
                pages[kv.insert(seq, layer, tip + dep[i], i, False)] = toks[i]
        # 2. verify: mask rows, the KV walk through each node's view, the target, pt/qt
        mask = getattr(st.tm, "mask", None)
        rows = list(mask(par)) if callable(mask) else list(S.rows)
        tails, n_look, misses = kv_walk(
            kv, pages, seq, tip, dep, rows, window=self.window, layers=L
        )
        if self._tails:
            p = np.asarray(self.target.probs_tails(tails), dtype=np.float64)
        else:
            p = np.asarray(
                self.target.probs([[t for t in row if t >= 0] for row in tails.tolist()]),
                dtype=np.float64,
            )
        pt, qt, residual = fixed_point(c, p, dt, par, tok, self.vocab)

        # 3. accept: the tree manager
        ts = st.tm.step(par, toks, pt.tolist(), qt.tolist(), residual)
        path = [j for j in range(n) if (ts.path_mask >> j) & 1]
        if ts.accepted_tokens != [toks[j] for j in path[1:]] or path[-1] != ts.last:
            raise RuntimeError(
                f"tree manager: accepted tokens {ts.accepted_tokens} / last {ts.last} do not "
                f"match path mask {ts.path_mask:#x}"
            )
        # the verifier's rows (the backend's pre-verify pass, e.g. the RTL's vrows)
        # and the verify path's must both be golden's
        bad = int(list(ts.rows) != rows or rows != list(S.rows))
        # 4. commit
        kv.commit(seq, ts.path_mask)
        emitted = list(ts.accepted_tokens) + [int(ts.extra)]
        predicted = None
        if c.overlap == "speculative":
            predicted = self._predicted_tip(st, S, path, toks, int(ts.extra))
        ctx_before = len(st.ctx)
        st.ctx.extend(emitted)
        st.out.extend(emitted)
        accepted = len(path) - 1
        st.accepted.append(accepted)
        solves = len(getattr(st.policy, "history", ()))
        st.policy.observe(StepRecord(par, toks, ts.last, path, accepted, emitted))
        tm_cycles = dict(ts.cycles)
        if c.builder == "hardware":  # the model's, unless the backend measured them
            model = dict(
                build=built.build,
                build_stream=built.stream,
                optimise=resolve_cycles(st.policy, solves),
            )
            tm_cycles = {**model, **tm_cycles}
        if len(st.out) >= T:
            st.done = True
            kv.release(seq)
        rec = SeqStep(
            seq=seq,
            n_nodes=n,
            depth=max(dep),
            draft_evals=draft_evals_of(par),
            accepted=accepted,
            last=ts.last,
            path_mask=ts.path_mask,
            emitted=emitted,
            context_len=ctx_before,
            tm_cycles=tm_cycles,
            kv_cycles=kv.cycles - cyc0,
            inserts=n * L,
            lookups=n_look,
            misses=misses,
            predicted=predicted,
            probe=probe,
        )
        return rec, bad

    def _draft_tree(self, st: _Seq) -> tuple[Any, list[int], np.ndarray]:
        """The draft phase: ``(draft tree, parents, tokens)`` of the sequence's policy.

        Raises ``ValueError`` for a tree larger than ``N_NODES`` or a token out of range.
        """
        c = self.config
        dt = st.policy.build(self.draft, st.ctx, c.children_rule, st.rng)
        par = list(dt.parents)
        n = len(par)
        if n > c.n_nodes:
            raise ValueError(
                f"the policy built a tree of {n} nodes, more than N_NODES = {c.n_nodes}"
            )
        tok = np.asarray(dt.tokens, dtype=np.int64)
        if n > 1 and ((tok[1:] < 0) | (tok[1:] >= self.vocab)).any():
            i = int(np.flatnonzero((tok[1:] < 0) | (tok[1:] >= self.vocab))[0]) + 1
            raise ValueError(f"tokens[{i}] = {int(tok[i])}: out of range 0 .. {self.vocab - 1}")
        return dt, par, tok

    def _predicted_tip(
        self, st: _Seq, S: Any, path: list[int], toks: list[int], extra: int
    ) -> bool:
        """Was the tip the speculative draft started from right? (``speculative`` overlap)."""
        a, chain = 0, [0]
        while S.children[a]:
            a = S.children[a][0]
            chain.append(a)
        if path != chain:
            return False
        ctx = st.ctx + [toks[j] for j in chain[1:]]
        q = np.asarray(self.draft.probs([ctx[-max(1, self.window) :]])[0])
        return int(np.argmax(q)) == extra

    # ------------------------------------------------------------------ timing
    def _time_step(self, recs: list[SeqStep], prev_predicted: bool) -> StepTiming:
        return time_step(
            self.profile,
            recs,
            overlap=self.config.overlap,
            prev_predicted=prev_predicted,
            context_offset=self.config.context_offset,
            select_lanes=self.config.select_lanes,
        )


def _shared_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """Positions of the common prefix that prefill can share (at most ``min(P) - 1``)."""
    if len(prompts) < 2:
        return 0
    lim = min(len(p) for p in prompts) - 1
    k = 0
    while k < lim and all(p[k] == prompts[0][k] for p in prompts):
        k += 1
    return k
