"""``nn.Sequential`` and ``nn.ModuleList``: children named "0", "1", ...
Not thread-safe."""
from __future__ import annotations

from typing import Iterable, Iterator

from oneflow_lite.nn.module import Module


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
