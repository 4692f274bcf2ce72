"""A Flux template's files rendered once per distinct input: a file is rendered again only
when the context values its placeholders read differ (:func:`fplus.templating.reads`). A
change previewed on many clusters renders each cluster's files once where the change leaves
their inputs alone (before and after share the result, so their comparison is free), and
once for the whole fleet where a file reads nothing of the cluster."""

from __future__ import annotations

from collections import OrderedDict

from fplus.jsontypes import Doc, JsonObject
from fplus.templating import placeholders, reads, render

KEEP = 512
"""Rendered files remembered (least recently used dropped): a cluster's files before and
after a change, and those every cluster shares."""


class FileRenders:
    """Renders one file of a Flux template at a time, remembering the latest results."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._specs: dict[tuple[int, str], list[str]] = {}
        self._done: OrderedDict[tuple[int, str, str], JsonObject] = OrderedDict()
        self._templates: dict[int, Doc] = {}  # keeps each template (and so its id) alive

    def __call__(self, template: Doc, name: str, ctx: Doc) -> JsonObject:
        """``{name: template[name]}`` rendered with ``ctx`` (the file dropped, ``{}``, where
        its name renders away), as :func:`fplus.templating.render` renders it."""
        self._templates.setdefault(id(template), template)
        where = (id(template), name)
        specs = self._specs.get(where)
        if specs is None:
            specs = self._specs[where] = sorted(placeholders({name: template[name]}))
        key = (*where, reads(specs, ctx))
        found = self._done.get(key)
        if found is None:
            found = render({name: template[name]}, ctx)
            self._done[key] = found
            if len(self._done) > self.keep:
                self._done.popitem(last=False)
        else:
            self._done.move_to_end(key)
        return found
