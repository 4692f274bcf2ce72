"""``cluster-manager`` command."""

from __future__ import annotations

import argparse
from pathlib import Path

from .up import up


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="cluster-manager", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("up", help="run the all-in-one stack on 127.0.0.1")
    run.add_argument("--data-dir", type=Path, default=Path(".data"))
    run.add_argument("--port", type=int, default=8700,
                     help="Cluster Manager port; Config Store on P+1, Git server on P+2")
    args = parser.parse_args(argv)
    up(args.data_dir, args.port)


if __name__ == "__main__":
    main()
