"""Shared KV-cache pool: the KV block table with speculative entries (SPEC §4).

The block table is a content-addressable memory of ``entries`` entries mapping
``(sequence, layer, position)`` to a physical page (one page holds one token's
KV for one layer). :class:`BlockTable` is the golden reference of the RTL's
block-table CAM and commit/rollback unit: every result and the whole table
state (:meth:`BlockTable.entries_snapshot`) must match the RTL bit for bit.

Entry (SPEC §4.1)
-----------------
``valid``, ``committed`` (0: speculative, written by draft-tree node ``owner``
this step), ``seqs`` (bit ``s``: sequence ``s`` sees the entry; prefix sharing
is by this mask, never by copying), ``layer``, ``pos``, ``owner``, ``page``.

Operations (SPEC §4.2)
----------------------
``lookup(seq, layer, pos, view)``
    The page of the lowest-numbered valid entry with ``seqs[seq]`` set, the
    given ``layer`` and ``pos``, that is committed or whose ``owner`` bit is
    set in ``view`` (the requesting node's tree-mask row); ``None`` on a miss.
``insert(seq, layer, pos, owner, committed)``
    Takes the lowest-numbered free entry and the lowest-numbered free page
    together; the new entry is seen by ``seq`` only. Returns the page.
``commit(seq, accept)``
    ``accept`` is the mask row of the sampler's ``last``: every speculative
    entry of ``seq`` whose owner is in ``accept`` becomes committed, every
    other speculative entry of ``seq`` is invalidated and its page freed.
``fork(src, dst)``
    Every committed entry seen by ``src`` is also seen by ``dst`` (no copy).
``release(seq)``
    ``seq`` stops seeing every entry; entries seen by no sequence any more are
    invalidated and their pages freed.

Invariants (SPEC §4.3), kept after every operation
--------------------------------------------------
* ``free_pages + valid_entries == pages``; a page belongs to at most one
  valid entry.
* No two valid entries seen by the same sequence are both committed with the
  same ``(layer, pos)``.
* A committed entry's ``valid``, ``committed``, ``layer``, ``pos``, ``owner``
  and ``page`` never change until the release of its last sequence; only its
  ``seqs`` mask changes (``fork`` adds ``dst``, ``release`` removes a
  sequence). Nothing committed is ever lost.
* A speculative entry is seen by exactly one sequence.
* Bad input raises ``ValueError`` naming the field and changes nothing:
  every check is made before anything is mutated.

Consequence of the allocation rule: entry ``i`` always holds page ``i``.
Entries and pages are taken and given back in pairs, always the lowest free of
each, so by induction the allocated pages are exactly the valid entries'
indices; the lowest free entry ``e`` is then also the lowest free page if
``e < pages``, and if ``e >= pages`` every page is in use (insert fails with
"no free page"). The model does not rely on this; the tests check it.

Choices where the SPEC is silent
--------------------------------
* **Insert conflicts.** Exactly SPEC's two are errors: a ``(seq, layer, pos)``
  that ``seq`` already sees committed (for a speculative or a committed
  insert), and a speculative ``(seq, layer, pos, owner)`` that already exists.
  Allowed: speculative entries of one ``seq`` at the same ``(layer, pos)``
  with different owners (sibling draft nodes share a position); the same
  ``(layer, pos, owner)`` speculative in different sequences; and a
  *committed* insert of a ``(seq, layer, pos)`` that ``seq`` sees only
  speculatively. In the last case a later commit that would keep that
  speculative entry raises (it would leave two committed entries at one
  ``(layer, pos)``), and a commit that drops it succeeds.
* **Error precedence** (only the message depends on it; nothing ever changes
  on an error): argument range checks in argument order, then the operation's
  conditions in SPEC §4.3's order. Insert: already seen committed, then
  speculative duplicate, then table full (``entries``), then no free page
  (``pages``). Commit: no speculative entry, then ``accept`` bit 0 clear, then
  the two-committed check. Fork: ``src == dst``, then ``src`` sees no
  committed entry, then ``dst`` already sees an entry (committed or
  speculative).
* **Commit** keeps the ``owner`` field of the entries it commits; ``accept``
  may have bits of nodes that wrote no entry. Only ``seq``'s speculative
  entries are touched.
* **Release** also frees the sequence's speculative entries (they are seen by
  that sequence only). ``fork`` never shares speculative entries.
* **The owner of a committed insert** is stored as given (default 0) and
  ignored by lookup, like the owner of every committed entry.
* **Invalid entries** are reported by :meth:`BlockTable.entries_snapshot` with
  every field zero: their contents are don't-care, and a testbench compares
  valid entries only (or the RTL clears them too).
* **Types.** Integer fields take Python or numpy integers (not ``bool``);
  ``committed`` takes a ``bool`` or 0/1. ``view`` and ``accept`` are
  ``n_nodes``-bit non-negative ints. Parameter ranges: ``entries`` and
  ``pages`` 1..4096, ``seqs`` 1..64, ``n_nodes`` 1..1024, ``layer_bits``
  1..16, ``pos_bits`` 1..32 (wider than SPEC §5's, for small tests).

Implementation: the entries are kept field by field in Python lists, with a
``(layer, pos) -> sorted entry indices`` index for lookup and insert, per
sequence sets of the entries it sees and of its speculative entries, and the
free entries and pages as bitmaps (lowest free = lowest set bit). Every
operation costs time proportional to the entries it touches, not to the table.
"""

