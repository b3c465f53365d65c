"""What a chip run returns: per-sequence steps, chip steps, per-sequence and whole results."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from golden.draft import TreePolicy
from sim.chip.config import ChipConfig
from sim.timing import StepTiming

__all__ = ["ChipResult", "ChipStep", "SeqResult", "SeqStep"]


@dataclass
class SeqStep:
    """One sequence's share of a chip step.

    Attributes
    ----------
    seq : int
        Batch slot (the KV pool's sequence number).
    n_nodes, depth, draft_evals, accepted, last, path_mask : int
        The tree and the decision.
    emitted : list[int]
        Accepted draft tokens, then the extra token.
    context_len : int
        Tokens in the sequence before the step.
    tm_cycles : dict[str, int]
        The tree manager's cycles (backend).
    kv_cycles : int
        KV-pool cycles of the step (inserts, lookups, commit, release).
    inserts, lookups, misses : int
        KV traffic of the step and the lookups that missed.
    predicted : bool or None
        ``speculative`` overlap: the draft's predicted tip was right (the
        accepted path is the first-child chain to its leaf and the extra token
        is the draft's top guess there); ``None`` in other modes.
    probe : bool
        A fallback probe step of the topology optimiser.
    """

    seq: int
    n_nodes: int
    depth: int
    draft_evals: int
    accepted: int
    last: int
    path_mask: int
    emitted: list[int]
    context_len: int
    tm_cycles: dict[str, int]
    kv_cycles: int
    inserts: int
    lookups: int
    misses: int
    predicted: bool | None = None
    probe: bool = False


@dataclass
class ChipStep:
    """One chip step: every active sequence's step and the step's timing."""

    index: int
    seqs: list[SeqStep]
    timing: StepTiming | None = None

    @property
    def emitted(self) -> int:
        """Tokens emitted by the step (all sequences)."""
        return sum(len(s.emitted) for s in self.seqs)


@dataclass
class SeqResult:
    """One sequence's decode.

    Attributes
    ----------
    seq, seed : int
    prompt, tokens : list[int]
        The prompt and the new tokens (at least ``tokens`` of them).
    accepted : list[int]
        Accepted draft tokens per step.
    """

    seq: int
    seed: int
    prompt: list[int]
    tokens: list[int]
    accepted: list[int] = field(default_factory=list)

    @property
    def mean_accepted(self) -> float:
        """Mean accepted draft tokens per step (0 before any step)."""
        return float(np.mean(self.accepted)) if self.accepted else 0.0


@dataclass
class ChipResult:
    """What :meth:`sim.chip.Chip.run` returns.

    Attributes
    ----------
    config : ChipConfig
    sequences : list[SeqResult]
    steps : list[ChipStep]
    tm_cycles : dict[str, int]
        Tree-manager cycles per phase, summed.
    kv_cycles, prefill_kv_cycles : int
        KV-pool cycles of the decode steps and of the prefill.
    mask_mismatches : int
        Steps whose mask rows from the tree manager's step differ from the
        rows the verifier used, or whose verifier rows (the backend's
        pre-verify pass) differ from golden's (0 on a healthy chip).
    policies : list[TreePolicy]
        Each sequence's policy after the run (e.g. the optimiser's ``history``).
    elapsed_s : float
        Wall-clock time of the decode loop, after the backends are open and the
        prompts prefilled (the model's own speed).
    """

    config: ChipConfig
    sequences: list[SeqResult]
    steps: list[ChipStep]
    tm_cycles: dict[str, int]
    kv_cycles: int
    prefill_kv_cycles: int
    mask_mismatches: int
    policies: list[TreePolicy]
    elapsed_s: float

    @property
    def tokens(self) -> list[int]:
        """Sequence 0's new tokens."""
        return self.sequences[0].tokens

    @property
    def n_steps(self) -> int:
        """Chip steps of the run."""
        return len(self.steps)

    @property
    def seq_steps(self) -> list[SeqStep]:
        """Every sequence step, in order."""
        return [s for st in self.steps for s in st.seqs]

    @property
    def total_us(self) -> float:
        """Projected decode time on the profile (sum of the steps' expected times)."""
        return sum(s.timing.total_us for s in self.steps if s.timing is not None)

    @property
    def emitted(self) -> int:
        """Tokens emitted by the run (all sequences)."""
        return sum(s.emitted for s in self.steps)

    @property
    def tokens_per_s(self) -> float:
        """Projected tokens/s on the profile (all sequences)."""
        return self.emitted / self.total_us * 1e6 if self.total_us else 0.0

    @property
    def us_per_token(self) -> float:
        """Projected microseconds per emitted token on the profile."""
        return self.total_us / self.emitted if self.emitted else 0.0

    @property
    def mean_accepted(self) -> float:
        """Mean accepted draft tokens per sequence step."""
        acc = [s.accepted for s in self.seq_steps]
        return float(np.mean(acc)) if acc else 0.0

    @property
    def steps_per_s(self) -> float:
        """Chip-model steps per wall-clock second (sequence steps)."""
        return len(self.seq_steps) / self.elapsed_s if self.elapsed_s else 0.0
