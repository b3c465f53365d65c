"""A transformer as the timing model sees it: the ``[target]`` / ``[draft]`` sections
of a profile (:mod:`sim.timing.profiles`), dense or a mixture of experts."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ModelSpec"]


@dataclass(frozen=True)
class ModelSpec:
    """A transformer (``[target]`` / ``[draft]``).

    ``weight_bytes = params * bytes_per_param``; a token costs ``params`` MACs in
    the matmuls (the 2N FLOPs/token rule, Kaplan et al. 2020) plus attention.

    A mixture of experts (``experts > 0``) has ``expert_params`` of its
    ``params`` in ``experts`` experts a layer at ``expert_bytes_per_param``,
    ``experts_per_token`` of them per token: a token multiplies by
    :attr:`active_params`, and a pass reads the experts its tokens route to
    (:meth:`streamed_bytes`). The four fields are optional (0: dense).
    """

    name: str
    params: float
    layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    bytes_per_param: float
    kv_bytes: float
    expert_params: float = 0.0
    experts: int = 0
    experts_per_token: int = 0
    expert_bytes_per_param: float = 0.0

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights (the experts' at their own precision)."""
        dense = self.params - self.expert_params
        return dense * self.bytes_per_param + self.expert_params * self.expert_bytes_per_param

    @property
    def active_params(self) -> float:
        """Parameters one token multiplies by (``params`` for a dense model)."""
        if not self.experts:
            return self.params
        return self.params - self.expert_params * (1.0 - self.experts_per_token / self.experts)

    def streamed_bytes(self, tokens: float) -> float:
        """Weight bytes a pass over ``tokens`` tokens reads: every dense weight, and
        the experts that at least one token routes to, with each token routing to
        ``experts_per_token`` of ``experts`` uniformly at random (expected value)."""
        if not self.experts:
            return self.weight_bytes
        dense = (self.params - self.expert_params) * self.bytes_per_param
        touched = 1.0 - (1.0 - self.experts_per_token / self.experts) ** max(tokens, 1.0)
        return dense + self.expert_params * self.expert_bytes_per_param * touched

    @property
    def kv_bytes_per_token(self) -> float:
        """K and V bytes of one token over all layers."""
        return 2.0 * self.layers * self.n_kv_heads * self.head_dim * self.kv_bytes

    def matmul_flops(self, tokens: float) -> float:
        """Weight-matmul FLOPs of ``tokens`` tokens (2 per active parameter)."""
        return 2.0 * self.active_params * tokens

    def attention_flops(self, tokens: float, span: float) -> float:
        """``QK^T`` and ``AV`` FLOPs of ``tokens`` queries over ``span`` keys each."""
        return 4.0 * self.layers * self.n_heads * self.head_dim * tokens * span
