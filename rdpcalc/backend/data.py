"""Data for federated runs: scikit-learn's bundled digits (8×8 images, 10 classes) split across
clients IID or by label, and a loader for MNIST/EMNIST files in the IDX format (optionally
gzipped) given a local path. Nothing is downloaded."""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ParameterError

SPLITS = ("iid", "label")
IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049


@dataclass(frozen=True)
class FederatedData:
    """Each client's training samples (``client_x[i]``, ``client_y[i]``) and a test set."""

    client_x: list[np.ndarray]
    client_y: list[np.ndarray]
    test_x: np.ndarray
    test_y: np.ndarray
    classes: int

    @property
    def features(self) -> int:
        return self.test_x.shape[1]


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits, pixels scaled to [0, 1]: (1797 × 64, labels 0–9)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ParameterError("--data", "the digits data set needs scikit-learn: pip install 'rdpcalc[fl]'") from None
    bunch = load_digits()
    return bunch.data.astype(np.float32) / 16.0, bunch.target.astype(np.int64)


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX array (MNIST/EMNIST format; .gz accepted): big-endian magic, dimensions, uint8 data."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError("--data", f"no such file: {str(path)!r}")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        raw = handle.read()
    if len(raw) < 8:
        raise ParameterError("--data", f"{path.name} is not an IDX file (too short)")
    zero, dtype, dims = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08 or dims < 1:
        raise ParameterError("--data", f"{path.name} is not an unsigned-byte IDX file")
    shape = struct.unpack(f">{dims}I", raw[4 : 4 + 4 * dims])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if data.size != int(np.prod(shape)):
        raise ParameterError("--data", f"{path.name}: {data.size} values for shape {shape}")
    return data.reshape(shape)


def idx_dataset(images: str | Path, labels: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """MNIST/EMNIST images and labels from IDX files: (N × pixels in [0, 1], labels)."""
    x, y = read_idx(images), read_idx(labels)
    if x.ndim < 2 or y.ndim != 1 or len(x) != len(y):
        raise ParameterError("--data", f"images {x.shape} and labels {y.shape} do not match")
    return x.reshape(len(x), -1).astype(np.float32) / 255.0, y.astype(np.int64)


def federate(x: np.ndarray, y: np.ndarray, clients: int, split: str = "iid", seed: int = 0,
             test_fraction: float = 0.2) -> FederatedData:
    """Hold out a test set, then split the rest across ``clients``: ``iid`` (a random equal split)
    or ``label`` (sorted by label and cut into shards, two per client, so each client sees about
    two classes)."""
    if split not in SPLITS:
        raise ParameterError("--split", f"must be one of {', '.join(SPLITS)}, got {split!r}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    test_size = int(round(test_fraction * len(x)))
    test, train = order[:test_size], order[test_size:]
    if clients < 1 or clients * 2 > len(train):
        raise ParameterError("--clients", f"must be an integer in [1, {len(train) // 2}] for this data, got {clients}")
    if split == "iid":
        parts = np.array_split(train, clients)
    else:
        by_label = train[np.argsort(y[train], kind="stable")]
        shards = np.array_split(by_label, 2 * clients)
        pairing = rng.permutation(2 * clients).reshape(clients, 2)
        parts = [np.concatenate([shards[a], shards[b]]) for a, b in pairing]
    return FederatedData([x[p] for p in parts], [y[p] for p in parts], x[test], y[test], int(y.max()) + 1)
