"""Sampling-heavy work: vectorised samplers of every mechanism (:mod:`.samplers`), Monte Carlo
checks of the exact pmfs and divergences (:mod:`.montecarlo`), and federated-learning runs
with torch (:mod:`.fl`, optional extra ``fl``)."""
