"""Where a mirror may fetch from: the URL rules of auto-pull mirrors, checked before any
connection is made.

- ``https`` always; ``http`` and ``git`` (plain text) only to a host the operator lists
  (``--mirror-http-host``);
- credentials (``auth.secretRef``) only over ``https``;
- the host name is resolved first, and every address it resolves to must be public: a
  loopback, link-local, private, shared, multicast, reserved or unspecified address is refused
  unless the operator allows them (``--mirror-allow-private``);
- then, with the addresses known, a URL that reaches this server itself (its own port on
  one of its addresses, ``http://localhost:<port>`` included) is refused.

The name is resolved again by libgit2 when it connects; what is checked here is what the
name meant a moment before.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from fplus.serving.http.addresses import is_wildcard

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]
DEFAULT_PORTS = {"http": 80, "https": 443, "git": 9418}


class MirrorUrlRefused(ValueError):
    """A mirror URL the rules refuse; the message says which rule."""


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (``getaddrinfo``; no connection is made)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise MirrorUrlRefused(f"{host} does not resolve: {exc}") from None
    return sorted({str(info[4][0]).split("%", 1)[0] for info in found})


def _is_local(address: Address) -> bool:
    """Is ``address`` one of this machine's own (binding to it works; nothing is sent)?"""
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((str(address), 0))
        return True
    return False


@dataclass(frozen=True)
class MirrorPolicy:
    """The operator's mirror settings and where this server is reached."""

    http_hosts: frozenset[str] = frozenset()
    """Hosts (names or addresses, lower case) that may be fetched from over plain text."""
    allow_private: bool = False
    """Loopback, link-local and private addresses allowed (tests, an internal upstream)."""
    own: frozenset[str] = frozenset()
    """``host:port`` this server listens and is advertised at."""
    resolver: Resolver = field(default=resolve, compare=False)

    @classmethod
    def of(cls, http_hosts: Iterable[str], allow_private: bool,
           own: Iterable[str]) -> MirrorPolicy:
        return cls(frozenset(h.lower().strip("[]") for h in http_hosts), allow_private,
                   frozenset(o.lower() for o in own))

    def check_spec(self, url: str, credentials: bool) -> None:
        """The rules that need no name resolution (a spec is left out when they fail)."""
        parts = urlsplit(url)
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            raise MirrorUrlRefused(f"{url!r} is not an http(s) or git URL")
        if parts.username is not None or parts.password is not None:
            raise MirrorUrlRefused(f"{_safe(url)!r} carries credentials in the URL: name a "
                                   "file with auth.secretRef")
        if parts.scheme != "https":
            if credentials:
                raise MirrorUrlRefused(f"{url!r}: credentials (auth.secretRef) are sent "
                                       "over https only")
            if parts.hostname.lower() not in self.http_hosts:
                raise MirrorUrlRefused(f"{url!r} is not https and {parts.hostname} is not "
                                       "listed for plain text (--mirror-http-host)")
        netloc = parts.netloc.rsplit("@", 1)[-1].lower()
        if {netloc, f"{parts.hostname.lower()}:{self._port(url)}"} & self.own:
            raise MirrorUrlRefused(f"{url!r} names this server: a repo cannot mirror it")

    def check_addresses(self, url: str) -> list[str]:
        """Resolve the URL's host and refuse private addresses and this server; the
        addresses (checked before every fetch, so a name that moves is caught)."""
        parts = urlsplit(url)
        assert parts.hostname is not None
        port = self._port(url)
        addresses = self.resolver(parts.hostname, port)
        if not addresses:
            raise MirrorUrlRefused(f"{parts.hostname} resolves to no address")
        for text in addresses:
            address = ipaddress.ip_address(text)
            if not self.allow_private and (not address.is_global or address.is_multicast):
                raise MirrorUrlRefused(f"{parts.hostname} resolves to {address}, a loopback, "
                                       "link-local, private or reserved address "
                                       "(--mirror-allow-private)")
            if self._is_own(address, port):
                raise MirrorUrlRefused(f"{url!r} reaches this server ({address} port "
                                       f"{port}): a repo cannot mirror it")
        return addresses

    def _is_own(self, address: Address, port: int) -> bool:
        for own in self.own:
            host, _, own_port = own.rpartition(":")
            if not own_port.isdigit() or int(own_port) != port:
                continue
            host = host.strip("[]")
            if address.is_loopback or (is_wildcard(host) and _is_local(address)):
                return True
            with contextlib.suppress(MirrorUrlRefused, ValueError):
                if str(address) in self.resolver(host, port):
                    return True
        return False

    @staticmethod
    def _port(url: str) -> int:
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            raise MirrorUrlRefused(f"{url!r} has a malformed port") from None
        return port or DEFAULT_PORTS[parts.scheme]


STRICT = MirrorPolicy()
"""The defaults: https to public addresses only."""


def _safe(url: str) -> str:
    """``url`` without its userinfo (never logged)."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl()
