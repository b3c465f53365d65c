"""Chip top for co-simulation: the token tree manager and the KV-cache pool side by side.

SPEC §1 names the orchestration subsystems this project builds in RTL: the
token tree manager (§2, §3) and the shared KV-cache pool (§4). :class:`Top`
instantiates :class:`hw.tree_manager.TreeManager` and
:class:`hw.kv_pool.KVPool` in one design with every port of both brought out
(prefixed ``tm_`` and ``kv_``), so that one Verilator build serves the chip
model's whole ``rtl`` backend (:mod:`sim.rtl`).
"""

from amaranth import Module
from amaranth.lib import wiring

from hw.common import Param, check_params, merge_params, pick
from hw.kv_pool import KVPool
from hw.tree_manager import TreeManager

__all__ = ["Top", "PARAMS", "TM_PORTS", "KV_PORTS"]

#: both blocks' parameters (:class:`hw.common.Param`); ``N_NODES`` accepts what
#: both accept (the tree manager's range, inside the pool's)
PARAMS: dict[str, Param] = merge_params(TreeManager.PARAMS, KVPool.PARAMS)

#: ports of the tree manager, brought out as ``tm_<name>`` (``tot`` only when it has one:
#: ``SELECT_LANES > 0``)
TM_PORTS = (
    "seed",
    "busy",
    "advance",
    "i",
    "rows",
    "result",
    "tokens",
    "tot",
    "w",
    "extra",
    "bcfg",
    "shape",
    "req",
    "dist",
    "tree",
    "vrows",
    "pq",
    "ocfg",
    "opt_mode",
    "opt_budget",
    "opt_expected",
    "opt_busy",
    "build_busy",
    "error",
)
#: ports of the KV pool, brought out as ``kv_<name>``
KV_PORTS = (
    "op",
    "res",
    "draft_q",
    "draft_r",
    "verify_q",
    "verify_r",
    "free_pages",
    "valid_entries",
    "error",
)


class Top(wiring.Component):
    """The token tree manager and the shared KV-cache pool in one design (SPEC §1).

    The two blocks share nothing but the clock and reset (on the chip the
    sequencer moves ``path_mask`` from the tree manager's ``result`` to the
    pool's ``COMMIT``; here the co-simulation does, as the chip model's
    ``rtl`` backend). Every port of each block is a port of the top with the
    same signature, named ``tm_<port>`` (:class:`hw.tree_manager.TreeManager`:
    SPEC §2 mask rows, §3 acceptance, §3.4 RNG lanes, §3.5 token sampler) or
    ``kv_<port>`` (:class:`hw.kv_pool.KVPool`: SPEC §4 operations, lookups,
    status); the tree manager's include its tree builder's and topology
    optimiser's (SPEC §3.6 - §3.11: ``bcfg``, ``shape``, ``req``, ``dist``,
    ``tree``, ``vrows``, ``pq``, ``ocfg`` and the status). In Verilog the
    stream ports are ``tm_i__valid``, ``tm_i__ready``, ``tm_i__payload`` and
    so on; struct payloads are one vector, fields from bit 0 in declaration
    order.

    Latency and behaviour are the blocks' own (their docstrings; SPEC §6):
    the top adds no logic and no register. The co-simulation built on it:
    ``docs/blocks/specdecode_top.md``.

    Parameters
    ----------
    N_NODES, TOKEN_BITS, PROB_BITS, RAND_BITS, WEIGHT_BITS, LANES : int
        As in :class:`hw.tree_manager.TreeManager` (SPEC §5). ``N_NODES`` is
        also the pool's; it accepts what both blocks accept (:data:`PARAMS`).
    CONF_BITS, C_MAX, D_MAX, R, ACC_BITS, NB, WIN, SELECT_LANES : int
        The tree manager's tree builder, topology optimiser and extra-token
        sampler (:class:`hw.tree_manager.TreeManager`).
    ENTRIES, PAGES, SEQS, LAYER_BITS, POS_BITS : int
        As in :class:`hw.kv_pool.KVPool` (SPEC §5).

    Raises
    ------
    ValueError
        A parameter out of range or not an integer; the message quotes it.
        Every parameter is checked before either block is built.

    Members
    -------
    tm_seed, tm_busy, tm_advance, tm_i, tm_rows, tm_result, tm_tokens, tm_w, tm_extra, tm_error
        The tree manager's verify path (:class:`hw.tree_manager.TreeManager`).
    tm_tot
        Only with ``SELECT_LANES > 0``: the one-pass token select's totals.
    tm_bcfg, tm_shape, tm_req, tm_dist, tm_tree, tm_vrows, tm_pq, tm_ocfg
        The tree manager's built path: the tree builder's configuration, shape,
        requests and distributions, the built tree and its pre-verify rows, the
        verifier's ``pt``/``qt`` of the held tree, the optimiser's configuration.
    tm_opt_mode, tm_opt_budget, tm_opt_expected, tm_opt_busy, tm_build_busy
        The tree manager's optimiser and builder status.
    kv_op, kv_res, kv_draft_q, kv_draft_r, kv_verify_q, kv_verify_r
        The pool's operation, result and lookup streams (:class:`hw.kv_pool.KVPool`).
    kv_free_pages, kv_valid_entries, kv_error
        The pool's status counts and error pulse.
    """

    #: the module's :data:`PARAMS`, where every block keeps its declaration
    PARAMS = PARAMS

    def __init__(self, **params: int) -> None:
        # every parameter checked before any block is built (no half-built blocks)
        p = check_params(self.PARAMS, params)
        for name, value in p.items():
            setattr(self, name, value)
        self.tm = TreeManager(**pick(p, TreeManager.PARAMS))
        self.kv = KVPool(**pick(p, KVPool.PARAMS))
        members = {}
        tm_ports = tuple(n for n in TM_PORTS if n != "tot" or p["SELECT_LANES"])
        self._ports = (("tm", self.tm, tm_ports), ("kv", self.kv, KV_PORTS))
        for prefix, block, names in self._ports:
            sig = block.signature.members
            if set(sig) != set(names):  # a block grew or lost a port: bring it out here
                raise RuntimeError(f"{prefix}: ports {sorted(sig)} != {sorted(names)}")
            members.update({f"{prefix}_{n}": sig[n] for n in names})
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.tree_manager = self.tm
        m.submodules.kv_pool = self.kv
        for prefix, block, names in self._ports:
            for n in names:
                member = block.signature.members[n]
                outer, inner = getattr(self, f"{prefix}_{n}"), getattr(block, n)
                if member.is_signature:
                    wiring.connect(m, wiring.flipped(outer), inner)
                elif member.flow == wiring.Out:
                    m.d.comb += outer.eq(inner)
                else:
                    m.d.comb += inner.eq(outer)
        return m
