# specdecode-rtl: every target sets up its own pinned .venv first.
#   make test    everything CI runs (lint + golden tests + testbenches): every block's smallest
#                parameter sets that reach every code path, quick operation counts
#   make sim     the cocotb testbenches of make test (Verilator)
#   make test-timed  make test, measured (wall, CPU, counts) -> build/reports/make_test.json
#   make sim-full  make test's checks with more parameter sets and operations (SIM_FULL=1):
#                also the tests marked `full` (skipped elsewhere: N_NODES = 16 / 64, LANES = 4,
#                the KV pool's defaults and power-of-two sets, two formal configurations) and
#                the full operation counts (KV pool: 100,000 per set); docs/decisions/0012
#   make golden  golden-model demo (chain / Sequoia / EAGLE-2 on code text)
#   make bench   golden-model and chip-model throughput -> build/reports/{golden,chip}_bench.json
#   make chip    behavioural chip demo (python -m sim): text, phase times, projections, PNGs
#   make perf    timing model (python -m sim.timing): article vs roofline views, projections, timeline PNGs
#   make verilog Verilog of every block -> build/verilog/ (NAME=VALUE overrides), lint-checked
#   make soak    KV pools: 1,000,000 random operations each against golden (not in make test), split
#                into shards run on the executor, one simulator run and seed each (tb/soak_shards.py;
#                SIM_SEED: the base seed, which repeats or resumes a soak)
#   make dp-growth  topology optimiser: the DP re-solve on Verilator at M = 64 .. 1,024 (N_MAX = 1024,
#                D = 8, K = 8) against its formula and bound -> build/reports/dp_growth.json
#                (not in make test)
#   make formal  KV pool: SymbiYosys proofs of the SPEC §4.3 invariants (flat pool; the scaled
#                pool's at a reduced size: formal.kvpool)
#   make synth       generic Yosys: cells, transistors, 5 nm area, logic depth -> build/reports/synth.{json,md}
#   make synth-fpga  ECP5 85k place and route: LUT4/FF/carry/DSP/BRAM, Fmax (slow; SYNTH_JOBS workers;
#                    SEEDS=1,2,3: one place and route per seed, median Fmax)
#   make synth-kvpool the scaled KV pool (hw.kvpool): generic Yosys with memories as SRAM macros (pool,
#                    each leaf at the defaults, memory bits, N5 SRAM area), ECP5 at a reduced size
#                    -> build/reports/kvpool_synth.{json,md} (long; cached under build/synth/kvpool/)
#   make synth-sweep generic metrics over N_NODES / LANES / ENTRIES=PAGES, PNGs and fitted growth
#   make synth-tree  the tree blocks at 64, 256 and 1,024 nodes, memories as SRAM macros (cells, depth,
#                    logic and SRAM area; the tree manager against the article's 5-8 mm^2)
#                    -> build/reports/synth_tree.{json,md} (long; cached under build/synth/kvpool/)
#   make dse     the chip model's design-space grid (profile, tree policy and budget, select lanes,
#                pool, TLB, context) on the executor, joined with the measured area: tokens/s vs
#                mm^2 (Pareto front), vs context per pool, acceptance per policy -> build/reports/dse.*
#                (GRID=FILE; SCHEDULER=tcp://HOST:PORT runs this and the synth targets on a cluster);
#                then the deployments (sim/dse/deploy.toml): GPU alone, GPU + draft accelerator,
#                SpecDecode-1, tokens/s per kW vs per user over batch sizes -> build/reports/deploy.*
#   make report  docs/results/: a page per report in build/reports, status.json, the README status table
#   make docs    Sphinx API reference of golden, hw, sim, flows -> build/docs/html (warnings are errors)
#   make lint    ruff

PYTHON ?= python3.11
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# pytest-xdist workers; CI machines have 2 cores.
JOBS   ?= auto
PYTEST := $(VPY) -m pytest -n $(JOBS)
# a producer's JSON report gets the checkout's commit, the date and the machine
REPORTS := build/reports
STAMP_REPORT := $(VPY) -m flows.report --stamp

