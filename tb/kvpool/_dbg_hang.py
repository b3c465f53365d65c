"""Throwaway: the small set's random run with a monitor of the pool's internal state."""
import cocotb
from cocotb.triggers import RisingEdge

from tb.kvpool.pool_run import random_traffic_run


def _v(dut, name):
    try:
        return int(getattr(dut, name).value)
    except Exception as exc:  # noqa: BLE001
        return f"?{exc.__class__.__name__}"


@cocotb.test()
async def hang(dut) -> None:
    async def mon():
        n = 0
        while True:
            await RisingEdge(dut.clk)
            n += 1
            if 425 <= n <= 470:
                names = ["op__valid", "op__ready", "q0__ready", "res_valid"]
                internal = ["op_state", "s2_valid", "inflight", "drain_r", "cutting_r", "pending_r", "drain_acc_r",
                            "cut_state", "cut_cur", "cut_len", "cut_chain", "op_idle",
                            "alloc__level" ]
                vals = {k: _v(dut, k) for k in names}
                for k in internal:
                    vals[k] = _v(dut, k)
                vals["level"] = _v(dut.alloc, "level") if hasattr(dut, "alloc") else "?"
                vals["ts_busy"] = _v(dut.ts, "busy") if hasattr(dut, "ts") else "?"
                dut._log.info("cyc %d %s", n, vals)
    cocotb.start_soon(mon())
    await random_traffic_run(dut, "none", 300, reset=False, cover=False)
