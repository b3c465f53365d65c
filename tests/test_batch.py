"""golden.batch: batched decoding emits exactly what the one-sequence decoder emits."""

import numpy as np
import pytest

from golden import trees
from golden.batch import BatchLaneRNG, speculative_generate_batch
from golden.decoder import speculative_generate
from golden.models import SyntheticPair, TableModel, code_prompts, default_ngram_pair
from golden.rng import LaneRNG

SHAPES = {
    "root": [-1],
    "chain": trees.chain(5),
    "full": trees.full_tree([3, 2, 2]),
    "sequoia": trees.sequoia_tree([0.5, 0.2, 0.1], 24, 5)[0],
}


def test_batch_lanes_match_lane_rng() -> None:
    seeds = [0, 1, 2**64 - 1, 12345]
    b = BatchLaneRNG(seeds, 9)
    singles = [LaneRNG(s, 9) for s in seeds]
    for _ in range(4):
        out = b.next()
        for k, s in enumerate(singles):
            assert out[k].tolist() == s.next().tolist()


@pytest.mark.parametrize("mode", ["sample", "greedy"])
@pytest.mark.parametrize("arith", ["float", "fixed"])
@pytest.mark.parametrize("children", ["iid", "swor", "topk"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_batch_equals_single_ngram(shape: str, children: str, arith: str, mode: str) -> None:
    target, draft = default_ngram_pair()
    prompts = code_prompts(5, 40, seed=3)
    seeds = [7, 8, 9, 2**63, 11]
    kw = dict(tree=SHAPES[shape], children=children, arith=arith, mode=mode)
    batch = speculative_generate_batch(target, draft, prompts, 30, seeds=seeds, **kw)
    for b, r in enumerate(batch):
        single = speculative_generate(target, draft, prompts[b], 30, seed=seeds[b], **kw)
        assert r.tokens == single.tokens and r.accepted == single.accepted


def test_batch_equals_single_table_and_synthetic() -> None:
    t, d = TableModel.random(5, 1, concentration=0.5), TableModel.random(5, 2, concentration=0.5)
    kw = dict(tree=trees.full_tree([2, 2]), children="iid", arith="fixed")
    batch = speculative_generate_batch(t, d, [[0], [1], [2], []], 25, keep_steps=True, **kw)
    for b, r in enumerate(batch):
        single = speculative_generate(t, d, [[0], [1], [2], []][b], 25, seed=b, **kw)
        assert r.tokens == single.tokens
        assert [s.path for s in r.steps] == [s.path for s in single.steps]
    pair = SyntheticPair(4000, 0.7, seed=2)
    kw = dict(tree=trees.chain(4), children="swor", arith="float", max_steps=6)
    batch = speculative_generate_batch(pair.target, pair.draft, [[1, 2]] * 3, 10**6, **kw)
    for b, r in enumerate(batch):
        single = speculative_generate(pair.target, pair.draft, [1, 2], 10**6, seed=b, **kw)
        assert r.tokens == single.tokens and len(r.accepted) == 6


def test_batch_invalid() -> None:
    t, d = TableModel.random(3, 1), TableModel.random(3, 2)
    with pytest.raises(ValueError, match="prompts"):
        speculative_generate_batch(t, d, [], 3, tree=[-1])
    with pytest.raises(ValueError, match="seeds"):
        speculative_generate_batch(t, d, [[0]], 3, tree=[-1], seeds=[1, 2])
    with pytest.raises(ValueError, match="static"):
        speculative_generate_batch(t, d, [[0]], 3, tree=trees.Eagle2Tree(8, 3, 2))
    with pytest.raises(ValueError, match="pruned"):  # topk wider than the vocabulary
        speculative_generate_batch(t, d, [[0]], 3, tree=trees.star(5), children="topk")
    with pytest.raises(ValueError, match=r"parents\[1\]"):
        speculative_generate_batch(t, d, [[0]], 3, tree=[-1, 1])
    with pytest.raises(ValueError, match="children"):
        speculative_generate_batch(t, d, [[0]], 3, tree=[-1], children="x")
    assert np.all(
        [r.tokens == [] for r in speculative_generate_batch(t, d, [[0]] * 2, 0, tree=[-1])]
    )
