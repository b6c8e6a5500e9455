"""Compiled kernels of the certified worst case (:mod:`rdpcalc.worstcase.certificate`): the sums of every
multiset of clients, built as a tree of short convolutions in the linear domain, and a
divergence bound evaluated at each leaf.

A multiset of ``e`` clients over ``t`` kinds is a non-decreasing sequence of kinds; each node of
the tree adds one client of a kind at least its parent's last, so each multiset is made once,
by one convolution with a pmf of ``m`` taps from its parent's row. The rows are pmfs (sums of
products of non-negative floats): each entry has a relative rounding error of at most
(number of products) · 2⁻⁵³, so no cancellation can occur; an entry below the smallest float
underflows to 0, which :func:`_log_f_terms` bounds (it never turns into a false +∞ or a
dropped term without a bound).

The module also holds the worst-case search's screen (:func:`screen_rows`): the plain
log Σ P^α Q^{1−α} of many long rows at once, a loop numpy runs as several passes over
temporaries of the rows' size.

The kernels are plain Python functions, compiled by numba the first time :func:`kernels` is
called (not at import: numba takes half a second to load, and the command line starts without
it); without numba they run as Python, the same code either way. The tests check them against
the fast engine's log-domain convolutions and divergences, which share no code with them.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import resources

#: the loops of these functions are compiled (each calls only the ones before it), and those of
#: PARALLEL with prange run in parallel
SERIAL = ("_power", "convolve_into", "_log_f_terms", "_combine", "_slot", "_leaf", "_space", "_width",
          "_mirror_skipped", "_mirror_closed", "_keep", "_below_larger", "_covering", "_at_most", "_record", "_subtree",
          "_times_power")
PARALLEL = ("_leaf_bounds", "_screen_rows")
prange = range  # numba.prange once compiled
#: the most memory the rows of one block of parallel tasks take (:func:`_leaf_bounds`)
TABLE_BYTES = 32 * 2**20
_compiled = False
#: :func:`_leaf_bounds`' ``prune`` without tables: no leaf skipped, none recorded
NO_PRUNING = (np.zeros((0, 0)), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros((0, 0)), 1)


def kernels():
    """This module with its kernels compiled by numba (once per process; from numba's on-disk
    cache after the first run), or as Python where numba is missing."""
    global _compiled, prange
    if not _compiled:
        try:
            import numba  # imported here, not at start-up (half a second)
        except ImportError:  # pragma: no cover - numba is a dependency; the Python path is the same code
            pass
        else:
            prange = numba.prange
            for name in SERIAL:
                globals()[name] = numba.njit(cache=True, nogil=True, error_model="numpy")(globals()[name])
            for name in PARALLEL:
                globals()[name] = numba.njit(cache=True, nogil=True, parallel=True, error_model="numpy")(globals()[name])
        _compiled = True
    return sys.modules[__name__]


#: order codes of :func:`_log_f_terms`: KL, D_∞, an order whose α − 1 is p/2^k (POWER: k square
#: roots and an integer power p, no exp or log), or any other (GENERAL, through exp and log)
KL, INFINITY, GENERAL, POWER = -1, -2, 0, 1
#: the most square roots of a POWER order (α − 1 = p/2^k, k ≤ this)
ROOTS = 6


def order_codes(alphas) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per order its code, and for POWER orders k and p with α − 1 = p/2^k (p < 2^12)."""
    codes, roots, powers = [], [], []
    for alpha in alphas:
        k, p = 0, 0
        if alpha == 1:
            code = KL
        elif alpha == math.inf:
            code = INFINITY
        else:
            code = GENERAL
            for k in range(ROOTS + 1):
                scaled = (float(alpha) - 1.0) * 2**k
                if scaled.is_integer() and 1 <= scaled < 4096:
                    code, p = POWER, int(scaled)
                    break
        codes.append(code)
        roots.append(k if code == POWER else 0)
        powers.append(p)
    return np.array(codes, dtype=np.int64), np.array(roots, dtype=np.int64), np.array(powers, dtype=np.int64)


