"""The mechanisms, one module each, by their command-line names.

Adding a mechanism: write its module (a frozen dataclass subclass of :class:`Mechanism` with its
:class:`Param` declarations) and register it here with one line."""

from __future__ import annotations

from .base import FEATURES, MECHANISMS, Bound, Mechanism, Param, SolveRange, log_pmf, register
from .corbin import CorBin
from .pbm import PBM
from .qgauss import QuantizedGaussian
from .qmgeo import QMGeo
from .rqm import RQM

for _mechanism in (RQM, PBM, QuantizedGaussian, QMGeo, CorBin):
    register(_mechanism)

__all__ = ["Bound", "CorBin", "FEATURES", "MECHANISMS", "PBM", "QMGeo", "QuantizedGaussian", "RQM", "Mechanism", "Param",
           "SolveRange", "log_pmf", "register"]
