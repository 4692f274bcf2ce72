"""The documentation's relative links lead somewhere: every linked file exists, and every
``#anchor`` into a Markdown file names one of its headings (as GitHub spells anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to
    hyphens (repeated headings, which get a suffix, are not used here)."""
    headings = re.findall(r"^#{1,6} (.+)$", FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(FENCE.sub("", page.read_text()))
            if not re.match(r"[a-z]+:", target)]  # http:, https:, mailto: are not ours


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_docs_map_lists_every_page() -> None:
    """docs/README.md is the table of contents: each page of docs/ is in it."""
    listed = {target.partition("#")[0] for target in links(ROOT / "docs" / "README.md")}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert pages <= listed


DOTTED = re.compile(r"(?<![\w./-])fplus(?:\.[A-Za-z_]\w*)+")
FILE_PATH = re.compile(r"(?<![\w./-])fplus/[\w./*-]*[\w/*]")


def _resolves(dotted: str) -> bool:
    """A dotted name is a module, a package, or an attribute of one (its last parts may be
    a class, function or constant defined in the module)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        module = base.with_suffix(".py") if end > 1 else base
        package = base / "__init__.py"
        if module.is_file() or package.is_file():
            if end == len(parts):
                return True
            source = (module if module.is_file() else package).read_text()
            name = parts[end]
            return bool(re.search(rf"^\s*(?:class|def|async def)\s+{name}\b|^{name}\s*[:=]"
                                  rf"|\bimport\b.*\b{name}\b", source, re.M))
    return False


def module_references(page: Path) -> list[str]:
    """Each ``fplus.…`` dotted name and ``fplus/…`` path a page names that does not exist."""
    text = page.read_text()
    missing = [name for name in DOTTED.findall(text) if not _resolves(name.rstrip("."))]
    for path in FILE_PATH.findall(text):
        cleaned = path.rstrip("./")
        if not (any(ROOT.glob(cleaned)) if "*" in cleaned else (ROOT / cleaned).exists()):
            missing.append(path)
    return missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_modules_exist(page: Path) -> None:
    """Docs naming a module, package or file of fplus name one that exists (so a move or a
    removal that forgets the docs fails here)."""
    missing = module_references(page)
    assert not missing, sorted(set(missing))