def _power(base, exponent):
    result = 1.0
    while exponent:
        if exponent & 1:
            result *= base
        exponent >>= 1
        if exponent:
            base *= base
    return result


def convolve_into(out, a, length_a, b, length_b):
    """out[:length_a + length_b − 1] = a[:length_a] * b[:length_b] (direct convolution; the
    inner loop runs along ``a``, contiguous)."""
    for s in range(length_a + length_b - 1):
        out[s] = 0.0
    for j in range(length_b):
        weight = b[j]
        if weight != 0.0:
            for i in range(length_a):
                out[i + j] += a[i] * weight


def _log_f_terms(tx, ty, length, alphas, codes, roots, powers, rho_forward, rho_backward, both, out_forward,
                 out_backward):
    """For each order, both directions between the rows ``tx`` and ``ty`` (same mass Z), or the
    forward one only where ``both`` is False (``out_backward`` is then +inf):
    log F_α = log Σ tx^α ty^{1−α} − log Z (α > 1), KL = Σ (tx log(tx/ty) − tx + ty) / Z (each
    term ≥ 0), D_∞ = max log(tx/ty). An entry where one row underflowed to 0 and the other did
    not (both are positive in exact arithmetic) adds its largest possible term, tx·ρ^{α−1} with
    ρ ≥ tx/ty the pair's likelihood-ratio bound (``rho_forward``; ``rho_backward`` for ty/tx),
    so the value stays an upper bound; ρ = +inf gives +inf. An entry 0 in both rows adds the
    largest term its mass (below 2^−1022) can carry."""
    mass = 0.0
    lonely = False  # an entry positive in one row only
    vanished = 0  # entries 0 in both rows: positive in exact arithmetic (full support), below 2^−1022
    for s in range(length):
        mass += tx[s]
        if (tx[s] == 0.0) != (ty[s] == 0.0):
            lonely = True
        elif tx[s] == 0.0:
            vanished += 1
    log_mass = math.log(mass)
    orders = alphas.shape[0]
    sums_forward = np.zeros(orders)
    sums_backward = np.zeros(orders)
    largest_forward = 0.0
    largest_backward = 0.0
    logs = False  # KL and orders that are not p/2^k share one log per entry
    deepest = 0  # square roots shared by the POWER orders
    for o in range(orders):
        if codes[o] == KL or codes[o] == GENERAL:
            logs = True
        if codes[o] == POWER:
            deepest = max(deepest, roots[o])
    chain = np.empty(ROOTS + 1)
    for s in range(length):
        a = tx[s]
        b = ty[s]
        if a > 0.0 and b > 0.0:
            ratio = a / b
            largest_forward = max(largest_forward, ratio)
            if both:
                largest_backward = max(largest_backward, b / a)
            log_ratio = math.log(ratio) if logs else 0.0
            chain[0] = ratio
            for k in range(1, deepest + 1):
                chain[k] = math.sqrt(chain[k - 1])
            for o in range(orders):
                code = codes[o]
                if code == POWER:
                    factor = _power(chain[roots[o]], powers[o])
                    sums_forward[o] += a * factor
                    if both:
                        sums_backward[o] += b / factor
                elif code == KL:
                    sums_forward[o] += a * log_ratio - a + b
                    if both:
                        sums_backward[o] += -b * log_ratio - b + a
                elif code == GENERAL:
                    factor = math.exp((alphas[o] - 1.0) * log_ratio)
                    sums_forward[o] += a * factor
                    if both:
                        sums_backward[o] += b / factor
    for o in range(orders):
        code = codes[o]
        alpha = alphas[o]
        forward = largest_forward if code == INFINITY else sums_forward[o]
        backward = largest_backward if code == INFINITY else sums_backward[o]
        if lonely:
            for s in range(length):
                a = tx[s]
                b = ty[s]
                if (a == 0.0) == (b == 0.0):
                    continue
                if b == 0.0:  # forward's term a·(a/b)^{α−1} ≤ a·ρ^{α−1}; backward's b·(b/a)^{α−1} ≈ 0
                    if code == INFINITY:
                        forward = max(forward, rho_forward)
                    elif code == KL:
                        forward += a * math.log(rho_forward) if rho_forward < np.inf else np.inf
                        backward += a
                    else:
                        forward += a * rho_forward ** (alpha - 1.0)
                else:
                    if code == INFINITY:
                        backward = max(backward, rho_backward)
                    elif code == KL:
                        backward += b * math.log(rho_backward) if rho_backward < np.inf else np.inf
                        forward += b
                    else:
                        backward += b * rho_backward ** (alpha - 1.0)
        if vanished:  # each such entry's term is at most 2^−1022·ρ^{α−1} (KL: 2^−1022·(log ρ + 1))
            if code == INFINITY:
                forward = max(forward, rho_forward)
                backward = max(backward, rho_backward)
            elif code == KL:
                forward += vanished * 2.0**-1022 * (math.log(rho_forward) + 1.0)
                backward += vanished * 2.0**-1022 * (math.log(rho_backward) + 1.0)
            else:
                forward += vanished * 2.0**-1022 * rho_forward ** (alpha - 1.0)
                backward += vanished * 2.0**-1022 * rho_backward ** (alpha - 1.0)
        if code == KL:
            out_forward[o] = forward / mass
            out_backward[o] = backward / mass
        elif code == INFINITY:
            out_forward[o] = math.log(forward) if forward > 0 else -np.inf
            out_backward[o] = math.log(backward) if backward > 0 else -np.inf
        else:
            out_forward[o] = math.log(forward) - log_mass
            out_backward[o] = math.log(backward) - log_mass if both else np.inf
        if not both:  # not computed
            out_backward[o] = np.inf


