"""Starts the processes of one job on this machine:
``python -m oneflow_lite.distributed.launch --nproc-per-node N [--nnodes M
--node-rank R --master-addr A --master-port P] script.py ARGS`` (or ``-m
module ARGS``), as torchrun does; torchrun's spellings are accepted too
(--nproc_per_node, --node_rank, --master_addr, --master_port,
--rdzv-endpoint HOST:PORT, --rdzv-id, --rdzv-backend, --standalone).

Each child runs ``python -u script.py ARGS`` with the launcher's environment
plus RANK (node_rank * N + local rank), WORLD_SIZE (M * N), LOCAL_RANK,
LOCAL_WORLD_SIZE (N), GROUP_RANK (R), MASTER_ADDR, MASTER_PORT, OFL_JOB_ID
(the job's store-key prefix: random per launch on one node; on several nodes
derived from master address and port, so that every node agrees, or
--job-id), OFL_DEVICES_PER_PROCESS and, when given, OFL_BIND_ADDR or
OFL_IFACE (where its Gloo pairs listen). ``World.from_env`` reads them.

The launcher forwards SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 to every
live child. The first child to exit non-zero or by a signal is the job's
failure: the launcher records it in the job's store (a process waiting for
it fails at once, naming it, even if it died before joining), the others get
--timeout-s to stop on their own (the runtime stops them once it notices the
lost rank), then SIGTERM, then SIGKILL 3 s later. Each child gets SIGKILL
from the kernel if the launcher itself dies (PR_SET_PDEATHSIG).
The launcher then prints one line naming the failed rank and exits 1; after
SIGINT, SIGTERM or SIGHUP it stops the children the same way and exits
128 + the signal's number; when every child succeeds, 0. With
--max-restarts N, a failed job starts again on the processes left, up to N
times (on an emulated cluster: on the nodes left when every process of a
node was lost, else on the same nodes; distributed/_elastic.py);
--checkpoint-dir and --checkpoint-every tell the job where and how often to
save, so that it resumes. Usage errors exit 2
with one line, before anything starts, as the main job's do (train_args.py).

With ``--emulate-nodes M`` the launcher runs the whole job, M x N
processes, on an emulated cluster of M nodes on this machine (one network
namespace per node, links shaped by tc: ``emulate.py``), made before the
first process starts and removed when the job ends, however it ends.

``launch(command, LaunchOptions(...))`` does the same from Python. It
installs its signal handlers only when called from the main thread, and
restores the previous ones before it returns; one launch at a time per
process.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import os
import secrets
import signal
import socket
import sys
import threading
from typing import Dict, List, Optional, Sequence

from oneflow_lite.distributed import check_bind_addr, check_iface, check_job_id, free_port
from oneflow_lite.distributed._elastic import launch_with_restarts, report_loss
from oneflow_lite.distributed import emulate
from oneflow_lite.distributed._supervisor import Supervisor, describe
from oneflow_lite.train_args import _HelpFormatter

PROG = "python -m oneflow_lite.distributed.launch"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_FAILED = 1


@dataclasses.dataclass
class LaunchOptions:
    """The launcher's options, named as on its command line. ``master_port``
    None: a free port (one node only); ``job_id`` None: see the module
    docstring; ``env`` None: os.environ is the children's base environment."""

    nproc_per_node: int = 1
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: Optional[int] = None
    bind_addr: Optional[str] = None
    iface: Optional[str] = None
    devices_per_process: int = 1
    timeout_s: float = 10.0
    job_id: Optional[str] = None
    log_dir: Optional[str] = None
    tee_prefix: bool = False
    env: Optional[Dict[str, str]] = None
    kill_after_s: float = 3.0
    max_restarts: int = 0  # elastic restarts on the processes left (_elastic.py)
    restart_same_size: bool = False  # restart on as many processes as before
    checkpoint_dir: Optional[str] = None  # for the job: OFL_CHECKPOINT_DIR
    checkpoint_every: int = 0  # for the job: OFL_CHECKPOINT_EVERY (steps)
    restart_count: int = 0  # this start's number (OFL_RESTART_COUNT), set by a restart
    emulate: Optional[emulate.EmulationSpec] = None  # run every node here, emulated

    def resolved(self) -> "LaunchOptions":
        """A checked copy with the port and the job id filled in; raises
        ValueError naming the option and its value. Creates --log-dir."""
        if self.emulate is not None:  # restarts across its nodes: _elastic.py
            plain = dataclasses.replace(_emulated(self), emulate=None, max_restarts=0).resolved()
            return dataclasses.replace(plain, emulate=self.emulate, max_restarts=self.max_restarts)
        _check(self)
        port = self.master_port
        if port is None:
            try:
                port = free_port(self.master_addr)
            except OSError as e:
                raise ValueError(f"--master-addr {self.master_addr}: cannot bind a port there "
                                 f"({e.strerror or e})") from None
        job_id = self.job_id
        if job_id is None:
            job_id = (secrets.token_hex(8) if self.nnodes == 1 else hashlib.sha256(
                f"{self.master_addr}:{port}".encode()).hexdigest()[:16])
        if self.log_dir is not None:
            try:
                os.makedirs(self.log_dir, exist_ok=True)
            except OSError as e:
                raise ValueError(f"--log-dir {self.log_dir}: cannot create it ({e.strerror})"
                                 ) from None
        return dataclasses.replace(self, master_port=port, job_id=job_id)

    def child_envs(self) -> Dict[int, Dict[str, str]]:
        """Global rank -> the environment of that rank's process (resolved
        options only)."""
        assert self.master_port is not None and self.job_id is not None
        base = dict(os.environ if self.env is None else self.env)
        common = {"WORLD_SIZE": self.nnodes * self.nproc_per_node,
                  "LOCAL_WORLD_SIZE": self.nproc_per_node, "GROUP_RANK": self.node_rank,
                  "MASTER_ADDR": self.master_addr, "MASTER_PORT": self.master_port,
                  "OFL_JOB_ID": self.job_id,
                  "OFL_DEVICES_PER_PROCESS": self.devices_per_process}
        if self.max_restarts or self.restart_count:
            common["OFL_RESTART_COUNT"] = self.restart_count
        for name, value in (("OFL_BIND_ADDR", self.bind_addr), ("OFL_IFACE", self.iface),
                            ("OFL_CHECKPOINT_DIR", self.checkpoint_dir),
                            ("OFL_CHECKPOINT_EVERY", self.checkpoint_every or None)):
            if value:
                common[name] = value
            else:
                base.pop(name, None)
        envs = {}
        for local_rank in range(self.nproc_per_node):
            rank = self.node_rank * self.nproc_per_node + local_rank
            env = dict(base, **{k: str(v) for k, v in common.items()})
            env.update(RANK=str(rank), LOCAL_RANK=str(local_rank))
            envs[rank] = env
        return envs


