"""Deployments of speculative decoding: which device drafts, which verifies, what
a batch of users gets per second and per kilowatt.

Four deployments (:data:`DEPLOYMENTS`) of one target and draft model, each a
batch of ``batch`` users decoding chains of ``verified`` draft tokens of
which ``accepted`` are accepted per step (the extra token makes
``accepted + 1``):

``gpu_plain``
    The GPU alone, plain autoregressive decoding (:func:`ar_token_time`).
``gpu_spec``
    The GPU alone, speculative: the draft and the verification on the GPU, the
    acceptance in its software loop (:func:`step_time`).
``gpu_accel_draft``
    The target and its verification on the GPU, the draft on a separate draft
    accelerator (:class:`DraftDevice`) over a network link (:class:`Link`):
    ``draft (device) + link (drafted tokens) + verify (GPU) + the GPU's loop +
    link (accepted tokens)`` per step, nothing overlapped.
``specdecode``
    SpecDecode-1 alone (draft, verify and acceptance on the chip).

A point's power is the sum of its devices' board powers (the profiles'
``[power]``, the device's ``watts``): energy figures are at full board power,
hosts and network not counted. Which devices and models a comparison uses is
the caller's (:mod:`sim.dse.deploy`); this module only times.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sim.cycles import MAX_VOCAB
from sim.timing.phases import draft_time, verify_time
from sim.timing.profiles import Hardware, ModelSpec, Profile, check_number, check_step
from sim.timing.step import ar_token_time, step_time

__all__ = ["DEPLOYMENTS", "DeployPoint", "DraftDevice", "Link", "deploy_point"]

DEPLOYMENTS = ("gpu_plain", "gpu_spec", "gpu_accel_draft", "specdecode")
#: bytes of one token id on the link
TOKEN_BYTES = 4


@dataclass(frozen=True)
class DraftDevice:
    """A draft accelerator: the draft model's weights and every user's draft KV cache in
    its memory (a point that does not fit is refused).

    Attributes
    ----------
    name, source : str
        The device and where its figures come from.
    mem_bw : float
        Bandwidth of the memory holding the draft's weights and KV (B/s).
    mem_bytes : float
        That memory's capacity (B): the draft's weights must fit.
    flops_8, flops_16 : float
        Dense FLOP/s at 8-bit and 16-bit weights.
    pass_overhead_us : float
        Per forward pass beyond its memory stream.
    watts : float
        Board power of the whole device (every card it spans).
    """

    name: str
    source: str
    mem_bw: float
    mem_bytes: float
    flops_8: float
    flops_16: float
    pass_overhead_us: float
    watts: float

    def __post_init__(self) -> None:
        for f in ("mem_bw", "mem_bytes", "flops_8", "flops_16", "watts", "pass_overhead_us"):
            check_number(f"device.{f}", getattr(self, f), zero_ok=f == "pass_overhead_us")


@dataclass(frozen=True)
class Link:
    """The network between the draft device and the GPU.

    Attributes
    ----------
    latency_us : float
        One message, end to end (software included).
    bandwidth : float
        Bytes per second.
    source : str
        Where the figures come from.
    """

    latency_us: float
    bandwidth: float
    source: str

    def __post_init__(self) -> None:
        check_number("link.latency_us", self.latency_us, zero_ok=True)
        check_number("link.bandwidth", self.bandwidth)

    def transfer_us(self, nbytes: float) -> float:
        """One message of ``nbytes``."""
        return self.latency_us + nbytes / self.bandwidth * 1e6


@dataclass(frozen=True)
class DeployPoint:
    """One deployment at one batch size and chain length.

    Attributes
    ----------
    deployment : str
    batch, verified, accepted : int
        Users per GPU, draft tokens verified and accepted per step.
    step_us : float
        A step of the whole batch.
    tokens_per_step : float
        Per user.
    watts : float
        The deployment's board power.
    phases : dict of str to float
        The step's parts (us).
    gpus : int
        GPUs sharing the draft device (``gpu_accel_draft``; 1 otherwise).
    """

    deployment: str
    batch: int
    verified: int
    accepted: int
    step_us: float
    tokens_per_step: float
    watts: float
    phases: dict
    gpus: int = 1

    @property
    def tokens_per_s_user(self) -> float:
        """A user's tokens per second (interactivity)."""
        return self.tokens_per_step / self.step_us * 1e6

    @property
    def tokens_per_s(self) -> float:
        """Every user's tokens per second (``gpus * batch`` users)."""
        return self.gpus * self.batch * self.tokens_per_s_user

    @property
    def tokens_per_s_per_kw(self) -> float:
        """Throughput per kilowatt of board power."""
        return self.tokens_per_s / (self.watts / 1000.0)


def _on_device(gpu: Profile, dev: DraftDevice) -> Profile:
    """``gpu`` with the draft device's memory and compute (the draft runs there)."""
    hw: Hardware = replace(
        gpu.hardware,
        hbm_bw=dev.mem_bw,
        hbm_bytes=dev.mem_bytes,
        tensor_flops_8=dev.flops_8,
        tensor_flops_16=dev.flops_16,
        pass_overhead_us=dev.pass_overhead_us,
    )
    return replace(gpu, hardware=hw)


