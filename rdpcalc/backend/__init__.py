"""Sampling-heavy work, on the mechanisms' own vectorised samplers
(:meth:`~rdpcalc.mechanisms.Mechanism.sample`): Monte Carlo checks of the exact pmfs and
divergences (:mod:`.montecarlo`), and federated-learning runs with torch (:mod:`.fl`, optional
extra ``fl``)."""
