"""Validation of the three user-supplied path parts: namespace, secret name and secret key.

They become OAEP labels, Kubernetes object names and a path in the cluster repository
(``edo/secrets/<namespace>/<name>.yaml``), so nothing outside these rules reaches the crypto or
the repo writer (``../x`` or ``a/b`` could otherwise escape ``edo/secrets``).

Rules (Kubernetes' own, apimachinery ``validation.go``, except where noted):

- **namespace**: a DNS-1123 *label* (namespaces are labels): lower-case alphanumerics and ``-``,
  starting and ending alphanumeric, at most 63 characters.
- **name**: a DNS-1123 *subdomain* (what Kubernetes allows for Secret and SealedSecret names):
  labels as above joined by ``.``. Subdomains, not labels, because real callers exceed 63
  characters (the Manager's ``edge-agent-sensitive-information-<node uuid>`` is 69). Kubernetes
  allows 253 characters; **we allow 250**, so the file name ``<name>.yaml`` fits the 255-byte
  file name limit of the edge's Git checkout (Flux extracts it to disk).
- **key**: a Secret data key (``IsConfigMapKey``): ``[-._a-zA-Z0-9]+``, at most 253 characters,
  not ``.`` or ``..`` and not starting with ``..``. Upper case is allowed here.
"""

from __future__ import annotations

from fplus.cluster_manager.sealing.errors import InvalidName
from fplus.kubenames import (
    KEY_MAX,
    checked,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_secret_key,
)
from fplus.kubenames import LABEL_MAX as NAMESPACE_MAX

NAME_MAX = 250  # Kubernetes: 253; 250 keeps "<name>.yaml" within a 255-byte file name


def validate_namespace(namespace: object) -> str:
    """``namespace`` if it is a DNS-1123 label, else :class:`InvalidName`."""
    return checked(namespace, is_dns1123_label, lambda: InvalidName(
        f"namespace must be a DNS-1123 label (lower-case letters, digits and '-', starting "
        f"and ending with a letter or digit, at most {NAMESPACE_MAX} characters), not "
        f"{_show(namespace)}"))


def validate_name(name: object) -> str:
    """``name`` if it is a DNS-1123 subdomain of at most 250 characters, else
    :class:`InvalidName`."""
    return checked(name, lambda value: is_dns1123_subdomain(value, NAME_MAX), lambda: InvalidName(
        f"secret name must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
        f"each dot-separated part starting and ending with a letter or digit, at most "
        f"{NAME_MAX} characters), not {_show(name)}"))


def validate_key(key: object) -> str:
    """``key`` if it is a valid Secret data key, else :class:`InvalidName`."""
    return checked(key, is_secret_key, lambda: _key_refusal(key))


def _key_refusal(key: object) -> InvalidName:
    if isinstance(key, str) and (key in (".", "..") or key.startswith("..")):
        return InvalidName(f"secret key must not be '.' or '..' or start with '..', not {key!r}")
    return InvalidName(f"secret key must consist of letters, digits, '-', '_' and '.' (at most "
                       f"{KEY_MAX} characters), not {_show(key)}")


def _show(value: object) -> str:
    """A short, safe rendering of a rejected value for error messages."""
    if not isinstance(value, str):
        return f"a {type(value).__name__}"
    if not value:
        return "an empty string"
    if len(value) > 80:
        return f"{value[:40]!r}… ({len(value)} characters)"
    return repr(value)
