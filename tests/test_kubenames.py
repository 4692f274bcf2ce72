"""fplus.kubenames.checked: the one check-and-refuse behind bootstrap's and sealing's name
checks; each caller keeps its own exception and wording."""

from __future__ import annotations

import pytest

from fplus.bootstrap.credentials import credentials_manifest
from fplus.bootstrap.errors import BootstrapError
from fplus.cluster_manager.sealing import InvalidName, validate_namespace
from fplus.kubenames import checked, is_dns1123_label


def test_checked_returns_a_valid_value() -> None:
    assert checked("edge-1", is_dns1123_label, lambda: AssertionError("not called")) == "edge-1"


@pytest.mark.parametrize("value", ["Edge", "-x", "", 7, None, "a" * 64])
def test_checked_raises_the_callers_refusal(value: object) -> None:
    with pytest.raises(LookupError, match="refused"):
        checked(value, is_dns1123_label, lambda: LookupError("refused"))


def test_each_caller_keeps_its_exception_and_wording() -> None:
    with pytest.raises(BootstrapError, match=r"^namespace 'Bad' is not a DNS-1123 label$"):
        credentials_manifest("Bad", {"s": ("u", "p")})
    with pytest.raises(BootstrapError, match=r"^Secret name 'a_b' is not a DNS-1123 subdomain$"):
        credentials_manifest("ns", {"a_b": ("u", "p")})
    with pytest.raises(InvalidName, match=r"^namespace must be a DNS-1123 label .* not 'Bad'$"):
        validate_namespace("Bad")
