"""The mechanisms, one module each, by their command-line names.

Adding a mechanism: write its module (a frozen dataclass subclass of :class:`Mechanism` with its
:class:`Param` declarations) and register it here with one line."""

from __future__ import annotations

from .base import FEATURES, MECHANISMS, Bound, Mechanism, Param, SolveRange, log_pmf, register
from .binomial import Binomial
from .corbin import CorBin
from .ddg import DistributedDiscreteGaussian
from .pbm import PBM
from .qgauss import QuantizedGaussian
from .qmgeo import QMGeo
from .rounded import RoundedNoise
from .rqm import RQM
from .skellam import Skellam

for _mechanism in (RQM, PBM, QuantizedGaussian, QMGeo, CorBin, DistributedDiscreteGaussian, Skellam, Binomial):
    register(_mechanism)

__all__ = ["Binomial", "Bound", "CorBin", "DistributedDiscreteGaussian", "FEATURES", "MECHANISMS", "PBM", "QMGeo",
           "QuantizedGaussian", "RQM", "Mechanism", "Param", "RoundedNoise", "Skellam", "SolveRange", "log_pmf",
           "register"]
