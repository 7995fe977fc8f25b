"""The ``ragsift power`` subcommand: how many questions a comparison needs (docs/statistics.md,
"Planning a run: ragsift power").

From a pilot run folder (its ``summary.json`` names the baseline and the metrics; its records are
paired with the baseline's by example id), or from a given discordance (binary metrics such as EM)
or paired standard deviation (continuous ones), it prints the number of paired questions needed to
detect a target difference at a level and power, for superiority (two-sided) or, with
``--margin``, for non-inferiority (one-sided), and the pilot's own minimum detectable difference.
The arithmetic is :mod:`ragsift.evaluation.report.power`.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

__all__ = ["add_power_command", "plan_lines", "pilot_pairs"]

_EPILOG = """examples:
  ragsift power --pilot runs/main-primary --difference 3
  ragsift power --pilot runs/main-primary --compressor bridge-ranked --difference 0 --margin 3
  ragsift power --discordance 0.25 --difference 3
  ragsift power --sd 30 --difference 3 --metric f1

differences and margins are in the metric's display units (EM points, F1 points); binary metrics
are planned from the discordance (the share of questions on which the two sides disagree) for the
exact McNemar / sign-flip test the summary uses, continuous ones from the paired SD (paired t)."""


def pilot_pairs(run_dir: Path, metric: str, compressor: str | None = None,
                baseline: str | None = None) -> tuple[str, dict[str, Any], dict[str, tuple[list[float], list[float]]]]:
    """The baseline, the metric's description and, per compressor (or the one named), its values
    and the baseline's on the examples both have (paired by id, in id order, display units).
    Reads ``summary.json`` and ``predictions/<label>.jsonl`` of ``run_dir`` (without repairing them)."""
    from ragsift.errors import ConfigError
    from ragsift.evaluation.predictions import prediction_path, read_records
    from ragsift.evaluation.report.summary import pair_by_id

    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise ConfigError(f"{run_dir}: no summary.json; --pilot takes a finished 'ragsift evaluate' run folder.")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    base = baseline or summary.get("baseline")
    labels = list(summary.get("compressors") or {})
    if not base or base not in labels:
        raise ConfigError(f"{summary_path}: no baseline among its compressors ({', '.join(labels)}); give --baseline.")
    meta = (summary.get("metrics") or {}).get(metric)
    if meta is None:
        raise ConfigError(f"{summary_path}: the run has no metric '{metric}' "
                          f"({', '.join(summary.get('metrics') or {})}).")
    wanted = [compressor] if compressor else [label for label in labels if label != base]
    unknown = [label for label in wanted if label not in labels or label == base]
    if unknown:
        raise ConfigError(f"--compressor {unknown[0]}: not a compressor of the run other than the baseline "
                          f"({', '.join(label for label in labels if label != base)}).")

    def values(label: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for r in read_records(prediction_path(run_dir, label), repair=False):
            if metric in r.get("metrics", {}):
                out.setdefault(str(r["id"]), float(r["metrics"][metric]))
        return out

    theirs = values(base)
    pairs = {}
    for label in wanted:
        _, ours_v, theirs_v, _ = pair_by_id(values(label), theirs)
        pairs[label] = (ours_v, theirs_v)
    return base, meta, pairs


def plan_lines(difference: float, *, alpha: float, power: float, margin: float | None, metric_label: str,
               scale: float, discordance: float | None = None, sd: float | None = None, n_pilot: int | None = None,
               who: str = "") -> list[str]:
    """The plan in plain lines: the questions needed (and, with a pilot, its MDD at its own n).
    ``difference``, ``margin`` and ``sd`` in display units; ``discordance`` a share; ``scale``
    the metric's display scale (100 for EM: a difference of 3 points is 0.03 of a question)."""
    from ragsift.evaluation.report import power as pw

    m = float(margin or 0.0)
    units = f"{metric_label} points"
    goal = (f"non-inferiority at margin {m:g} {units} (one-sided alpha {alpha:g}), true difference {difference:+g}"
            if m else f"a difference of {difference:+g} {units} (two-sided alpha {alpha:g})")
    lines = []
    if discordance is not None:
        basis = f"discordance {discordance:.3g}" + (f" ({round(discordance * n_pilot)} of {n_pilot} pilot pairs)"
                                                     if n_pilot else "")
        d, margin_share = difference / scale, m / scale
        connor = pw.binary_sample_size(d, discordance, alpha, power, margin_share)
        if m:
            needed, how = connor, "Wald test of the paired difference, as the paired t"
        else:
            needed = pw.exact_binary_sample_size(d, discordance, alpha, power)
            how = f"exact McNemar / sign-flip test; Connor's normal approximation says {connor}"
        lines.append(f"{who}{basis}: {needed} questions for {goal} with {power:.0%} power ({how})")
        if n_pilot:
            mdd = pw.binary_mdd(n_pilot, discordance, alpha, power) * scale
            seen = f"{mdd:.1f} {units}" if math.isfinite(mdd) else "none (too few pairs)"
            lines.append(f"  the pilot's {n_pilot} questions could only have detected differences of at least {seen} "
                         f"({power:.0%} power, two-sided alpha {alpha:g})")
    elif sd is not None:
        needed = pw.continuous_sample_size(difference, sd, alpha, power, m)
        basis = f"paired SD {sd:.3g} {units}" + (f" ({n_pilot} pilot pairs)" if n_pilot else "")
        lines.append(f"{who}{basis}: {needed} questions for {goal} with {power:.0%} power (paired t, statsmodels)")
        if n_pilot and n_pilot >= 2:
            lines.append(f"  the pilot's {n_pilot} questions could only have detected differences of at least "
                         f"{pw.continuous_mdd(n_pilot, sd, alpha, power):.1f} {units} ({power:.0%} power, two-sided "
                         f"alpha {alpha:g})")
    return lines