def _combine(log_weights, slot_values, slots_of_j, alpha, code):
    """The mixture bound over the latent count j: log Σ_j w_j e^{u_j} (α > 1), Σ_j w_j u_j (KL),
    max_j u_j over w_j > 0 (D_∞), with u_j = slot_values[slots_of_j[j]]."""
    count = log_weights.shape[0]
    if code == KL:
        total = 0.0
        for j in range(count):
            if log_weights[j] > -np.inf:
                value = slot_values[slots_of_j[j]]
                if value == np.inf:
                    return np.inf
                total += math.exp(log_weights[j]) * value
        return total
    peak = -np.inf
    for j in range(count):
        if log_weights[j] > -np.inf:
            peak = max(peak, slot_values[slots_of_j[j]] + (0.0 if code == INFINITY else log_weights[j]))
    if code == INFINITY or peak == np.inf or peak == -np.inf:
        return peak
    total = 0.0
    for j in range(count):
        if log_weights[j] > -np.inf:
            total += math.exp(slot_values[slots_of_j[j]] + log_weights[j] - peak)
    return peak + math.log(total)


def _slot(s, chained, lengths, slot_position, slot_set, residual, pairs, orders, extra, totals, forward, backward,
          values):
    """log F_α (KL) of every pair and direction at slot ``s``: its chain row, times each residual
    row of its set (the largest over them), into values[s]."""
    residuals, residual_lengths, set_start = residual
    totals_pmfs, pair_first, pair_second, rho, directions = pairs
    alphas, codes, roots, powers, targets = orders
    taps = totals_pmfs.shape[1]
    p = slot_position[s]
    for pair in range(pair_first.shape[0]):
        for o in range(alphas.shape[0]):
            values[s, pair, 0, o] = -np.inf
            values[s, pair, 1, o] = -np.inf
    first, last = (set_start[slot_set[s]], set_start[slot_set[s] + 1]) if slot_set[s] >= 0 else (0, 1)
    for variant in range(first, last):
        if slot_set[s] >= 0:
            convolve_into(extra, chained[p], lengths[p], residuals[variant], residual_lengths[variant])
            source = extra
            size = lengths[p] + residual_lengths[variant] - 1
        else:
            source = chained[p]
            size = lengths[p]
        for kind in range(totals_pmfs.shape[0]):
            convolve_into(totals[kind], source, size, totals_pmfs[kind], taps)
        for pair in range(pair_first.shape[0]):
            _log_f_terms(totals[pair_first[pair]], totals[pair_second[pair]], size + taps - 1, alphas, codes, roots,
                        powers, rho[pair, 0], rho[pair, 1], directions == 2, forward, backward)
            for o in range(alphas.shape[0]):
                values[s, pair, 0, o] = max(values[s, pair, 0, o], forward[o])
                values[s, pair, 1, o] = max(values[s, pair, 1, o], backward[o])


