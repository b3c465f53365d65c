"""Block parameters: one declaration per block, checked in one place.

Each block module declares its integer keyword parameters once, as a
``PARAMS`` mapping of name to :class:`Param` (default, inclusive range, a
small value for the synthesis smoke test). The block's signature defaults,
its checks, the top level's union (:func:`merge_params`), the synthesis
flows' small configurations and the co-simulation's argument checks all read
that mapping; ``tests/test_params.py`` checks the docstrings against it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from amaranth.utils import ceil_log2

from checks import choice, integer

__all__ = [
    "Param",
    "TARGETS",
    "check_param",
    "check_params",
    "check_target",
    "merge_params",
    "pick",
    "idx_bits",
]

#: a block's arithmetic style (its ``TARGET`` keyword, where it has one): gate-level
#: carry-save trees and prefix adders (``"asic"``), or Amaranth's operators for FPGA
#: carry chains and multiplier blocks (``"fpga"``), the pipeline the same
TARGETS = ("asic", "fpga")


def check_target(value: object) -> str:
    """``value`` if it is one of :data:`TARGETS`; else ``ValueError`` naming ``TARGET``
    and quoting the value."""
    return str(choice("TARGET", value, TARGETS))


@dataclass(frozen=True)
class Param:
    """One integer keyword parameter of a block.

    Attributes
    ----------
    default : int
        The value a block is built with when the parameter is not given.
    lo, hi : int
        The inclusive range accepted.
    small : int
        A small value inside the range that still builds every structure the
        parameter sizes (the synthesis smoke test's configuration).
    """

    default: int
    lo: int
    hi: int
    small: int

    def __post_init__(self) -> None:
        if not self.lo <= self.small <= self.hi or not self.lo <= self.default <= self.hi:
            raise ValueError(f"{self!r}: default and small must be in lo .. hi")


def check_param(name: str, value: object, lo: int, hi: int) -> int:
    """Validate an integer keyword parameter (:func:`checks.integer`).

    Parameters
    ----------
    name : str
        The parameter's name, quoted in the error.
    value : object
        The value given.
    lo, hi : int
        The inclusive range.

    Returns
    -------
    int
        ``value`` as an ``int`` (a numpy integer is accepted).

    Raises
    ------
    ValueError
        ``value`` is not an integer (``bool`` and floats are refused) or not in
        ``lo .. hi``: ``"<name> = <value!r>: must be an integer in lo .. hi"``.
    """
    return integer(name, value, lo, hi)


def check_params(
    params: Mapping[str, Param],
    given: Mapping[str, object],
    *,
    powers_of_two: Iterable[str] = (),
) -> dict[str, int]:
    """Validate every value of ``given`` against its declaration in ``params``
    (:func:`check_param`), all of them before anything is built; the parameters
    named in ``powers_of_two`` must also be powers of two.

    Returns
    -------
    dict
        Every parameter of ``params``, in its order: the value given, or the
        declared default.

    Raises
    ------
    ValueError
        The first value that :func:`check_param` refuses, a name of ``given``
        that ``params`` does not declare, or a parameter of ``powers_of_two``
        that is not one (``"<name> = <value!r>: must be a power of two in lo .. hi"``).
    """
    unknown = sorted(set(given) - set(params))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(params)}")
    out = {
        n: check_param(n, given[n], p.lo, p.hi) if n in given else p.default
        for n, p in params.items()
    }
    for n in powers_of_two:
        v, d = out[n], params[n]
        if v & (v - 1):
            raise ValueError(
                f"{n} = {given.get(n, v)!r}: must be a power of two in {d.lo} .. {d.hi}"
            )
    return out


def pick(values: Mapping[str, int], params: Mapping[str, Param]) -> dict[str, int]:
    """The entries of ``values`` that ``params`` declares (a sub-block's share)."""
    return {n: values[n] for n in params}


def merge_params(*decls: Mapping[str, Param]) -> dict[str, Param]:
    """The parameters of a design built from blocks that share parameters: a
    name declared by several blocks accepts the intersection of their ranges.

    Raises
    ------
    ValueError
        Two blocks declare different defaults for one name, or ranges that do
        not overlap (a declaration error, found when the module is imported).
    """
    out: dict[str, Param] = {}
    for decl in decls:
        for name, p in decl.items():
            q = out.get(name)
            if q is None:
                out[name] = p
                continue
            if p.default != q.default:
                raise ValueError(f"{name}: defaults {q.default} and {p.default} disagree")
            lo, hi = max(p.lo, q.lo), min(p.hi, q.hi)
            out[name] = Param(p.default, lo, hi, min(max(p.small, q.small, lo), hi))
    return out


def idx_bits(n: int) -> int:
    """Bits to hold an index ``0 .. n - 1`` (at least 1)."""
    return max(1, ceil_log2(n))
