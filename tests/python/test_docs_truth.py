"""The documents name what the code has: the README glossary's terms and the
names header openings cite exist in the code (comments stripped), every file
path a README cites exists, header openings are short, DESIGN.md sections
cited exist, and no code comment cites an issue number. Runs on the tracked
files (git ls-files); needs no build."""
import ast
import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT.parent / "shared" / "DESIGN.md"

# Names documents cite on purpose that are not ours: other projects' types,
# papers' terms. Keep it short; a name of ours that is gone is a defect.
EXTERNAL = {
    "PyTorch", "OneFlow", "AutoDDL", "ZeRO", "TSan", "TCPStore",  # projects, tools
    "MapFieldBase",            # protobuf's (cmake/tsan_protobuf_abi.h)
    "AllreduceRing",           # Gloo's ring all-reduce
    "VocabParallelEmbedding",  # Megatron-LM's
    "aten",                    # PyTorch's op namespace (profiles)
    "SyntaxError",             # Python's
    "ASan", "AddressSanitizer", "CMake", "PyPI",
}

CODE_SUFFIXES = (".h", ".cuh", ".cpp", ".cu", ".proto", ".py", ".sh", ".cmake", ".txt", ".toml")
CXX_SUFFIXES = (".h", ".cuh", ".cpp", ".cu", ".proto")
# A code name: CamelCase (two humps, or an acronym then a hump), Foo::Bar,
# snake_case() called, or anything backticked.
NAME = re.compile(r"(?<![\w./-])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z][A-Za-z0-9]*"
                  r"|[A-Za-z_]\w*::[A-Za-z_~][\w:]*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?=\(\))"
                  r"|`[^`\s]+`)")
PATH = re.compile(r"(?<![\w/.<>*-])((?:[\w.-]+/)+[\w.-]+\."
                  r"(?:h|cuh|cpp|cu|py|proto|md|sh|cmake|txt|json|png|pbtxt|bin|toml))(?![\w/])")
ISSUE = re.compile(r"\b(?:issues?|deliverables?) #?\d+\b|(?<![\w&])#\d+\b", re.I)


def _git(*args):
    return subprocess.check_output(["git", *args], cwd=ROOT, text=True)


if not (ROOT / ".git").exists():
    pytest.skip("needs a git checkout (the tracked files)", allow_module_level=True)


@lru_cache(maxsize=None)
def tracked():
    return tuple(p for p in _git("ls-files").split("\n") if p and (ROOT / p).is_file())


def _read(path):
    return (ROOT / path).read_text(errors="replace")


def _code_files():
    return [p for p in tracked() if p.endswith(CODE_SUFFIXES) or p.startswith(".ci/")]


def _strip_comments(path, text):
    if path.endswith(CXX_SUFFIXES):
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        return re.sub(r"(?m)//.*$", "", text)
    if path.endswith(".py"):
        text = re.sub(r'"""[\s\S]*?"""', "", text)
    return re.sub(r"(?m)(?:^|\s)#.*$", "", text)


@lru_cache(maxsize=None)
def code_words():
    """Every identifier the code (comments stripped) spells, and their parts."""
    words = set()
    for path in _code_files():
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _strip_comments(path, _read(path))))
    return frozenset(words)


@lru_cache(maxsize=None)
def code_word_parts():
    parts = {w.lower() for w in code_words()}
    for word in code_words():
        for piece in word.split("_"):
            parts.update(p.lower() for p in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", piece))
    return frozenset(parts)


@lru_cache(maxsize=None)
def type_names():
    """Names the code declares as types (or binds for Python): the only
    names a document may put in the plural ("NdSbps")."""
    names = set()
    for path in _code_files():
        text = _strip_comments(path, _read(path))
        names.update(re.findall(r"\b(?:class|struct|enum class|enum|using|message)\s+([A-Z]\w*)",
                                text))
        names.update(re.findall(r'py::class_<[^>]*>\(\w+, "([A-Z]\w*)"', text))
    return frozenset(names)


def _exists(name):
    name = name.strip("`").split("(")[0].rstrip(".,;:")
    caps = re.match(r"^([A-Z]{2,})[a-z]{1,2}$", name)  # CHECKs, SIGKILLed
    if caps and name not in EXTERNAL:
        name = caps.group(1)
    if re.search(r"(?<!:):(?!:)", name):
        return True  # "path:function", not a C++ name
    if name in EXTERNAL or name.split("::")[0] in EXTERNAL or \
            not re.match(r"^[A-Za-z_][\w:~]*$", name):
        return True  # not a code name (a formula, a flag, a value)
    last = [p for p in name.split("::") if p][-1].lstrip("~")
    words = code_words()
    if last in words:
        return True
    singular = last[:-1] if last.endswith("s") else None
    return singular is not None and (singular in type_names() or
                                     (singular.isupper() and singular in words))


def header_opening(path):
    """The first comment block of a header (after #pragma once), as lines."""
    lines = _read(path).split("\n")
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith("#pragma")):
        i += 1
    block = []
    while i < len(lines) and lines[i].lstrip().startswith("//"):
        block.append(lines[i].lstrip()[2:])
        i += 1
    return block


