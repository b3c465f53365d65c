"""Leaf blocks of the KV pool at scale (SPEC §4.4 - §4.9, decision 0016), mirroring
:mod:`golden.kvpool`; the flat pool (:mod:`hw.kv_pool`) is unchanged.

================  ======================================================================
module            holds
================  ======================================================================
``crc64``         :class:`BlockTag`: the dedup tag step (CRC-64/ECMA-182 over a block of
                  16 tokens), one block per cycle (``golden.kvpool.crc``)
``allocator``     :class:`PageAllocator`: the free FIFO in memory and the high-water
                  mark, one allocation and one free per cycle (``golden.kvpool.pages``)
``tlb``           :class:`TLB`: one lookup port's set-associative TLB with tree-PLRU and
                  its invalidations (``golden.kvpool.tlb``)
================  ======================================================================

Contracts, ports and measurements: ``docs/blocks/kvpool_leaves.md``.
"""

from hw.kvpool.allocator import PageAllocator, page_bits
from hw.kvpool.crc64 import BLOCK, BlockTag, block_layout
from hw.kvpool.tlb import TLB, fill_layout, key_layout, reply_layout

__all__ = [
    "BLOCK",
    "BlockTag",
    "PageAllocator",
    "TLB",
    "block_layout",
    "fill_layout",
    "key_layout",
    "page_bits",
    "reply_layout",
]
