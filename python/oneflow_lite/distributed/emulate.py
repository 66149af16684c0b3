"""An emulated cluster on one Linux machine: every node a network namespace,
the nodes joined by a switch, every node's link shaped by tc.

``python -m oneflow_lite.distributed.launch --emulate-nodes M --nproc-per-node
K --emulate-rate 1gbit [--emulate-delay-ms D] [--emulate-intra-rate R]`` runs
the job's M x K processes on M emulated nodes (``Network`` below); the
launcher makes the network before the first process starts and removes it
when the job ends, however it ends (success, a failed rank, SIGINT, SIGTERM,
SIGHUP). Only SIGKILL of the launcher leaves it behind:
``python -m oneflow_lite.distributed.emulate --remove JOB_ID`` removes it.

Layout (every name carries the job id; nothing is added to the machine's own
namespace, so ``ip link`` there never changes):

    namespace ofl-JOB-sw:  bridge br0, ports p0 .. p{M-1}  (egress shaped)
    namespace ofl-JOB-n<i>: eth0 (the peer of p<i>, 10.213.0.<i+1>/24,
                            egress shaped, MTU 9000) and lo (optionally
                            shaped: --emulate-intra-rate)

A node's link is shaped in both directions: tbf at the rate on eth0 (what the
node sends) and on p<i> (what it receives), so each node has a full-duplex
NIC of that rate into a non-blocking switch; --emulate-delay-ms adds a netem
delay on eth0 (one way, node to node). The processes of a node run inside its
namespace (``ip netns exec``) with OFL_BIND_ADDR its address and MASTER_ADDR
node 0's; processes of one node reach each other over the node's loopback,
the fast level, unless --emulate-intra-rate shapes it. The addresses exist
only inside these namespaces (no route leaves them), so two jobs at once
use the same addresses without meeting.

Needs CAP_NET_ADMIN and CAP_SYS_ADMIN (root) and the ``ip`` and ``tc``
commands; ``missing_privilege`` names what is missing before anything is
made. Not thread-safe: one thread makes and removes a Network.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence

SUBNET = "10.213.0"
MTU = 9000
MAX_NODES = 250
_CAP_NET_ADMIN, _CAP_SYS_ADMIN = 12, 21
_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(bit|kbit|mbit|gbit|tbit)\s*$",
                   re.IGNORECASE)
_RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
_IP_TIMEOUT_S = 20.0


class EmulationError(OSError):
    """A step of making the network failed (its command and the tool's words)."""


def parse_rate(option: str, text: str) -> float:
    """Bits per second from tc's spelling (decimal units: 1gbit = 1e9 bit/s);
    raises ValueError naming the option and the value."""
    match = _RATE.match(text)
    value = float(match.group(1)) * _RATE_UNITS[match.group(2).lower()] if match else 0.0
    if not match or not math.isfinite(value) or value < 8e3:
        raise ValueError(f"{option} {text}: not a rate of at least 8kbit (a number and bit, "
                         "kbit, mbit, gbit or tbit, as tc writes it: 1gbit, 2.5gbit)")
    return value


@dataclasses.dataclass(frozen=True)
class EmulationSpec:
    """The emulated cluster: ``nodes`` namespaces, each node's link shaped to
    ``rate_bits`` bits/s (None: unshaped) with ``delay_ms`` one way, and the
    node's loopback to ``intra_rate_bits`` (None: unshaped)."""

    nodes: int
    rate_bits: Optional[float] = None
    delay_ms: float = 0.0
    intra_rate_bits: Optional[float] = None

    def check(self) -> None:
        """Raises ValueError naming the option and its value."""
        if not 1 <= self.nodes <= MAX_NODES:
            raise ValueError(f"--emulate-nodes {self.nodes} is not in 1..{MAX_NODES}")
        if not (math.isfinite(self.delay_ms) and 0 <= self.delay_ms <= 10000):
            raise ValueError(f"--emulate-delay-ms {self.delay_ms:g} is not in 0..10000")


def address(node: int) -> str:
    """Node ``node``'s address (inside its namespace only)."""
    return f"{SUBNET}.{node + 1}"


def namespace(job_id: str, node: Optional[int]) -> str:
    """The namespace of node ``node`` of job ``job_id`` (None: its switch)."""
    return f"ofl-{job_id}-" + ("sw" if node is None else f"n{node}")


def missing_privilege(status_text: Optional[str] = None) -> Optional[str]:
    """None when this process can make the network, else one line saying what
    is missing. ``status_text``: /proc/self/status's text (read when None)."""
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        return (f"--emulate-nodes needs the {' and '.join(missing)} command"
                f"{'s' if len(missing) > 1 else ''} (iproute2), not found on PATH")
    if status_text is None:
        try:
            with open("/proc/self/status") as f:
                status_text = f.read()
        except OSError as e:
            return f"--emulate-nodes cannot read /proc/self/status ({e.strerror})"
    found = re.search(r"^CapEff:\s*([0-9a-fA-F]+)\s*$", status_text, re.MULTILINE)
    effective = int(found.group(1), 16) if found else 0
    lacking = [name for name, bit in (("CAP_NET_ADMIN", _CAP_NET_ADMIN),
                                      ("CAP_SYS_ADMIN", _CAP_SYS_ADMIN))
               if not effective >> bit & 1]
    if lacking:
        return (f"--emulate-nodes needs {' and '.join(lacking)} to make network namespaces "
                "and shape their links; this process lacks them (run the launcher as root)")
    return None


def _tbf(rate_bits: float, mtu: int) -> List[str]:
    """tbf's arguments: the rate, a burst of 5 ms at the rate (at least two
    packets; a shorter one loses tokens whenever a busy machine leaves the
    sender off its core for longer: 2 ms moved 82-86 % of the rate at load
    20 on 2 cores, 8 ms 89-93 %), a queue of 100 ms at the rate (at least 64
    packets)."""
    rate_bytes = rate_bits / 8
    burst = max(2 * mtu + 1024, int(rate_bytes * 0.005))
    limit = max(64 * mtu, int(rate_bytes * 0.1))
    return ["tbf", "rate", f"{int(rate_bits)}bit", "burst", str(burst), "limit", str(limit)]


class Network:
    """The namespaces, links and qdiscs of one emulated job. ``create`` makes
    them (removing what it made if a step fails); ``remove`` removes what
    this object made, and may be called any number of times."""

    def __init__(self, spec: EmulationSpec, job_id: str):
        spec.check()
        self.spec = spec
        self.job_id = job_id
        self.made: List[str] = []  # namespaces, in the order made

    def namespaces(self) -> List[str]:
        return [namespace(self.job_id, i) for i in range(self.spec.nodes)] + [
            namespace(self.job_id, None)]

    def prefix(self, node: int) -> List[str]:
        """The command prefix that runs a process inside node ``node``."""
        return ["ip", "netns", "exec", namespace(self.job_id, node)]

    def create(self) -> None:
        """Makes the network; raises EmulationError (after removing what it
        made) when a step fails, e.g. a namespace of that name exists."""
        try:
            for name in self.namespaces():
                _run(["ip", "netns", "add", name], f"another job with the id {self.job_id}?")
                self.made.append(name)
            switch = namespace(self.job_id, None)
            _run(["ip", "-n", switch, "link", "add", "br0", "type", "bridge"])
            _run(["ip", "-n", switch, "link", "set", "br0", "up"])
            for node in range(self.spec.nodes):
                self._add_node(node, switch)
        except BaseException:
            self.remove()
            raise

    def _add_node(self, node: int, switch: str) -> None:
        ns, port = namespace(self.job_id, node), f"p{node}"
        _run(["ip", "-n", switch, "link", "add", port, "mtu", str(MTU), "type", "veth", "peer",
              "name", "eth0", "netns", ns])
        _run(["ip", "-n", switch, "link", "set", port, "master", "br0", "up"])
        _run(["ip", "-n", ns, "link", "set", "eth0", "mtu", str(MTU)])
        _run(["ip", "-n", ns, "addr", "add", f"{address(node)}/24", "dev", "eth0"])
        _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        s = self.spec
        if s.rate_bits is not None:
            _run(["tc", "-n", switch, "qdisc", "add", "dev", port, "root", *_tbf(s.rate_bits, MTU)])
        if s.delay_ms > 0:
            _run(["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "netem",
                  "delay", f"{s.delay_ms:g}ms", "limit", "100000"])
            if s.rate_bits is not None:
                _run(["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "parent", "1:1", "handle",
                      "10:", *_tbf(s.rate_bits, MTU)])
        elif s.rate_bits is not None:
            _run(["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root", *_tbf(s.rate_bits, MTU)])
        if s.intra_rate_bits is not None:
            _run(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root",
                  *_tbf(s.intra_rate_bits, 65536)])

    def remove(self) -> List[str]:
        """Deletes every namespace this object made (their links and qdiscs
        go with them); returns one line per namespace that could not be."""
        problems = []
        while self.made:
            name = self.made.pop()
            done = _ip_quiet(["ip", "netns", "del", name])
            if done is not None:
                problems.append(f"ip netns del {name}: {done}")
        return problems

    def describe(self) -> str:
        s = self.spec
        rate = "unshaped" if s.rate_bits is None else f"{s.rate_bits / 1e9:g} Gbit/s"
        intra = "" if s.intra_rate_bits is None else (
            f", loopback {s.intra_rate_bits / 1e9:g} Gbit/s")
        return (f"{s.nodes} emulated nodes ({namespace(self.job_id, 0)} ..) at "
                f"{address(0)}..{address(s.nodes - 1)}, links {rate}, delay {s.delay_ms:g} ms"
                f"{intra}")


