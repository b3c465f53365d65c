"""Argument checks shared by every package of the project (``golden``, ``hw``,
``sim``, ``flows``, ``tb``, ``formal``) and by every command line.

One message family: every check takes the argument's ``name`` first and raises
:class:`ValueError` whose message starts ``<name> = <value!r>:`` (an array
entry: ``<name>[<index>] = <value!r>:``) and states the rule broken, for a
wrong type and a value out of range alike. The checks return the value
converted (``int``, ``float``, an ``ndarray``); they never truncate, round or
wrap.

* :mod:`checks.values`: scalars: :func:`integer`, :func:`bits`, :func:`seed`,
  :func:`real`, :func:`choice`, :func:`boolean`, :func:`power_of_two`.
* :mod:`checks.arrays`: :func:`int_array` (integers, e.g. a parent list or
  tokens), :func:`prob_vector` and :func:`prob_matrix` (finite, non-negative,
  normalised within a stated tolerance unless the API takes weights).
* :mod:`checks.cli`: ``argparse`` types with the same rules (:func:`int_arg`,
  :func:`real_arg`, :func:`out_dir_arg`, :func:`out_file_arg`,
  :func:`in_file_arg`), :func:`option_error` (a checker's ``ValueError`` as a
  usage error naming the option) and :func:`cli_parser` (``--help`` with every
  default), so that a command line refuses a value before it starts working.

``checks`` imports nothing of the project (tests/test_layout.py).
"""

from checks.arrays import (
    NORM_TOL,
    as_floats,
    finite_entries,
    float_array,
    int_array,
    prob_matrix,
    prob_vector,
)
from checks.cli import (
    cli_parser,
    distinct_choices,
    in_file_arg,
    int_arg,
    option_error,
    out_dir_arg,
    out_file_arg,
    real_arg,
)
from checks.values import bits, boolean, choice, integer, power_of_two, real, seed

__all__ = [
    "NORM_TOL",
    "as_floats",
    "finite_entries",
    "bits",
    "boolean",
    "choice",
    "cli_parser",
    "float_array",
    "in_file_arg",
    "int_arg",
    "int_array",
    "integer",
    "option_error",
    "distinct_choices",
    "out_dir_arg",
    "out_file_arg",
    "power_of_two",
    "prob_matrix",
    "prob_vector",
    "real",
    "real_arg",
    "seed",
]
