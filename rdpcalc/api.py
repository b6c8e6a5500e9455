"""Transitional re-export of the Python API for the old ``rdpcalc/cli.py``, its only importer.

The API now lives in :mod:`rdpcalc.queries`, :mod:`rdpcalc.bounds`, :mod:`rdpcalc.runs` and
:mod:`rdpcalc.layered.tables`, exported by :mod:`rdpcalc`; import it from there. This module is
deleted together with ``rdpcalc/cli.py`` when the new command line (``rdpcalc/cli/``) lands.
"""

from .accountant import METHODS, PER_ROUND, RELATIONS
from .bounds import bound
from .layered.tables import layered_bits, layered_divergence
from .queries import divergence, make_mechanism, moments, pmf
from .runs import account_reference_run, account_run, calibrate

__all__ = ["METHODS", "PER_ROUND", "RELATIONS", "account_reference_run", "account_run", "bound", "calibrate", "divergence",
           "layered_bits", "layered_divergence", "make_mechanism", "moments", "pmf"]
