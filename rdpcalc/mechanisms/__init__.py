"""The mechanisms, one module each, by their command-line names."""

from __future__ import annotations

from .base import Bound, Mechanism, ParamSpec, log_pmf
from .pbm import PBM
from .qgauss import QuantizedGaussian
from .qmgeo import QMGeo
from .rqm import RQM

#: command-line name → mechanism class
MECHANISMS: dict[str, type[Mechanism]] = {cls.name: cls for cls in (RQM, PBM, QuantizedGaussian, QMGeo)}

__all__ = ["Bound", "MECHANISMS", "PBM", "QMGeo", "QuantizedGaussian", "RQM", "Mechanism", "ParamSpec", "log_pmf"]
