#!/usr/bin/env python3
"""check_arrows.py: the module arrows of DESIGN.md section 2, checked on the sources.

Every #include of every source under a module folder must name a header of a
module that folder may use (ALLOWED below), or a file beside the includer.
The Python extension (python/csrc) is checked twice: its includes, and the
calls it makes. api's headers include graph/, search/, ops/ and runtime/
headers (they name those modules' types), so python/csrc sees those headers
through them; the call check makes sure it calls no free function and no
static member function declared only in a module it may not use. It may use
the types api's interface hands out (their methods and fields): those are part
of api's interface. CMake enforces the arrows too (cmake/modules.cmake: each
library exposes only its own folder; tests/arrows/ proves a forbidden include
fails to compile), except where a PUBLIC header link lets a layer see more than
its arrow: api -> python. This script covers every pair.

Arrows changed from DESIGN.md section 2 (also in README.md, "Modules"):
- api -> ops (added). api's one-op tools (RunOp, RunKernel, InspectOp, the
  op registry's schema: the Python op test table's oracle path) run one op's
  kernel and list its SBP signatures without a graph or a plan, and
  DistributedSession slices fed tensors with ops' strided copy. Going through
  graph/ or runtime/ for that would add a detour, not a boundary: ops is
  below both of api's arrows already.
- python -> core (added). core is the vocabulary every layer speaks (Tensor,
  Shape, Placement, NdSbp, Status); api's signatures are written in it, so
  the binding must name it. The global-tensor binding (global_tensor.cpp)
  binds core's slicing directly, so Python never re-derives it.

Usage: scripts/check_arrows.py [--root DIR]. Exit status 1 on a violation,
each printed as FILE:LINE: what, and the arrow it breaks. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Module name -> folder (relative to the repository root).
MODULES = {
    "core": "oneflow_lite/core",
    "ops": "ops",
    "search": "search",
    "graph": "graph",
    "runtime": "runtime",
    "api": "oneflow_lite/api",
    "python": "python/csrc",
}

# Module -> the modules it may include and call (itself included).
ALLOWED = {
    "core": {"core"},
    "ops": {"ops", "core"},
    "search": {"search", "core"},
    "graph": {"graph", "ops", "search", "core"},
    "runtime": {"runtime", "ops", "core"},
    "api": {"api", "graph", "runtime", "search", "ops", "core"},
    "python": {"python", "api", "core"},
}

SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}
HEADER_SUFFIXES = {".h", ".hpp", ".cuh"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# A free function declared at namespace scope (column 0): a return type, then
# the name and "(".
FREE_FUNCTION = re.compile(
    r"^(?:template\s*<[^;{]*>\s*)?(?:(?:inline|static|constexpr|extern|\[\[nodiscard\]\])\s+)*"
    r"[A-Za-z_][\w:<>,\s*&]*?[\s*&](\w+)\s*\(")
CLASS = re.compile(
    r"^(?:template\s*<[^;{]*>\s*)?(?:class|struct)\s+(?:\[\[\w+\]\]\s+)?(\w+)\b[^;]*$")
STATIC_MEMBER = re.compile(r"^\s+static\s+[\w:<>,\s*&]*?[\s*&](\w+)\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "operator", "decltype", "catch"}
CALL = re.compile(r"(?<![\w.:>])(\w+)\s*\(")
REFERENCE = re.compile(r"&\s*(\w+)\b(?!\s*(?:::|\(|\.|->))")
QUALIFIED = re.compile(r"\b(\w+)::(\w+)\b")
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


@dataclass
class Symbols:
    """Where each free function and static member function is declared."""
    free: dict[str, set[str]] = field(default_factory=dict)  # name -> modules
    statics: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (class, name)
    where: dict[object, str] = field(default_factory=dict)  # key -> first header


@dataclass
class Violation:
    path: str
    line: int
    what: str
    module: str
    target: str | None

    def __str__(self) -> str:
        allowed = ", ".join(sorted(ALLOWED[self.module] - {self.module}))
        arrow = (f"arrow {self.module} -> {self.target} is not allowed"
                 if self.target else "not a header of any module")
        return f"{self.path}:{self.line}: {self.what}: {arrow} ({self.module} may use: {allowed})"


def module_of_include(name: str) -> str | None:
    """The module whose folder the include path starts with (longest first)."""
    for module, folder in sorted(MODULES.items(), key=lambda kv: -len(kv[1])):
        if name.startswith(folder + "/"):
            return module
    return None


def sources(root: Path, folder: str) -> list[Path]:
    base = root / folder
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())


def code_lines(path: Path) -> list[str]:
    """The file's lines with comments and string literals blanked."""
    text = path.read_text(encoding="utf-8", errors="replace")
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            lines.append("")
            continue
        line = STRING.sub('""', line)
        lines.append(line.split("//", 1)[0])
    return lines


