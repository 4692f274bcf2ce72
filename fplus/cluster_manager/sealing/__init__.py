"""Secret sealing byte-compatible with Bitnami Sealed Secrets (``kubeseal``), in-process.

- :mod:`~cluster_manager.sealing.cert` — the controller certificate → RSA public key (checked).
- :mod:`~cluster_manager.sealing.hybrid` — RSA-OAEP-SHA256 + AES-256-GCM wire format.
- :mod:`~cluster_manager.sealing.scope` — strict / namespace-wide / cluster-wide labels and
  annotations.
- :mod:`~cluster_manager.sealing.seal` — one value ↔ one base64 ``encryptedData`` string.
- :mod:`~cluster_manager.sealing.manifest` — the SealedSecret document and per-key merge/remove.
- :mod:`~cluster_manager.sealing.names` — namespace, name and key validation.

Every error is a :class:`SealingError` (a ``ValueError``) whose message is safe to show.
"""

from fplus.cluster_manager.sealing.cert import load_certificate, public_key_fingerprint
from fplus.cluster_manager.sealing.errors import (
    CertificateError,
    DecryptionError,
    InvalidCiphertext,
    InvalidName,
    ManifestError,
    ScopeConflict,
    ScopeError,
    SealingError,
)
from fplus.cluster_manager.sealing.hybrid import hybrid_decrypt, hybrid_encrypt
from fplus.cluster_manager.sealing.manifest import (
    API_VERSION,
    KIND,
    manifest_scope,
    merge_key,
    remove_key,
    sealed_keys,
    sealed_secret,
    secret_path,
)
from fplus.cluster_manager.sealing.names import validate_key, validate_name, validate_namespace
from fplus.cluster_manager.sealing.scope import (
    CLUSTER_WIDE,
    CLUSTER_WIDE_ANNOTATION,
    NAMESPACE_WIDE,
    NAMESPACE_WIDE_ANNOTATION,
    SCOPES,
    STRICT,
    encryption_label,
    parse_scope,
    scope_annotations,
)
from fplus.cluster_manager.sealing.seal import decrypt_value, encrypt_value

__all__ = [
    "API_VERSION",
    "CLUSTER_WIDE",
    "CLUSTER_WIDE_ANNOTATION",
    "KIND",
    "NAMESPACE_WIDE",
    "NAMESPACE_WIDE_ANNOTATION",
    "SCOPES",
    "STRICT",
    "CertificateError",
    "DecryptionError",
    "InvalidCiphertext",
    "InvalidName",
    "ManifestError",
    "ScopeConflict",
    "ScopeError",
    "SealingError",
    "decrypt_value",
    "encrypt_value",
    "encryption_label",
    "hybrid_decrypt",
    "hybrid_encrypt",
    "load_certificate",
    "manifest_scope",
    "merge_key",
    "parse_scope",
    "public_key_fingerprint",
    "remove_key",
    "scope_annotations",
    "sealed_keys",
    "sealed_secret",
    "secret_path",
    "validate_key",
    "validate_name",
    "validate_namespace",
]
