"""Data for federated runs: scikit-learn's bundled digits (8×8 images, 10 classes) split across
clients IID or by label, and a loader for MNIST/EMNIST files in the IDX format (optionally
gzipped) given a local path. Nothing is downloaded.

IDX files are checked before their data is read: the header (type, dimensions), the claimed
size against the file's (a gzip is decompressed by size, never past its claim), images and
labels counts, and the memory the load takes against the budget (:mod:`rdpcalc.resources`).
Every problem is a :class:`ParameterError` naming ``images`` or ``labels``."""

from __future__ import annotations

import gzip
import math
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import resources
from ..errors import ParameterError
from ..params import Param

SPLITS = ("iid", "label")
#: how the data is split across the clients, declared once
SPLIT = Param("split", "choice", "iid, or by label (about two classes per client).", default="iid", choices=SPLITS)
GZIP_MAGIC = b"\x1f\x8b"
#: the IDX type code of unsigned bytes (MNIST/EMNIST), the only one read
UBYTE = 0x08
MAX_DIMENSIONS = 4
#: peak bytes per pixel and per label while loading and splitting (see :func:`idx_memory`)
BYTES_PER_PIXEL, BYTES_PER_LABEL = 9, 17


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
        from sklearn.datasets import load_digits  # scikit-learn (the fl extra): start-up time
    except ImportError:
        raise ParameterError("images", "without `images` and `labels` the run uses scikit-learn's digits: "
                                       "pip install 'rdpcalc[fl]', or give IDX files") from None
    bunch = load_digits()
    return bunch.data.astype(np.float32) / 16.0, bunch.target.astype(np.int64)


@dataclass(frozen=True)
class IdxHeader:
    """An IDX file's header: the array's shape, where its data starts, whether it is gzipped."""

    shape: tuple[int, ...]
    offset: int
    gzipped: bool

    @property
    def values(self) -> int:
        return math.prod(self.shape)


def _open(path: Path, parameter: str):
    """A binary handle on a regular file, decompressing gzip (recognised by its magic bytes);
    an unreadable path (missing, a folder, no permission) is refused on ``parameter``."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ParameterError(parameter, f"must be a regular file, got {str(path)!r}")
        handle = path.open("rb")
        gzipped = handle.read(2) == GZIP_MAGIC
        handle.seek(0)
    except OSError as error:
        raise ParameterError(parameter, f"cannot read {str(path)!r}: {error.strerror or error}") from None
    return (gzip.GzipFile(fileobj=handle, mode="rb") if gzipped else handle), gzipped


def _read(handle, size: int, path: Path, parameter: str) -> bytes:
    """At most ``size`` bytes; read errors (a corrupt or truncated gzip stream, a failing disk)
    refused on ``parameter``."""
    try:
        return handle.read(size)
    except (OSError, EOFError, zlib.error) as error:
        raise ParameterError(parameter, f"{path.name} is corrupt or truncated ({error})") from None


def _read_exactly(handle, size: int, path: Path, parameter: str) -> bytes:
    """``size`` bytes, refusing a file that ends first (on ``parameter``)."""
    raw = _read(handle, size, path, parameter)
    if len(raw) < size:
        raise ParameterError(parameter, f"{path.name} is truncated: ended after {len(raw)} of {size} bytes")
    return raw


def idx_header(path: str | Path, parameter: str) -> IdxHeader:
    """Read and check an IDX header without its data: two zero bytes, the unsigned-byte type
    code 0x08, 1 to MAX_DIMENSIONS dimensions, each ≥ 1 (big-endian). For an uncompressed file
    the claimed size must equal the file's size."""
    path = Path(path)
    handle, gzipped = _open(path, parameter)
    with handle:
        zero, dtype, dims = struct.unpack(">HBB", _read_exactly(handle, 4, path, parameter))
        if zero != 0 or dtype != UBYTE or not 1 <= dims <= MAX_DIMENSIONS:
            raise ParameterError(parameter, f"{path.name} is not an unsigned-byte IDX file (magic "
                                            f"0x{zero:04x}{dtype:02x}{dims:02x}; expected 0x000008 and 1–{MAX_DIMENSIONS} "
                                            "dimensions)")
        shape = struct.unpack(f">{dims}I", _read_exactly(handle, 4 * dims, path, parameter))
    if min(shape) < 1:
        raise ParameterError(parameter, f"{path.name} claims the shape {shape}: every dimension must be ≥ 1")
    header = IdxHeader(shape, 4 + 4 * dims, gzipped)
    if not gzipped and path.stat().st_size != header.offset + header.values:
        raise ParameterError(parameter, f"{path.name} holds {path.stat().st_size - header.offset} data bytes but its "
                                        f"header claims {header.values} (shape {shape})")
    return header


