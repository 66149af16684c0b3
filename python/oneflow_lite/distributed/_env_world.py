"""The job's world from the variables of whichever launcher started this
process: ours or torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
GROUP_RANK, MASTER_ADDR, MASTER_PORT: used as they are), SLURM's ``srun``
or Open MPI's ``mpirun``. The last two are translated into the first set,
which is all the rest of the framework (``World.from_env``, the C++ world
of runtime/process_world.h) reads.

``import oneflow_lite`` calls ``apply()``, which writes the translated
variables into os.environ (and so into the C++ getenv) before anything
reads them; a variable already set is never overwritten, so MASTER_ADDR and
MASTER_PORT given by the user win, and RANK or WORLD_SIZE set (our launcher,
torchrun, by hand) means no translation at all.

SLURM (``srun``; the variables each task gets):

    RANK             SLURM_PROCID
    WORLD_SIZE       SLURM_STEP_NUM_TASKS, else SLURM_NTASKS (SLURM_NPROCS)
    LOCAL_RANK       SLURM_LOCALID
    GROUP_RANK       SLURM_NODEID (0 when unset)
    LOCAL_WORLD_SIZE this node's count in SLURM_STEP_TASKS_PER_NODE, else
                     SLURM_TASKS_PER_NODE ("2(x3),1"), else WORLD_SIZE on
                     one node
    MASTER_ADDR      the first host of SLURM_STEP_NODELIST, else of
                     SLURM_JOB_NODELIST (SLURM_NODELIST); the compressed
                     form ``node[01-04],other`` is expanded
    MASTER_PORT      15000 + SLURM_JOB_ID % 10000, so that two jobs sharing
                     a node do not meet on one port (set MASTER_PORT to
                     choose)
    OFL_JOB_ID       slurm-<SLURM_JOB_ID>.<SLURM_STEP_ID>

A script started in the batch script itself, not under ``srun``, may see
the allocation's SLURM_NTASKS: start it with ``srun``, or set
``OFL_LAUNCHER_ENV=0`` (no translation at all: a process of its own).

Open MPI (``mpirun``):

    RANK             OMPI_COMM_WORLD_RANK
    WORLD_SIZE       OMPI_COMM_WORLD_SIZE
    LOCAL_RANK       OMPI_COMM_WORLD_LOCAL_RANK
    LOCAL_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_SIZE
    GROUP_RANK       RANK // LOCAL_WORLD_SIZE (exact when every node runs
                     the same number of processes, mapped by slot)
    MASTER_ADDR      127.0.0.1 when every process is on this node;
                     otherwise it must be set (``mpirun -x
                     MASTER_ADDR=<host of rank 0>``): Open MPI names no host
    MASTER_PORT      29500 (torchrun's default), or MASTER_PORT

Pure functions of the mapping they are given, apart from ``apply``.
"""
from __future__ import annotations

import itertools
import os
import re
from typing import Dict, List, Mapping, MutableMapping, Optional

__all__ = ["detect", "standard_variables", "apply", "expand_nodelist", "first_host",
           "tasks_on_node"]

OMPI_DEFAULT_PORT = 29500
SLURM_PORT_BASE = 15000
_MAX_HOSTS = 1 << 20  # a nodelist expanding to more is refused (a typo, not a cluster)


def detect(env: Mapping[str, str]) -> Optional[str]:
    """"standard" (RANK or WORLD_SIZE set: ours, torchrun, by hand),
    "slurm", "openmpi", or None (a process of its own; also whenever
    OFL_LAUNCHER_ENV=0)."""
    if "RANK" in env or "WORLD_SIZE" in env:
        return "standard"
    if env.get("OFL_LAUNCHER_ENV", "1").strip() == "0":
        return None
    if "SLURM_PROCID" in env and ("SLURM_NTASKS" in env or "SLURM_NPROCS" in env
                                  or "SLURM_STEP_NUM_TASKS" in env):
        return "slurm"
    if "OMPI_COMM_WORLD_RANK" in env and "OMPI_COMM_WORLD_SIZE" in env:
        return "openmpi"
    return None


def standard_variables(env: Mapping[str, str]) -> Dict[str, str]:
    """The variables our launcher would have set, translated from SLURM's or
    Open MPI's (module docstring); {} when there is nothing to translate.
    A bad variable raises ValueError naming it and its value."""
    kind = detect(env)
    if kind == "slurm":
        out = _from_slurm(env)
    elif kind == "openmpi":
        out = _from_openmpi(env)
    else:
        return {}
    return {name: str(value) for name, value in out.items()}


def apply(environ: Optional[MutableMapping[str, str]] = None) -> Optional[str]:
    """Writes ``standard_variables`` into ``environ`` (default os.environ)
    where not set already; returns the launcher detected (``detect``)."""
    environ = os.environ if environ is None else environ
    kind = detect(environ)
    for name, value in standard_variables(environ).items():
        environ.setdefault(name, value)
    return kind


def _int(env: Mapping[str, str], name: str, minimum: int = 0) -> int:
    text = env[name]
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} is below {minimum}")
    return value


def _first_set(env: Mapping[str, str], names) -> Optional[str]:
    return next((n for n in names if env.get(n, "").strip()), None)


