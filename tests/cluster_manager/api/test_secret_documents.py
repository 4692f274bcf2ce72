"""SecretDocuments: a secret file written by one seal is not parsed again by the next."""

from __future__ import annotations

import base64

import pytest

from fplus.cluster_manager import sealing
from fplus.cluster_manager.api import secret_documents
from fplus.cluster_manager.api.secret_documents import SecretDocuments

CIPHER = base64.b64encode(b"sealed bytes").decode()


def _doc(keys: dict[str, str]) -> dict:
    return sealing.sealed_secret("ns", "db", keys)


def test_a_rendered_text_parses_back_without_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = SecretDocuments()
    text = docs.render(_doc({"user": CIPHER}))
    monkeypatch.setattr(secret_documents, "load_documents",
                        lambda _text: pytest.fail("parsed again"))
    assert docs.parse(text.encode()) == _doc({"user": CIPHER})


def test_a_text_it_did_not_write_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    docs, calls = SecretDocuments(), []
    real = secret_documents.load_documents
    monkeypatch.setattr(secret_documents, "load_documents",
                        lambda text: calls.append(1) or real(text))
    text = secret_documents.render_document(_doc({"user": CIPHER})).encode()
    first, second = docs.parse(text), docs.parse(text)
    assert first == second == _doc({"user": CIPHER}) and len(calls) == 1


@pytest.mark.parametrize("content, expected", [(None, None), (b"", None), (b"---\n", None)])
def test_absent_or_empty_files_are_no_document(content: bytes | None, expected: None) -> None:
    assert SecretDocuments().parse(content) is expected


def test_unparsable_yaml_is_a_manifest_error_every_time() -> None:
    docs = SecretDocuments()
    for _ in range(2):
        with pytest.raises(sealing.ManifestError, match="unparsable YAML"):
            docs.parse(b"spec: [unclosed\n")


def test_it_remembers_at_most_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = SecretDocuments(size=2)
    texts = [docs.render(_doc({f"k{i}": CIPHER})).encode() for i in range(3)]
    calls = []
    real = secret_documents.load_documents
    monkeypatch.setattr(secret_documents, "load_documents",
                        lambda text: calls.append(1) or real(text))
    docs.parse(texts[2])
    docs.parse(texts[1])
    assert calls == []  # the two most recent are remembered
    docs.parse(texts[0])
    assert calls == [1]  # the oldest was dropped
