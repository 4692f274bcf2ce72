"""Fixtures: the CRD validators (the shared CRDs) and the Flux template rendered per context."""

from __future__ import annotations

from typing import Any

import pytest

from tests.manifests.crds import SHARED_CRDS, CustomResource, load_crds
from tests.manifests.samples import CONTEXTS, render_flux
from tests.shared_files import need


@pytest.fixture(scope="session")
def crds() -> dict[tuple[str, str], CustomResource]:
    """Validators for every served CRD version, keyed (apiVersion, kind)."""
    found = load_crds(need(SHARED_CRDS))
    assert found, f"no CRDs in {SHARED_CRDS}"
    return found


@pytest.fixture(params=sorted(CONTEXTS))
def context_name(request: pytest.FixtureRequest) -> str:
    """The name of one sample context (every test using it runs once per context)."""
    return request.param


@pytest.fixture
def context(context_name: str) -> dict[str, Any]:
    """One sample render context."""
    return CONTEXTS[context_name]


@pytest.fixture
def rendered(context: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The default Flux template rendered with ``context``."""
    return render_flux(context)
