"""Import hygiene of svc's product code, run by `make lint`: `python scripts/check-imports.py`.

Two checks import-linter (`.importlinter`) does not make:

- **Function-local imports** (an import inside a `def`): at most `LOCAL_LIMIT` in the product, each
  with a comment saying why it cannot be at the top of its module: on its own line, or on the
  comment line(s) just above it — above the first, for imports written one after the other
  (docs/foundation.md, "Which way imports point", says which reasons hold).
- **Import circles between modules, `TYPE_CHECKING` imports counted**: import-linter leaves those
  imports out (they never run), but a circle that closes through one is still two modules that
  each need the other to be read. Imports inside functions count too, so a circle is not hidden
  by moving one of its imports into a function.

Product code is every package listed in `PRODUCT` and `manage.py`; tests/, harness/, bench/,
scripts/ and migrations are not product. `--list` prints every function-local import with its
comment. Standard library only (it runs before anything is installed).
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = (
    "svcproject",
    "mcp_app",
    "channels_app",
    "notifications_app",
    "bridge_app",
    "previews_app",
    "remote_app",
    "fleet_app",
    "subagents_app",
    "sessions_app",
    "core",
    "cli",
    "holder",
)
PRODUCT_FILES = ("manage.py",)
LOCAL_LIMIT = 40
# Comments that are instructions to a tool, not a reason: they do not count as the "why".
PRAGMA = re.compile(
    r"(noqa(:\s*[A-Z0-9, ]+)?|type:\s*ignore(\[[^\]]*\])?|pragma:[^#]*|pyright:[^#]*)"
)


@dataclass(frozen=True)
class LocalImport:
    path: Path
    line: int
    text: str
    why: str


def product_files(root: Path) -> dict[str, Path]:
    """Module name -> file, for every product module (packages by their `__init__.py`)."""
    found: dict[str, Path] = {}
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if "migrations" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    for name in PRODUCT_FILES:
        if (root / name).exists():
            found[Path(name).stem] = root / name
    return found


def comments_by_line(source: str) -> dict[int, str]:
    """Line number -> the comment on it, pragmas taken out ("" when only a pragma is left)."""
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = PRAGMA.sub("", token.string.lstrip("#")).strip(" #-—:,")
            comments[token.start[0]] = text
    return comments


def why_of(node: ast.stmt, lines: list[str], comments: dict[int, str], run: set[int]) -> str:
    """The comment saying why: on the import's own lines, else the comment block just above it
    or, for imports written one after the other (`run`: their lines), above the first."""
    assert node.end_lineno is not None
    for line in range(node.lineno, node.end_lineno + 1):
        if comments.get(line):
            return comments[line]
    above: list[str] = []
    line = node.lineno - 1
    while line >= 1 and (line in run or not lines[line - 1].strip()):
        if comments.get(line):
            return comments[line]
        line -= 1
    while line >= 1 and lines[line - 1].lstrip().startswith("#"):
        above.insert(0, comments.get(line, ""))
        line -= 1
    return " ".join(text for text in above if text)


class ImportFinder(ast.NodeVisitor):
    """Every import of one module, and whether it sits inside a function."""

    def __init__(self) -> None:
        self.imports: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
        self._depth = 0

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        self.imports.append((node, self._depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.imports.append((node, self._depth > 0))


def targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]
) -> set[str]:
    """The product modules an import names (a name imported from a package may be a module)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        for alias in node.names:
            names.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    found: set[str] = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def one_circle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest circle through the component's first module, to print."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    return component


def scan(root: Path) -> tuple[dict[str, set[str]], list[LocalImport]]:
    """The import graph between product modules, and every function-local import."""
    files = product_files(root)
    graph: dict[str, set[str]] = {name: set() for name in files}
    local: list[LocalImport] = []
    for module, path in files.items():
        source = path.read_text()
        lines, comments = source.splitlines(), comments_by_line(source)
        finder = ImportFinder()
        finder.visit(ast.parse(source, str(path)))
        run = {
            line
            for node, inside_function in finder.imports
            if inside_function and node.end_lineno is not None
            for line in range(node.lineno, node.end_lineno + 1)
        }
        for node, inside_function in finder.imports:
            graph[module] |= targets(node, module, path.name == "__init__.py", set(files))
            if inside_function:
                text = ast.get_source_segment(source, node) or ""
                why = why_of(node, lines, comments, run)
                local.append(LocalImport(path.relative_to(root), node.lineno, text, why))
    return graph, local


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every function-local import")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args = parser.parse_args()
    graph, local = scan(args.root)
    if args.list:
        for item in local:
            print(f"{item.path}:{item.line}: {' '.join(item.text.split())}  # {item.why or '?'}")
    print(f"function-local imports in product code: {len(local)} (at most {LOCAL_LIMIT})")
    failed = len(local) > LOCAL_LIMIT
    if failed:
        print(f"  {len(local) - LOCAL_LIMIT} too many: move them to the top of their module")
    for item in local:
        if not item.why:
            failed = True
            print(f"  {item.path}:{item.line}: no comment saying why it is inside a function")
    circles = strongly_connected(graph)
    print(f"import circles (TYPE_CHECKING and function-local imports counted): {len(circles)}")
    for component in circles:
        failed = True
        print(f"  {' -> '.join(one_circle(graph, component))}  ({len(component)} modules)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
