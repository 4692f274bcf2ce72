"""The exceptions of :mod:`fplus.cluster_manager.sealing`; all are ``ValueError`` (bad input).

Messages never contain secret values or certificate/key material, so they may be returned to
HTTP clients (as 4xx bodies) and logged.
"""

from __future__ import annotations


class SealingError(ValueError):
    """Base class: something about the input makes sealing (or unsealing) impossible."""


class CertificateError(SealingError):
    """The sealing certificate is unparsable, has no RSA key, or is outside its validity period."""


class InvalidName(SealingError):
    """A namespace, secret name or secret key that Kubernetes (or our repo layout) refuses."""


class ScopeError(SealingError):
    """An unknown sealing scope."""


class InvalidCiphertext(SealingError):
    """A value offered as ``encryptedData`` that is not standard base64 ciphertext."""


class ManifestError(SealingError):
    """An existing SealedSecret document that cannot take the requested change."""


class ScopeConflict(ManifestError):
    """The existing SealedSecret holds other keys sealed under a different scope."""


class DecryptionError(SealingError):
    """A ciphertext that does not decrypt with the given key and label."""
