"""The worst case over neighbouring inputs, and its certificates.

- :mod:`.neighbours`: the neighbour protocols (which inputs are compared) and the maximum over
  them, for one client and for the SecAgg sum of n; sweeps over n.
- :mod:`.secagg`: the search over the other clients' inputs for n > 1 and its certified upper
  bound (the proofs are its docstring), with the cost model that sizes them.
- :mod:`.certificate`: the compiled trees and Theorem A's exact/soft split behind the bound.
- :mod:`.anchors`: Theorem C, the others as mixtures of anchor inputs (the quantized Gaussian's interval).
- :mod:`.wrapped`: the branch-and-bound over boxes of the others' inputs for a sum that wraps.
- :mod:`.kfamily`: the worst over k of the papers' ±c family at large n (windowed rows).
- :mod:`.tails`: the certified brackets of a windowed (unbounded) noise.
- :mod:`.dominating`: the per-round dominating pair of a family, for PLD accounting.
- :mod:`.remembered`: the answers a process may ask for again (certificates, branch-and-bound outcomes).
"""