@dataclasses.dataclass
class LaunchResult:
    """exit_code: 0, 1 (a child failed) or 128 + signal (the launcher got
    one: received_signal); message: the one line for stderr (None on
    success); failed_rank: the first rank that failed; returncodes:
    rank -> Popen's returncode (negative: killed by that signal; None:
    still running after SIGKILL, or never started)."""

    exit_code: int
    message: Optional[str]
    returncodes: Dict[int, Optional[int]]
    failed_rank: Optional[int] = None
    received_signal: Optional[int] = None
    lost_ranks: List[int] = dataclasses.field(default_factory=list)


def python_command(target: str, args: Sequence[str] = (), module: bool = False) -> List[str]:
    """The children's command line: this interpreter, unbuffered, running a
    script or (module=True) a module."""
    return [sys.executable, "-u", *(["-m"] if module else []), target, *args]


def launch(command: Sequence[str], options: LaunchOptions) -> LaunchResult:
    """Runs ``command`` as this node's nproc_per_node processes of the job
    and supervises them (module docstring). Raises ValueError on bad
    options, before anything starts.

        >>> import sys
        >>> from oneflow_lite.distributed.launch import LaunchOptions, launch
        >>> code = "import os; assert os.environ['WORLD_SIZE'] == '2'"
        >>> launch([sys.executable, "-c", code], LaunchOptions(nproc_per_node=2)).exit_code
        0
    """
    if not command:
        raise ValueError("launch: the command is empty")
    options = options.resolved()
    if options.max_restarts:
        return launch_with_restarts(command, options, _launch_once)
    return _launch_once(command, options)


