"""rdpcalc: exact Rényi-DP accounting for quantization-based federated-learning mechanisms.

The Python API lives in :mod:`rdpcalc.api`; the command line (``rdpcalc``) is a thin layer
over it.
"""

from .accountant import Accountant, GaussianEvent, LaplaceEvent, MechanismEvent, PairEvent
from .api import bound, divergence, make_mechanism, moments, pmf
from .errors import ParameterError

__version__ = "0.1.0"

__all__ = ["Accountant", "GaussianEvent", "LaplaceEvent", "MechanismEvent", "PairEvent", "ParameterError", "bound",
           "divergence", "make_mechanism", "moments", "pmf", "__version__"]
