"""SecretDocuments: a secret file written by one seal is not parsed again by the next."""

from __future__ import annotations

import base64

import pytest

from fplus.cluster_manager import sealing
from fplus.cluster_manager.services.secrets import documents as secret_documents
from fplus.cluster_manager.services.secrets.documents import SecretDocuments

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
    text = b"# written by hand\n" + secret_documents.render_document(
        _doc({"user": CIPHER})).encode()
    first, second = docs.parse(text), docs.parse(text)
    assert first == second == _doc({"user": CIPHER}) and len(calls) == 1


def test_a_text_another_process_rendered_is_read_without_pyyaml(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What another Cluster Manager process wrote (never rendered here) reads back without
    PyYAML, as the same document."""
    text = secret_documents.render_document(_doc({"user": CIPHER, "pass": CIPHER})).encode()
    monkeypatch.setattr(secret_documents, "load_documents",
                        lambda _text: pytest.fail("parsed by PyYAML"))
    assert SecretDocuments().parse(text) == _doc({"user": CIPHER, "pass": CIPHER})


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
    real = secret_documents.document
    monkeypatch.setattr(secret_documents, "document",
                        lambda text: calls.append(1) or real(text))
    docs.parse(texts[2])
    docs.parse(texts[1])
    assert calls == []  # the two most recent are remembered
    docs.parse(texts[0])
    assert calls == [1]  # the oldest was dropped


# Strings of every kind the fast path meets or must leave to PyYAML: ciphertext-like base64,
# names, words YAML resolves to other types (written quoted), and ones it cannot write plain.
WORDS = ["k", "a.b-c_d", "A/B+C=", "Ag==", "v1.2.3", "x" * 127, "x" * 128, "true", "True",
         "yes", "NO", "on", "null", "Null", "~", "123", "08", "1.5", "1e5", ".inf", "nan",
         "0x1f", "0o7", "0b101", "1_000", "+1", "-1", "1-2", "12:30", "190:20:30",
         "2001-12-14", "2001-12-14t21:59:43.10-05:00", "a:b", "a b", "-x", "=", "<<", "#a",
         "a#b", "", "é", "it's", "line\nbreak"]
KEYS = [w for w in WORDS if w.isascii() and w and all(c.isalnum() or c in "-._" for c in w)]


def _documents() -> list[dict]:
    """Every scope, key and label combination of :data:`WORDS` our documents can hold."""
    docs: list[dict] = []
    values = [CIPHER, "AgBx" + "x/+Q" * 179 + "xx=="]
    for scope in sealing.SCOPES:
        for i, key in enumerate(KEYS):
            doc = sealing.sealed_secret("ns", "db", {key: values[i % 2], "z": CIPHER}, scope)
            docs.append(doc)
        for word in WORDS:
            labelled = sealing.sealed_secret("ns", "db", {"k": CIPHER}, scope)
            labelled["metadata"]["labels"] = {word or "empty": word, "n": "x"}
            docs.append(labelled)
    odd = sealing.sealed_secret("ns", "db", {"k": CIPHER})
    docs += [odd | {"extra": value} for value in (1, True, None, [], ["a"], {}, {"a": {}})]
    shared = sealing.sealed_secret("ns", "db", {"k": CIPHER})
    shared["spec"]["template"]["metadata"] = shared["metadata"]  # PyYAML writes an alias
    return [*docs, shared, {}]


@pytest.mark.parametrize("doc", _documents())
def test_the_fast_rendering_is_pyyaml_s_text_or_nothing(doc: dict) -> None:
    fast = secret_documents.plain_yaml(doc)
    assert fast is None or fast == secret_documents.render_document(doc)


def test_the_documents_seals_write_are_rendered_without_pyyaml(
        monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {s: secret_documents.render_document(sealing.sealed_secret(
        "ns", "db", {"user": CIPHER, "pass": CIPHER}, s)) for s in sealing.SCOPES}
    monkeypatch.setattr(secret_documents, "render_document",
                        lambda _doc: pytest.fail("rendered by PyYAML"))
    for scope, text in expected.items():
        assert SecretDocuments().render(sealing.sealed_secret(
            "ns", "db", {"user": CIPHER, "pass": CIPHER}, scope)) == text


@pytest.mark.parametrize("doc", _documents())
def test_the_fast_reading_is_pyyaml_s_document_or_nothing(doc: dict) -> None:
    text = secret_documents.render_document(doc)
    fast = secret_documents.plain_document(text.encode())
    assert fast is None or fast == secret_documents.load_documents(text)[0]
    if secret_documents.plain_yaml(doc) is not None:
        assert fast == doc  # whatever the fast rendering writes, the fast reading reads


@pytest.mark.parametrize("text", [
    "a: true\n", "a: 1\n", "a:\n", "a:\n  b: c\n  b: d\n", "a: b\n c: d\n", "- a\n",
    "'a': b\n", "a: 'x'\n", "a: 'b c'\n", "a: b", "a: b\n\n", "a: &x b\n", "a: *x\n",
    "a: b # c\n", "a:\n    b: c\n", "a: \"b\"\n", "a: b\r\n", "\ufeffa: b\n", "a: {b: c}\n",
    "---\na: b\n", "a: b\n---\nc: d\n", "a:  b\n", "a: b \n", "a : b\n", "a:\tb\n"])
def test_anything_else_is_left_to_pyyaml(text: str) -> None:
    assert secret_documents.plain_document(text.encode()) is None


def test_deep_maps_are_left_to_pyyaml() -> None:
    deep = "".join(f"{'  ' * i}k{i}:\n" for i in range(40)) + "  " * 40 + "v: x\n"
    assert secret_documents.plain_document(deep.encode()) is None
