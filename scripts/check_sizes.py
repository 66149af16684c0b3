#!/usr/bin/env python3
"""Size budgets: every tracked source file at most 500 lines and every
function at most 80, tests and generated code apart (protos are generated
into build/, never tracked).

Python functions are measured with ``ast`` (first line of the ``def`` to its
last line). C++ and CUDA functions are found by brace matching on the text
with comments, strings and preprocessor lines blanked: a ``{`` at namespace
or class scope whose head (the text since the previous ``;``, ``{`` or
``}``) ends in a parameter list is a function body (a lambda or macro body
such as ``PYBIND11_MODULE(...) {`` counts too); ``namespace``, ``class``,
``struct``, ``enum``, ``union`` and ``extern "C"`` open scopes; ``= {`` is an
initializer. A nested function (a lambda inside a function) counts toward
its enclosing one.

scripts/size_allowlist.txt names today's exceptions, one ``path`` or
``path:function`` per line with its size. The check fails when anything not
listed is over budget, when a listed entry grew, and when a listed entry is
back within budget or gone (remove the line: the list only shrinks).
``--write`` rewrites the list from the tree (for the first list only).
Run: python scripts/check_sizes.py [--write]
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
ALLOWLIST = ROOT / "scripts" / "size_allowlist.txt"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
CXX_SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".cc")
EXEMPT_PREFIXES = ("tests/", "fuzz/corpus", "fuzz/regressions")

_SCOPE_HEAD = re.compile(r"\b(namespace|class|struct|enum|union)\b|extern\s+\"C\"")
_CONTROL_HEAD = re.compile(r"^\s*(if|for|while|switch|catch|do|else|try)\b")


def tracked_sources() -> List[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return sorted(p for p in out if (p.endswith(CXX_SUFFIXES) or p.endswith(".py"))
                  and not p.startswith(EXEMPT_PREFIXES))


def blank_cxx(text: str) -> str:
    """Comments, string and char literals, and preprocessor lines replaced by
    spaces (newlines kept, so line numbers hold)."""
    out: List[str] = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        at_line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _function_name(head: str) -> str:
    head = head.strip()
    depth, k = 0, len(head) - 1
    while k >= 0:  # the ( matching the last ) of the parameter list
        if head[k] == ")":
            depth += 1
        elif head[k] == "(":
            depth -= 1
            if depth == 0:
                break
        k -= 1
    names = re.findall(r"[A-Za-z_~][\w:~<>]*(?:\s*operator\s*\S+)?", head[:max(k, 0)])
    return names[-1] if names else "<anonymous>"


def cxx_functions(text: str) -> Iterator[Tuple[str, int, int]]:
    """(name, first line, lines) of each outermost function body."""
    code = blank_cxx(text)
    stack: List[str] = []  # 'scope', 'function', 'block'
    head_start, fn_start, fn_name = 0, 0, ""
    for i, c in enumerate(code):
        if c in ";":
            if not stack or stack[-1] == "scope":
                head_start = i + 1
        elif c == "{":
            head = code[head_start:i]
            in_function = "function" in stack
            if in_function:
                stack.append("block")
            elif _SCOPE_HEAD.search(head) and "(" not in head.split("{")[-1]:
                stack.append("scope")
            elif re.search(r"\)[\w\s:&*<>,()\->]*$", head.strip() or "x") and not re.search(
                    r"=\s*$", head) and not _CONTROL_HEAD.search(head):
                stack.append("function")
                lead = re.match(r"(\s|(public|private|protected)\s*:(?!:))*", head).end()
                fn_start = code.count("\n", 0, head_start + lead)
                fn_name = _function_name(head)
            else:
                stack.append("block")
            head_start = i + 1
        elif c == "}":
            if stack:
                kind = stack.pop()
                if kind == "function" and "function" not in stack:
                    end = code.count("\n", 0, i)
                    yield fn_name, fn_start + 1, end - fn_start + 1
            if not stack or stack[-1] == "scope":
                head_start = i + 1


def py_functions(text: str) -> Iterator[Tuple[str, int, int]]:
    tree = ast.parse(text)

    def walk(node: ast.AST, prefix: str) -> Iterator[Tuple[str, int, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                yield prefix + child.name, start, child.end_lineno - start + 1
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")

    yield from walk(tree, "")


def measure() -> Dict[str, int]:
    """Every over-budget file and function: key -> lines."""
    over: Dict[str, int] = {}
    for path in tracked_sources():
        text = (ROOT / path).read_text(errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        if lines > MAX_FILE_LINES:
            over[path] = lines
        functions = py_functions(text) if path.endswith(".py") else cxx_functions(text)
        for name, _, size in functions:
            if size > MAX_FUNCTION_LINES:
                key = f"{path}:{name}"
                over[key] = max(size, over.get(key, 0))
    return over


def read_allowlist() -> Dict[str, int]:
    allowed: Dict[str, int] = {}
    if ALLOWLIST.exists():
        for line in ALLOWLIST.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                key, size = line.rsplit(None, 1)
                allowed[key] = int(size)
    return allowed


def main(argv: List[str]) -> int:
    over = measure()
    if "--write" in argv:
        ALLOWLIST.write_text(
            "# Size-budget exceptions (scripts/check_sizes.py): may only shrink.\n" +
            "".join(f"{k} {v}\n" for k, v in sorted(over.items())))
        print(f"check_sizes: wrote {len(over)} exceptions to {ALLOWLIST.relative_to(ROOT)}")
        return 0
    allowed = read_allowlist()
    errors = []
    for key, size in sorted(over.items()):
        budget = MAX_FILE_LINES if ":" not in key else MAX_FUNCTION_LINES
        if key not in allowed:
            errors.append(f"{key}: {size} lines, over the budget of {budget}")
        elif size > allowed[key]:
            errors.append(f"{key}: {size} lines, grew past its allowed {allowed[key]}")
    for key in sorted(set(allowed) - set(over)):
        errors.append(f"{key}: within budget now (or gone): remove it from "
                      f"{ALLOWLIST.relative_to(ROOT)}")
    for e in errors:
        print(f"check_sizes: {e}", file=sys.stderr)
    print(f"check_sizes: {len(over)} over budget, {len(allowed)} allowed, "
          f"{len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