def _run(command: Sequence[str], hint: str = "") -> None:
    error = _ip_quiet(command)
    if error is None:
        return
    if "netem" in command and "unknown" in error:
        hint = "this kernel has no netem qdisc (sch_netem): run without --emulate-delay-ms"
    elif "exists" not in error:
        hint = ""
    raise EmulationError(f"emulate: {' '.join(command)} failed: {error}"
                         + (f" ({hint})" if hint else ""))


def _ip_quiet(command: Sequence[str]) -> Optional[str]:
    """Runs one ip/tc command; None on success, else its error text."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True,
                              timeout=_IP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if done.returncode != 0:
        return (done.stderr.strip() or f"exit {done.returncode}").replace("\n", "; ")
    return None


def job_namespaces(job_id: Optional[str] = None) -> List[str]:
    """The emulation namespaces on this machine (of one job when named)."""
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                          timeout=_IP_TIMEOUT_S)
    names = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    prefix = "ofl-" if job_id is None else f"ofl-{job_id}-"
    return [n for n in names if n.startswith(prefix)]


def child_envs(options, spec: EmulationSpec) -> Dict[int, Dict[str, str]]:
    """Global rank -> environment for every node's processes of resolved
    launch options (``LaunchOptions``): node i's carry GROUP_RANK i and
    OFL_BIND_ADDR its address."""
    envs: Dict[int, Dict[str, str]] = {}
    for node in range(spec.nodes):
        envs.update(dataclasses.replace(options, node_rank=node, bind_addr=address(node),
                                        iface=None).child_envs())
    return envs


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m oneflow_lite.distributed.emulate",
        description="List or remove the namespaces of emulated jobs (a launcher killed by "
                    "SIGKILL leaves them behind).")
    parser.add_argument("--remove", metavar="JOB_ID", help="remove that job's namespaces")
    args = parser.parse_args(argv)
    if args.remove is None:
        print("\n".join(job_namespaces()))
        return 0
    names = job_namespaces(args.remove)
    problems = [f"ip netns del {n}: {e}" for n in names
                if (e := _ip_quiet(["ip", "netns", "del", n])) is not None]
    for line in problems:
        print(f"emulate: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
