"""Addresses that reach a service: parsing ``--advertise``, and telling loopback ones apart.

A URL handed to an edge (a bootstrap URL, the Git self-link, the Config Store URL in its
configuration) must name an address the edge can reach; a loopback one works only on the
machine that serves it.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


class BadAddress(ValueError):
    """Not a host name or an IP address."""


def host_or_ip(value: str) -> str:
    """``value`` as a host for URLs (an IPv6 address in brackets); :class:`BadAddress` if it
    is neither a DNS name nor an IP address (no scheme, port, path or user part)."""
    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        labels = value.rstrip(".").split(".")
        if not value or len(value) > 253 or not all(_LABEL.fullmatch(x) for x in labels):
            raise BadAddress(f"{value!r} is not a host name or an IP address (give "
                             "e.g. 192.168.1.20 or manager.factory.example)") from None
        return value.rstrip(".").lower()
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host, IPv6 bracketed or not) is a loopback address or
    ``localhost``."""
    bare = host.strip("[]").lower().rstrip(".")
    if bare == "localhost" or bare.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is loopback (see :func:`is_loopback`)."""
    return is_loopback(urlsplit(url).hostname or "")


def is_ip(host: str) -> bool:
    """Whether ``host`` (IPv6 bracketed or not) is an IP address rather than a name."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def is_wildcard(host: str) -> bool:
    """Whether listening on ``host`` means every address (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False