def _leaf(row, length, plan, residual, pairs, orders, space, plans, out_bound, out_pair):
    """The bound of one leaf (or, by data processing, of a subtree): its row times C^p along the
    chain; each plan in turn — its slots' log F (KL) computed once and shared by the plans —
    mixed over j (:func:`_combine`), the largest over pairs and directions per order; the
    smallest over the plans tried (each is valid; at most ``plans`` of them), stopping at the
    first plan at most ``targets`` at every order. ``out_pair``: 2·pair + direction of the bound;
    the directions are the pairs' last field (2: both, 1: the forward one only)."""
    chain, slot_position, slot_set, plan_slots, log_weights = plan
    totals_pmfs, pair_first, pair_second, rho, directions = pairs
    alphas, codes, roots, powers, targets = orders
    chained, lengths, extra, totals, values, computed, work, forward, backward = space
    slots = slot_position.shape[0]
    positions = lengths.shape[0]
    for i in range(length):
        chained[0, i] = row[i]
    lengths[0] = length
    for p in range(1, positions):
        convolve_into(chained[p], chained[p - 1], lengths[p - 1], chain, chain.shape[0])
        lengths[p] = lengths[p - 1] + chain.shape[0] - 1
    for s in range(slots):
        computed[s] = False
    for o in range(alphas.shape[0]):
        out_bound[o] = np.inf
        out_pair[o] = -1
    for plan_index in range(min(plans, plan_slots.shape[0])):
        slots_of_j = plan_slots[plan_index]
        for j in range(slots_of_j.shape[0]):
            s = slots_of_j[j]
            if not computed[s]:
                _slot(s, chained, lengths, slot_position, slot_set, residual, pairs, orders, extra, totals, forward,
                      backward, values)
                computed[s] = True
        done = True
        for o in range(alphas.shape[0]):
            best = -np.inf
            where = 0
            for pair in range(pair_first.shape[0]):
                for direction in range(directions):
                    for s in range(slots):
                        work[s] = values[s, pair, direction, o]
                    bound = _combine(log_weights, work, slots_of_j, alphas[o], codes[o])
                    if bound > best:
                        best = bound
                        where = 2 * pair + direction
            if best < out_bound[o]:
                out_bound[o] = best
                out_pair[o] = where
            if out_bound[o] > targets[o]:
                done = False
        if done:
            break


def _space(width, plan, pairs, orders):
    """The working arrays of :func:`_leaf` for rows up to ``width`` long."""
    slot_position = plan[1]
    positions = 0
    for s in range(slot_position.shape[0]):
        positions = max(positions, slot_position[s] + 1)
    slots = slot_position.shape[0]
    count = orders[0].shape[0]
    return (np.zeros((positions, width)), np.zeros(positions, np.int64), np.zeros(width),
            np.zeros((pairs[0].shape[0], width)), np.zeros((slots, pairs[1].shape[0], 2, count)),
            np.zeros(slots, np.bool_), np.zeros(slots), np.zeros(count), np.zeros(count))


def _width(root_length, clients, taps, plan, residual, pairs):
    slot_position = plan[1]
    positions = 0
    for s in range(slot_position.shape[0]):
        positions = max(positions, slot_position[s] + 1)
    return root_length + clients * (taps - 1) + (positions - 1) * (plan[0].shape[0] - 1) + residual[0].shape[1] + \
        pairs[0].shape[1]


