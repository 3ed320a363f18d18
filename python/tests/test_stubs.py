"""``_native.pyi`` lists the extension's names by hand: it declares exactly what the module
defines, each class with exactly its methods, and each function and method with the parameters
the extension's own signature names."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set

from ctxcompact import _native


def stubbed() -> Dict[str, Dict[str, List[str]]]:
    """Each name the stubs declare at the top: a function as its own parameters (under its
    name), a class as its methods' (``__init__``'s under the class's name)."""
    stubs = Path(_native.__file__).with_name("_native.pyi")
    tree = ast.parse(stubs.read_text(encoding="utf-8"))
    names: Dict[str, Dict[str, List[str]]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = {node.name: parameters_of(node)}
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {
                node.name if item.name == "__init__" else item.name: parameters_of(item)
                for item in node.body
                if isinstance(item, ast.FunctionDef)
                and (item.name == "__init__" or not item.name.startswith("__"))
            }
    return names


def parameters_of(function: ast.FunctionDef) -> List[str]:
    """A stub's parameter names, ``self`` left out."""
    return [arg.arg for arg in function.args.args if arg.arg != "self"]


def defined_parameters(signature: Optional[str]) -> List[str]:
    """The parameter names of a ``__text_signature__`` such as ``($self, body, handle)``."""
    assert signature is not None, "the extension gives no signature"
    names = [part.strip().split("=")[0] for part in signature.strip("()").split(",")]
    return [name for name in names if name and not name.startswith("$") and name not in "/*"]


def public(names: object) -> Set[str]:
    return {name for name in dir(names) if not name.startswith("_")}


def test_the_stubs_declare_what_the_extension_defines() -> None:
    declared = stubbed()
    assert set(declared) == public(_native)
    for name, members in declared.items():
        defined = getattr(_native, name)
        if isinstance(defined, type) and issubclass(defined, BaseException):
            continue
        if isinstance(defined, type):
            assert set(members) - {name} == public(defined), name
        for member, declared_parameters in members.items():
            function = defined if member == name else getattr(defined, member)
            assert declared_parameters == defined_parameters(function.__text_signature__), (
                f"{name}.{member}" if member != name else name
            )
