"""What the batch route's tests share: an operation on one entry, in the wire format."""

from __future__ import annotations

from typing import Any


def entry_op(method: str, app: str, obj: str, body: Any = None,
             **extra: Any) -> dict[str, Any]:
    """A batch operation on the ``app`` entry of ``obj`` (``extra``: headers, accept)."""
    op = {"method": method, "path": f"/v2/app/{app}/object/{obj}", **extra}
    if body is not None:
        op["body"] = body
    return op