def _mirror_skipped(counts, mirror):
    """Whether the mirror image of ``counts`` comes first (so this multiset is skipped)."""
    if mirror[0] < 0:
        return False
    for a in range(counts.shape[0]):
        image = counts[mirror[a]]
        if image < counts[a]:
            return True
        if image > counts[a]:
            return False
    return False


def _mirror_closed(counts, mirror, following, remaining):
    """Whether every extension of ``counts`` by up to ``remaining`` clients of the kinds
    ``following`` … (kind 0 fixed) is skipped by :func:`_mirror_skipped`: its mirror image's
    first count, counts[mirror[0]], stays below counts[0]."""
    if mirror[0] < 0:
        return False
    reachable = counts[mirror[0]] + (remaining if mirror[0] >= following else 0)
    return reachable < counts[0]


def _keep(task, column, bound, where, counts, out_best, out_pair, out_counts, floor):
    """Keep, per order o, the largest bound of ``task`` in column ``column`` + o with its pair
    and count vector (the first of equal ones), and the largest of its stripe in ``floor``."""
    for o in range(bound.shape[0]):
        floor[column + o] = max(floor[column + o], bound[o])
        if bound[o] > out_best[task, column + o]:
            out_best[task, column + o] = bound[o]
            out_pair[task, column + o] = where[o]
            for a in range(counts.shape[0]):
                out_counts[task, column + o, a] = counts[a]


def _below_larger(bound, floor, slot_of_size, size):
    """Whether ``bound`` (a node of ``size`` clients) is at most ``floor`` at every order of
    every larger size evaluated: then no descendant can exceed a bound already kept (data
    processing: adding clients cannot increase F_α, KL or D_∞)."""
    count = bound.shape[0]
    for larger in range(size + 1, slot_of_size.shape[0]):
        slot = slot_of_size[larger]
        if slot >= 0:
            for o in range(count):
                if not bound[o] <= floor[slot * count + o]:
                    return False
    return True


def _covering(counts, prune):
    """The row of ``prune``'s coarse table for the node of the coarser split that holds the leaf
    ``counts``: Σ_i counts[positions[i]]·base^i, where ``prune`` = (coarse, positions, low, high,
    fine, base); −1 without a coarse table."""
    coarse, positions, _, _, _, base = prune
    if coarse.shape[0] == 0:
        return -1
    key = 0
    scale = 1
    for i in range(positions.shape[0]):
        key += counts[positions[i]] * scale
        scale *= base
    return key


def _at_most(table, row, ceiling):
    """Whether table[row] is at most ``ceiling`` at every order."""
    for o in range(ceiling.shape[0]):
        if not table[row, o] <= ceiling[o]:
            return False
    return True


def _record(counts, mirror, prune, bound):
    """``bound`` into the row Σ_a counts[a]·base^a of ``prune``'s fine table, and into its mirror
    image's row (the same value) where ``mirror`` applies; without a fine table, nothing."""
    _, _, _, _, fine, base = prune
    if fine.shape[0] == 0:
        return
    key = 0
    image = 0
    for a in range(counts.shape[0]):
        key += counts[a] * base**a
        if mirror[0] >= 0:
            image += counts[a] * base ** mirror[a]
    for o in range(bound.shape[0]):
        fine[key, o] = bound[o]
        if mirror[0] >= 0:
            fine[image, o] = bound[o]