def _launch_once(command: Sequence[str], options: LaunchOptions) -> LaunchResult:
    network, envs, prefixes = None, options.child_envs(), {}
    if options.emulate is not None:
        network = emulate.Network(options.emulate, options.job_id)
        envs = emulate.child_envs(options, options.emulate)
        prefixes = {r: network.prefix(r // options.nproc_per_node) for r in envs}
    supervisor = Supervisor(command, envs, options.log_dir, options.tee_prefix, prefixes)
    received: List[int] = []  # the first terminating signal, then the ranks it reached

    def on_signal(signum, _frame):
        ranks = supervisor.forward(signum)
        if signum in TERMINATING and not received:
            received.extend([signum, *ranks])

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, on_signal) for s in FORWARDED}
    try:
        if network is not None and not received:
            network.create()
        supervisor.start(should_stop=lambda: bool(received))
        first = supervisor.wait(should_stop=lambda: bool(received))
        others = [c for c in supervisor.children if c is not first and c.alive]
        if first is not None and network is None:  # the others hear of it now, even if
            report_loss(options, first)  # it never joined (an emulated store is unreachable)
        supervisor.stop(options.timeout_s, options.kill_after_s)
        return _result(supervisor, first, others, received[:1], received[1:], options)
    finally:
        supervisor.close()
        if network is not None:
            for problem in network.remove():
                print(f"launch: cannot remove the emulated network: {problem}",
                      file=sys.stderr, flush=True)
        for s, handler in previous.items():
            signal.signal(s, handler)


def _result(supervisor: Supervisor, first, others, received: List[int], reached: List[int],
            options: LaunchOptions) -> LaunchResult:
    codes = supervisor.returncodes()
    grace, kill = options.timeout_s, options.kill_after_s
    if first is not None:
        lost = [first.rank] + [c.rank for c in supervisor.children if c is not first and
                               c.stopped_by is None and (c.process.returncode or 0) < 0]
        return LaunchResult(EXIT_FAILED, "launch: " + supervisor.summary(first, others, grace,
                                                                         kill),
                            codes, failed_rank=first.rank, lost_ranks=sorted(lost))
    if received:
        signum = received[0]
        parts = [f"received {signal.Signals(signum).name} and forwarded it to "
                 + (f"ranks {', '.join(map(str, reached))}" if reached else "no running rank")]
        parts += supervisor.fates(others, grace, kill)
        failed = [f"rank {r} {describe(code)}" for r, code in codes.items() if code]
        parts += failed[:1]
        return LaunchResult(128 + signum, "launch: " + "; ".join(parts), codes,
                            received_signal=signum)
    return LaunchResult(0, None, codes)


