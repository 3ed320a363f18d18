"""``_native.pyi`` lists the extension's names by hand: it declares exactly what the module
defines, each class with exactly its methods."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Set

from ctxcompact import _native


def stubbed() -> Dict[str, Set[str]]:
    """Each name the stubs declare at the top, with a class's methods (else no names)."""
    stubs = Path(_native.__file__).with_name("_native.pyi")
    tree = ast.parse(stubs.read_text(encoding="utf-8"))
    names: Dict[str, Set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("__")
            }
    return names


def public(names: object) -> Set[str]:
    return {name for name in dir(names) if not name.startswith("_")}


def test_the_stubs_declare_what_the_extension_defines() -> None:
    declared = stubbed()
    assert set(declared) == public(_native)
    for name, methods in declared.items():
        defined = getattr(_native, name)
        if isinstance(defined, type) and not issubclass(defined, BaseException):
            assert methods == public(defined), name