def read_idx(path: str | Path, parameter: str, header: IdxHeader | None = None) -> np.ndarray:
    """An IDX array (MNIST/EMNIST format, gzipped or not) of the shape its header claims. The
    data is read by size, never past the claim plus one byte: a file that holds less (truncated)
    or more (a gzip that decompresses beyond its header) is refused on ``parameter``."""
    path = Path(path)
    header = header or idx_header(path, parameter)
    handle, _ = _open(path, parameter)
    with handle:
        _read_exactly(handle, header.offset, path, parameter)
        data = np.frombuffer(_read_exactly(handle, header.values, path, parameter), dtype=np.uint8)
        if _read(handle, 1, path, parameter):
            raise ParameterError(parameter, f"{path.name} holds more data than its header's shape {header.shape}")
    return data.reshape(header.shape)


def idx_memory(images: IdxHeader, labels: IdxHeader) -> int:
    """Estimated peak bytes of loading and splitting IDX data: per pixel its byte, the float32
    copy and the clients' and test set's float32 copies; per label its byte and two int64 copies."""
    return BYTES_PER_PIXEL * images.values + BYTES_PER_LABEL * labels.values


def idx_dataset(images: str | Path, labels: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """MNIST/EMNIST images and labels from IDX files: (N × pixels in [0, 1], labels). Both
    headers are checked (images N × …, labels N) and the memory estimated before any data is read."""
    image_header, label_header = idx_header(images, "images"), idx_header(labels, "labels")
    if len(image_header.shape) < 2:
        raise ParameterError("images", f"must hold images (N × rows × columns), got the shape {image_header.shape}")
    if len(label_header.shape) != 1 or label_header.shape[0] != image_header.shape[0]:
        raise ParameterError("labels", f"must hold one label per image ({image_header.shape[0]}), got the shape "
                                       f"{label_header.shape}")
    resources.require(idx_memory(image_header, label_header), "images",
                      f"{image_header.shape[0]} images of {math.prod(image_header.shape[1:])} pixels")
    x = read_idx(images, "images", image_header).reshape(image_header.shape[0], -1).astype(np.float32)
    x /= 255.0
    return x, read_idx(labels, "labels", label_header).astype(np.int64)


def federate(x: np.ndarray, y: np.ndarray, clients: int, split: str = "iid", seed: int = 0,
             test_fraction: float = 0.2) -> FederatedData:
    """Hold out a test set, then split the rest across ``clients``: ``iid`` (a random equal split)
    or ``label`` (sorted by label and cut into shards, two per client, so each client sees about
    two classes)."""
    SPLIT.convert(split)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    test_size = int(round(test_fraction * len(x)))
    test, train = order[:test_size], order[test_size:]
    if clients < 1 or clients * 2 > len(train):
        raise ParameterError("clients", f"must be an integer in [1, {len(train) // 2}] for this data, got {clients}")
    if split == "iid":
        parts = np.array_split(train, clients)
    else:
        by_label = train[np.argsort(y[train], kind="stable")]
        shards = np.array_split(by_label, 2 * clients)
        pairing = rng.permutation(2 * clients).reshape(clients, 2)
        parts = [np.concatenate([shards[a], shards[b]]) for a, b in pairing]
    return FederatedData([x[p] for p in parts], [y[p] for p in parts], x[test], y[test], int(y.max()) + 1)
