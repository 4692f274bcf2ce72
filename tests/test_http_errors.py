"""Every service's status-carrying refusals derive from the one base, fplus.serving.HttpError."""

from __future__ import annotations

import pytest

from fplus.cluster_manager.services import errors as manager
from fplus.config_store._domain.common import errors as store
from fplus.serving import HttpError


@pytest.mark.parametrize("cls", [manager.ApiError, store.DomainError])
def test_both_services_refusals_are_http_errors(cls: type[HttpError]) -> None:
    assert issubclass(cls, HttpError) and cls.status == 500


def test_what_each_service_passes_is_kept() -> None:
    busy = manager.TooMany("slow down", retry_after=7)
    assert (busy.status, busy.message, busy.retry_after, str(busy)) == (429, "slow down", 7,
                                                                        "slow down")
    refused = store.Unprocessable("bad", {"errors": ["x"]})
    assert (refused.status, refused.message, refused.body) == (422, "bad", {"errors": ["x"]})
    assert store.NotFound().message == "" and store.NotFound().body is None
