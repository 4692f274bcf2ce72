"""Per-app JSON Schema validation through the ConfigSchema app (422 on failure)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError

from ... import uuids
from ..._storage import Reader, Storage
from ..common.errors import Conflict, Unprocessable
from ..common.events import ConfigChanged, Event, EventBus, Resynced
from ..common.jsonvalue import parse

_FORMATS = Draft202012Validator.FORMAT_CHECKER


def compile_schema(schema: object) -> Draft202012Validator:
    """A validator for ``schema``; 422 if it is not a valid JSON Schema."""
    try:
        checked = _schema_doc(schema)
        Draft202012Validator.check_schema(checked)
    except SchemaError as exc:
        raise Unprocessable(f"invalid JSON schema: {exc.message}") from exc
    return Draft202012Validator(checked, format_checker=_FORMATS)


def _schema_doc(value: object) -> Mapping[str, object] | bool:
    """``value`` as a schema: a JSON object or a boolean; else the metaschema's refusal."""
    if isinstance(value, dict | bool):
        return value
    raise SchemaError(f"{value!r} is not of type 'object', 'boolean'")


def errors_of(validator: Draft202012Validator, value: object) -> list[str]:
    """Readable validation errors (empty when valid), each ``<JSON path>: <what is wrong>``."""
    return sorted(f"{json_path(err.absolute_path)}: {_explain(err)}"
                  for err in validator.iter_errors(value))


_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_SHOWN = 80


def json_path(path: Iterable[str | int]) -> str:
    """A JSON path in dotted form: ``spec.items[0].name``, ``["odd key"]``; ``(root)``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(root)"


def _explain(err: ValidationError) -> str:
    """jsonschema's message, except for a ``pattern`` failure, whose message shows the
    escaped regex: that says the value does not match, with the schema's description."""
    if err.validator != "pattern":
        return err.message
    shown = repr(err.instance)
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN - 4] + "...'"
    described = err.schema.get("description") if isinstance(err.schema, dict) else None
    why = f" ({described.strip()})" if isinstance(described, str) and described.strip() else ""
    return f"{shown} does not match the required pattern{why}"


class SchemaCache:
    """Compiled validators per app, dropped when the app's ConfigSchema entry changes.

    Inside a batch that has written an app's schema, that app's entries are checked against
    the schema as written (never cached: the batch may still roll back)."""

    def __init__(self, storage: Storage, events: EventBus,
                 pending: Callable[[str], Reader | None] = lambda app: None) -> None:
        self.storage = storage
        self._pending = pending
        self._lock = threading.Lock()
        self._compiled: dict[str, Draft202012Validator | None] = {}
        events.subscribe(self._on_events)

    def _on_events(self, events: Sequence[Event], number: int = 0) -> None:
        if any(isinstance(e, Resynced) for e in events):
            with self._lock:
                self._compiled.clear()
            return
        changed = [e.obj for e in events
                   if isinstance(e, ConfigChanged) and e.app == uuids.App.ConfigSchema]
        if changed:
            with self._lock:
                for app in changed:
                    self._compiled.pop(app, None)

    def validator(self, app: str) -> Draft202012Validator | None:
        """The validator for ``app``'s entries, or None if it has no schema."""
        pending = self._pending(app)
        if pending is not None:
            written = pending.get_config(uuids.App.ConfigSchema, app)
            return (Draft202012Validator(_schema_doc(parse(written[0])), format_checker=_FORMATS)
                    if written else None)
        with self._lock:
            if app in self._compiled:
                return self._compiled[app]
        stored = self.storage.reader().get_config(uuids.App.ConfigSchema, app)
        validator = (Draft202012Validator(_schema_doc(parse(stored[0])), format_checker=_FORMATS)
                     if stored else None)
        with self._lock:
            self._compiled[app] = validator
        return validator

    def validate(self, app: str, value: object) -> None:
        """422 unless ``value`` satisfies ``app``'s schema."""
        validator = self.validator(app)
        if validator is not None:
            errors = errors_of(validator, value)
            if errors:
                raise Unprocessable("schema validation failed: " + "; ".join(errors[:10]),
                                    body={"errors": errors})

    def check_new_schema(self, reader: Reader, app: str, schema: object) -> None:
        """Before a schema is stored: 422 if invalid, 409 if existing entries fail it."""
        validator = compile_schema(schema)
        failing = [obj for obj, text, _ in reader.config_entries(app)
                   if errors_of(validator, parse(text))]
        if failing:
            raise Conflict("existing entries do not satisfy the new schema", body=failing)
