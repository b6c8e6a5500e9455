"""The mechanisms, one module each, by their command-line names."""

from __future__ import annotations

from .base import Bound, Mechanism, ParamSpec, log_pmf
from .corbin import CorBin
from .pbm import PBM
from .qgauss import QuantizedGaussian
from .qmgeo import QMGeo
from .rqm import RQM

#: command-line name → mechanism class
MECHANISMS: dict[str, type[Mechanism]] = {cls.name: cls for cls in (RQM, PBM, QuantizedGaussian, QMGeo, CorBin)}

__all__ = ["Bound", "CorBin", "MECHANISMS", "PBM", "QMGeo", "QuantizedGaussian", "RQM", "Mechanism", "ParamSpec", "log_pmf"]