def _from_slurm(env: Mapping[str, str]) -> Dict[str, object]:
    size_name = _first_set(env, ("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"))
    if size_name is None:
        raise ValueError("SLURM_PROCID is set but SLURM_NTASKS is empty: start the job with srun")
    size = _int(env, size_name, 1)
    rank = _int(env, "SLURM_PROCID")
    if rank >= size:
        raise ValueError(f"SLURM_PROCID={rank} is not below {size_name}={size}")
    node = _int(env, "SLURM_NODEID") if "SLURM_NODEID" in env else 0
    local = _int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0
    per_node = _first_set(env, ("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"))
    local_size = tasks_on_node(env[per_node], node, per_node) if per_node else size
    out: Dict[str, object] = {"RANK": rank, "WORLD_SIZE": size, "LOCAL_RANK": local,
                              "LOCAL_WORLD_SIZE": local_size, "GROUP_RANK": node}
    nodelist = _first_set(env, ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"))
    if "MASTER_ADDR" not in env:
        if nodelist is None:
            raise ValueError("SLURM: no SLURM_JOB_NODELIST to take the master host from; "
                             "set MASTER_ADDR")
        out["MASTER_ADDR"] = first_host(env[nodelist], nodelist)
    if "MASTER_PORT" not in env:
        job = _int(env, "SLURM_JOB_ID") if "SLURM_JOB_ID" in env else 0
        out["MASTER_PORT"] = SLURM_PORT_BASE + job % 10000
    if "OFL_JOB_ID" not in env and "SLURM_JOB_ID" in env:
        step = re.sub(r"[^A-Za-z0-9_.-]", "_", env.get("SLURM_STEP_ID", "0").strip() or "0")
        out["OFL_JOB_ID"] = f"slurm-{_int(env, 'SLURM_JOB_ID')}.{step}"[:64]
    return out


def _from_openmpi(env: Mapping[str, str]) -> Dict[str, object]:
    size = _int(env, "OMPI_COMM_WORLD_SIZE", 1)
    rank = _int(env, "OMPI_COMM_WORLD_RANK")
    if rank >= size:
        raise ValueError(f"OMPI_COMM_WORLD_RANK={rank} is not below OMPI_COMM_WORLD_SIZE={size}")
    local_size = (_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1)
                  if "OMPI_COMM_WORLD_LOCAL_SIZE" in env else size)
    local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK") if "OMPI_COMM_WORLD_LOCAL_RANK" in env else 0
    out: Dict[str, object] = {"RANK": rank, "WORLD_SIZE": size, "LOCAL_RANK": local,
                              "LOCAL_WORLD_SIZE": local_size, "GROUP_RANK": rank // local_size}
    if "MASTER_ADDR" not in env:
        if local_size != size:
            raise ValueError(f"Open MPI: OMPI_COMM_WORLD_SIZE={size} processes on several nodes "
                             f"(OMPI_COMM_WORLD_LOCAL_SIZE={local_size}) and no MASTER_ADDR: "
                             "pass mpirun -x MASTER_ADDR=<the host of rank 0>")
        out["MASTER_ADDR"] = "127.0.0.1"
    if "MASTER_PORT" not in env:
        out["MASTER_PORT"] = OMPI_DEFAULT_PORT
    return out


def _split_top(text: str) -> List[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _expand_range(body: str, name: str, text: str) -> List[str]:
    """``01-03,7`` -> ['01', '02', '03', '7'] (zero padding kept)."""
    out = []
    for item in body.split(","):
        low, sep, high = item.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise ValueError(f"{name}={text!r}: '[{body}]' is not a list of numbers and ranges")
        if not sep:
            out.append(low)
            continue
        if int(high) < int(low):
            raise ValueError(f"{name}={text!r}: the range {item} runs backwards")
        out.extend(str(v).zfill(len(low)) for v in range(int(low), int(high) + 1))
        if len(out) > _MAX_HOSTS:
            raise ValueError(f"{name}={text!r}: more than {_MAX_HOSTS} hosts")
    return out


def expand_nodelist(text: str, name: str = "SLURM_JOB_NODELIST") -> List[str]:
    """SLURM's compressed host list expanded, in order:
    ``node[01-02],gpu[1,3]-a`` -> node01, node02, gpu1-a, gpu3-a."""
    hosts: List[str] = []
    for part in _split_top(text.strip()):
        pieces = re.split(r"\[([^\]]*)\]", part)  # literal, range, literal, range, ..., literal
        if not part or "[" in pieces[-1] or "]" in "".join(pieces[0::2]):
            raise ValueError(f"{name}={text!r}: unbalanced brackets or an empty host")
        choices = [[p] if i % 2 == 0 else _expand_range(p, name, text)
                   for i, p in enumerate(pieces)]
        for combo in itertools.product(*choices):
            hosts.append("".join(combo))
            if len(hosts) > _MAX_HOSTS:
                raise ValueError(f"{name}={text!r}: more than {_MAX_HOSTS} hosts")
    return hosts


def first_host(text: str, name: str = "SLURM_JOB_NODELIST") -> str:
    """The first host of a SLURM host list (``expand_nodelist``)."""
    return expand_nodelist(text, name)[0]


def tasks_on_node(text: str, node: int, name: str = "SLURM_TASKS_PER_NODE") -> int:
    """Node ``node``'s task count from SLURM's ``2(x3),1`` form (3 nodes of
    2 tasks, then one of 1)."""
    counts: List[int] = []
    for item in text.strip().split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", item.strip())
        if m is None:
            raise ValueError(f"{name}={text!r}: '{item}' is not N or N(xM)")
        counts.extend([int(m.group(1))] * int(m.group(2) or 1))
        if node < len(counts):
            return counts[node]
    raise ValueError(f"{name}={text!r} lists {len(counts)} node(s); SLURM_NODEID={node} is not "
                     "among them")
