"""The privacy mathematics, which knows nothing of mechanisms: Rényi curves and their
conversion, amplification and composition (:mod:`.rdp`), and privacy loss distributions
(:mod:`.pld`)."""
