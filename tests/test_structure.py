"""The package keeps issue 32's shape (``tools/structure_check.py``): no import circle between
modules (function-local imports counted), no private name imported across modules, no module
over 800 lines, no function over 120."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _check():
    spec = importlib.util.spec_from_file_location("structure_check", REPO / "tools" / "structure_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_package_has_no_circles_private_imports_or_oversized_code():
    report = _check().report()
    assert report["modules"] > 100
    for key in ("import_circles", "private_imports", "modules_over_limit", "functions_over_limit"):
        assert report[key] == [], (key, report[key])


def test_the_check_finds_a_circle_a_private_import_and_a_long_function(tmp_path):
    check = _check()
    pkg = tmp_path / "episteme"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    body = "\n".join(f"    x{i} = {i}" for i in range(130))
    (pkg / "b.py").write_text("from .a import f\n_hidden = 1\n\n\ndef g():\n" + body + "\n")
    (pkg / "c.py").write_text("from .b import _hidden\n")
    r = check.report(pkg)
    assert r["import_circles"] == [["episteme.a", "episteme.b"]]
    assert r["private_imports"] == ["episteme.c imports episteme.b._hidden"]
    assert r["functions_over_limit"] == ["episteme.b:g (131 lines)"]
