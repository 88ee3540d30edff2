"""The package's shape, checked from its sources: imports that show the architecture (every
import of a scalegnn module at a module's head, no import cycles), one feature-store interface
used through its protocol, and files short enough to read."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = SRC / "scalegnn"
# the one deferred import of a scalegnn module: `scalegnn.load_run` pulls in torch, and
# `import scalegnn` stays light
ALLOWED_DEFERRED = {("scalegnn", "scalegnn.inference")}
MAX_LINES = 400
WHY_LONG = re.compile(r"over 400 lines", re.I)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imported_modules(mod: str, node) -> list[str]:
    """The scalegnn modules an import statement names (``from pkg import sub`` -> pkg.sub)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "scalegnn"]
    base = node.module or ""
    if node.level:
        here = mod.split(".") if MODULES[mod].name == "__init__.py" else mod.split(".")[:-1]
        base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
    if base.split(".")[0] != "scalegnn":
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def import_statements():
    """(module, target, at module level?) for every import of a scalegnn module."""
    out = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())
        head = set()
        for stmt in tree.body:  # module level, also inside a module-level if/try
            head.update(id(n) for n in ast.walk(stmt) if not isinstance(
                stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out += [(mod, t, id(node) in head) for t in imported_modules(mod, node)]
    return out


def test_scalegnn_modules_are_imported_at_module_heads():
    deferred = sorted({(m, t) for m, t, at_head in import_statements() if not at_head}
                      - ALLOWED_DEFERRED)
    assert not deferred, f"function-level imports of scalegnn modules: {deferred}"


def test_no_import_cycles():
    """Importing ``a.b.c`` runs the packages ``a.b`` and ``a`` first, so a module depends on the
    packages (``__init__``) of what it imports, except those it is itself inside."""
    graph = {m: set() for m in MODULES}
    for mod, target, at_head in import_statements():
        if not at_head or target not in MODULES:
            continue
        parts = target.split(".")
        for k in range(1, len(parts) + 1):
            dep = ".".join(parts[:k])
            inside = mod == dep or mod.startswith(dep + ".")
            if dep in MODULES and dep != mod and (k == len(parts) or not inside):
                graph[mod].add(dep)
    cycles = _strongly_connected(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def _strongly_connected(graph: dict) -> list[set]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_feature_stores_are_used_through_the_protocol():
    """Outside ``scalegnn/features`` no code asks which store it holds (isinstance on a store
    class): the protocol answers (``sparse``, ``mapped``, ``gather``, ``as_input``...)."""
    pattern = re.compile(r"isinstance\([^)]*(SparseFeatures|MappedFeatures|DenseFeatures)")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in PKG.rglob("*.py")
            if "features" not in p.relative_to(PKG).parts[:1]
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, f"isinstance on a feature store: {hits}"


@pytest.mark.parametrize("folder", ["src", "tests", "benchmarks", "examples", "docs"])
def test_files_are_short_or_say_why(folder):
    """Every Python file <= 400 lines, or its docstring says why it is longer."""
    long = []
    for p in sorted((ROOT / folder).rglob("*.py")):
        text = p.read_text()
        n = text.count("\n")
        if n > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if not WHY_LONG.search(doc):
                long.append(f"{p.relative_to(ROOT)} ({n} lines)")
    assert not long, f"over {MAX_LINES} lines without a reason in the docstring: {long}"


def test_import_scalegnn_stays_light():
    """``import scalegnn`` (errors, Graph and its numba kernels) does not load torch: the
    submodules a program uses load what they need (``scalegnn.load_run`` on first use)."""
    code = ("import sys, scalegnn; "
            "print(sorted(m for m in ('torch', 'scalegnn.inference') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