def _cmd_power(args: argparse.Namespace) -> int:
    from ragsift.errors import ConfigError
    from ragsift.evaluation.report import power as pw

    sources = [x for x in (args.pilot, args.discordance, args.sd) if x is not None]
    if len(sources) != 1:
        raise ConfigError("give exactly one of --pilot RUN_DIR, --discordance P or --sd X.")
    if args.margin is None and args.difference == 0:
        raise ConfigError("--difference 0 can only be planned for non-inferiority: give --margin.")
    label = "EM" if args.metric == "em" else args.metric
    common: dict[str, Any] = {"alpha": args.alpha, "power": args.power, "margin": args.margin}
    if args.discordance is not None:
        lines = plan_lines(args.difference, metric_label=label, scale=100.0, discordance=args.discordance, **common)
    elif args.sd is not None:
        lines = plan_lines(args.difference, metric_label=label, scale=100.0, sd=args.sd, **common)
    else:
        base, meta, pairs = pilot_pairs(Path(args.pilot), args.metric, args.compressor, args.baseline)
        label = str(meta.get("label") or label)
        scale = float(meta.get("scale") or 1.0)
        lines = [f"pilot {args.pilot}: {label} against '{base}', paired by example id"]
        for name, (ours, theirs) in pairs.items():
            who = f"{name}: "
            if len(ours) < 2:
                lines.append(f"{who}fewer than 2 questions paired with '{base}'")
                continue
            binary = bool(meta.get("binary")) and all(v in (0.0, 1.0) for v in (*ours, *theirs))
            if binary:
                psi = pw.observed_discordance(ours, theirs)
                if psi == 0:
                    lines.append(f"{who}agrees with '{base}' on all {len(ours)} pilot questions: no discordance to "
                                 "plan from (give --discordance)")
                    continue
                lines += plan_lines(args.difference, metric_label=label, scale=scale, discordance=psi,
                                    n_pilot=len(ours), who=who, **common)
            else:
                sd = pw.paired_sd([v * scale for v in ours], [v * scale for v in theirs])
                if sd == 0:
                    lines.append(f"{who}the same difference on every pilot question: no SD to plan from (give --sd)")
                    continue
                lines += plan_lines(args.difference, metric_label=label, scale=scale, sd=sd, n_pilot=len(ours),
                                    who=who, **common)
    print("\n".join(lines))
    return 0


def _share(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share in (0, 1]; got {text}")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a positive number; got {text}")
    return value


def _level(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1; got {text}")
    return value


def add_power_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``power`` to the ``ragsift`` command line."""
    p = subparsers.add_parser(
        "power", help="plan a run: questions needed for a difference (from a pilot run or a discordance / SD)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="How many paired questions a comparison needs to detect a difference (or show "
        "non-inferiority at a margin) at a level and power, from a pilot run or a given discordance / SD.",
    )
    p.add_argument("--pilot", metavar="RUN_DIR", help="a finished 'ragsift evaluate' run folder to plan from")
    p.add_argument("--discordance", type=_share, help="share of questions on which the two sides disagree (binary metric)")
    p.add_argument("--sd", type=_positive, help="SD of the per-question differences, display units (continuous metric)")
    p.add_argument("--difference", type=float, required=True,
                   help="the true difference to detect (compressor - baseline), display units (EM points)")
    p.add_argument("--compressor", help="the pilot's compressor (default: every one against the baseline)")
    p.add_argument("--baseline", help="the pilot's baseline (default: the run's)")
    p.add_argument("--metric", default="em", help="the metric (default em)")
    p.add_argument("--alpha", type=_level, default=0.05, help="level: two-sided, one-sided with --margin (default 0.05)")
    p.add_argument("--power", type=_level, default=0.8, help="power (default 0.8)")
    p.add_argument("--margin", type=_positive, help="plan non-inferiority at this margin (display units)")
    p.set_defaults(func=_cmd_power)
    return p
