"""What the tree builder's engines share: the stream layouts and the confidence product.

Layouts (exported as functions, reused by the testbench):

* :func:`cfg_layout`: one beat per tree on ``cfg`` (mode, ``K`` and, dynamic
  mode, ``M``, ``D``, ``W``);
* :func:`dist_layout`: the ``dist`` input, ``LANES`` quantised probabilities
  per beat (``hw.topk.beat_layout`` without ``k``: the builder drives ``k``);
* :func:`req_layout`: a request for the next distribution;
* :func:`out_layout`: one node of the built tree, in the mask generator's
  parent format (``parent`` and ``end`` first) plus its payload.

Arithmetic: :func:`mul` (a carry-save multiplier) and :func:`conf_product`,
SPEC §3.7's ``(c_parent * q) >> PROB_BITS``.

Note: no ``from __future__ import annotations`` (Amaranth reads signature
annotations in the modules that import these).
"""

from amaranth import Module, Mux, Value
from amaranth.lib import data
from amaranth.utils import bits_for

from hw.common import csa_rows, idx_bits, prefix_add, zext
from hw.topk import K_BITS, K_MAX, result_layout

__all__ = [
    "K_MAX",
    "K_BITS",
    "W_MAX",
    "MODE_STATIC",
    "MODE_DYNAMIC",
    "cfg_layout",
    "dist_layout",
    "req_layout",
    "out_layout",
    "result_layout",
    "mul",
    "conf_product",
]

#: most nodes expanded per round in dynamic mode (SPEC §3.9)
W_MAX = 16
#: ``cfg.mode`` of a static build (SPEC §3.8)
MODE_STATIC = 0
#: ``cfg.mode`` of a dynamic (EAGLE-2) build (SPEC §3.9)
MODE_DYNAMIC = 1


def cfg_layout(n_nodes: int) -> data.StructLayout:
    """Configuration beat, one per tree: ``mode`` (0 static, 1 dynamic), ``k``, and
    for dynamic mode the budget ``m``, the rounds ``d`` and the width ``w``.

    ``k`` and ``w`` are 5 bits (``0 .. 31``; ``1 .. 16`` valid), ``m`` and ``d``
    ``bits_for(n_nodes)`` bits, so that every out-of-range value can be sent.
    """
    mb = bits_for(n_nodes)
    return data.StructLayout({"mode": 1, "k": K_BITS, "m": mb, "d": mb, "w": K_BITS})


def dist_layout(lanes: int, prob_bits: int) -> data.StructLayout:
    """Distribution beat: ``lanes`` probabilities (token ``b*lanes + l`` of beat ``b``
    in lane ``l``, SPEC §3.6) and ``last`` on a distribution's final beat."""
    return data.StructLayout({"q": data.ArrayLayout(prob_bits, lanes), "last": 1})


def req_layout(node_bits: int, token_bits: int) -> data.StructLayout:
    """Request beat: the node whose distribution is asked for, its parent and its token
    (``path(node) = path(parent) + [token]``; the root's request is all zero)."""
    return data.StructLayout({"node": node_bits, "parent": node_bits, "token": token_bits})


def out_layout(n_nodes: int, token_bits: int, prob_bits: int, conf_bits: int) -> data.StructLayout:
    """Output beat: one node of the built tree (``end = 0``) or the end of the tree.

    ``parent`` and ``end`` come first, laid out as ``hw.tree_mask_gen.parent_layout``:
    the low ``idx_bits(n_nodes) + 1`` bits of the payload are a mask generator's
    input beat. ``token``, ``q`` and ``conf`` (SPEC §3.7) are 0 on the end beat.
    """
    return data.StructLayout(
        {
            "parent": idx_bits(n_nodes),
            "end": 1,
            "token": token_bits,
            "q": prob_bits,
            "conf": conf_bits,
        }
    )


def mul(m: Module, a: Value, b: Value, width: int, name: str, *, fpga: bool = False) -> Value:
    """``(a * b) mod 2**width``, unsigned: one partial product per bit of ``b``, a
    carry-save tree (:func:`hw.common.csa_rows`) and a Kogge-Stone adder
    (:func:`hw.common.prefix_add`), ``O(log len(b) + log width)`` levels (an
    operator ``*`` synthesises to an array multiplier, ``O(width)`` levels).
    ``fpga``: the operator ``*`` instead, for an FPGA's multiplier blocks."""
    if fpga:
        return (a.as_unsigned() * b.as_unsigned())[:width]
    a = zext(a.as_unsigned(), width)
    rows = [Mux(b[k], a, 0)[:width] for k in range(len(b))]
    if len(rows) == 1:
        return rows[0]
    s, c = csa_rows(m, rows, width, f"{name}_csa", shifts=list(range(len(b))), keep=True)
    return prefix_add(m, s, c, width, f"{name}_add", keep=True)


def conf_product(
    m: Module, c: Value, q: Value, prob_bits: int, conf_bits: int, name: str, *, fpga: bool = False
) -> Value:
    """A child's confidence ``(c * q) >> prob_bits`` (SPEC §3.7), ``conf_bits`` wide:
    ``c`` is the parent's (``conf_bits``), ``q`` the child's probability
    (``fpga``: :func:`mul`'s)."""
    w = conf_bits + prob_bits
    return mul(m, c, q, w, name, fpga=fpga)[prob_bits : prob_bits + conf_bits]