def _module_docstring(path):
    try:
        return ast.get_docstring(ast.parse(_read(path))) or ""
    except SyntaxError:
        return ""


def _headers():
    return [p for p in tracked() if p.endswith((".h", ".cuh"))]


def _path_exists(path, base):
    if any(mark in path for mark in ("<", "*", "NNNN")) or path.startswith(("dir/", "build")):
        return True  # a pattern or a generated file
    files = tracked()
    candidates = {path, os.path.normpath(os.path.join(base, path)), "oneflow_lite/" + path}
    if any(c in files or (ROOT / c).is_dir() for c in candidates):
        return True
    under = base + "/" if base else ""
    return any(f.startswith(under) and f.endswith("/" + path) for f in files)


def _readmes():
    return [p for p in tracked() if p.endswith("README.md")]


def glossary():
    text = _read("README.md")
    match = re.search(r"^## Glossary\n(.*?)(?=^## )", text, re.S | re.M)
    assert match, "README.md has no ## Glossary section"
    return match.group(1)


def test_glossary_terms_exist_in_code():
    missing = []
    for term, alias in re.findall(r"\*\*([^*]+)\*\*(?: \(([^),\s]+)[),])?", glossary()):
        for word in [term] + ([alias] if alias else []):
            if word.lower() not in code_word_parts() and word not in EXTERNAL:
                missing.append(word)
    for name in NAME.findall(glossary()):
        if not _exists(name):
            missing.append(name)
    assert not missing, f"README glossary names what the code does not have: {missing}"


def test_header_openings_cite_existing_names_and_paths():
    """Header openings and the opening comments of .cpp and .cu files (code
    names and paths), backticked names in any C++ comment, and the code names
    of Python module docstrings."""
    wrong = []
    for header in _headers() + [p for p in tracked() if p.endswith((".cpp", ".cu"))]:
        text = " ".join(header_opening(header))
        wrong += [f"{header}: {n}" for n in NAME.findall(text) if not _exists(n)]
        wrong += [f"{header}: {p}" for p in PATH.findall(text) if not _path_exists(p, "")]
    for path in [p for p in tracked() if p.endswith(CXX_SUFFIXES)]:  # `name` in any comment
        comments = "\n".join(re.findall(r"//.*$", _read(path), re.M))
        wrong += [f"{path}: {n}" for n in re.findall(r"`[^`\s]+`", comments) if not _exists(n)]
    for module in [p for p in tracked() if p.endswith(".py")]:  # names only: paths are outputs
        text = _module_docstring(module).replace("``", "`")
        wrong += [f"{module}: {n}" for n in NAME.findall(text) if not _exists(n)]
    assert not wrong, "header openings cite names or files the tree lacks:\n" + "\n".join(wrong)


def test_readme_paths_exist():
    wrong = []
    for readme in _readmes():
        base = os.path.dirname(readme)
        wrong += [f"{readme}: {p}" for p in sorted(set(PATH.findall(_read(readme))))
                  if not _path_exists(p, base)]
    assert not wrong, "READMEs cite files that do not exist:\n" + "\n".join(wrong)


# File names READMEs cite that are outputs or live beside the repository.
NOT_TRACKED_FILES = {"index.json", "DESIGN.md", "STYLE.md", "ENVIRONMENT.md"}