def check_includes(root: Path, module: str, path: Path) -> list[Violation]:
    out = []
    rel = path.relative_to(root).as_posix()
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.split("\n"), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        bracket, name = m.groups()
        target = module_of_include(name)
        if target is None:
            if bracket == "<" or (path.parent / name).is_file():
                continue  # a system header, or a file beside the includer
            out.append(Violation(rel, number, f'includes "{name}"', module, None))
        elif target not in ALLOWED[module]:
            out.append(Violation(rel, number, f'includes "{name}"', module, target))
    return out


def collect_symbols(root: Path) -> Symbols:
    symbols = Symbols()
    for module, folder in MODULES.items():
        for path in sources(root, folder):
            if path.suffix not in HEADER_SUFFIXES:
                continue
            rel = path.relative_to(root).as_posix()
            current_class = None
            for line in code_lines(path):
                c = CLASS.match(line)
                if c:
                    current_class = c.group(1)
                    continue
                if line.startswith("};"):
                    current_class = None
                    continue
                s = STATIC_MEMBER.match(line)
                if s and current_class:
                    key = (current_class, s.group(1))
                    symbols.statics.setdefault(key, set()).add(module)
                    symbols.where.setdefault(key, rel)
                    continue
                f = FREE_FUNCTION.match(line)
                if f and f.group(1) not in KEYWORDS and not line.startswith(("class", "struct")):
                    symbols.free.setdefault(f.group(1), set()).add(module)
                    symbols.where.setdefault(f.group(1), rel)
    return symbols


def local_definitions(paths: list[Path]) -> set[str]:
    """Functions the module defines itself (they shadow nothing of another)."""
    names = set()
    for path in paths:
        for line in code_lines(path):
            f = FREE_FUNCTION.match(line)
            if f:
                names.add(f.group(1))
    return names


def check_calls(root: Path, module: str, paths: list[Path], symbols: Symbols) -> list[Violation]:
    out = []
    local = local_definitions(paths)
    allowed = ALLOWED[module]

    def forbidden(modules: set[str]) -> str | None:
        if not modules or modules & allowed:
            return None  # declared by an allowed module too (e.g. an api re-export)
        return sorted(modules)[0]

    for path in paths:
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(code_lines(path), 1):
            line = re.sub(r"(?:::)?\bofl::", "", line)
            for m in QUALIFIED.finditer(line):
                key = (m.group(1), m.group(2))
                target = forbidden(symbols.statics.get(key, set()))
                if target:
                    out.append(Violation(rel, number, f"calls {key[0]}::{key[1]} "
                                         f"({symbols.where[key]})", module, target))
            names = [m.group(1) for m in CALL.finditer(line)]
            names += [m.group(1) for m in REFERENCE.finditer(line)]
            for name in names:
                if name in local or name in KEYWORDS:
                    continue
                target = forbidden(symbols.free.get(name, set()))
                if target:
                    out.append(Violation(rel, number, f"calls {name} ({symbols.where[name]})",
                                         module, target))
    return out


def check(root: Path) -> tuple[list[Violation], int]:
    violations, files = [], 0
    symbols = collect_symbols(root)
    for module, folder in MODULES.items():
        paths = sources(root, folder)
        files += len(paths)
        for path in paths:
            violations += check_includes(root, module, path)
        if module == "python":
            violations += check_calls(root, module, paths, symbols)
    return violations, files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="repository root (default: this script's repository)")
    args = parser.parse_args()
    root = args.root.resolve()
    violations, files = check(root)
    for v in violations:
        print(v, file=sys.stderr)
    if violations:
        print(f"check_arrows: {len(violations)} violation(s) in {files} files", file=sys.stderr)
        return 1
    if files == 0:
        print(f"check_arrows: no module folder under {root}", file=sys.stderr)
        return 1
    print(f"check_arrows: {files} files, every include and call follows the arrows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
