"""Accept, extra token and commit after verification, per token sampler (issue 22, item 2).

The article puts accept and commit at ~1 us. After the verifier's last output the
tree manager loads the nodes, decides, and then draws the extra token, which
dominates: SPEC §3.5's two passes (``hw/token_sampler.py``, the chip model's
sampler today) take ``2 * ceil(V / LANES)`` cycles; spec §3.12's one pass
(``hw/token_select.py``) takes ``ceil(V / LANES) + 7`` after the decision, its
totals streamed under verification. :func:`extra_token_rows` times both on a
profile's stated example (:func:`sim.cycles.accept_cycles`, the RTL's measured
latencies) at the profile's clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim.cycles import accept_cycles
from sim.timing.profiles import Profile

__all__ = ["CONFIGS", "ExtraTokenRow", "extra_token_rows", "extra_token_table"]

#: The samplers compared, ``(label, kind, lane count)`` each: the two-pass one (the chip
#: model's) at 4 and 16 lanes, the one-pass one at 64 and 128.
CONFIGS: tuple[tuple[str, str, int], ...] = (
    ("two-pass, 4 lanes (token_sampler)", "two_pass", 4),
    ("two-pass, 16 lanes (token_sampler)", "two_pass", 16),
    ("one-pass, 64 lanes (token_select)", "one_pass", 64),
    ("one-pass, 128 lanes (token_select)", "one_pass", 128),
)


@dataclass(frozen=True)
class ExtraTokenRow:
    """One sampler on one profile's example step.

    Attributes
    ----------
    config, sampler : str
    lanes : int
    sampler_cycles : int
        From the decision to the extra token.
    post_verify_cycles : int
        Load, decide and the slowest of extra token, accepted tokens and commit.
    post_verify_us : float
        The same at the profile's clock.
    totals_cycles : int
        The one-pass sampler's totals, under verification (0 for two passes).
    """

    config: str
    sampler: str
    lanes: int
    sampler_cycles: int
    post_verify_cycles: int
    post_verify_us: float
    totals_cycles: int


def extra_token_rows(
    profile: Profile, steps: Sequence[tuple[int, int]] | None = None
) -> list[ExtraTokenRow]:
    """:data:`CONFIGS` on ``profile`` (vocabulary, clock) over ``steps`` (``(tree nodes,
    accepted tokens)`` each; the cycles are their means, rounded) or, by default, the
    profile's stated example."""
    w, t = profile.workload, profile.target
    steps = [(w.tree_nodes, w.accepted)] if steps is None else list(steps)
    if not steps:
        raise ValueError("steps: empty")
    rows = []
    for label, kind, lanes in CONFIGS:
        cs = [accept_cycles(n, t.vocab, lanes, a, sampler=kind) for n, a in steps]

        def mean(xs: list[int]) -> int:
            return round(sum(xs) / len(xs))

        post = mean([c.post_verify for c in cs])
        us = post / profile.hardware.clock_hz * 1e6
        sampler, totals = mean([c.sampler for c in cs]), mean([c.totals for c in cs])
        rows.append(ExtraTokenRow(label, kind, lanes, sampler, post, us, totals))
    return rows


def extra_token_table(
    profile: Profile, steps: Sequence[tuple[int, int]] | None = None, what: str = ""
) -> str:
    """:func:`extra_token_rows` as text, beside the article's accept and commit time
    (``what`` names the steps; default: the profile's example)."""
    from sim.timing.text import table

    a = profile.article
    claim = f"{a.accept_us:g} us" if a is not None else "-"
    w = profile.workload
    what = what or f"{w.tree_nodes} nodes"
    head = (
        f"-- accept + extra token + commit after verification, {profile.name} "
        f"({what}, V = {profile.target.vocab:,}; the article: ~{claim})"
    )
    rows = [
        [
            r.config,
            f"{r.sampler_cycles:,}",
            f"{r.post_verify_cycles:,}",
            f"{r.post_verify_us:,.2f}",
            f"{r.totals_cycles:,}" if r.totals_cycles else "-",
        ]
        for r in extra_token_rows(profile, steps)
    ]
    header = ["token sampler", "extra token", "after verify", "us", "totals (under verify)"]
    return head + "\n" + table(header, rows)
