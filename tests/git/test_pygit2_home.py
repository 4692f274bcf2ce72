"""Only the Git package imports pygit2: every other module of fplus gets what it needs of Git
(reading, writing, mirroring, its errors) from :mod:`fplus.git`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "fplus"
HOME = PACKAGE / "git"


def imports_pygit2(path: Path) -> bool:
    """True if the module at ``path`` imports pygit2 (or one of its modules) anywhere."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(name == "pygit2" or name.startswith("pygit2.") for name in names):
            return True
    return False


def test_only_the_git_package_imports_pygit2() -> None:
    outside = sorted(str(path.relative_to(ROOT)) for path in PACKAGE.rglob("*.py")
                     if HOME not in path.parents and imports_pygit2(path))
    assert not outside, "modules outside fplus/git that import pygit2:\n  " + "\n  ".join(
        outside)


def test_the_scan_sees_an_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from pygit2.enums import FileMode\n")
    assert imports_pygit2(module)
    module.write_text("import pygit2_like\n")
    assert not imports_pygit2(module)
