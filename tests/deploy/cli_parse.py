"""Parse command lines with the services' real argparse parsers, in a child process: importing
the CLI modules monkey-patches for gevent, which the test process must not be."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

_CHILD = """
import contextlib, io, json, sys
from fplus.cluster_manager.main import build_parser as cluster_manager
from fplus.config_store.main import build_parser as config_store
from fplus.git_server.main import build_parser as git_server
parsers = {"config-store": config_store, "git-server": git_server,
           "cluster-manager": cluster_manager}
results = []
for argv in json.load(sys.stdin):
    if argv[0] not in parsers:
        results.append({"error": f"{argv[0]} is no service command"})
        continue
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = parsers[argv[0]]().parse_args(argv[1:])
    except SystemExit:
        results.append({"error": stderr.getvalue().strip()})
    else:
        results.append({k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v)
                        for k, v in vars(args).items()})
print(json.dumps(results))
"""


def parse_command_lines(lines: list[list[str]]) -> list[dict[str, Any]]:
    """For each ``[program, *args]``: the parsed options, or ``{"error": message}``."""
    done = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(lines),
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)
