"""The KV pool at scale's leaf blocks (``hw/kvpool``): shared helpers, cocotb tests and
pytest runners, one module per leaf."""
