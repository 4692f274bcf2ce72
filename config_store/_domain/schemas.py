"""Per-app JSON Schema validation through the ConfigSchema app (422 on failure)."""

from __future__ import annotations

import threading
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from .. import uuids
from .._storage import Reader, SQLiteStorage
from .errors import Conflict, Unprocessable
from .jsonvalue import parse

_FORMATS = Draft202012Validator.FORMAT_CHECKER


def compile_schema(schema: Any) -> Draft202012Validator:
    """A validator for ``schema``; 422 if it is not a valid JSON Schema."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise Unprocessable(f"invalid JSON schema: {exc.message}") from exc
    return Draft202012Validator(schema, format_checker=_FORMATS)


def errors_of(validator: Draft202012Validator, value: Any) -> list[str]:
    """Readable validation errors (empty when valid)."""
    out = []
    for err in validator.iter_errors(value):
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message}")
    return sorted(out)


class SchemaCache:
    """Compiled validators keyed by the schema entry's etag."""

    def __init__(self, storage: SQLiteStorage) -> None:
        self.storage = storage
        self._lock = threading.Lock()
        self._compiled: dict[str, tuple[str, Draft202012Validator]] = {}

    def validator(self, app: str) -> Draft202012Validator | None:
        """The validator for ``app``'s entries, or None if it has no schema."""
        stored = self.storage.reader().get_config(uuids.App.ConfigSchema, app)
        if stored is None:
            return None
        text, etag = stored
        with self._lock:
            hit = self._compiled.get(app)
        if hit and hit[0] == etag:
            return hit[1]
        validator = Draft202012Validator(parse(text), format_checker=_FORMATS)
        with self._lock:
            self._compiled[app] = (etag, validator)
        return validator

    def validate(self, app: str, value: Any) -> None:
        """422 unless ``value`` satisfies ``app``'s schema."""
        validator = self.validator(app)
        if validator is not None:
            errors = errors_of(validator, value)
            if errors:
                raise Unprocessable("schema validation failed: " + "; ".join(errors[:10]),
                                    body={"errors": errors})

    def check_new_schema(self, reader: Reader, app: str, schema: Any) -> None:
        """Before a schema is stored: 422 if invalid, 409 if existing entries fail it."""
        validator = compile_schema(schema)
        failing = [obj for obj, text, _ in reader.config_entries(app)
                   if errors_of(validator, parse(text))]
        if failing:
            raise Conflict("existing entries do not satisfy the new schema", body=failing)