def _subtree(start, start_length, first_kind, rest, counts, kinds_pmfs, mirror, plan, residual, pairs, orders, task,
             outputs, width, prune):
    """Every multiset of up to ``rest`` more clients over the kinds ``first_kind`` … (a depth-first
    walk, each child adding one client of a kind at least its parent's last) added to the row
    ``start`` whose count vector is ``counts`` (changed during the walk, restored at its end).
    Each node whose multiset's size s has a column block (``outputs`` = (best, pair, counts,
    slot, floor): slot[s] ≥ 0; the leaves, at depth ``rest``, always have one) is bounded
    (:func:`_leaf`), kept per order into row ``task`` of ``outputs``, columns slot[s]·orders + o,
    and into ``floor`` (:func:`_keep`), and recorded in ``prune``'s fine table (:func:`_record`);
    where its bound is at most ``floor`` at every larger size evaluated (:func:`_below_larger`),
    or where every node below it is a mirror image skipped (:func:`_mirror_closed`), its subtree
    is not walked. With a coarse table, a node whose coarser node's bounds (its row,
    :func:`_covering`) exceed ``low`` at some order is skipped (a pass before computed it), and
    one whose row is at most ``high`` at every order is not computed: that row is recorded for
    it."""
    out_best, out_pair, out_counts, slot_of_size, floor = outputs
    kinds = kinds_pmfs.shape[0]
    taps = kinds_pmfs.shape[1]
    count = orders[0].shape[0]
    buffer = np.zeros((rest + 1, width))
    lengths = np.zeros(rest + 1, np.int64)
    for i in range(start_length):
        buffer[0, i] = start[i]
    lengths[0] = start_length
    start_size = 0
    for a in range(kinds):
        start_size += counts[a]
    sequence = np.zeros(rest + 1, np.int64)
    space = _space(width, plan, pairs, orders)
    bound = np.zeros(count)
    where = np.zeros(count, np.int64)
    plans = plan[3].shape[0]
    depth = 0
    following = first_kind
    entered = True
    while True:
        slot = slot_of_size[start_size + depth]
        covered = False
        if entered and slot >= 0 and not _mirror_skipped(counts, mirror):
            row = _covering(counts, prune)
            if row < 0 or _at_most(prune[0], row, prune[2]):  # not computed by an earlier pass
                if row >= 0 and _at_most(prune[0], row, prune[3]):
                    _record(counts, mirror, prune, prune[0][row])
                else:
                    _leaf(buffer[depth], lengths[depth], plan, residual, pairs, orders, space, plans, bound, where)
                    _keep(task, slot * count, bound, where, counts, out_best, out_pair, out_counts, floor)
                    _record(counts, mirror, prune, bound)
                    covered = depth < rest and _below_larger(bound, floor, slot_of_size, start_size + depth)
        if entered and depth < rest and _mirror_closed(counts, mirror, following, rest - depth):
            covered = True
        entered = False
        if depth < rest and following < kinds and not covered:
            kind = following
            convolve_into(buffer[depth + 1], buffer[depth], lengths[depth], kinds_pmfs[kind], taps)
            lengths[depth + 1] = lengths[depth] + taps - 1
            sequence[depth + 1] = kind
            counts[kind] += 1
            depth += 1
            entered = True
            continue
        if depth == 0:
            break
        kind = sequence[depth]
        counts[kind] -= 1
        depth -= 1
        following = kind + 1


def _times_power(row, scratch, length, pmf, count):
    """row ← row * pmf^{*count} in place (``scratch``: a row as long); the new length."""
    for _ in range(count):
        convolve_into(scratch, row, length, pmf, pmf.shape[0])
        length += pmf.shape[0] - 1
        for i in range(length):
            row[i] = scratch[i]
    return length


