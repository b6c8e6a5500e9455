"""Layered quantizers with exact error distribution: Hegazy, Leluc, Li & Dieuleveut (2024), "Compression
with Exact Error Distribution for Federated Learning", AISTATS 2024, arXiv:2310.20682.

- :mod:`.noise`: the target noises (Gaussian, Laplace, Irwin–Hall), their superlevel sets and step
  laws, the layered entropies, the stable Irwin–Hall density, and the exact Rényi divergences;
- :mod:`.quantizers`: vectorised samplers of subtractive dithering, the direct and shifted layered
  quantizers (Defs. 4–5) and the Irwin–Hall mechanism;
- :mod:`.aggregate`: the aggregate Gaussian mechanism (Def. 8, Algorithms 1–4), λ(n), Theorem 2;
- :mod:`.bits`: communication cost (exact H(M|S), the bounds (4), (5), Prop. 1, Theorems 1–2).
"""
