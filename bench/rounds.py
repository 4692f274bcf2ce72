"""Run one benchmark several times and print the median, min and max of every figure.

    python bench/rounds.py --runs 3 bench/seal.py --secrets 3000

Each run is a fresh process printing one JSON object (the benches' contract). The numeric
figures, nested ones as dotted keys (``cpu_ms_per_op.cluster_manager``), are summarised;
``targets_met`` is kept per run. The raw objects are kept too (``runs``), so a table can be
rebuilt without running again. Runs go one after the other: on a 2-core machine two
benches at once measure each other.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any


def flatten(doc: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The numeric leaves of ``doc`` keyed by their dotted path (booleans left out)."""
    out: dict[str, float] = {}
    for key, value in doc.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{path}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[path] = value
    return out


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median, min and max of each figure present in every run, and each run's targets."""
    flat = [flatten(run) for run in runs]
    keys = [key for key in flat[0] if all(key in f for f in flat[1:])]
    return {
        "median": {k: round(statistics.median(f[k] for f in flat), 3) for k in keys},
        "min": {k: min(f[k] for f in flat) for k in keys},
        "max": {k: max(f[k] for f in flat) for k in keys},
        "targets_met": [run.get("targets_met") for run in runs],
    }


def run_once(command: list[str]) -> dict[str, Any]:
    """One run of ``command``: what it printed parsed as JSON (one object, on one line or
    indented), or else its last stdout line so parsed."""
    done = subprocess.run(command, stdout=subprocess.PIPE, check=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if not lines:
        raise RuntimeError(f"{' '.join(command)} printed nothing")
    try:
        found: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        found = json.loads(lines[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("bench", help="the benchmark script, e.g. bench/seal.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be ≥ 1")
    command = [sys.executable, args.bench, *args.args]
    started = time.monotonic()
    runs = [run_once(command) for _ in range(args.runs)]
    print(json.dumps({"bench": " ".join([args.bench, *args.args]), "runs_count": args.runs,
                      "seconds": round(time.monotonic() - started, 1),
                      **summarise(runs), "runs": runs}))


if __name__ == "__main__":
    main()