def _leaf_bounds(root, kinds_pmfs, size, mirror, plan, residual, pairs, orders, outputs, prune, stripes, table_bytes):
    """Every multiset of ``size`` clients over the kinds ``kinds_pmfs`` (rows root * their sum),
    and of each smaller size s with ``slot[s]`` ≥ 0 (one walk: those are the walk's nodes at
    their depth): per order o, the largest bound over them (:func:`_leaf`) into
    ``out_best[task, slot[s]·orders + o]``, the pair attaining it (2·pair + direction) into
    ``out_pair`` and that multiset's count vector into ``out_counts`` at the same place, where
    ``outputs`` = (out_best, out_pair, out_counts, slot) (the first three must come initialised:
    −inf, −1; slot[size] ≥ 0) and ``task`` is a row 0 … size; the caller takes the largest over
    the rows. With ``mirror[0] ≥ 0`` (``mirror`` maps each kind to its mirror image), a leaf whose
    mirrored count vector is smaller is skipped: the mirror configuration has the same value.
    ``prune`` (:func:`_subtree`; :data:`NO_PRUNING`: no tables) skips the leaves whose node of a
    coarser split is bounded enough already, and records every leaf's bound. A node bounded at
    most the largest bound its stripe kept at every larger size is not expanded (its descendants
    add clients: data processing), nor is one all of whose descendants are mirror images skipped.

    The work runs in ``stripes`` parallel stripes, task t in stripe t mod ``stripes`` (a leaf's cost
    varies by orders of magnitude as its staircases escalate, and the costly leaves cluster near
    the worst configurations: contiguous shares would leave one thread with them). With three
    kinds or more a task is a pair of counts (c₀, c₁) of kinds 0 and 1, its row root * P₀^{c₀} *
    P₁^{c₁} built beforehand (in blocks of counts c₀ whose rows take at most ``table_bytes``), and
    its leaves the multisets of the other kinds; with fewer kinds a task is a count c₀ (row
    size − c₀). Which rows hold which leaves, and so the row a tie is reported in, depends on the
    blocks; the maximum does not."""
    kinds = kinds_pmfs.shape[0]
    width = _width(root.shape[0], size, kinds_pmfs.shape[1], plan, residual, pairs)
    out_best, out_pair, out_counts, slot_of_size = outputs
    columns = out_best.shape[1]
    floors = np.full((stripes, columns), -np.inf)  # per stripe, the largest bound kept per column
    if kinds < 3:
        for stripe in prange(stripes):
            for task in range(stripe, size + 1 if kinds > 1 else 1, stripes):
                c0 = size - task
                row = np.zeros(width)
                row[: root.shape[0]] = root
                length = _times_power(row, np.zeros(width), root.shape[0], kinds_pmfs[0], c0)
                counts = np.zeros(kinds, np.int64)
                counts[0] = c0
                _subtree(row, length, 1, task, counts, kinds_pmfs, mirror, plan, residual, pairs, orders, task,
                         (out_best, out_pair, out_counts, slot_of_size, floors[stripe]), width, prune)
        return
    limit = table_bytes // (8 * width)  # the rows of a block of tasks (a block holds one count c₀ at least)
    base = np.zeros(width)
    scratch = np.zeros(width)
    base[: root.shape[0]] = root
    base_length = root.shape[0]
    c0 = 0
    while c0 <= size:  # a block of counts c₀ … end − 1: its tasks' rows built, then run in parallel
        end = c0
        tasks = 0
        while end <= size and (end == c0 or tasks + size - end + 1 <= limit):
            tasks += size - end + 1
            end += 1
        table = np.zeros((tasks, width))
        table_lengths = np.zeros(tasks, np.int64)
        task_c0 = np.zeros(tasks, np.int64)
        task_c1 = np.zeros(tasks, np.int64)
        t = 0
        for c in range(c0, end):
            if c > 0:
                base_length = _times_power(base, scratch, base_length, kinds_pmfs[0], 1)
            for i in range(base_length):
                table[t, i] = base[i]
            table_lengths[t] = base_length
            task_c0[t] = c
            task_c1[t] = 0
            for c1 in range(1, size - c + 1):
                convolve_into(table[t + 1], table[t], table_lengths[t], kinds_pmfs[1], kinds_pmfs.shape[1])
                table_lengths[t + 1] = table_lengths[t] + kinds_pmfs.shape[1] - 1
                task_c0[t + 1] = c
                task_c1[t + 1] = c1
                t += 1
            t += 1
        best = np.full((tasks, columns), -np.inf)
        pair = np.full((tasks, columns), -1, np.int64)
        found = np.zeros((tasks, columns, kinds), np.int64)
        for stripe in prange(stripes):
            for t in range(stripe, tasks, stripes):
                counts = np.zeros(kinds, np.int64)
                counts[0] = task_c0[t]
                counts[1] = task_c1[t]
                _subtree(table[t], table_lengths[t], 2, size - task_c0[t] - task_c1[t], counts, kinds_pmfs, mirror,
                         plan, residual, pairs, orders, t, (best, pair, found, slot_of_size, floors[stripe]), width, prune)
        for t in range(tasks):  # into the row of c₁, the first of equal bounds kept
            for o in range(columns):
                if best[t, o] > out_best[task_c1[t], o]:
                    out_best[task_c1[t], o] = best[t, o]
                    out_pair[task_c1[t], o] = pair[t, o]
                    for a in range(kinds):
                        out_counts[task_c1[t], o, a] = found[t, o, a]
        c0 = end


