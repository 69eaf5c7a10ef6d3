"""The suite's own rules (issue 13): shared helpers live in ``tests/helpers`` or conftest, so no
test module imports another test module — a test file's fixtures and private helpers are not an
interface, and importing them runs that module's collection side effects twice."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def test_no_test_module_imports_another():
    offenders = []
    for path in sorted(TESTS.glob("*.py")):
        for line, module in _imported_modules(path):
            last = module.split(".")[-1]
            if last.startswith("test_") or module.startswith("tests.test_"):
                offenders.append(f"{path.name}:{line} imports {module}")
    assert not offenders, "move shared code to tests/helpers: " + "; ".join(offenders)


def test_the_check_sees_a_test_import(tmp_path):
    """The scan above must catch both import forms, or its silence means nothing."""
    probe = tmp_path / "test_probe.py"
    probe.write_text("import os\nfrom test_ingest import GAN\nimport tests.test_graph as g\n",
                     encoding="utf-8")
    modules = [m for _, m in _imported_modules(probe)]
    assert modules == ["os", "test_ingest", "tests.test_graph"]
