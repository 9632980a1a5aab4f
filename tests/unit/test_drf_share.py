"""drf's job share, with the dimensions that count picked once a session, is dominant_share's figure."""

from __future__ import annotations

import numpy as np
import pytest

from volsched.model.cluster import dominant_share
from volsched.plugins.drf import share_of


@pytest.mark.parametrize(
    ("amount", "total", "mask"),
    [
        pytest.param([0.0, 0.0, 0.0], [16.0, 64.0, 110.0], [True, True, False], id="nothing-held"),
        pytest.param([2.0, 8.0, 3.0], [16.0, 64.0, 110.0], [True, True, False], id="cpu-and-memory-tie"),
        pytest.param([1.0, 48.0, 3.0], [16.0, 64.0, 110.0], [True, True, False], id="memory-dominates"),
        pytest.param(
            [1.0, 1.0, 100.0], [16.0, 64.0, 110.0], [True, True, False], id="masked-dimension-ignored"
        ),
        pytest.param([5.0, 1.0, 0.0], [0.0, 64.0, 110.0], [True, True, False], id="empty-dimension-ignored"),
        pytest.param([3.0, 0.0, 0.0], [2.0, 64.0, 110.0], [True, True, True], id="over-the-total"),
        pytest.param([1.0], [0.0], [False], id="no-dimension-counts"),
    ],
)
def test_job_share_is_the_dominant_share(amount: list[float], total: list[float], mask: list[bool]) -> None:
    a, t, m = np.array(amount), np.array(total), np.array(mask)
    assert share_of(t, m)(a) == dominant_share(a, t, m)
