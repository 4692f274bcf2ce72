"""An import-linter contract type for setup.cfg: a forbidden contract whose forbidden modules
are found, not listed.

``private_of`` names packages; every module under them is forbidden when a part of its dotted
name starts with ``_`` (private) or it is a ``cli`` module (a command: public as a command, run
with ``python -m <package>.cli``, never imported; the ``fplus.cli`` package is the fplus
command's library, not such a module). A module added later is covered without editing
the contract. Other options are the forbidden contract's (``allow_indirect_imports`` …).
"""

from __future__ import annotations

from typing import cast

from grimp import ImportGraph
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.domain import fields
from importlinter.domain.contract import ContractCheck
from importlinter.domain.imports import ModuleExpression


def is_private(module: str, is_package: bool = False) -> bool:
    """Whether ``module`` is private or a command module (see the module's docstring)."""
    parts = module.split(".")
    return (any(part.startswith("_") for part in parts)
            or (parts[-1] == "cli" and not is_package))


class PrivateModulesContract(ForbiddenContract):
    """Source modules import no private module (nor command module) of ``private_of``."""

    type_name = "private_modules"

    private_of = fields.ListField(subfield=fields.StringField())
    forbidden_modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """The forbidden contract's check over the private modules found in ``graph``."""
        roots: tuple[str, ...] = tuple(cast("list[str]", self.private_of))
        packages = {module.rpartition(".")[0] for module in graph.modules}
        found = {module for module in graph.modules if is_private(module, module in packages)
                 and any(module == root or module.startswith(root + ".") for root in roots)}
        # As packages: the outermost private module stands for what is under it.
        outermost = {module for module in found
                     if not any(module.startswith(other + ".") for other in found)}
        self.forbidden_modules = cast(  # the field's value once parsed
            fields.SetField, {ModuleExpression(module) for module in sorted(outermost)})
        return super().check(graph, verbose)
