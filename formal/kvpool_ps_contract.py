"""The page states' contract, stated once: ``formal.kvpool_ps_contract``.

The page shadow of a :class:`hw.kvpool.pagestate.PageState` (kept from its
interface alone), the pool's side Q0 - Q2 (:func:`commandable`) and the leaf's
side V-a - V-c (:func:`victim_contract`) of the contract that
:mod:`formal.kvpool_ps` proves at the leaf (its docstring states each); a pool
harness can build the same shadow on its page states, assert Q0 - Q2 and assume
V-a - V-c with the same functions.
"""

from dataclasses import dataclass

from amaranth import Array, Const, Module, Mux, Signal, Value

from hw.kvpool.pagestate import COMMITTED, FREE, SPEC, PageState, PsCmd

__all__ = ["PageShadow", "page_shadow", "commandable", "victim_contract", "WRITERS"]

#: a command kind below it writes a page word (SPEC, COMMIT, FREE, SCORE)
WRITERS = 4


@dataclass
class PageShadow:
    """The page shadow of a :class:`~hw.kvpool.pagestate.PageState`, kept from its
    interface alone: per page ``p`` ``written`` (a command of kind SPEC .. SCORE
    taken since reset), ``st[p]`` (FREE, SPEC, COMMITTED), ``tab[p]`` / ``pos[p]``
    (its last COMMIT's; 0 after a ``fresh`` command of another kind), ``out`` (shown
    as a victim since its last COMMIT or ``fresh`` command); ``vpend`` (a VICTIM
    taken, its ``done`` not yet shown), ``took`` (a command other than VICTIM taken
    in the previous cycle). Every register resets with the design."""

    written: Signal
    st: list[Signal]
    tab: list[Signal]
    pos: list[Signal]
    out: Signal
    vpend: Signal
    took: Signal

    def live(self, p: int) -> Value:
        """Page ``p`` is COMMITTED and not shown as a victim since."""
        return (self.st[p] == COMMITTED) & ~self.out[p]


def page_shadow(m: Module, ps: PageState) -> PageShadow:
    """The page shadow of ``ps`` (:class:`PageShadow`), in ``m``, updated by the commands
    ``ps`` takes (``cmd.valid & cmd.ready``) and the victims it shows."""
    P, c = ps.PAGES, ps.cmd.payload
    sh = PageShadow(
        written=Signal(P, name="fv_written"),
        st=[Signal(2, name=f"fv_st{p}") for p in range(P)],
        tab=[Signal(ps.TABLE_BITS, name=f"fv_tab{p}") for p in range(P)],
        pos=[Signal(ps.POS_BITS, name=f"fv_pos{p}") for p in range(P)],
        out=Signal(P, name="fv_out"),
        vpend=Signal(name="fv_vpend"),
        took=Signal(name="fv_took"),
    )
    fire = ps.cmd.valid & ps.cmd.ready
    kind = c.kind.as_value()
    is_victim = kind == PsCmd.VICTIM.value
    is_commit = kind == PsCmd.COMMIT.value
    writes = fire & (kind < WRITERS)
    shown = ps.done & sh.vpend & ~ps.none  # a victim shown this cycle
    for p in range(P):
        hit = writes & (c.page == p)
        old_st = Mux(c.fresh, FREE, sh.st[p])
        new_st = Array([Const(SPEC, 2), Const(COMMITTED, 2), Const(FREE, 2), old_st])[kind[:2]]
        cleared = hit & (is_commit | c.fresh)
        m.d.sync += [
            sh.out[p].eq(~cleared & (sh.out[p] | (shown & (ps.victim.page == p)))),
        ]
        with m.If(hit):
            m.d.sync += [
                sh.written[p].eq(1),
                sh.st[p].eq(new_st),
                sh.tab[p].eq(Mux(is_commit, c.tab, Mux(c.fresh, 0, sh.tab[p]))),
                sh.pos[p].eq(Mux(is_commit, c.pos, Mux(c.fresh, 0, sh.pos[p]))),
            ]
    m.d.sync += [
        sh.vpend.eq((fire & is_victim) | (sh.vpend & ~ps.done)),
        sh.took.eq(fire & ~is_victim),
    ]
    return sh


def commandable(ps: PageState, sh: PageShadow) -> dict[str, list]:
    """Q0 - Q2 for the command on ``ps.cmd`` (each condition holds unless a command of
    kind SPEC .. SCORE is taken): ``{"q0": [...], "q1": [...], "q2": [...]}``."""
    c = ps.cmd.payload
    g = ps.cmd.valid & ps.cmd.ready & (c.kind.as_value() < WRITERS)
    written = sh.written.bit_select(c.page, 1)
    return {
        "q0": [~g | (c.page < ps.PAGES)],
        "q1": [~g | c.fresh | written],
        "q2": [~g | ~c.fresh | ~written],
    }


def victim_contract(ps: PageState, sh: PageShadow) -> dict[str, list]:
    """V-a - V-c of ``ps`` with its shadow: ``{"va": [...], "vb": [...], "vc": [...]}``."""
    P, v = ps.PAGES, ps.victim
    answer = ps.done & sh.vpend  # the VICTIM's done
    vp = v.page
    found = answer & ~ps.none
    zero = Value.cast(v) == 0
    named = [
        ~(found & (vp == p)) | (sh.live(p) & (sh.tab[p] == v.tab) & (sh.pos[p] == v.pos))
        for p in range(P)
    ]
    return {
        "va": [~found | (vp < P), *named],
        "vb": [~(answer & ps.none) | ~sh.live(p) for p in range(P)],
        "vc": [
            ~sh.took | (ps.done & ~ps.none & zero & ~sh.vpend),
            ~ps.done | sh.took | sh.vpend,
            ps.cmd.ready == ~(sh.vpend & ~ps.done),
            answer | (~ps.none & zero),
        ],
    }
