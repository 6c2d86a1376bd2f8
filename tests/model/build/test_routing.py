"""The nearest-row rule scored in blocks of rows picks what one whole score matrix picks."""

from __future__ import annotations

import numpy as np
import pytest

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.build import routing
from ecpfs_viewer.model.build.routing import NodeTable, nearest


def _whole_matrix_pick(node: NodeTable, x: np.ndarray, use_dot: bool) -> np.ndarray:
    """The rule read straight from spec §3.6 on one whole matrix: squared differences, the last maximum wins."""
    d = x[:, None, :] - node.vectors[None, :, :]
    s = (x @ node.vectors.T) if use_dot else -(d * d).sum(axis=2)
    return s.shape[1] - 1 - np.argmax(s[:, ::-1], axis=1)


@pytest.mark.parametrize("use_dot", [False, True])
def test_blocks_of_rows_pick_the_same_rows_as_one_block(use_dot: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    reps = rng.integers(-3, 4, size=(40, 6)).astype(np.float64)
    reps[25] = reps[3]  # twins: the later one wins every tie
    x = np.concatenate([reps[rng.integers(0, 40, size=300)],  # on a representative: ties with its twin
                        rng.normal(0, 2, size=(701, 6))])
    node = NodeTable.from_rows(reps, np.arange(40))
    x_sq = np.einsum("ij,ij->i", x, x)
    with one_blas_thread():
        whole = nearest(node, x, x_sq, use_dot)
        monkeypatch.setattr(routing, "_BLOCK_SCORES", 40 * 7)
        monkeypatch.setattr(routing, "_MIN_PRODUCT", 1)
        blocked = nearest(node, x, x_sq, use_dot)
    assert np.array_equal(whole, blocked)
    assert np.array_equal(whole, _whole_matrix_pick(node, x, use_dot))
    assert 3 not in whole[:300]  # twin 3 never wins: 25 is the last maximum
