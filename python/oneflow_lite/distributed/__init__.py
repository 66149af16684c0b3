"""oneflow_lite.distributed: one job over several processes and machines.

``python -m oneflow_lite.distributed.launch`` (``launch.py``) starts the
processes of a job and sets, in each, the variables that ``World.from_env``
reads here: where this process stands in the job (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK), where the job meets
(MASTER_ADDR, MASTER_PORT: the rendezvous store), which store keys are its
own (OFL_JOB_ID) and how its processes connect (OFL_BIND_ADDR or OFL_IFACE,
OFL_DEVICES_PER_PROCESS). The runtime owns the rendezvous itself; this
package only names it.

    >>> from oneflow_lite.distributed import World
    >>> World.from_env({}).is_distributed  # no launcher: one process
    False
    >>> env = {"RANK": "4", "WORLD_SIZE": "6", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "3",
    ...        "GROUP_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
    >>> World.from_env(env).rank, World.from_env(env).is_distributed
    (4, True)

Everything here is pure (it reads the environment it is given, or
os.environ) apart from ``free_port`` and ``check_bind_addr``, which open and
close a socket; all of it is thread-safe.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import socket
from typing import Mapping, Optional

from oneflow_lite.distributed import _env_world

__all__ = ["World", "free_port", "check_bind_addr", "check_iface", "check_job_id"]

# The variables of a launched job. Either none of them is set (a single
# process, e.g. `python -m oneflow_lite.train`) or all of them are.
JOB_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "MASTER_ADDR", "MASTER_PORT")
_NET_DIR = "/sys/class/net"
_JOB_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclasses.dataclass(frozen=True)
class World:
    """This process's place in a job. ``master_port`` 0 means no rendezvous
    (a single process); ``job_id`` prefixes the job's store keys; ``bind_addr``
    or ``iface`` (at most one) is where its Gloo pairs listen (None: the
    runtime's default)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 0
    job_id: str = ""
    devices_per_process: int = 1
    bind_addr: Optional[str] = None
    iface: Optional[str] = None

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "World":
        """Reads and checks the launcher's variables (default: os.environ),
        or SLURM's and Open MPI's translated (``_env_world``). None set: a
        single-process World. Otherwise every one of JOB_VARIABLES must be
        set and consistent; a bad one raises ValueError naming the variable
        and its value."""
        env = os.environ if environ is None else environ
        env = {**_env_world.standard_variables(env), **env}  # srun's, mpirun's: translated
        present = [name for name in JOB_VARIABLES if name in env]
        extras = _extras(env)
        if not present:
            return cls(**extras)
        missing = [name for name in JOB_VARIABLES if name not in env]
        if missing:
            raise ValueError(f"{', '.join(present)} set but {', '.join(missing)} not: a launched "
                             f"process needs all of {', '.join(JOB_VARIABLES)} "
                             "(python -m oneflow_lite.distributed.launch sets them)")
        world_size = _env_int(env, "WORLD_SIZE", 1)
        local_world_size = _env_int(env, "LOCAL_WORLD_SIZE", 1)
        world = cls(rank=_env_int(env, "RANK", 0), world_size=world_size,
                    local_rank=_env_int(env, "LOCAL_RANK", 0),
                    local_world_size=local_world_size,
                    node_rank=_env_int(env, "GROUP_RANK", 0),
                    master_addr=env["MASTER_ADDR"].strip(),
                    master_port=_env_int(env, "MASTER_PORT", 1), **extras)
        world._check()
        return world

    def _check(self) -> None:
        if self.rank >= self.world_size:
            raise ValueError(f"RANK={self.rank} is not below WORLD_SIZE={self.world_size}")
        if self.local_world_size > self.world_size:
            raise ValueError(f"LOCAL_WORLD_SIZE={self.local_world_size} exceeds "
                             f"WORLD_SIZE={self.world_size}")
        if self.local_rank >= self.local_world_size:
            raise ValueError(f"LOCAL_RANK={self.local_rank} is not below "
                             f"LOCAL_WORLD_SIZE={self.local_world_size}")
        if self.node_rank >= self.world_size:
            raise ValueError(f"GROUP_RANK={self.node_rank} is not below "
                             f"WORLD_SIZE={self.world_size}")
        if not self.master_addr:
            raise ValueError("MASTER_ADDR='' is empty: name the address of node 0")
        if self.master_port > 65535:
            raise ValueError(f"MASTER_PORT={self.master_port} is not a port (1..65535)")


def _extras(env: Mapping[str, str]) -> dict:
    """The OFL_* variables, each optional."""
    extras = {"devices_per_process": _env_int(env, "OFL_DEVICES_PER_PROCESS", 1, default=1)}
    job_id = env.get("OFL_JOB_ID")
    if job_id is not None:
        _raise_if(check_job_id(job_id), "OFL_JOB_ID", job_id)
        extras["job_id"] = job_id
    bind_addr, iface = env.get("OFL_BIND_ADDR") or None, env.get("OFL_IFACE") or None
    if bind_addr and iface:
        raise ValueError(f"OFL_BIND_ADDR={bind_addr} and OFL_IFACE={iface} are both set: "
                         "name an address or an interface, not both")
    if bind_addr:
        _raise_if(check_bind_addr(bind_addr), "OFL_BIND_ADDR", bind_addr)
    if iface:
        _raise_if(check_iface(iface), "OFL_IFACE", iface)
    extras.update(bind_addr=bind_addr, iface=iface)
    return extras


def _raise_if(error: Optional[str], name: str, value: str) -> None:
    if error:
        raise ValueError(f"{name}={value}: {error}")


def _env_int(env: Mapping[str, str], name: str, minimum: int,
             default: Optional[int] = None) -> int:
    text = env.get(name)
    if text is None:
        assert default is not None, name
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} is below {minimum}")
    return value


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago: binds port 0, reads
    the port the kernel chose, closes. The race is small but real: another
    process may take the port before the job binds it (the rendezvous then
    fails with "address in use" and the job can be started again). The kernel
    hands out ephemeral ports in turn, so two jobs starting together rarely
    draw the same one."""
    family = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0][0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def check_bind_addr(text: str) -> Optional[str]:
    """None if ``text`` is an IP address of this machine (it parses, and a
    socket can bind to it), else what is wrong."""
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return "not an IPv4 or IPv6 address"
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((str(address), 0))
    except OSError as e:
        return f"not an address of this machine ({e.strerror})"
    return None


def check_iface(name: str) -> Optional[str]:
    """None if ``name`` is a network interface of this machine, else what is
    wrong (with the interfaces there are)."""
    try:
        names = sorted(os.listdir(_NET_DIR))
    except OSError as e:
        return f"cannot list network interfaces ({_NET_DIR}: {e.strerror})"
    if name in names:
        return None
    return f"no such network interface (this machine has: {', '.join(names)})"


def check_job_id(text: str) -> Optional[str]:
    """None if ``text`` can prefix store keys: 1-64 of A-Z a-z 0-9 _ . -"""
    if _JOB_ID.fullmatch(text):
        return None
    return "a job id is 1 to 64 characters of A-Z, a-z, 0-9, '_', '.', '-'"
