"""Conformal calibration of keep-thresholds and the coverage check (docs/conformal.md).

- :mod:`ragsift.calibration.targets`: what "the target was kept" means (sentences, documents, answer).
- :mod:`ragsift.calibration.conformal`: the split-conformal threshold and its finite-sample rank.
- :mod:`ragsift.calibration.coverage`: observed coverage with its Clopper-Pearson interval.
- :mod:`ragsift.calibration.calibrate` / ``command``: ``ragsift calibrate``.

The selector that applies a calibrated threshold is :class:`ragsift.selectors.conformal.ConformalSelector`.
"""

from ragsift.calibration.conformal import ConformalThreshold, conformal_rank, conformal_threshold
from ragsift.calibration.coverage import CoverageCheck, conformal_coverage, coverage_check

__all__ = ["ConformalThreshold", "conformal_rank", "conformal_threshold", "CoverageCheck", "coverage_check",
           "conformal_coverage"]