def _emulated(o: LaunchOptions) -> LaunchOptions:
    """An emulated job's options: every node here, node 0's address as the
    master, a random job id; the privilege checked before anything is made.
    Options already so set pass (resolving twice changes nothing)."""
    o.emulate.check()
    nodes = o.emulate.nodes
    for name, value, allowed in (("--nnodes", o.nnodes, (1, nodes)),
                                 ("--node-rank", o.node_rank, (0,)),
                                 ("--master-addr", o.master_addr,
                                  ("127.0.0.1", emulate.address(0))),
                                 ("--bind-addr", o.bind_addr, (None,)),
                                 ("--iface", o.iface, (None,))):
        if value not in allowed:
            raise ValueError(f"{name} {value} and --emulate-nodes {o.emulate.nodes}: the "
                             "emulation sets it (every node runs here)")
    if o.max_restarts < 0:
        raise ValueError(f"--max-restarts {o.max_restarts} is negative")
    missing = emulate.missing_privilege()
    if missing:
        raise ValueError(missing)
    job_id = o.job_id or secrets.token_hex(6)
    port = 29500 if o.master_port is None else o.master_port
    return dataclasses.replace(o, nnodes=o.emulate.nodes, master_addr=emulate.address(0),
                               master_port=port, job_id=job_id)