def leaf_bounds(root, kinds_pmfs, size, mirror, plan, residual, pairs, orders, outputs, prune=NO_PRUNING):
    """:func:`_leaf_bounds`, its tasks dealt round-robin to one stripe per thread the computation may
    use (:func:`rdpcalc.resources.threads`: one on a sweep's worker; numba's prange gives each thread
    a contiguous share, and one share can hold every costly leaf)."""
    _leaf_bounds(root, kinds_pmfs, size, mirror, plan, residual, pairs, orders, outputs, prune, resources.threads(),
                 TABLE_BYTES)


def _screen_rows(lp, lq, alphas, out, stripes):
    """Per row r of the log pmfs ``lp`` and ``lq``, both directions (d = 0: P‖Q, d = 1: Q‖P), and
    each order α of ``alphas`` (1, or ≥ 2, or +inf): out[d, r, o] = log Σ_s P(s)^α Q(s)^{1−α} /
    (α − 1) over the points where the first pmf is positive (+inf where the second is 0 there),
    max over them of log(P/Q) for α = ∞, Σ_s P(s)·log(P(s)/Q(s)) for α = 1; −inf where the first
    pmf is 0 everywhere. The sum of an order > 1 is that of :func:`rdpcalc.logdomain.logsumexp`:
    exp of the terms less their maximum, added in order (relative error below S·2⁻⁵³ for S
    points); KL's terms are added in order (absolute error below S·2⁻⁵³·Σ_s P(s)·|log(P/Q)|).
    Rows are dealt round-robin to ``stripes`` parallel stripes."""
    rows, points = lp.shape
    orders = alphas.shape[0]
    for stripe in prange(stripes):
        peak = np.empty(orders)
        total = np.empty(orders)
        for r in range(stripe, rows, stripes):
            for d in range(2):
                first = lp[r] if d == 0 else lq[r]
                second = lq[r] if d == 0 else lp[r]
                for o in range(orders):
                    peak[o] = -np.inf
                    total[o] = 0.0
                present = False
                for s in range(points):
                    if first[s] > -np.inf:
                        present = True
                        for o in range(orders):
                            if alphas[o] == 1.0:
                                total[o] += np.inf if second[s] == -np.inf else math.exp(first[s]) * (first[s] - second[s])
                                continue
                            term = first[s] - second[s] if alphas[o] == np.inf else \
                                alphas[o] * first[s] + (1.0 - alphas[o]) * second[s]
                            if term > peak[o]:
                                peak[o] = term
                for o in range(orders):
                    if alphas[o] == 1.0:
                        out[d, r, o] = total[o] if present else -np.inf
                        continue
                    if alphas[o] == np.inf or not -np.inf < peak[o] < np.inf:
                        out[d, r, o] = peak[o] if alphas[o] == np.inf or peak[o] == np.inf else -np.inf
                        continue
                    for s in range(points):
                        if first[s] > -np.inf:
                            total[o] += math.exp(alphas[o] * first[s] + (1.0 - alphas[o]) * second[s] - peak[o])
                    out[d, r, o] = (peak[o] + math.log(total[o])) / (alphas[o] - 1.0)


def screen_rows(lp: np.ndarray, lq: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """:func:`_screen_rows` of 2-D log pmfs at orders 1, ≥ 2 or +inf: an array (2, rows, orders),
    computed in as many parallel stripes as the computation may use
    (:func:`rdpcalc.resources.threads`)."""
    out = np.empty((2, lp.shape[0], len(alphas)))
    _screen_rows(np.ascontiguousarray(lp, dtype=np.float64), np.ascontiguousarray(lq, dtype=np.float64),
                 np.asarray(alphas, dtype=np.float64), out, resources.threads())
    return out
