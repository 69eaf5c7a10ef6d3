#!/usr/bin/env python3
"""The package's shape, checked: import circles, private names across modules, sizes.

    python tools/structure_check.py [--json]     exit 1 when a limit is broken

Issue 32's rules for ``plugin/episteme`` (``tests/test_structure.py`` runs this in ``make test``):

* **no import circle between modules**, counting imports inside function bodies (a lazy import
  hides a circle from the interpreter, not from a reader who must change one side);
* **no module imports another module's private name** (``from .trace import _strip``): what a
  module offers others is its public API;
* **no module over** :data:`MAX_MODULE_LINES` **lines, no function over**
  :data:`MAX_FUNCTION_LINES` (a function's lines from its ``def`` to its last statement).

Standard library only (``ast``), so it runs anywhere the tests run.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "plugin" / "episteme"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 120


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    out = {}
    for f in sorted(root.rglob("*.py")):
        if "__pycache__" in f.parts:
            continue
        name = ".".join(f.relative_to(root.parent).with_suffix("").parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = f
    return out


def imports(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """The module graph (every import, wherever it sits) and the private names imported."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    private: list[tuple[str, str, str]] = []
    for m, f in mods.items():
        pkg = m if f.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    if full in mods:
                        edges[m].add(full)
                    elif target in mods:
                        edges[m].add(target)
                        if alias.name.startswith("_") and not alias.name.startswith("__") and target != m:
                            private.append((m, target, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in mods:
                        edges[m].add(alias.name)
    for m in edges:
        edges[m].discard(m)
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def sizes(mods: dict[str, Path]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Modules over the line limit, functions over theirs (``module:qualname``)."""
    big_mods, big_funcs = [], []
    for m, f in mods.items():
        text = f.read_text(encoding="utf-8")
        n = text.count("\n") + (0 if text.endswith("\n") else 1)
        if n > MAX_MODULE_LINES:
            big_mods.append((m, n))

        todo: list[tuple[ast.AST, str]] = [(ast.parse(text), "")]
        while todo:
            node, prefix = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = child.end_lineno - child.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        big_funcs.append((f"{m}:{prefix}{child.name}", length))
                    todo.append((child, f"{prefix}{child.name}."))
                elif isinstance(child, ast.ClassDef):
                    todo.append((child, f"{prefix}{child.name}."))
    return sorted(big_mods), sorted(big_funcs)


def report(root: Path = ROOT) -> dict:
    mods = modules(root)
    edges, private = imports(mods)
    big_mods, big_funcs = sizes(mods)
    return {
        "modules": len(mods),
        "import_circles": cycles(edges),
        "private_imports": [f"{a} imports {b}.{n}" for a, b, n in sorted(private)],
        "modules_over_limit": [f"{m} ({n} lines)" for m, n in big_mods],
        "functions_over_limit": [f"{m} ({n} lines)" for m, n in big_funcs],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    r = report()
    bad = any(r[k] for k in ("import_circles", "private_imports", "modules_over_limit",
                             "functions_over_limit"))
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        print(f"{r['modules']} modules")
        for k in ("import_circles", "private_imports", "modules_over_limit", "functions_over_limit"):
            print(f"{k}: {len(r[k])}")
            for item in r[k]:
                print(f"  {item}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
