"""Gateware helpers shared by the blocks of ``hw``: written once, imported from here.

* :mod:`hw.common.params`: :class:`Param` (one block parameter's declaration),
  :func:`check_param` / :func:`check_params` (validation), :func:`merge_params`, :func:`pick`,
  :func:`idx_bits`;
* :mod:`hw.common.nets`: :func:`net` (a named, optionally kept, comb signal),
  :func:`zext`;
* :mod:`hw.common.reduce`: balanced OR / AND / mux trees, priority encoders
  (:func:`priority_tree` carries a payload), the prefix OR
  :func:`prefix_or_below`;
* :mod:`hw.common.arith`: the Kogge-Stone adder :func:`prefix_add` and its
  single-output forms :func:`carry_out` / :func:`sign_of_sum`, carry-save
  trees (:func:`carry_save`, :func:`csa_rows`, :func:`full_adder`) and
  :func:`popcount`.

Everything builds trees, never linear chains, so that a structure over ``n``
inputs is ``O(log n)`` gate levels deep.

Note: modules that declare ``wiring.Component`` signatures must not use
``from __future__ import annotations`` (Amaranth reads the annotations).
"""

from hw.common.arith import (
    carry_out,
    carry_save,
    csa_levels,
    csa_rows,
    full_adder,
    less_than,
    popcount,
    prefix_add,
    prefix_dec,
    prefix_inc,
    prefix_inc_mod,
    prefix_step,
    prefix_sub,
    sign_of_sum,
)
from hw.common.nets import net, zext
from hw.common.params import (
    Param,
    check_param,
    check_params,
    check_target,
    idx_bits,
    merge_params,
    pick,
)
from hw.common.reduce import (
    and_tree,
    encode,
    mux_tree,
    onehot,
    or_tree,
    prefix_or_below,
    priority_highest,
    priority_lowest,
    priority_tree,
    sum_tree,
)

__all__ = [
    "Param",
    "check_param",
    "check_params",
    "check_target",
    "merge_params",
    "pick",
    "idx_bits",
    "net",
    "zext",
    "or_tree",
    "and_tree",
    "sum_tree",
    "mux_tree",
    "priority_tree",
    "priority_lowest",
    "priority_highest",
    "prefix_or_below",
    "onehot",
    "encode",
    "full_adder",
    "less_than",
    "prefix_add",
    "prefix_inc",
    "prefix_inc_mod",
    "prefix_dec",
    "prefix_sub",
    "prefix_step",
    "carry_out",
    "sign_of_sum",
    "carry_save",
    "csa_rows",
    "csa_levels",
    "popcount",
]