def _split_step(
    gpu: Profile,
    dev: DraftDevice,
    link: Link,
    batch: int,
    verified: int,
    accepted: int,
    ctx: int,
    gpus: int,
) -> tuple[float, dict]:
    """``gpu_accel_draft``: the step (us) and its parts; the device drafts for the
    ``gpus * batch`` users of ``gpus`` GPUs, each GPU verifies its ``batch`` over its
    own link."""  # fmt: skip
    users = gpus * batch
    need = gpu.draft.weight_bytes + users * (ctx + verified) * gpu.draft.kv_bytes_per_token
    if need > dev.mem_bytes:
        raise ValueError(
            f"device.mem_bytes = {dev.mem_bytes:g}: the draft's weights and the KV cache of "
            f"{users} users ({need / 1e9:.2f} GB) do not fit"
        )
    d = draft_time(
        _on_device(gpu, dev), draft_evals=verified, passes=verified, context_len=ctx,
        batch=gpus * batch,
    )  # fmt: skip
    v = verify_time(gpu, tree_nodes=verified + 1, tree_depth=verified, context_len=ctx, batch=batch)
    to_gpu = link.transfer_us(batch * verified * TOKEN_BYTES)
    back = link.transfer_us(batch * (accepted + 1) * TOKEN_BYTES)
    parts = {
        "draft": d.total_us,
        "link": to_gpu + back,
        "verify": v.total_us,
        "accept": gpu.hardware.cpu_round_trip_us,
    }
    return sum(parts.values()), parts


def deploy_point(
    deployment: str,
    *,
    gpu: Profile,
    spec: Profile | None = None,
    device: DraftDevice | None = None,
    link: Link | None = None,
    draft: ModelSpec | None = None,
    batch: int = 1,
    verified: int = 5,
    accepted: int = 4,
    context_len: int = 2048,
    gpus: int = 1,
) -> DeployPoint:
    """Time ``deployment`` (:data:`DEPLOYMENTS`) at one batch size and chain length.

    Parameters
    ----------
    gpu : Profile
        The GPU and its target (a ``kind = "gpu"`` profile, calibrated or not).
    spec : Profile or None
        SpecDecode-1 (``specdecode``; its target replaced by ``gpu``'s).
    device, link : DraftDevice, Link or None
        The draft accelerator and its link (``gpu_accel_draft``).
    draft : ModelSpec or None
        The draft model of every speculative deployment (``None``: ``gpu``'s).
    batch, verified, accepted, context_len : int
        Users per GPU, draft tokens verified per step (a chain), accepted per step,
        context.
    gpus : int
        ``gpu_accel_draft``: GPUs (each with ``batch`` users) sharing the device,
        ``1 .. 64``.

    Raises
    ------
    ValueError
        An unknown deployment, a missing device, link or SpecDecode-1 profile, or
        quantities the profiles refuse (naming them).
    """
    if deployment not in DEPLOYMENTS:
        raise ValueError(f"deployment = {deployment!r}: must be one of {', '.join(DEPLOYMENTS)}")
    g = gpu if draft is None else replace(gpu, draft=draft)
    if deployment == "gpu_plain":
        ar = ar_token_time(g, context_len=context_len, batch=batch)
        return DeployPoint(
            deployment, batch, 0, 0, ar.total_us, 1.0, _watts(g), {"verify": ar.total_us}
        )
    chain = {"tree_nodes": verified + 1, "tree_depth": verified, "accepted": accepted}
    if deployment == "gpu_spec":
        st = step_time(g, **chain, context_len=context_len, batch=batch)
        parts = {"draft": st.draft_us, "verify": st.verify_us, "accept": st.accept_us}
        return DeployPoint(
            deployment, batch, verified, accepted, st.total_us, accepted + 1.0, _watts(g), parts
        )
    if deployment == "specdecode":
        if spec is None:
            raise ValueError("spec = None: the specdecode deployment needs SpecDecode-1's profile")
        if g.target.vocab > MAX_VOCAB:
            raise ValueError(
                f"target.vocab = {g.target.vocab}: SpecDecode-1 samples at most {MAX_VOCAB} "
                f"tokens (SPEC §5, TOKEN_BITS 17)"
            )
        s = replace(spec, target=g.target, draft=g.draft)
        st = step_time(s, **chain, context_len=context_len, batch=batch, overlap="prefetch")
        parts = {"draft": st.draft_us, "tree": st.tree_us, "verify": st.verify_us}
        parts["accept"] = st.accept_us
        return DeployPoint(
            deployment, batch, verified, accepted, st.total_us, accepted + 1.0, _watts(s), parts
        )
    if device is None or link is None:
        raise ValueError("device, link: gpu_accel_draft needs both")
    check_step(g, verified + 1, verified, accepted, context_len, verified, "none", batch=batch)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= 64:
        raise ValueError(f"gpus = {gpus!r}: must be an integer in 1..64")
    step, parts = _split_step(g, device, link, batch, verified, accepted, context_len, gpus)
    watts = gpus * _watts(g) + device.watts
    return DeployPoint(
        deployment, batch, verified, accepted, step, accepted + 1.0, watts, parts, gpus
    )


def _watts(p: Profile) -> float:
    if p.power is None:
        raise ValueError(f"profile {p.name!r}: no [power] section, so no energy figure")
    return p.power.watts
