"""The layers hold: sessions imports nothing of the packages built on it. Checked by
reading the import statements (ast), so a lazy import inside a function counts too."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "py" / "airi_memory"
ABOVE_SESSIONS = {"search", "context", "policy", "transfer", "api", "diagnostics", "llm", "hosts"}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, as a dotted name relative to ``airi_memory``."""
    here = path.relative_to(PACKAGE).parent.parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.removeprefix("airi_memory.") for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[: len(here) - node.level + 1])
                module = ".".join(base + ([node.module] if node.module else []))
                names = [module] if node.module else [f"{module}.{a.name}" for a in node.names]
                found |= {name.lstrip(".") for name in names}
            elif node.module and node.module.startswith("airi_memory"):
                found.add(node.module.removeprefix("airi_memory").lstrip("."))
    return found


def test_imported_modules_resolves_relative_imports(tmp_path):
    assert imported_modules(PACKAGE / "sessions" / "store.py") >= {"sessions.writer", "storage"}
    assert "search.text" in imported_modules(PACKAGE / "search" / "tables.py")


def test_sessions_imports_nothing_built_on_it():
    offending = {
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in (PACKAGE / "sessions").rglob("*.py")
        for module in imported_modules(path)
        if module.split(".")[0] in ABOVE_SESSIONS
    }
    assert offending == set()
