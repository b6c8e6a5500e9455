"""The mpmath peer: pmf, convolution and divergence as plain mpmath loops at 30 digits."""

from __future__ import annotations

import mpmath

mpmath.mp.dps = 30


def rqm_pmf(c, delta, m, q, x) -> list:
    """Lemma 5.1 (eq. 2) case by case, as printed."""
    c, delta, q, x = (mpmath.mpf(v) for v in (c, delta, q, x))
    x_max = c + delta

    def level(i):
        return -x_max + 2 * i * x_max / (m - 1)

    j = int(mpmath.floor((x + x_max) * (m - 1) / (2 * x_max)))
    j = min(j, m - 2)
    out = []
    for i in range(m):
        if i <= j:
            inner = (1 - q) ** (m - j - 2) * (level(m - 1) - x) / (level(m - 1) - level(i)) + mpmath.fsum(
                q * (1 - q) ** (k - j - 1) * (level(k) - x) / (level(k) - level(i)) for k in range(j + 1, m - 1))
            out.append(((1 - q) ** j if i == 0 else q * (1 - q) ** (j - i)) * inner)
        else:
            inner = (1 - q) ** j * (x - level(0)) / (level(i) - level(0)) + mpmath.fsum(
                q * (1 - q) ** (j - k) * (x - level(k)) / (level(i) - level(k)) for k in range(1, j + 1))
            out.append(((1 - q) ** (m - j - 2) if i == m - 1 else q * (1 - q) ** (i - j - 1)) * inner)
    return out


def pbm_pmf(c, theta, trials, x) -> list:
    p = mpmath.mpf(1) / 2 + mpmath.mpf(theta) * mpmath.mpf(x) / mpmath.mpf(c)
    return [mpmath.binomial(trials, i) * p**i * (1 - p) ** (trials - i) for i in range(trials + 1)]


def convolve(a: list, b: list) -> list:
    out = [mpmath.mpf(0)] * (len(a) + len(b) - 1)
    for i, u in enumerate(a):
        for j, v in enumerate(b):
            out[i + j] += u * v
    return out


def renyi(p: list, q: list, alpha) -> mpmath.mpf:
    if alpha == mpmath.inf:
        return max(mpmath.log(u / v) for u, v in zip(p, q))
    if alpha == 1:
        return mpmath.fsum(u * mpmath.log(u / v) for u, v in zip(p, q))
    a = mpmath.mpf(alpha)
    return mpmath.log(mpmath.fsum(u**a * v ** (1 - a) for u, v in zip(p, q))) / (a - 1)


def divergence_at_k(plus: list, minus: list, n: int, k: int, alphas) -> list:
    """D_α both ways between A^{k+1} B^{n−1−k} and A^k B^{n−k}, building each sum client by client."""
    rest = [mpmath.mpf(1)]
    for _ in range(k):
        rest = convolve(rest, plus)
    for _ in range(n - 1 - k):
        rest = convolve(rest, minus)
    p, q = convolve(rest, plus), convolve(rest, minus)
    return [max(renyi(p, q, a), renyi(q, p, a)) for a in alphas]
