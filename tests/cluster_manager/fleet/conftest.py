"""The fleet modules' stack and root Cluster Manager session."""

from __future__ import annotations

import pytest

from harness.servers import Api
from harness.stack import Stack


@pytest.fixture(scope="module")
def stack(module_stack: Stack) -> Stack:
    """A stack of each module's own: listings, gauges and rollouts count every fleet
    deployment, and the leader's loops act on everything they see."""
    return module_stack


@pytest.fixture(scope="module")
def root(stack: Stack) -> Api:
    """The Cluster Manager's API as the Config Store's root principal."""
    return Api(stack.manager.url, stack.admin.auth)
