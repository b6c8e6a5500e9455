"""The version of rdpcalc, written into every artefact's metadata (the single source: the
package's metadata reads it from here)."""

VERSION = "0.1.0"
