"""Design-space exploration of the chip model: a declarative grid (:mod:`sim.dse.grid`),
one chip-model run per point (:mod:`sim.dse.point`) on the project's executor
(:mod:`cluster.executor`), a table joined with the synthesis area
(:mod:`sim.dse.table`) and its figures (:mod:`sim.dse.plots`). ``python -m sim.dse``
(``make dse``)."""