.PHONY: all venv test test-timed lint sim sim-full dp-growth golden bench chip perf context figures verilog soak formal synth synth-fpga synth-kvpool synth-sweep synth-tree dse report docs clean distclean

all: test

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(VPY) -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	@touch $@

lint: $(STAMP)
	$(VPY) -m ruff check .

test: lint $(STAMP)
	$(PYTEST) tests tb

sim: $(STAMP)
	$(PYTEST) tb

sim-full: $(STAMP)
	SIM_FULL=1 $(PYTEST) tests tb

# the topology optimiser's re-solve measured up to 1,024 nodes (tb/topology_dp_growth.py; no
# per-cycle Python: about 33.5 M cycles at M = 1024), progress per M
dp-growth: $(STAMP)
	$(VPY) -m tb.topology_dp_growth
	$(STAMP_REPORT) $(REPORTS)/dp_growth.json

# make test measured (wall, CPU of the process tree, pytest's counts) -> build/reports/make_test.json
test-timed: $(STAMP)
	$(VPY) -m flows.testtime -- $(MAKE) --no-print-directory test

golden: $(STAMP)
	$(VPY) -m golden

bench: $(STAMP)
	$(VPY) -m golden.bench
	$(VPY) -m sim.bench
	$(VPY) -m golden.kvpool.bench
	$(STAMP_REPORT) $(REPORTS)/golden_bench.json $(REPORTS)/chip_bench.json $(REPORTS)/kvpool_bench.json

chip: $(STAMP)
	$(VPY) -m sim

perf: $(STAMP)
	$(VPY) -m sim.timing

# the real context in the scaled KV pool: tokens/s against 2K .. 128K tokens (~50 s on 2 cores);
# build/reports/context.json, build/plots/context.png, copied to docs/ (docs/context.md)
context: $(STAMP)
	$(VPY) -m sim.context --dpi 80
	cp build/plots/context.png docs/context.png

# the documented runs of flows/report/figures.py, and every figure the docs quote from them
figures: $(STAMP)
	$(VPY) -m flows.report.figures

soak: $(STAMP)
	$(VPY) -m tb.kv_pool.soak $(EXEC)
	$(STAMP_REPORT) $(REPORTS)/kv_soak.json
	$(VPY) -m tb.kvpool.soak $(EXEC)
	$(STAMP_REPORT) $(REPORTS)/kvpool_soak.json

# the flat pool's proofs, then the scaled pool's (formal.kvpool: BMC from reset and a
# k-induction attempt at a reduced size; its own report, a section of docs/results/formal.md),
# then its leaves' k-induction proofs (formal.kvpool_tlb: TLB coherence, formal.kvpool_alloc:
# page conservation, formal.kvpool_seg: segment chains, formal.kvpool_seg_derived: the
# segment table's derived registers, formal.kvpool_bt: the block table as the page table,
# formal.kvpool_ts: the tree slots' stream, formal.kvpool_ps: the page states' victims;
# rows of the same report), then the pool's side of the block table's, the segment table's,
# the TLB's and the page allocator's protocols on the whole pool (formal.kvpool_proto,
# decision 0026; formal.kvpool_segproto, decision 0031; formal.kvpool_tlbproto, decision
# 0027; formal.kvpool_allocproto, decision 0028), the page counters against the page
# table (formal.kvpool_counts, decision 0032), the pool's conservation of its pages and HBM
# slots (formal.kvpool_conserve, decision 0033), a share's counts of its source's exclusive
# positions (formal.kvpool_sharecount, decision 0034), a refused operation changes nothing
# (formal.kvpool_refuse, decision 0035), the pool keeps the page states' contract, V1 and V2
# proved (formal.kvpool_pslink, decisions 0036, 0037)
formal: $(STAMP)
	$(VPY) -m formal.kv_pool
	$(STAMP_REPORT) $(REPORTS)/formal.json
	$(VPY) -m formal.kvpool
	$(STAMP_REPORT) $(REPORTS)/formal_kvpool.json
	$(VPY) -m formal.kvpool_tlb
	$(VPY) -m formal.kvpool_alloc
	$(VPY) -m formal.kvpool_seg
	$(VPY) -m formal.kvpool_seg_derived
	$(VPY) -m formal.kvpool_bt
	$(VPY) -m formal.kvpool_ts
	$(VPY) -m formal.kvpool_ps
	$(VPY) -m formal.kvpool_proto
	$(VPY) -m formal.kvpool_segproto
	$(VPY) -m formal.kvpool_tlbproto
	$(VPY) -m formal.kvpool_allocproto
	$(VPY) -m formal.kvpool_counts
	$(VPY) -m formal.kvpool_conserve
	$(VPY) -m formal.kvpool_sharecount
	$(VPY) -m formal.kvpool_refuse
	$(VPY) -m formal.kvpool_pslink
	$(STAMP_REPORT) $(REPORTS)/formal_kvpool.json

