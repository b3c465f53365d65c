"""Area model: transistors to 5 nm-class mm², and the architecture article's budgets."""

__all__ = ["AREA", "BUDGETS", "BUDGET_MEMBERS", "area_mm2"]

#: area model: transistors / (density * utilisation)
AREA = {
    "node": "5 nm class (TSMC N5)",
    "density_mtr_per_mm2": 171.3,
    "density_source": "TSMC N5 peak logic density (WikiChip), a weighted NAND2 / scan "
    "flip-flop mix",
    "utilisation": 0.6,
    "utilisation_note": "placement utilisation of random logic after place and route "
    "(typically 0.5-0.7); whitespace, clock tree and wiring not otherwise counted",
}

#: the architecture article's area budgets (seeds/002_f73b50e79e2bb36e.txt)
BUDGETS = {
    "tree_manager": {
        "mm2": (5.0, 8.0),
        "what": "Token Tree Manager: FSM tree builder, HW RNG sampler, mask generator "
        "('~5-8 mm^2. Mostly control logic, small CAMs, and the RNG array')",
    },
    "kv_pool": {
        "mm2": (400.0, 800.0),
        "what": "Shared KV-Cache Pool: 2-4 GB banked SRAM with hardware page tables "
        "('2 GB of SRAM at 5nm is ~400 mm^2'; the SRAM alone fills the budget, the "
        "article gives the page-table logic no separate figure)",
    },
}

#: which blocks count towards which budget (the composition, when present, wins)
BUDGET_MEMBERS = {
    "tree_manager": ["tree_manager"],
    "kv_pool": ["kv_pool"],
}


def area_mm2(transistors: int) -> float:
    """Silicon area in mm² of ``transistors`` under :data:`AREA`'s assumptions."""
    return transistors / (AREA["density_mtr_per_mm2"] * 1e6 * AREA["utilisation"])
