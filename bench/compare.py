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
    # (file name, row label, figure, target)
    ("seal", "`seal.py`: secrets/s", "secrets_per_s", "≥ 800"),
    ("seal", "`seal.py`: p99 ms", "p99_ms", "< 100"),
    ("seal", "`seal.py`: Cluster Manager CPU-ms per seal", "cpu_ms_per_op.cluster_manager",
     "≤ 1.2"),
    ("commission1k", "`commission.py --clusters 1000`: s to all ready",
     "seconds_to_all_ready", "≤ 15"),
    ("commission1k", "`commission.py --clusters 1000`: `ratio_vs_acs`", "ratio_vs_acs", "≥ 15"),
    ("commission1k", "`commission.py --clusters 1000`: CPU-ms per cluster, Config Store",
     "cpu_ms_per_op.config_store", ""),
    ("commission1k", "`commission.py --clusters 1000`: CPU-ms per cluster, Cluster Manager",
     "cpu_ms_per_op.cluster_manager", ""),
    ("commission1k", "`commission.py --clusters 1000`: CPU-ms per cluster, Git server",
     "cpu_ms_per_op.git_server", ""),
    ("commission1k", "`commission.py --clusters 1000`: CPU-ms per cluster, all",
     "cpu_ms_per_cluster", "≤ 15"),
    ("commission10k", "`commission.py --clusters 10000`: s to all ready",
     "seconds_to_all_ready", "all ready"),
    ("commission10k", "`commission.py --clusters 10000`: CPU-ms per cluster, all",
     "cpu_ms_per_cluster", "≤ 1.2× the 1,000 run"),
    ("bootstrap", "`bootstrap.py`: GET p50 ms", "get_p50_ms", "< 5"),
    ("bootstrap", "`bootstrap.py`: CPU-ms per URL + GET, Cluster Manager",
     "cpu_ms_per_op.cluster_manager", ""),
    ("bootstrap", "`bootstrap.py`: CPU-ms per URL + GET, Config Store",
     "cpu_ms_per_op.config_store", ""),
    ("config_store", "`config_store.py`: PATCH/s", "patch_per_s", "≥ 2,000"),
    ("config_store", "`config_store.py`: GET/s", "get_per_s", "≥ 3,000"),
    ("config_store", "`config_store.py`: notify p99 ms", "notify_p99_ms", "< 30"),
    ("config_store", "`config_store.py`: CPU-ms per PATCH", "cpu_ms_per_patch.config_store", ""),
    ("config_store", "`config_store.py`: CPU-ms per GET", "cpu_ms_per_get.config_store", ""),
    ("config_store_pg", "`config_store.py` on PostgreSQL: PATCH/s", "patch_per_s", "≥ 2,000"),
    ("config_store_pg", "`config_store.py` on PostgreSQL: GET/s", "get_per_s", "≥ 3,000"),
    ("config_store_pg", "`config_store.py` on PostgreSQL: notify p99 ms", "notify_p99_ms",
     "< 30"),
    ("commission1k_pg", "`commission.py --clusters 1000` on PostgreSQL: s to all ready",
     "seconds_to_all_ready", "≤ 15"),
    ("commission1k_pg", "`commission.py --clusters 1000` on PostgreSQL: CPU-ms per cluster, all",
     "cpu_ms_per_cluster", "≤ 15"),
    ("fleet", "`fleet.py --edges 10000 --no-connect`: write p99 ms", "write_p99_ms", "< 50"),
    ("fleet", "`fleet.py --edges 10000 --no-connect`: Config Store CPU-ms per write",
     "config_store_cpu_ms_per_write", ""),
    ("fleet", "`fleet.py --edges 10000 --no-connect`: s until every edge is back after a "
     "restart", "restart_all_back_s", "≤ 60"),
    ("repo_writer", "`repo_writer.py`: changes/s, 16 writers (batched)", "ops_per_s", ""),
    ("repo_writer", "`repo_writer.py`: CPU-ms per change, 16 writers", "cpu_ms_per_op.writer",
     ""),
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
    for run in runs:  # runs from before the bench printed the sum itself
        if "cpu_ms_per_cluster" not in run and isinstance(run.get("cpu_ms_per_op"), dict):
            run["cpu_ms_per_cluster"] = round(sum(v or 0 for v in run["cpu_ms_per_op"].values()),
                                              2)
    return summarise(runs)


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
