"""Every rule of the package, with every enforcing module imported (rules are defined where they are enforced)."""

from __future__ import annotations

import importlib
import pkgutil

import sessionspec
from sessionspec.rules import RULES, Rule


def all_rules() -> dict[str, Rule]:
    """RULES after importing every module of `sessionspec` (a module that fails to import is skipped)."""
    for module in pkgutil.walk_packages(sessionspec.__path__, "sessionspec."):
        if module.name.startswith("sessionspec.cli") or module.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except Exception:  # a half-written module of another family must not hide ours
            continue
    return RULES
