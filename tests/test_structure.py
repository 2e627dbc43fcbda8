"""The shape of the compiler package (docs/architecture.md): stages import
only earlier stages and the op registry, nothing imports in a circle, no
module grows past 500 lines, and op names are spelled only in the registry."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "python" / "qpi"
MAX_LINES = 500

# Stage of each module (by its first path component under qpi/): a module may
# import modules of its own stage or an earlier one, never a later one.
STAGES = {
    "errors": 0, "ir": 0, "_engine": 0, "ops": 0, "images": 0, "draw": 0, "retinaface": 0, "testing": 0,
    "frontend": 1, "model_file": 1,
    "passes": 2,
    "quant": 3,
    "plan": 4,
    "lower": 5,
    "session": 6, "calibrate": 6, "backend": 6, "cli": 7, "__init__": 7,
}


def _modules():
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        yield ".".join(parts), p


def _imports(name, path):
    """Modules of qpi that `name` imports (at any depth of the file: lazy imports count)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                mod = base[: len(base) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "qpi":
                mod = node.module.split(".")[1:]
            else:
                continue
            target = ".".join(mod)
            for a in node.names:  # `from . import x` imports the submodule x
                sub = f"{target}.{a.name}" if target else a.name
                out.add(sub if (PKG / Path(*sub.split("."))).with_suffix(".py").exists()
                        or (PKG / Path(*sub.split("."))).is_dir() else target)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "qpi":
                    out.add(".".join(a.name.split(".")[1:]))
    return {m for m in out if m and m != name}


def _stage(mod):
    return STAGES[mod.split(".")[0]]


GRAPH = {name: _imports(name, path) for name, path in _modules()}


def test_every_module_has_a_stage():
    assert not [m for m in GRAPH if m.split(".")[0] not in STAGES]


def test_no_import_of_a_later_stage():
    bad = [f"{m} (stage {_stage(m)}) imports {t} (stage {_stage(t)})"
           for m, ts in GRAPH.items() for t in ts if t.split(".")[0] in STAGES and _stage(t) > _stage(m)]
    assert not bad, "\n".join(bad)


def test_no_import_circle():
    state, stack, circles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(GRAPH.get(m, ())):
            t = t if t in GRAPH else t.rsplit(".", 1)[0]
            if state.get(t) == 1 and t not in ("", m):
                circles.append(stack[stack.index(t):] + [t])
            elif t in GRAPH and not state.get(t):
                visit(t)
        stack.pop()
        state[m] = 2

    for m in GRAPH:
        if m != "__init__" and not state.get(m):  # the package's __init__ re-exports the API
            visit(m)
    # a package importing its own submodules (ops/__init__ registers every family) is not a circle
    circles = [c for c in circles if not (len(c) == 3 and c[0] == c[2] and c[1].startswith(c[0] + "."))]
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_the_walk_sees_imports():
    # guards the walker itself: these edges exist
    assert "ops.registry" in GRAPH["ops.conv"] and "frontend.onnx_import" in GRAPH["lower.compiler"]


@pytest.mark.parametrize("name,path", [(n, p) for n, p in _modules()], ids=lambda v: str(v))
def test_module_size(name, path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(PKG)} has {n} lines (at most {MAX_LINES})"


def test_op_names_only_in_the_registry():
    """A string literal equal to a registered op name (outside docstrings) appears only under ops/."""
    import qpi.ops as ops

    names = {d.op for d in ops.entries()}
    found = []
    for name, path in _modules():
        if name.split(".")[0] == "ops":
            continue
        tree = ast.parse(path.read_text())
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
                    and id(node) not in docs):
                found.append(f"{path.relative_to(PKG)}:{node.lineno}: {node.value!r}")
    assert not found, "\n".join(found)
