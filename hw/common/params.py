"""Keyword-parameter checks and index widths shared by every block."""

from amaranth.utils import ceil_log2

__all__ = ["check_param", "idx_bits"]


def check_param(name: str, value: object, lo: int, hi: int) -> int:
    """Validate an integer keyword parameter.

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
        ``value``, unchanged.

    Raises
    ------
    ValueError
        ``value`` is not an ``int`` (``bool`` is refused) or not in ``lo .. hi``;
        the message starts with ``"<name> = <value>"``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} = {value!r}: must be an integer in {lo} .. {hi}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} = {value!r}: must be in {lo} .. {hi}")
    return value


def idx_bits(n: int) -> int:
    """Bits to hold an index ``0 .. n - 1`` (at least 1)."""
    return max(1, ceil_log2(n))