# Yosys / nextpnr runs in parallel (each is single-threaded); results cached under build/synth/.
SYNTH_JOBS ?= 2
# the long jobs' executor (cluster/): a local Dask cluster of SYNTH_JOBS workers, or
# SCHEDULER=tcp://HOST:PORT for a running Dask scheduler (docs/flows.md)
SCHEDULER ?=
EXEC := $(if $(SCHEDULER),--scheduler $(SCHEDULER))

synth: $(STAMP)
	$(VPY) -m flows.synth --jobs $(SYNTH_JOBS) $(EXEC)
	$(STAMP_REPORT) $(REPORTS)/synth.json

synth-fpga: $(STAMP)
	$(VPY) -m flows.synth_fpga --jobs $(SYNTH_JOBS) $(EXEC) $(if $(SEEDS),--seeds $(SEEDS))
	$(STAMP_REPORT) $(REPORTS)/synth.json

# the scaled KV pool, not a block of flows.verilog.BLOCKS (yet): its own flow, one Yosys at a time
synth-kvpool: $(STAMP)
	$(VPY) -m flows.kvpool_synth
	$(STAMP_REPORT) $(REPORTS)/kvpool_synth.json

synth-tree: $(STAMP)
	$(VPY) -m flows.synth_tree --jobs $(SYNTH_JOBS) $(EXEC)
	$(STAMP_REPORT) $(REPORTS)/synth_tree.json

# the chip model's design-space grid (sim/dse/default.toml; GRID=sim/dse/large.toml for a
# cluster) on the executor -> build/reports/dse.{csv,json,md}, dse_*.png; first computed on 1
# and 2 local workers for the executor's speed-up (DSE_SPEEDUP= to skip); then the deployment
# comparison (sim/dse/deploy.toml, seconds: analytic) -> build/reports/deploy.{json,md,png}
GRID ?= sim/dse/default.toml
DSE_SPEEDUP ?= 1,2
dse: $(STAMP)
	$(VPY) -m sim.dse --grid $(GRID) --jobs $(SYNTH_JOBS) $(EXEC) $(if $(DSE_SPEEDUP),--speedup $(DSE_SPEEDUP))
	$(STAMP_REPORT) $(REPORTS)/dse.json
	$(VPY) -m sim.dse.deploy --out $(REPORTS)
	$(STAMP_REPORT) $(REPORTS)/deploy.json

synth-sweep: $(STAMP)
	$(VPY) -m flows.synth --sweep --jobs $(SYNTH_JOBS) $(EXEC)
	$(STAMP_REPORT) $(REPORTS)/synth.json

report: $(STAMP)
	$(VPY) -m flows.report

docs: $(STAMP)
	$(VPY) -m sphinx -W --keep-going -q -b html docs/api build/docs/html

# Variables given on the command line (make verilog N_NODES=256) are passed on as
# NAME=VALUE, but for this Makefile's own; flows.verilog checks them against the
# blocks' declared parameters (hw: each block's PARAMS).
MAKE_VARS := PYTHON JOBS SYNTH_JOBS SEEDS
HDL_ARGS = $(strip $(foreach v,$(filter-out $(MAKE_VARS),$(.VARIABLES)),$(if $(filter command line,$(origin $(v))),$(v)=$(value $(v)))))

verilog: $(STAMP)
	$(VPY) -m flows.verilog --lint $(HDL_ARGS)

clean:
	rm -rf build sim_build .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -not -path './.venv/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
