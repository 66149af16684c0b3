"""The containers of ``flow.nn``: ``Sequential``, ``ModuleList`` (children
named "0", "1", ...), ``ModuleDict`` (children by key) and ``ParameterList``
(parameters named "0", "1", ...). Not thread-safe."""
from __future__ import annotations

from typing import Iterable, Iterator

from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter


class Sequential(Module):
    def __init__(self, *modules: Module) -> None:
        super().__init__()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __setitem__(self, i: int, m: Module) -> None:
        self._modules[list(self._modules)[i]] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleList(Module):
    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for m in modules:
            self.append(m)

    def __setitem__(self, i: int, m: Module) -> None:
        self._modules[list(self._modules)[i]] = m

    def append(self, m: Module) -> "ModuleList":
        self.add_module(str(len(self._modules)), m)
        return self

    def __getitem__(self, i: int) -> Module:
        return list(self._modules.values())[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    """Children by name, in insertion order (``md["enc"]``, ``md.enc``)."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict['{key}']: expects a Module, got "
                            f"{type(module).__name__}")
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key: str) -> Module:
        return self._modules.pop(key)

    def update(self, modules) -> None:
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, m in pairs:
            self[key] = m


class ParameterList(Module):
    """Parameters named "0", "1", ... (state_dict keys ``<path>.0``)."""

    def __init__(self, parameters: Iterable = ()) -> None:
        super().__init__()
        for p in parameters:
            self.append(p)

    def append(self, p) -> "ParameterList":
        if not isinstance(p, Parameter):
            raise TypeError(f"ParameterList.append: expects an nn.Parameter, got "
                            f"{type(p).__name__}")
        self.register_parameter(str(len(self._parameters)), p)
        return self

    def extend(self, parameters: Iterable) -> "ParameterList":
        for p in parameters:
            self.append(p)
        return self

    def __getitem__(self, i: int) -> Parameter:
        return list(self._parameters.values())[i]

    def __setitem__(self, i: int, p) -> None:
        if not isinstance(p, Parameter):
            raise TypeError(f"ParameterList[{i}]: expects an nn.Parameter, got "
                            f"{type(p).__name__}")
        self._parameters[list(self._parameters)[i]] = p

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())
