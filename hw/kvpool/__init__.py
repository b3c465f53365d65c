"""The KV pool at scale (SPEC §4.4 - §4.9, decision 0016): its leaves and the
composed pool :class:`ScaledPool`, mirroring :mod:`golden.kvpool`; the flat pool
(:mod:`hw.kv_pool`) is unchanged.

================  ======================================================================
module            holds
================  ======================================================================
``layouts``       the pool's opcodes, error codes and stream layouts, and the
                  transaction order its results follow
``pool``          :class:`ScaledPool`: the composed pool (Verilog ``kvpool``)
``pool_lookup``   one lookup port: segment match, TLB, walk, tree lookup, reply
``pool_checks``   the operations' error precedence
``pool_ops``      the operation FSM (allocation, spill, insert, commit, release,
                  spill / fill / score)
``pool_fast``     the fast insert and fork: one per cycle
``pool_units``    the units and registers the FSM drives
``pool_share``    dedup tags and ``share``
``segtable``      segment table, block-table registers, lengths and tags (flops)
``crc64``         :class:`BlockTag`: the dedup tag step (CRC-64/ECMA-182 over a block of
                  16 tokens), one block per cycle (``golden.kvpool.crc``)
``allocator``     :class:`PageAllocator`: the free FIFO in memory and the high-water
                  mark, one allocation and one free per cycle (``golden.kvpool.pages``)
``tlb``           :class:`TLB`: one lookup port's set-associative TLB with tree-PLRU and
                  its invalidations (``golden.kvpool.tlb``)
``blocktable``    :class:`BlockTable`: the block tables, 3-level radix trees of PTEs
``treeslots``     :class:`TreeSlots`: the speculative entries (``golden.kvpool.trees``)
``pagestate``     :class:`PageState`: page states and the GCLOCK spill queue
``tagtable``      :class:`TagTable`: the dedup tag table (``golden.kvpool.tags``)
================  ======================================================================

Contracts, ports and measurements: ``docs/blocks/kvpool.md`` (the pool) and
``docs/blocks/kvpool_leaves.md`` (the leaves).
"""

from hw.kvpool.allocator import PageAllocator, page_bits
from hw.kvpool.blocktable import BlockTable
from hw.kvpool.crc64 import BLOCK, BlockTag, block_layout
from hw.kvpool.pagestate import PageState
from hw.kvpool.pool import ScaledPool
from hw.kvpool.tagtable import TagTable
from hw.kvpool.tlb import TLB, fill_layout, key_layout, reply_layout
from hw.kvpool.treeslots import TreeSlots

__all__ = [
    "BLOCK",
    "BlockTable",
    "BlockTag",
    "PageAllocator",
    "PageState",
    "ScaledPool",
    "TLB",
    "TagTable",
    "TreeSlots",
    "block_layout",
    "fill_layout",
    "key_layout",
    "page_bits",
    "reply_layout",
]
