"""Log-domain arithmetic shared by the mechanisms' float64 pmfs, the engines and the Rényi
conversions (the shared vocabulary: it imports nothing from rdpcalc)."""

from __future__ import annotations

import numpy as np


def logsumexp(a: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """log Σ exp(a) along ``axis``; −inf for an all −inf slice (a lean scipy.special.logsumexp)."""
    peak = np.max(a, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)
