"""Stable orderings of small integer columns (partition numbers, key lengths).

``np.argsort(kind="stable")`` sorts int8 and int16 with a radix sort, several times faster
than the merge sort it uses for wider integers (19 against 4 ns per element for 10,000
partition numbers). A stable order depends only on how the values compare, so the values
are narrowed first whenever their range allows: the order is the same.
"""

from __future__ import annotations

import numpy as np


def stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")``, through a radix sort when the values fit int16."""
    if len(values):
        lo, hi = int(values.min()), int(values.max())
        if -128 <= lo and hi < 128:
            values = values.astype(np.int8)
        elif -32768 <= lo and hi < 32768:
            values = values.astype(np.int16)
    return np.argsort(values, kind="stable")
