"""What the chip model's command lines (``python -m sim``, ``python -m sim.bench``)
check before they work: the :class:`~sim.chip.ChipConfig` of their arguments, and
that its decode fits the KV pool, without loading the workload's models.
"""

from __future__ import annotations

import argparse
from typing import Any

from checks import option_error
from sim.chip import Chip, ChipConfig
from sim.chip.config import INT_BOUNDS

__all__ = ["MAX_POOL", "capacity_error", "checked_config", "int_bounds"]

#: the largest KV pool (``entries`` and ``pages``): a prompt or a decode longer
#: than this never fits (:meth:`sim.chip.Chip.check_capacity`)
MAX_POOL = min(hi for name, _, hi in INT_BOUNDS if name in ("entries", "pages"))


def int_bounds(name: str) -> tuple[int, int | None]:
    """``(lowest, highest)`` of the integer field ``name`` of :class:`ChipConfig`
    (:data:`sim.chip.config.INT_BOUNDS`); a highest that depends on other fields is
    ``None`` here (the configuration checks it)."""
    for field, lo, hi in INT_BOUNDS:
        if field == name:
            return lo, hi if isinstance(hi, int) else None
    raise ValueError(f"name = {name!r}: not an integer field of ChipConfig")


class _Probe(Chip):
    """A chip that holds only its configuration: enough for
    :meth:`Chip.check_capacity`, which reads nothing else (nothing loaded)."""

    def __init__(self, config: ChipConfig) -> None:  # no super().__init__: no workload
        self.config = config


def capacity_error(cfg: ChipConfig) -> str | None:
    """Why ``cfg``'s decode (``batch`` prompts of ``prompt_len`` tokens, ``tokens``
    new ones each) cannot fit its KV pool, or ``None``.

    Found without the workload: the prompts are taken identical, which shares the
    longest prefix and so needs the fewest entries; a refusal is therefore
    certain, and exact for one sequence, a shared prompt or the ``phased``
    workload. Distinct ``code`` prompts may need more: :meth:`Chip.run` checks
    them.
    """
    if cfg.prompt_len > MAX_POOL or cfg.tokens > MAX_POOL:
        return (
            f"context: prompt {cfg.prompt_len} + {cfg.tokens} new tokens: more than the "
            f"largest KV pool ({MAX_POOL} entries) holds"
        )
    prompt = [0] * cfg.prompt_len
    try:
        _Probe(cfg).check_capacity([prompt] * cfg.batch, cfg.tokens)
    except ValueError as e:
        if cfg.batch > 1 and not cfg.shared_prompt and cfg.workload == "code":
            return f"{e} (counting the longest prefix the prompts could share)"
        return str(e)
    return None


def checked_config(
    ap: argparse.ArgumentParser, *, fit_options: str, default: str | None = None, **fields: Any
) -> ChipConfig:
    """``ChipConfig(**fields)``, whose decode fits its pool (:func:`capacity_error`).

    A bad field is a usage error naming its option (:func:`checks.option_error`;
    ``default`` for a field without one), a decode that does not fit one naming
    ``fit_options`` (the options it depends on, ``"--tokens, --batch"``): exit
    status 2 (``SystemExit``).
    """
    try:
        cfg = ChipConfig(**fields)
    except ValueError as e:
        option_error(ap, e, default)
    why = capacity_error(cfg)
    if why is not None:
        ap.error(f"argument{'s' * (',' in fit_options)} {fit_options}: {why}")
    return cfg
