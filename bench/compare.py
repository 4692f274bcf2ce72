# ruff: noqa: RUF001, RUF002 - the table speaks Markdown typography
"""A Markdown table of before and after from two directories of ``bench/rounds.py`` output.

    python bench/compare.py BEFORE_DIR AFTER_DIR

Each directory holds ``<name>.json`` files (one ``rounds.py`` object each); a row shows a
figure's median with its min–max, before and after. A bench missing on one side shows "—".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rounds import summarise

ROWS: list[tuple[str, str, str, str]] = [
    # (file name, row label, figure, target): issue 38's targets, round three
    ("commission10k", "`commission.py --clusters 10000`: s to all ready",
     "seconds_to_all_ready", "≤ 60"),
    ("commission10k", "`commission.py --clusters 10000`: CPU-ms per cluster, all",
     "cpu_ms_per_cluster", "≤ 8"),
    ("commission1k", "`commission.py --clusters 1000`: s to all ready",
     "seconds_to_all_ready", ""),
    ("commission1k", "`commission.py --clusters 1000`: `ratio_vs_acs`", "ratio_vs_acs", "≥ 25"),
    ("commission1k", "`commission.py --clusters 1000`: CPU-ms per cluster, Config Store",
     "cpu_ms_per_op.config_store", ""),
    ("commission1k", "`commission.py --clusters 1000`: CPU-ms per cluster, Cluster Manager",
     "cpu_ms_per_op.cluster_manager", ""),
    ("commission1k", "`commission.py --clusters 1000`: CPU-ms per cluster, all",
     "cpu_ms_per_cluster", ""),
    ("commission1k_pg", "`commission.py --clusters 1000` on PostgreSQL: s to all ready",
     "seconds_to_all_ready", "≤ 1.2× SQLite"),
    ("commission1k_pg", "`commission.py --clusters 1000` on PostgreSQL: CPU-ms per cluster, all",
     "cpu_ms_per_cluster", "≤ 1.2× SQLite"),
    ("config_store_pg", "`config_store.py` on PostgreSQL: PATCH/s", "patch_per_s", "≥ 2,000"),
    ("config_store_pg", "`config_store.py` on PostgreSQL: GET/s", "get_per_s", "≥ 3,000"),
    ("config_store_pg", "`config_store.py` on PostgreSQL: CPU-ms per PATCH, all",
     "cpu_ms_per_patch_all", ""),
    ("config_store_pg", "`config_store.py` on PostgreSQL: CPU-ms per GET, all",
     "cpu_ms_per_get_all", ""),
    ("config_store", "`config_store.py`: PATCH/s", "patch_per_s", ""),
    ("config_store", "`config_store.py`: GET/s", "get_per_s", ""),
    ("config_store", "`config_store.py`: CPU-ms per PATCH", "cpu_ms_per_patch_all", ""),
    ("config_store", "`config_store.py`: CPU-ms per GET", "cpu_ms_per_get_all", ""),
    ("config_store", "`config_store.py`: notify p99 ms, 100 subscribers", "notify_p99_ms",
     "< 20"),
    ("config_store_pg", "`config_store.py` on PostgreSQL: notify p99 ms, 100 subscribers",
     "notify_p99_ms", "< 20"),
    ("seal", "`seal.py`: secrets/s", "secrets_per_s", "≥ 1,000"),
    ("seal", "`seal.py`: p99 ms", "p99_ms", "< 50"),
    ("seal", "`seal.py`: Cluster Manager CPU-ms per seal", "cpu_ms_per_op.cluster_manager",
     "≤ 1.0"),
    ("bootstrap", "`bootstrap.py`: GET p50 ms", "get_p50_ms", "< 3"),
    ("bootstrap", "`bootstrap.py`: CPU-ms per URL + GET, all", "cpu_ms_per_op_all", "≤ 3"),
    ("fleet", "`fleet.py`: connected edges", "connected_edges", "50,000"),
    ("fleet", "`fleet.py`: write p99 ms", "write_p99_ms", "< 50"),
    ("fleet", "`fleet.py`: Config Store CPU-ms per write", "config_store_cpu_ms_per_write", ""),
    ("fleet", "`fleet.py`: s until every edge is back after a replica restart",
     "restart_all_back_s", "≤ 60"),
]


def _cell(found: dict[str, Any] | None, figure: str) -> str:
    if found is None or figure not in found["median"]:
        return "—"
    med, low, high = (found[k][figure] for k in ("median", "min", "max"))
    return f"{_num(med)} ({_num(low)}–{_num(high)})"


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _load(directory: Path, name: str) -> dict[str, Any] | None:
    path = directory / f"{name}.json"
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    runs = found["runs"]
    for run in runs:
        _add_sums(run)
    return summarise(runs)


def _add_sums(run: dict[str, Any]) -> None:
    """Each per-process CPU figure's sum over the processes, as ``<figure>_all``
    (``cpu_ms_per_cluster`` for runs from before the bench printed that sum itself)."""
    for key in ("cpu_ms_per_op", "cpu_ms_per_patch", "cpu_ms_per_get"):
        if isinstance(run.get(key), dict):
            run[f"{key}_all"] = round(sum(v or 0 for v in run[key].values()), 2)
    if "cpu_ms_per_cluster" not in run and "cpu_ms_per_op_all" in run:
        run["cpu_ms_per_cluster"] = run["cpu_ms_per_op_all"]


def table(before: Path, after: Path) -> str:
    """The Markdown table (header and one row per figure)."""
    lines = ["| bench: figure | before: median (min–max) | after: median (min–max) | target |",
             "|---|---|---|---|"]
    for name, label, figure, target in ROWS:
        old, new = _load(before, name), _load(after, name)
        if old is None and new is None:
            continue
        lines.append(f"| {label} | {_cell(old, figure)} | {_cell(new, figure)} | {target} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    print(table(args.before, args.after))


if __name__ == "__main__":
    main()