def test_readme_file_names_exist():
    """A bare file name in backticks (a README's file table: `actor.h`,
    `test_graph.py`) names a tracked file: the README's folder first, else
    anywhere in the tree (tests live in tests/)."""
    names_in_tree = {os.path.basename(f) for f in tracked()}
    wrong = []
    for readme in _readmes():
        base = os.path.dirname(readme)
        prose = re.sub(r"```[\s\S]*?```", "", _read(readme))
        for name in sorted(set(re.findall(r"`([\w.-]+\.(?:h|cuh|cpp|cu|py|proto|sh|toml))`",
                                          prose))):
            if name not in names_in_tree and name not in NOT_TRACKED_FILES and \
                    not _path_exists(name, base):
                wrong.append(f"{readme}: {name}")
    assert not wrong, "READMEs name files the tree lacks:\n" + "\n".join(wrong)


def test_readme_type_and_function_names_exist():
    """CamelCase and Foo::Bar names anywhere in a README's prose."""
    wrong = []
    for readme in _readmes():
        prose = re.sub(r"```[\s\S]*?```", "", _read(readme))
        names = {n.strip("`") for n in NAME.findall(prose)}
        wrong += [f"{readme}: {n}" for n in sorted(names)
                  if re.search(r"[a-z]", n) and re.search(r"[A-Z]|::", n) and not _exists(n)]
    for readme in _readmes():  # backticked snake_case names: a function, option or file stem
        prose = re.sub(r"```[\s\S]*?```", "", _read(readme))
        for name in sorted(set(re.findall(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`", prose))):
            stem = any(re.search(rf"(^|/){name}(\.\w+)*$", f) for f in tracked())
            if not stem and not _exists(name):
                wrong.append(f"{readme}: {name}")
    for readme in _readmes():  # and in its C++ and Python examples
        for body in re.findall(r"```(?:cpp|python)\n([\s\S]*?)```", _read(readme)):
            names = set(re.findall(r"\b[A-Za-z_]\w*(?:::\w+)*", body))
            names = {n for n in names if re.search(r"[a-z]", n) and re.search(r"[A-Z]", n)}
            names |= set(re.findall(r"\.([a-z_][a-z0-9_]+)\(", body))
            wrong += [f"{readme} (example): {n}" for n in sorted(names) if not _exists(n)]
    assert not wrong, "READMEs name types or functions the code lacks:\n" + "\n".join(wrong)


def test_header_openings_are_short():
    """3 to 10 lines: what it is, who owns what, thread safety; details go
    beside the code they describe."""
    sizes = {h: len(header_opening(h)) for h in _headers()}
    long = sorted((h, n) for h, n in sizes.items() if n > 10)
    bare = sorted((h, n) for h, n in sizes.items() if n < 3)
    assert not long, f"header openings over 10 lines: {long}"
    assert not bare, f"header openings under 3 lines: {bare}"


HASH_COMMENTED = (".py", ".sh", ".txt", ".cmake", ".toml")  # CMakeLists.txt included


def test_no_code_comment_cites_an_issue():
    hits = []
    for path in _code_files():
        text = _read(path)
        hashed = path.endswith(HASH_COMMENTED) or path.startswith(".ci/")
        comments = text if hashed else "\n".join(
            re.findall(r"//.*$|/\*[\s\S]*?\*/", text, re.M))
        if hashed:
            comments = re.sub(r"#include|#!.*", "", comments)
        for m in ISSUE.finditer(comments):
            if m.group(0).startswith("#") and not path.endswith(CXX_SUFFIXES):
                continue  # a Python/shell comment sign before a number
            hits.append(f"{path}: {m.group(0)}")
    assert not hits, "code cites issue numbers (keep the substance, drop the number):\n" + \
        "\n".join(hits)


@pytest.mark.skipif(not DESIGN.exists(), reason="DESIGN.md is kept beside the repository")
def test_design_sections_cited_exist():
    sections = set(re.findall(r"(?m)^## (\w+)\.", DESIGN.read_text()))
    cited = set()
    for path in tracked():
        if path.endswith(CODE_SUFFIXES + (".md",)):
            for group in re.findall(r"DESIGN(?:\.md)?,? (?:sections? )?(\d\w*(?:(?:, | and )\d\w*)*)",
                                    _read(path)):
                cited.update(re.split(r", | and ", group))
    assert cited <= sections, f"DESIGN.md has no section {sorted(cited - sections)}"
