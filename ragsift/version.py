"""The version of ragsift (one place; the package and the run manifests read it)."""

__version__ = "0.1.0"
