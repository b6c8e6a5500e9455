"""rdpcalc: exact Rényi-DP accounting for quantization-based federated-learning mechanisms.

The Python API, by module:

- :mod:`rdpcalc.queries`: :func:`make_mechanism`, :func:`divergence` (its neighbours chosen by a
  :class:`NeighbourOptions`), :func:`pmf`, :func:`moments`;
- :mod:`rdpcalc.bounds`: :func:`bound`, the papers' closed forms checked against exact values;
- :mod:`rdpcalc.runs`: whole training runs, :func:`account`, :func:`account_run`,
  :func:`account_reference`, :func:`account_reference_run`, :func:`calibrate`;
- :mod:`rdpcalc.layered.tables`: :func:`layered_divergence`, :func:`layered_bits`;
- :mod:`rdpcalc.accountant`: the :class:`Accountant` and its events (frozen records: ``to_dict``,
  :func:`event_from_dict`), which composes dp-accounting's events too; an event's PLD and Rényi
  curve for dp-accounting (:func:`pld_for_dp_accounting`, :func:`rdp_for_dp_accounting`);
- :mod:`rdpcalc.mechanisms`: the :class:`Mechanism` interface, :class:`Param` and :func:`register`,
  which makes a new mechanism known to every function and command.

Every function takes its parameters by keyword and returns records (dicts of Python values);
an invalid parameter raises :class:`ParameterError` naming its keyword. The command line
(``rdpcalc``) is a layer over these functions.
"""

from .accountant import (
    Accountant,
    DpEvent,
    GaussianEvent,
    LaplaceEvent,
    MechanismEvent,
    PairEvent,
    event_from_dict,
    pld_for_dp_accounting,
    rdp_for_dp_accounting,
)
from .bounds import bound
from .errors import ParameterError
from .layered.tables import layered_bits, layered_divergence
from .mechanisms import MECHANISMS, Mechanism, Param, SolveRange, register
from .queries import NeighbourOptions, divergence, make_mechanism, moments, pmf
from .runs import (
    AccountedRun,
    RunOptions,
    account,
    account_reference,
    account_reference_run,
    account_run,
    calibrate,
    solvable,
)
from .version import VERSION as __version__

__all__ = ["MECHANISMS", "AccountedRun", "Accountant", "DpEvent", "GaussianEvent", "LaplaceEvent", "Mechanism",
           "MechanismEvent", "NeighbourOptions", "PairEvent", "Param", "ParameterError", "RunOptions",
           "SolveRange", "__version__", "account", "account_reference", "account_reference_run", "account_run",
           "bound", "calibrate", "divergence", "event_from_dict", "layered_bits", "layered_divergence",
           "make_mechanism", "moments", "pld_for_dp_accounting", "pmf", "rdp_for_dp_accounting", "register", "solvable"]
