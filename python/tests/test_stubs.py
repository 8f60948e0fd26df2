"""The type stubs of the extension name what it defines."""

import ast
import inspect
from pathlib import Path

from rlswarm import _core


def stub_names():
    tree = ast.parse((Path(inspect.getfile(_core)).parent / "_core.pyi").read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):  # a type alias of the stub only
            continue
        if isinstance(node, ast.FunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


def test_stubs_match_the_extension_module():
    stubs = stub_names()
    assert set(stubs) == {n for n in dir(_core) if not n.startswith("__")}
    for name, methods in stubs.items():
        if methods:
            defined = {m for m in dir(getattr(_core, name)) if not m.startswith("_")}
            assert methods - {"__init__"} == defined