from __future__ import annotations

from bisect import insort

from golden.kvtypes import INVALID_ENTRY, Entry, KVErr, KVError, as_flag, as_int, as_mask

__all__ = [
    "Entry",
    "KVErr",
    "KVError",
    "BlockTable",
    "MAX_ENTRIES",
    "MAX_PAGES",
    "MAX_SEQS",
    "MAX_NODES",
    "MAX_LAYER_BITS",
    "MAX_POS_BITS",
]

MAX_ENTRIES = 4096
MAX_PAGES = 4096
MAX_SEQS = 64
MAX_NODES = 1024
MAX_LAYER_BITS = 16
MAX_POS_BITS = 32


class BlockTable:
    """The KV block table: a CAM of speculative and committed entries (SPEC §4).

    Parameters
    ----------
    entries : int
        Number of entries (``ENTRIES``), 1..4096.
    pages : int
        Number of physical pages (``PAGES``), 1..4096.
    seqs : int
        Number of sequences (``SEQS``, width of the ``seqs`` mask), 1..64.
    n_nodes : int
        Draft-tree nodes (``N_NODES``): ``owner < n_nodes``, ``view`` and
        ``accept`` are ``n_nodes``-bit masks. 1..1024.
    layer_bits, pos_bits : int
        Widths of ``layer`` (1..16) and ``pos`` (1..32).

    Raises
    ------
    ValueError
        Naming the parameter out of range.

    Notes
    -----
    See the module docstring for the semantics, the invariants and the choices
    made where the SPEC is silent. Every operation validates all its arguments
    and conditions before changing anything.
    """

    def __init__(
        self,
        entries: int,
        pages: int,
        seqs: int,
        n_nodes: int,
        layer_bits: int = 5,
        pos_bits: int = 17,
    ) -> None:
        self._E = as_int("entries", entries, 1, MAX_ENTRIES)
        self._P = as_int("pages", pages, 1, MAX_PAGES)
        self._S = as_int("seqs", seqs, 1, MAX_SEQS)
        self._N = as_int("n_nodes", n_nodes, 1, MAX_NODES)
        self._LB = as_int("layer_bits", layer_bits, 1, MAX_LAYER_BITS)
        self._PB = as_int("pos_bits", pos_bits, 1, MAX_POS_BITS)
        self._layer_max = (1 << self._LB) - 1
        self._pos_max = (1 << self._PB) - 1
        self._mask_max = (1 << self._N) - 1
        n = self._E
        # Per-entry fields (an invalid entry holds zeros).
        self._valid = [False] * n
        self._committed = [False] * n
        self._seqs = [0] * n
        self._layer = [0] * n
        self._pos = [0] * n
        self._owner = [0] * n
        self._page = [0] * n
        # Indexes.
        self._page_entry = [-1] * self._P  # page -> entry holding it, -1 free
        self._free_e = (1 << n) - 1  # bit i: entry i free
        self._free_p = (1 << self._P) - 1  # bit p: page p free
        self._n_valid = 0
        self._by_key: dict[tuple[int, int], list[int]] = {}  # (layer, pos) -> valid entries
        self._seen: list[set[int]] = [set() for _ in range(self._S)]  # entries seq sees
        self._spec: list[set[int]] = [set() for _ in range(self._S)]  # its speculative ones

    # ------------------------------------------------------------------ parameters
    @property
    def entries(self) -> int:
        """Number of entries (``ENTRIES``)."""
        return self._E

    @property
    def pages(self) -> int:
        """Number of physical pages (``PAGES``)."""
        return self._P

    @property
    def seqs(self) -> int:
        """Number of sequences (``SEQS``)."""
        return self._S

    @property
    def n_nodes(self) -> int:
        """Draft-tree nodes (``N_NODES``)."""
        return self._N

    @property
    def layer_bits(self) -> int:
        return self._LB

    @property
    def pos_bits(self) -> int:
        return self._PB

    # ------------------------------------------------------------------ state
    @property
    def free_pages(self) -> int:
        """Number of free pages."""
        return self._free_p.bit_count()

    @property
    def valid_entries(self) -> int:
        """Number of valid entries."""
        return self._n_valid

    @property
    def free_entries(self) -> int:
        """Number of free (invalid) entries."""
        return self._free_e.bit_count()

    @property
    def free_page_mask(self) -> int:
        """The allocator's free-page bitmap: bit ``p`` set iff page ``p`` is free."""
        return self._free_p

    @property
    def free_entry_mask(self) -> int:
        """Bit ``i`` set iff entry ``i`` is free (invalid)."""
        return self._free_e

    def entries_snapshot(self) -> tuple[Entry, ...]:
        """Every entry's fields, entry 0 first (invalid entries: all zero)."""
        return tuple(self.entry(i) for i in range(self._E))

    def entry(self, index: int) -> Entry:
        """One entry's fields (invalid: all zero), without a whole snapshot."""
        i = as_int("index", index, 0, self._E - 1)
        if not self._valid[i]:
            return INVALID_ENTRY
        return Entry(
            True,
            self._committed[i],
            self._seqs[i],
            self._layer[i],
            self._pos[i],
            self._owner[i],
            self._page[i],
        )

    def page_owner(self, page: int) -> int | None:
        """The entry holding ``page``, or ``None`` if the page is free."""
        p = as_int("page", page, 0, self._P - 1)
        e = self._page_entry[p]
        return None if e < 0 else e

    def sees(self, seq: int) -> list[int]:
        """The valid entries ``seq`` sees (committed or speculative), ascending."""
        s = as_int("seq", seq, 0, self._S - 1)
        return sorted(self._seen[s])

    def speculative(self, seq: int) -> list[int]:
        """The speculative entries of ``seq`` (written this step), ascending."""
        s = as_int("seq", seq, 0, self._S - 1)
        return sorted(self._spec[s])

    def copy(self) -> BlockTable:
        """An independent copy of the table (parameters and state)."""
        new = object.__new__(BlockTable)
        new.__dict__.update(self.__dict__)
        for name in ("_valid", "_committed", "_seqs", "_layer", "_pos", "_owner", "_page"):
            setattr(new, name, list(getattr(self, name)))
        new._page_entry = list(self._page_entry)
        new._by_key = {k: list(v) for k, v in self._by_key.items()}
        new._seen = [set(s) for s in self._seen]
        new._spec = [set(s) for s in self._spec]
        return new

    def __repr__(self) -> str:
        return (
            f"BlockTable(entries={self._E}, pages={self._P}, seqs={self._S}, "
            f"n_nodes={self._N}, layer_bits={self._LB}, pos_bits={self._PB}; "
            f"{self._n_valid} valid)"
        )

    # ------------------------------------------------------------------ checks
    def _seq(self, name: str, value: object) -> int:
        return as_int(name, value, 0, self._S - 1)

    def _check_key(self, seq: object, layer: object, pos: object) -> tuple[int, int, int]:
        if type(seq) is not int or not 0 <= seq < self._S:
            seq = self._seq("seq", seq)
        if type(layer) is not int or not 0 <= layer <= self._layer_max:
            layer = as_int("layer", layer, 0, self._layer_max)
        if type(pos) is not int or not 0 <= pos <= self._pos_max:
            pos = as_int("pos", pos, 0, self._pos_max)
        return seq, layer, pos

    # ------------------------------------------------------------------ operations
    def lookup(self, seq: int, layer: int, pos: int, view: int = 0) -> int | None:
        """Page of ``(seq, layer, pos)`` as seen through ``view``, or ``None``.

        Parameters
        ----------
        seq, layer, pos : int
            The key.
        view : int
            ``n_nodes``-bit mask (the requesting node's tree-mask row): a
            speculative entry hits iff its owner's bit is set. ``0``: committed
            entries only.

        Returns
        -------
        int or None
            The page of the lowest-numbered matching entry; ``None`` on a miss.
        """
        seq, layer, pos = self._check_key(seq, layer, pos)
        if type(view) is not int or not 0 <= view <= self._mask_max:
            view = as_mask("view", view, self._N)
        cand = self._by_key.get((layer, pos))
        if cand:
            bit = 1 << seq
            seqs, com, own = self._seqs, self._committed, self._owner
            for i in cand:  # ascending: the lowest-numbered match wins
                if seqs[i] & bit and (com[i] or (view >> own[i]) & 1):
                    return self._page[i]
        return None

    def insert(
        self, seq: int, layer: int, pos: int, owner: int = 0, committed: bool = False
    ) -> int:
        """Allocate the lowest free entry and the lowest free page for a new entry.

        Parameters
        ----------
        seq, layer, pos : int
            The key; the new entry is seen by ``seq`` only.
        owner : int
            Tree node that wrote the entry, ``0 <= owner < n_nodes``.
        committed : bool
            ``False`` (default): a speculative entry of this step.

        Returns
        -------
        int
            The page allocated.

        Raises
        ------
        ValueError
            A field out of range; ``seq`` already sees ``(layer, pos)``
            committed; a speculative ``(seq, layer, pos, owner)`` already
            exists; the table is full (``entries``); no free page (``pages``).
        """
        seq, layer, pos = self._check_key(seq, layer, pos)
        if type(owner) is not int or not 0 <= owner < self._N:
            owner = as_int("owner", owner, 0, self._N - 1)
        if committed is not True and committed is not False:
            committed = as_flag("committed", committed)
        key = (layer, pos)
        cand = self._by_key.get(key)
        if cand:
            bit = 1 << seq
            seqs, com = self._seqs, self._committed
            for i in cand:
                if seqs[i] & bit and com[i]:
                    raise KVError(
                        f"insert (seq = {seq}, layer = {layer}, pos = {pos}): seq {seq} "
                        f"already sees a committed entry there (entry {i}, page {self._page[i]})",
                        KVErr.SEEN_COMMITTED,
                    )
            if not committed:
                for i in cand:
                    if seqs[i] & bit and self._owner[i] == owner:
                        raise KVError(
                            f"insert (seq = {seq}, layer = {layer}, pos = {pos}, "
                            f"owner = {owner}): this speculative entry already exists "
                            f"(entry {i}, page {self._page[i]})",
                            KVErr.SPEC_DUP,
                        )
        fe = self._free_e
        if not fe:
            raise KVError(f"insert: table full (entries = {self._E}, all valid)", KVErr.TABLE_FULL)
        fp = self._free_p
        if not fp:
            raise KVError(f"insert: no free page (pages = {self._P}, all allocated)", KVErr.NO_PAGE)
        # Commit point: nothing above changed any state.
        low = fe & -fe
        e = low.bit_length() - 1
        self._free_e = fe ^ low
        low = fp & -fp
        p = low.bit_length() - 1
        self._free_p = fp ^ low
        self._valid[e] = True
        self._committed[e] = committed
        self._seqs[e] = 1 << seq
        self._layer[e] = layer
        self._pos[e] = pos
        self._owner[e] = owner
        self._page[e] = p
        self._page_entry[p] = e
        self._n_valid += 1
        if cand is None:
            self._by_key[key] = [e]
        else:
            insort(cand, e)
        self._seen[seq].add(e)
        if not committed:
            self._spec[seq].add(e)
        return p

    def commit(self, seq: int, accept: int) -> list[int]:
        """Keep ``seq``'s speculative entries whose owner is in ``accept``; free the rest.

        Parameters
        ----------
        seq : int
            The sequence.
        accept : int
            ``n_nodes``-bit mask, the tree-mask row of the accepted ``last``
            node; bit 0 (the root) must be set.

        Returns
        -------
        list[int]
            The freed pages, ascending.

        Raises
        ------
        ValueError
            A field out of range; ``seq`` has no speculative entry; bit 0 of
            ``accept`` clear; ``seq`` would see two committed entries with the
            same ``(layer, pos)``.
        """
        if type(seq) is not int or not 0 <= seq < self._S:
            seq = self._seq("seq", seq)
        if type(accept) is not int or not 0 <= accept <= self._mask_max:
            accept = as_mask("accept", accept, self._N)
        spec = self._spec[seq]
        if not spec:
            raise KVError(f"commit seq = {seq}: seq {seq} has no speculative entry", KVErr.NO_SPEC)
        if not accept & 1:
            raise KVError(f"accept = {accept:#x}: bit 0 (the root) must be set", KVErr.ROOT_CLEAR)
        own, lay, pos_ = self._owner, self._layer, self._pos
        keep: list[int] = []
        drop: list[int] = []
        for i in sorted(spec):
            (keep if (accept >> own[i]) & 1 else drop).append(i)
        bit = 1 << seq
        kept_at: dict[tuple[int, int], int] = {}
        for i in keep:
            key = (lay[i], pos_[i])
            j = kept_at.get(key)
            if j is None:
                for k in self._by_key[key]:
                    if self._committed[k] and self._seqs[k] & bit:
                        j = k
                        break
            if j is not None:
                raise KVError(
                    f"commit (seq = {seq}, accept = {accept:#x}): would leave seq {seq} "
                    f"seeing two committed entries at (layer = {key[0]}, pos = {key[1]}): "
                    f"entries {min(i, j)} and {max(i, j)}",
                    KVErr.TWO_COMMITTED,
                )
            kept_at[key] = i
        # Commit point.
        for i in keep:
            self._committed[i] = True
        seen = self._seen[seq]
        freed = []
        for i in drop:
            seen.discard(i)
            freed.append(self._invalidate(i))
        spec.clear()
        freed.sort()
        return freed

    def fork(self, src: int, dst: int) -> None:
        """Make every committed entry ``src`` sees visible to ``dst`` too (no copy).

        Raises
        ------
        ValueError
            A field out of range; ``src == dst``; ``src`` sees no committed
            entry; ``dst`` already sees an entry.
        """
        if type(src) is not int or not 0 <= src < self._S:
            src = self._seq("src", src)
        if type(dst) is not int or not 0 <= dst < self._S:
            dst = self._seq("dst", dst)
        if src == dst:
            raise KVError(f"fork src = dst = {src}: src and dst must differ", KVErr.SAME_SEQ)
        com = self._committed
        shared = [i for i in self._seen[src] if com[i]]
        if not shared:
            raise KVError(f"fork src = {src}: src sees no committed entry", KVErr.SRC_EMPTY)
        if self._seen[dst]:
            raise KVError(
                f"fork dst = {dst}: dst already sees {len(self._seen[dst])} entries", KVErr.DST_BUSY
            )
        bit = 1 << dst
        seqs = self._seqs
        for i in shared:
            seqs[i] |= bit
        self._seen[dst].update(shared)

    def release(self, seq: int) -> list[int]:
        """``seq`` stops seeing every entry; free the entries no sequence sees any more.

        Returns
        -------
        list[int]
            The freed pages, ascending.

        Raises
        ------
        ValueError
            ``seq`` out of range or seeing no entry.
        """
        if type(seq) is not int or not 0 <= seq < self._S:
            seq = self._seq("seq", seq)
        seen = self._seen[seq]
        if not seen:
            raise KVError(f"release seq = {seq}: seq {seq} sees no entry", KVErr.NOTHING_SEEN)
        keep = ~(1 << seq)
        seqs = self._seqs
        freed = []
        for i in seen:
            s = seqs[i] & keep
            seqs[i] = s
            if not s:
                freed.append(self._invalidate(i))
        seen.clear()
        self._spec[seq].clear()
        freed.sort()
        return freed

    # ------------------------------------------------------------------ internals
    def _invalidate(self, i: int) -> int:
        """Invalidate entry ``i`` and free its page (caller fixes ``_seen``/``_spec``)."""
        key = (self._layer[i], self._pos[i])
        lst = self._by_key[key]
        if len(lst) == 1:
            del self._by_key[key]
        else:
            lst.remove(i)
        p = self._page[i]
        self._valid[i] = False
        self._committed[i] = False
        self._seqs[i] = 0
        self._layer[i] = 0
        self._pos[i] = 0
        self._owner[i] = 0
        self._page[i] = 0
        self._page_entry[p] = -1
        self._free_e |= 1 << i
        self._free_p |= 1 << p
        self._n_valid -= 1
        return p