def _check(o: LaunchOptions) -> None:
    """Every check of the options (a host lookup and a test bind included);
    raises ValueError naming the option and its value."""
    for name, value in (("--nproc-per-node", o.nproc_per_node), ("--nnodes", o.nnodes),
                        ("--devices-per-process", o.devices_per_process)):
        if value < 1:
            raise ValueError(f"{name} {value} is not positive")
    if not 0 <= o.node_rank < o.nnodes:
        raise ValueError(f"--node-rank {o.node_rank} is not in 0..{o.nnodes - 1} "
                         f"(--nnodes {o.nnodes})")
    if not o.master_addr.strip():
        raise ValueError("--master-addr '' is empty")
    if o.master_port is None and o.nnodes > 1:
        raise ValueError(f"--nnodes {o.nnodes} needs --master-port: every node must name the "
                         "same port of node 0")
    if o.master_port is not None and not 1 <= o.master_port <= 65535:
        raise ValueError(f"--master-port {o.master_port} is not a port (1..65535)")
    if o.nnodes > 1:
        try:
            socket.getaddrinfo(o.master_addr, o.master_port, type=socket.SOCK_STREAM)
        except OSError as e:
            raise ValueError(f"--master-addr {o.master_addr}: unknown host ({e.strerror})"
                             ) from None
    for name, value in (("--timeout-s", o.timeout_s), ("kill_after_s", o.kill_after_s)):
        if math.isnan(value) or math.isinf(value) or value < 0:
            raise ValueError(f"{name} {value:g} must be a finite number >= 0")
    if o.bind_addr and o.iface:
        raise ValueError(f"--bind-addr {o.bind_addr} and --iface {o.iface}: name an address "
                         "or an interface, not both")
    for name, value, check in (("--bind-addr", o.bind_addr, check_bind_addr),
                               ("--iface", o.iface, check_iface),
                               ("--job-id", o.job_id, check_job_id)):
        error = None if value is None else check(value)
        if error:
            raise ValueError(f"{name} {value}: {error}")
    for name, value in (("--max-restarts", o.max_restarts),
                        ("--checkpoint-every", o.checkpoint_every)):
        if value < 0:
            raise ValueError(f"{name} {value} is negative")
    if o.max_restarts and o.nnodes > 1:
        raise ValueError(f"--max-restarts {o.max_restarts} with --nnodes {o.nnodes}: elastic "
                         "restarts are for a job on one node (or on an emulated cluster: "
                         "--emulate-nodes)")
    if o.log_dir is not None and o.tee_prefix:
        raise ValueError("--log-dir and --tee-prefix: choose one")
    if o.log_dir is not None and os.path.exists(o.log_dir) and not os.path.isdir(o.log_dir):
        raise ValueError(f"--log-dir {o.log_dir}: is a file, not a folder")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(  # no abbreviations: the script's own options follow it
        prog=PROG, formatter_class=_HelpFormatter, allow_abbrev=False,
        description="Start the processes of one job on this machine (see the README,\n"
                    "'Running on several processes and machines').")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, metavar="N",
                   help="processes on this machine")
    p.add_argument("--nnodes", type=int, default=1, metavar="M", help="machines in the job")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, metavar="R",
                   help="this machine's rank, 0..M-1")
    p.add_argument("--master-addr", "--master_addr", default=None, metavar="ADDR",
                   help="address of node 0's store (default 127.0.0.1)")
    p.add_argument("--master-port", "--master_port", type=int, default=None, metavar="PORT",
                   help="port of node 0's store (default: a free port; required with --nnodes "
                        "> 1)")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default=None, metavar="HOST[:PORT]",
                   help="torchrun's spelling of --master-addr and --master-port (port 29400 "
                        "when omitted, as torchrun's)")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default="static",
                   choices=("static", "c10d"), help="accepted for torchrun's command lines; "
                   "either way node 0 hosts the store at the endpoint")
    p.add_argument("--standalone", action="store_true",
                   help="torchrun's: one node, a free port (the default here)")
    p.add_argument("--bind-addr", default=None, metavar="ADDR",
                   help="address the processes' connections (the socket mesh, or Gloo's pairs) "
                        "listen on (default: $OFL_BIND_ADDR)")
    p.add_argument("--iface", default=None, metavar="NAME",
                   help="network interface the processes' connections listen on "
                        "(default: $OFL_IFACE)")
    p.add_argument("--devices-per-process", "--devices_per_process", type=int, default=1,
                   metavar="K", help="devices each process drives")
    p.add_argument("--timeout-s", type=float, default=10.0, metavar="SECONDS",
                   help="after a failure, how long the others get to stop on their own")
    p.add_argument("--job-id", "--rdzv-id", "--rdzv_id", default=None, metavar="ID",
                   help="store-key prefix (default: random; with --nnodes > 1 derived from "
                        "master address and port)")
    p.add_argument("--log-dir", default=None, metavar="DIR",
                   help="write rank_<r>.log per process here (default: inherit stdout/stderr)")
    p.add_argument("--tee-prefix", action="store_true",
                   help="print the processes' output prefixed with '[rank r] '")
    p.add_argument("--max-restarts", type=int, default=0, metavar="N",
                   help="after a lost process, start the job again on the processes left, up "
                        "to N times (the job resumes from its last checkpoint)")
    p.add_argument("--restart-same-size", action="store_true",
                   help="restart on as many processes as before (the lost one can be started "
                        "again here) rather than on those left")
    p.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                   help="tells the job where to keep its checkpoints ($OFL_CHECKPOINT_DIR)")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="K",
                   help="tells the job to save every K steps ($OFL_CHECKPOINT_EVERY)")
    e = p.add_argument_group("emulated cluster (root: network namespaces and tc)")
    e.add_argument("--emulate-nodes", type=int, default=None, metavar="M",
                   help="run the job on M emulated nodes of this machine, --nproc-per-node "
                        "processes each (one network namespace per node)")
    e.add_argument("--emulate-rate", default=None, metavar="RATE",
                   help="each node's link, both directions, in tc's units (1gbit; default: "
                        "unshaped)")
    e.add_argument("--emulate-delay-ms", type=float, default=0.0, metavar="MS",
                   help="one-way delay between two nodes (needs the kernel's netem)")
    e.add_argument("--emulate-intra-rate", default=None, metavar="RATE",
                   help="each node's loopback, between its processes (default: unshaped)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the target as a module (python -m), not a script")
    p.add_argument("target", help="the script (or, with -m, the module)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def parse_args(argv: Optional[Sequence[str]] = None):
    """The command line, checked: (argparse namespace, resolved LaunchOptions).
    Any mistake exits 2 with one line."""
    p = build_parser()
    args = p.parse_args(argv)
    if args.bind_addr is None and args.iface is None and args.emulate_nodes is None:
        # an option overrides both variables; the emulation sets its own
        _from_env(p, args)
    _endpoint(p, args)
    if not args.module and not os.path.isfile(args.target):
        p.error(f"{args.target}: no such file (a module needs -m)")
    options = LaunchOptions(
        nproc_per_node=args.nproc_per_node, nnodes=args.nnodes, node_rank=args.node_rank,
        master_addr=args.master_addr, master_port=args.master_port, bind_addr=args.bind_addr,
        iface=args.iface, devices_per_process=args.devices_per_process,
        timeout_s=args.timeout_s, job_id=args.job_id, log_dir=args.log_dir,
        tee_prefix=args.tee_prefix, max_restarts=args.max_restarts,
        restart_same_size=args.restart_same_size,
        checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
        emulate=_emulation(p, args))
    try:
        return args, options.resolved()
    except ValueError as e:
        p.error(str(e))


def _endpoint(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--rdzv-endpoint HOST[:PORT] into --master-addr and --master-port
    (torchrun's spelling); --standalone: one node."""
    if args.standalone and args.nnodes != 1:
        p.error(f"--standalone and --nnodes {args.nnodes}: standalone is one node")
    if args.rdzv_endpoint is not None:
        if args.master_addr is not None or args.master_port is not None:
            p.error(f"--rdzv-endpoint {args.rdzv_endpoint} and --master-addr/--master-port: "
                    "name the store once")
        host, sep, port = args.rdzv_endpoint.rpartition(":")
        if not sep or "]" in port or (host.count(":") and not host.startswith("[")):
            host, port = args.rdzv_endpoint, "29400"  # no port (or a bare IPv6 address)
        if not port.isdigit():
            p.error(f"--rdzv-endpoint {args.rdzv_endpoint}: the port '{port}' is not a number")
        args.master_addr, args.master_port = host.strip("[]"), int(port)
    if args.master_addr is None:
        args.master_addr = "127.0.0.1"


def _emulation(p: argparse.ArgumentParser, args: argparse.Namespace):
    """The --emulate-* options as an EmulationSpec (None without --emulate-nodes)."""
    if args.emulate_nodes is None:
        others = [n for n, v in (("--emulate-rate", args.emulate_rate),
                                 ("--emulate-delay-ms", args.emulate_delay_ms),
                                 ("--emulate-intra-rate", args.emulate_intra_rate)) if v]
        if others:
            p.error(f"{others[0]} needs --emulate-nodes")
        return None
    try:
        rate, intra = (None if v is None else emulate.parse_rate(name, v) for name, v in (
            ("--emulate-rate", args.emulate_rate),
            ("--emulate-intra-rate", args.emulate_intra_rate)))
        spec = emulate.EmulationSpec(args.emulate_nodes, rate, args.emulate_delay_ms, intra)
        spec.check()
    except ValueError as e:
        p.error(str(e))
    missing = emulate.missing_privilege()
    if missing:  # one line, not a usage error: the command is right, the machine is not
        print(f"launch: {missing}", file=sys.stderr, flush=True)
        sys.exit(2)
    return spec


def _from_env(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--bind-addr and --iface from OFL_BIND_ADDR and OFL_IFACE, checked
    under the variables' names."""
    bind_addr, iface = os.environ.get("OFL_BIND_ADDR") or None, os.environ.get("OFL_IFACE") or None
    if bind_addr and iface:
        p.error(f"OFL_BIND_ADDR={bind_addr} and OFL_IFACE={iface} are both set: name an "
                "address or an interface, not both")
    for name, value, check in (("OFL_BIND_ADDR", bind_addr, check_bind_addr),
                               ("OFL_IFACE", iface, check_iface)):
        error = None if value is None else check(value)
        if error:
            p.error(f"{name}={value}: {error}")
    args.bind_addr, args.iface = bind_addr, iface


def main(argv: Optional[Sequence[str]] = None) -> int:
    args, options = parse_args(argv)
    try:
        result = launch(python_command(args.target, args.args, args.module), options)
    except OSError as e:  # a log file or a process that could not be created
        print(f"launch: cannot start the processes: {e}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    if result.message:
        print(result.message, file=sys.stderr, flush=True)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
