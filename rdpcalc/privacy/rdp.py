"""Accounting for a whole training run: coordinates, rounds, client sampling, (ε, δ).

Everything works on Rényi curves: ε(α) on a grid of orders. A run is accounted as

1. the per-coordinate curve of one round, from the exact divergences (the worst case over
   neighbouring inputs, replace-one: one client's input changes), for what the observer sees
   (``OBSERVERS``): the SecAgg sum of the n sampled clients (``server``, ``release``) or one
   client's message (``local``);
2. composed over the d coordinates, which all come from the same sampled clients (so
   composition comes before amplification);
3. only where the sample is hidden from the observer (``release``): amplified by client
   sampling at rate γ without replacement (Wang, Balle & Kasiviswanathan 2019, Thm 9, for the
   replace-one relation; valid for any mechanism given its curve at integer orders). Poisson
   sampling amplifies add/remove neighbours (Zhu & Wang 2019, Thm 6), so for these
   replace-one curves it is refused; the reference Gaussian, whose curve is add/remove, keeps
   the exact Poisson-subsampled bound (Mironov, Talwar & Zhang 2019);
4. composed over the rounds: all T rounds when the sample is hidden; when it is known
   (``server``, ``local``), over the rounds the client takes part in (``participation``, by
   default all T, the worst case);
5. converted to (ε, δ) with Canonne, Kamath & Steinke (2020, Prop. 12), minimised over α.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..logdomain import logsumexp
from ..params import Param

#: orders used for unamplified curves: fine near 1, up to 10⁴
ORDERS = np.array(sorted({1 + x / 20 for x in range(1, 20)} | set(range(2, 65)) |
                         {72, 80, 96, 128, 160, 192, 256, 384, 512, 1024, 2048, 4096, 10_000}), dtype=float)
#: orders used for amplified curves (the bounds hold at integer orders)
INTEGER_ORDERS = np.arange(2, 257, dtype=float)
#: orders for the subsampled Gaussian: fine fractional steps below 11, then integers to 256
GAUSSIAN_ORDERS = np.concatenate([1 + np.arange(1, 20) / 20, 2 + np.arange(0, 90) / 10, np.arange(11, 257)])
#: every finite order of the curves here: dp-accounting's events are evaluated at these
#: (:func:`dp_accounting_curve`), so that their curves share every order of the curves here (a set, not
#: np.union1d, which imports numpy.ma: start-up time)
SHARED_ORDERS = np.array(sorted({*ORDERS.tolist(), *GAUSSIAN_ORDERS.tolist(), *INTEGER_ORDERS.tolist()}))
SAMPLING = ("poisson", "without-replacement")
#: who sees what (see the module docstring); the sample is hidden only from ``release``
OBSERVERS = ("server", "release", "local")
#: how the n clients of a round are drawn, and who sees what, declared once
SAMPLING_SCHEME = Param("sampling", "choice", "How the n clients of a round are drawn (poisson: each at rate n/CLIENTS, "
                        "with --relation add-remove).", default="without-replacement", choices=SAMPLING)
OBSERVER = Param("observer", "choice", "Who sees what. server: the SecAgg sum, knowing who was sampled; release: the "
                 "released sum, the sample hidden (amplification by sampling); local: each message.", default="server",
                 choices=OBSERVERS)
OBSERVER_TEXT = {
    "server": "server: sees the SecAgg sum of the n sampled clients and knows who was sampled (no amplification)",
    "release": "release: a third party sees the released sum; the sample is hidden (amplification by sampling)",
    "local": "local: sees each sampled client's message and knows who was sampled (no amplification)",
}


@dataclass(frozen=True)
class RdpCurve:
    """ε(α) at each order (floats; +inf allowed)."""

    orders: np.ndarray
    values: np.ndarray

    def scaled(self, factor: float) -> RdpCurve:
        """Composition of ``factor`` ≥ 1 copies: the curve times ``factor``."""
        return RdpCurve(self.orders, self.values * factor)

    def at(self, alpha: float) -> float:
        index = np.nonzero(self.orders == alpha)[0]
        if len(index) == 0:
            raise KeyError(alpha)
        return float(self.values[index[0]])


#: the chords of :func:`convex_tightened` are raised by this relative amount: their three
#: floating-point operations (a difference, a ratio, a product) round by at most 2⁻⁵³ each
CHORD_ROUNDING = 8 * 2.0**-53


def convex_tightened(curve: RdpCurve) -> RdpCurve:
    """The tightest curve that convexity and monotonicity in α imply from ``curve``, itself an
    upper bound U at each of its orders on W(α) = the largest D_α(P‖Q) over a family of pairs
    (the worst case over neighbouring inputs, of one client or of a SecAgg sum).

    *Proof.* (1) K(α) = (α − 1)·W(α) is convex on (1, ∞): for each pair, (α − 1)·D_α(P‖Q) =
    log Σ P^α Q^(1−α) is a log-sum-exp of functions affine in α, hence convex, and a maximum
    of convex functions is convex. For α₁ < α < α₂ with finite bounds U₁, U₂ at α₁ and α₂,
    write α = (1 − t)α₁ + tα₂: K(α) ≤ (1 − t)K(α₁) + tK(α₂) ≤ (1 − t)(α₁ − 1)U₁ + t(α₂ − 1)U₂.
    The smallest of these chords over all such pairs of orders is the lower convex hull of the
    points (αᵢ, (αᵢ − 1)Uᵢ), evaluated at α and divided by α − 1; each chord value is raised by
    CHORD_ROUNDING for its rounding. (2) W is non-decreasing in α (so is D_α for each pair):
    W(α) ≤ U at every order at or above α, ∞ included. Each value is the smallest of its own
    and these; orders with U = +∞, α = 1 and α = ∞ take part in (2) only."""
    orders = np.asarray(curve.orders, dtype=float)
    values = np.array(curve.values, dtype=float)
    points = sorted((a, (a - 1) * u) for a, u in zip(orders, values) if 1 < a < math.inf and math.isfinite(u))
    hull: list[tuple[float, float]] = []
    for point in points:  # Andrew's monotone chain, lower half
        while len(hull) >= 2 and _not_below(hull[-2], hull[-1], point):
            hull.pop()
        hull.append(point)
    xs = np.array([a for a, _ in hull])
    for index, alpha in enumerate(orders):
        if len(hull) < 2 or not xs[0] < alpha < xs[-1]:
            continue
        right = int(np.searchsorted(xs, alpha))
        (a1, k1), (a2, k2) = hull[right - 1], hull[right]
        if alpha < a2:  # (a vertex keeps its own value)
            chord = (k1 + (alpha - a1) / (a2 - a1) * (k2 - k1)) * (1 + CHORD_ROUNDING)
            values[index] = min(values[index], chord / (alpha - 1))
    order = np.argsort(orders, kind="stable")
    values[order] = np.minimum.accumulate(values[order][::-1])[::-1]
    return RdpCurve(orders, values)


def _not_below(first: tuple[float, float], middle: tuple[float, float], last: tuple[float, float]) -> bool:
    """Whether ``middle`` lies on or above the segment from ``first`` to ``last`` (it is then no
    vertex of the lower convex hull)."""
    (x1, y1), (x2, y2), (x3, y3) = first, middle, last
    return (x2 - x1) * (y3 - y1) - (y2 - y1) * (x3 - x1) <= 0


def gaussian_curve(sigma: float, sensitivity: float = 1.0, orders=ORDERS) -> RdpCurve:
    """α Δ² / (2σ²) (Mironov 2017)."""
    orders = np.asarray(orders, dtype=float)
    ratio = sensitivity / sigma  # not Δ² and σ² apart: 1e300² overflows, 1e−300² underflows
    return RdpCurve(orders, orders * ratio * ratio / 2)


def laplace_curve(scale: float, sensitivity: float = 1.0, orders=ORDERS) -> RdpCurve:
    """Laplace mechanism, scale b, sensitivity Δ, t = Δ/b (Mironov 2017, Prop. 6):
    1/(α−1) log[α/(2α−1) e^{(α−1)t} + (α−1)/(2α−1) e^{−αt}]; KL = t + e^{−t} − 1."""
    orders = np.asarray(orders, dtype=float)
    t = sensitivity / scale
    values = []
    for a in orders:
        if a == 1:
            values.append(t + math.exp(-t) - 1)
            continue
        log_terms = [math.log(a / (2 * a - 1)) + (a - 1) * t, math.log((a - 1) / (2 * a - 1)) - a * t]
        values.append(float(logsumexp(np.array(log_terms))) / (a - 1))
    return RdpCurve(orders, np.array(values))


def subsampled_gaussian_curve(sigma: float, rate: float, orders=None) -> RdpCurve:
    """Poisson-subsampled Gaussian mechanism, sensitivity 1 (Mironov, Talwar & Zhang 2019):
    ε(α) = log(A_α)/(α−1), A_α = E_{z∼N(0,σ²)}[((1−γ) + γ e^{(2z−1)/(2σ²)})^α].

    Integer α: the binomial sum Σ_k C(α,k)(1−γ)^{α−k}γ^k e^{(k²−k)/(2σ²)}; fractional α:
    the expectation by numerical integration. Default orders: :data:`GAUSSIAN_ORDERS`."""
    if orders is None:
        orders = GAUSSIAN_ORDERS
    orders = np.asarray(orders, dtype=float)
    values = []
    for a in orders:
        if a == int(a):
            k = np.arange(int(a) + 1)
            log_terms = (_log_binomial(int(a), k) + (a - k) * _log1m(rate) + k * _log(rate)
                         + (k * k - k) / (2 * sigma**2))
            values.append(float(logsumexp(log_terms)) / (a - 1))
        else:
            values.append(_log_sampled_gaussian_moment(sigma, rate, a) / (a - 1))
    return RdpCurve(orders, np.array(values))


def _log_sampled_gaussian_moment(sigma: float, rate: float, alpha: float) -> float:
    """log A_α by quadrature of the expectation: log f(z) = log φ_σ(z) + α log((1−γ) + γ e^{(2z−1)/(2σ²)})
    is integrated as exp(log f − max log f) over both of its bumps (scipy.integrate.quad)."""
    from scipy import integrate, optimize  # scipy: start-up time

    def log_f(z: float) -> float:
        mixture = np.logaddexp(math.log1p(-rate), math.log(rate) + (2 * z - 1) / (2 * sigma**2))
        return -z * z / (2 * sigma**2) - math.log(sigma * math.sqrt(2 * math.pi)) + alpha * mixture

    # two bumps of width σ: the N(0, σ²) bulk near 0 and the shifted component's near z = α;
    # the mass between them is negligible when they are apart, so integrate over the (merged)
    # windows c ± 14σ, split at the bumps and at the mixture's switch z = ½ + σ² ln((1−γ)/γ)
    peak = optimize.minimize_scalar(lambda z: -log_f(z), bracket=(-1.0, alpha + 1)).x
    switch = 0.5 + sigma**2 * math.log((1 - rate) / rate)
    top = max(log_f(peak), log_f(alpha), log_f(0.0))
    windows = sorted((c - 14 * sigma, c + 14 * sigma) for c in (0.0, peak, alpha))
    merged = [list(windows[0])]
    for low, high in windows[1:]:
        if low <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    value = 0.0
    with warnings.catch_warnings():
        # log f is a difference of numbers up to ~α/σ², so at small σ it carries ~1e-12 relative
        # roundoff that quad reports as "bad integrand behaviour"; the tests check the result
        # against 40-digit mpmath quadrature there
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        for low, high in merged:
            cuts = sorted({low, high, *(c for c in (0.0, peak, alpha, switch) if low < c < high)})
            value += sum(integrate.quad(lambda z: math.exp(log_f(z) - top), a, b, epsabs=1e-15 * sigma, epsrel=1e-10,
                                        limit=200)[0] for a, b in zip(cuts, cuts[1:]))
    return top + math.log(value)


def dp_accounting_curve(event, count: int) -> RdpCurve:
    """The Rényi curve of ``count`` ≥ 1 uses of a dp-accounting event (``dp_accounting.DpEvent``)
    at :data:`SHARED_ORDERS`, as dp-accounting's own ``RdpAccountant`` composes it (its neighbouring
    relation, by default add/remove): ε(α) = count · ε_event(α), +∞ throughout for a
    ``NonPrivateDpEvent``. :class:`ParameterError` naming ``event`` where the accountant's
    ``supports(event)`` is False (anything that is not a dp-accounting event included)."""
    from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant  # dp-accounting: start-up time

    accountant = RdpAccountant(orders=SHARED_ORDERS.tolist())
    if not accountant.supports(event):
        raise ParameterError("event", f"must be an rdpcalc event or a dp-accounting event that dp-accounting's RdpAccountant "
                                  f"supports (method rdp), got {event!r}")
    accountant.compose(event, count)
    return RdpCurve(accountant.orders.astype(float), accountant.rdp)


def amplify(curve: RdpCurve, rate: float, sampling: str, orders=INTEGER_ORDERS) -> RdpCurve:
    """The curve of the mechanism run on a random subsample: the amplification bound at the
    integer ``orders``, and the curve itself at its other orders (see below).

    ``curve`` must contain every integer order 2 … max(orders) (and ∞ for without-replacement
    sampling: its value at the largest order is used if ∞ is absent). Rate 1 is no sampling.
    The result never exceeds the curve itself: the subsampled pair of output laws is a mixture,
    with weights that do not depend on the neighbouring record, of pairs of the mechanism's
    laws on neighbouring or equal datasets, so by joint convexity its divergence is at most the
    largest of theirs (the bounds above can exceed it when the curve is large).
    """
    if rate == 1:
        return curve
    base = {int(a): float(v) for a, v in zip(curve.orders, curve.values) if math.isfinite(a) and a == int(a) and a >= 2}
    needed = int(max(orders))
    missing = [j for j in range(2, needed + 1) if j not in base]
    if missing:
        raise ValueError(f"amplification needs the curve at every integer order up to {needed}; missing {missing[:3]}")
    eps_inf = float(curve.values[curve.orders == math.inf][0]) if math.inf in curve.orders else math.inf
    values = []
    poisson = SAMPLING_SCHEME.convert(sampling) == "poisson"
    for a in np.asarray(orders, dtype=int):
        values.append(_zhu_wang(base, a, rate) if poisson else _wang_balle_kasiviswanathan(base, a, rate, eps_inf))
    amplified = dict(zip(np.asarray(orders, dtype=float), np.minimum(values, [base[int(a)] for a in orders])))
    every = np.array(sorted(set(amplified) | set(curve.orders.tolist())))
    return RdpCurve(every, np.array([amplified[a] if a in amplified else curve.at(a) for a in every]))


def _zhu_wang(base: dict[int, float], a: int, rate: float) -> float:
    """Zhu & Wang 2019, Thm 6 (Poisson subsampling), integer α ≥ 2:
    1/(α−1) log[(1−γ)^{α−1}(αγ−γ+1) + C(α,2)γ²(1−γ)^{α−2} e^{ε(2)}
                + 3 Σ_{j=3}^{α} C(α,j) γ^j (1−γ)^{α−j} e^{(j−1)ε(j)}]."""
    terms = [(a - 1) * _log1m(rate) + math.log1p(a * rate - rate),
             float(_log_binomial(a, 2)) + 2 * _log(rate) + (a - 2) * _log1m(rate) + base[2]]
    for j in range(3, a + 1):
        terms.append(math.log(3) + float(_log_binomial(a, j)) + j * _log(rate) + (a - j) * _log1m(rate)
                     + (j - 1) * base[j])
    return float(logsumexp(np.array(terms))) / (a - 1)


def _wang_balle_kasiviswanathan(base: dict[int, float], a: int, rate: float, eps_inf: float) -> float:
    """Wang, Balle & Kasiviswanathan 2019, Thm 9 (sampling without replacement, replace-one):
    1/(α−1) log(1 + γ² C(α,2) min{4(e^{ε(2)}−1), e^{ε(2)} min{2, (e^{ε(∞)}−1)²}}
                  + Σ_{j=3}^{α} γ^j C(α,j) e^{(j−1)ε(j)} min{2, (e^{ε(∞)}−1)^j})."""
    log_inf_term = _log_expm1(eps_inf)  # log(e^{ε(∞)} − 1)
    second = min(math.log(4) + _log_expm1(base[2]), base[2] + min(math.log(2), 2 * log_inf_term))
    terms = [0.0, 2 * _log(rate) + float(_log_binomial(a, 2)) + second]
    for j in range(3, a + 1):
        terms.append(j * _log(rate) + float(_log_binomial(a, j)) + (j - 1) * base[j] + min(math.log(2), j * log_inf_term))
    return float(logsumexp(np.array(terms))) / (a - 1)


def epsilon(curve: RdpCurve, delta: float) -> tuple[float, float | None]:
    """(ε, α*) for (ε, δ)-DP: min over α of ε(α) + log((α−1)/α) − (log δ + log α)/(α−1)
    (Canonne, Kamath & Steinke 2020, Prop. 12); (+inf, None) if every order is infinite."""
    best, order = math.inf, None
    for a, value in zip(curve.orders, curve.values):
        if a <= 1 or not math.isfinite(a) or not math.isfinite(value):
            continue
        eps = value + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)
        if eps < best:
            best, order = max(eps, 0.0), a
    return best, order


def delta_at(curve: RdpCurve, eps: float) -> tuple[float, float | None]:
    """(δ, α*) at a given ε: min over α of exp((α−1)(ε(α) − ε)) (1 − 1/α)^α / (α − 1)
    (the same conversion, solved for δ), capped at 1 (α* None when no order is finite)."""
    best, order = math.inf, None
    for a, value in zip(curve.orders, curve.values):
        if a <= 1 or not math.isfinite(a) or not math.isfinite(value):
            continue
        log_delta = (a - 1) * (value - eps) + a * math.log1p(-1 / a) - math.log(a - 1)
        if log_delta < best:
            best, order = log_delta, a
    return (math.exp(min(best, 0.0)) if math.isfinite(best) else 1.0), order  # exp of > 709 overflowed


def check_delta(delta: float, parameter: str = "dp_delta") -> float:
    """δ of (ε, δ) as a float, in the open interval (0, 1); ``parameter`` names it in the error."""
    if not (isinstance(delta, int | float) and 0 < delta < 1):
        raise ParameterError(parameter, f"must lie in the open interval (0, 1), got {delta!r}")
    return float(delta)


def solve_monotone(function: Callable[[float], float], lo: float, hi: float, target: float, log_scale: bool,
                   ends: tuple[float, float], rtol: float = 1e-6, evaluations: int = 60,
                   log_values: bool = False) -> float:
    """Solve function(x) = target on [lo, hi] for a monotone function whose values at the ends,
    ``ends``, straddle the target. Brent's method (Brent 1973, *Algorithms for Minimization
    without Derivatives*, ch. 4) on x (or log x), and on the values' logs with ``log_values``
    (for non-negative values that span decades, such as ε over a parameter's range: log ε is
    nearer linear in log x than ε): inverse quadratic interpolation through the last three
    points, or the secant through the last two, kept inside the bracket and taken only while
    it shrinks the bracket fast enough, else bisection (also where a value is not finite); a
    step is at least half the tolerance, so the bracket also closes from the far side. Stops
    when the bracket is ``rtol`` wide (relative) or after ``evaluations`` calls. Returns the end
    of the final bracket on the safe side, where function(x) ≤ target: one of the x the
    function was called at (or lo, hi)."""
    if log_values:
        return solve_monotone(lambda x: _log(function(x)), lo, hi, _log(target), log_scale,
                              (_log(ends[0]), _log(ends[1])), rtol, evaluations)

    def to_x(t: float) -> float:
        return math.exp(t) if log_scale else t

    def to_t(x: float) -> float:
        return math.log(x) if log_scale else x

    def unsafe(value: float) -> bool:  # above the target, or NaN
        return not value <= 0

    # (t, f, x) of b, the latest point; a, the one before; c, b's partner across the target: the
    # bracket is [b, c] (x kept as called: the answer is one of them, exactly)
    a, b = (to_t(lo), ends[0] - target, lo), (to_t(hi), ends[1] - target, hi)
    c = a
    step = previous = b[0] - a[0]
    for evaluated in range(evaluations + 1):
        if unsafe(b[1]) == unsafe(c[1]):  # b crossed to c's side: a is the partner
            c = a
            step = previous = b[0] - c[0]
        if abs(c[1]) < abs(b[1]):  # b the better estimate
            a, b, c = b, c, b
        rtol_t = math.log1p(rtol) if log_scale else rtol * max(abs(b[0]), abs(c[0]))
        tolerance = max(rtol_t / 2, 4 * sys.float_info.epsilon * abs(b[0]))
        middle = (c[0] - b[0]) / 2
        if abs(middle) <= tolerance or b[1] == 0 or evaluated == evaluations:
            break
        step, previous = _brent_step(a, b, c, middle, tolerance, step, previous)
        t = b[0] + (step if abs(step) > tolerance else math.copysign(tolerance, middle))
        a, b = b, (t, function(to_x(t)) - target, to_x(t))
    return c[2] if unsafe(b[1]) else b[2]


def _brent_step(a: tuple, b: tuple, c: tuple, middle: float, tolerance: float, step: float,
                previous: float) -> tuple[float, float]:
    """Brent's step from b (and the step to remember as the one before it), points as (t, f, x):
    interpolation (inverse quadratic through a, b, c, or the secant through a and b where a is
    c) where it lands well inside the bracket and the steps shrink, else half the bracket."""
    (ta, fa, _), (tb, fb, _), (tc, fc, _) = a, b, c
    if abs(previous) < tolerance or not abs(fa) > abs(fb) or not all(map(math.isfinite, (fa, fb, fc))):
        return middle, middle
    s = fb / fa
    if ta == tc:
        p, q = 2 * middle * s, 1 - s
    else:
        q, r = fa / fc, fb / fc
        p = s * (2 * middle * q * (q - r) - (tb - ta) * (r - 1))
        q = (q - 1) * (r - 1) * (s - 1)
    if p > 0:
        q = -q
    p = abs(p)
    if 2 * p < min(3 * middle * q - abs(tolerance * q), abs(previous * q)):
        return p / q, step
    return middle, middle


def _log_expm1(x: float) -> float:
    """log(e^x − 1) without overflow (−inf at 0, +inf at +inf)."""
    if x <= 0:
        return -math.inf
    if x > 30:
        return x + math.log1p(-math.exp(-x))
    return math.log(math.expm1(x))


def _log(x: float) -> float:
    """log x: −∞ at 0, NaN kept."""
    return math.log(x) if x > 0 else x if math.isnan(x) else -math.inf


def _log1m(x: float) -> float:
    return math.log1p(-x) if x < 1 else -math.inf


def _log_binomial(n: int, k) -> np.ndarray:
    from scipy.special import gammaln  # imported here: the CLI starts without scipy

    k = np.asarray(k, dtype=float)
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
