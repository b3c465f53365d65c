"""The KV pool (``hw/kv_pool``) testbench: library, cocotb tests, pytest runner, soak."""
