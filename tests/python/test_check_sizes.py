"""scripts/check_sizes.py finds functions by brace matching (C++) and ast
(Python): checked on hand-written sources whose sizes are counted here."""
import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "check_sizes", Path(__file__).resolve().parents[2] / "scripts" / "check_sizes.py")
check_sizes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(check_sizes)


def test_cxx_functions_skip_scopes_initialisers_and_literals():
    body = "\n".join(f"  x += {i};" for i in range(5))
    src = (
        "#include <map>\n"                                 # 1
        "namespace a {\n"                                  # 2
        "// int Fake() {\n"                                # 3
        "const int kTable[] = {1, 2,\n 3};\n"              # 4-5
        "class C {\n"                                      # 6
        " public:\n"                                       # 7
        "  int Get() const { return \"}{\"[0]; }\n"        # 8
        "};\n"                                             # 9
        "int C2::Run(int x) const {\n"                     # 10
        f"{body}\n"                                        # 11-15
        "  if (x) {\n    auto f = [&]() { return 1; };\n  }\n"  # 16-18
        "  return x;\n"                                    # 19
        "}\n"                                              # 20
        "}  // namespace a\n")
    found = {name: (start, size) for name, start, size in check_sizes.cxx_functions(src)}
    assert found == {"Get": (8, 1), "C2::Run": (10, 11)}


def test_python_functions_count_decorators_and_methods():
    src = ("import functools\n\n"
           "@functools.lru_cache\n"
           "def f(x):\n"
           "    return x\n\n\n"
           "class K:\n"
           "    def g(self):\n"
           "        y = 1\n"
           "        return y\n")
    assert sorted(check_sizes.py_functions(src)) == [("K.g", 9, 3), ("f", 3, 3)]
