"""Starting the workers of a data-parallel check (:mod:`parity.engine.data_parallel.run`) and ending them.

MindSpore's workers are started by ``msrun`` (its CPU launcher: a scheduler process plus one process
per worker, each in its own session), PyTorch's by parity, each with ``RANK`` and ``WORLD_SIZE``.
Every process runs ``python -m parity.engine.data_parallel.worker JOB_DIR FRAMEWORK`` in the job folder, writes its
pid there, and leaves its log there (msrun's ``--log_dir`` included), so nothing lands in the
caller's folder and everything started can be stopped by id.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from typing import Dict, List, Optional, Sequence

import torch.distributed as dist

from ...errors import ParityUsageError
from . import worker

__all__ = ["missing_launchers", "environment", "Launch", "wait_all", "LABELS"]

WHERE = "check_data_parallel()"
LABELS = {"mindspore": "MindSpore", "torch": "PyTorch"}
_MS_LOG_LINE = re.compile(r"^\[(DEBUG|INFO|WARNING)\] [A-Z_]+\(\d+")


def _interpreter_scripts() -> str:
    """Where this interpreter's packages install their commands (msrun with MindSpore)."""
    return sysconfig.get_path("scripts") or os.path.dirname(sys.executable)


def _find_msrun() -> Optional[str]:
    """This interpreter's own msrun first, else one on PATH (it only starts ``python``: see
    :func:`environment`)."""
    return shutil.which("msrun", path=os.pathsep.join([_interpreter_scripts(), os.environ.get("PATH", "")]))


def missing_launchers() -> List[str]:
    """What this machine lacks to run a data-parallel check, in words (empty: nothing)."""
    missing = []
    if importlib.util.find_spec("mindspore") is None:
        missing.append("MindSpore is not installed")
    elif _find_msrun() is None:
        missing.append(f"MindSpore's launcher msrun is neither in {_interpreter_scripts()} nor on PATH")
    if not dist.is_available():
        missing.append("this PyTorch build has no torch.distributed")
    elif not dist.is_gloo_available():
        missing.append("this PyTorch build has no gloo collective backend (torch.distributed.is_gloo_available())")
    return missing


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment(job_dir: str) -> Dict[str, str]:
    """The workers' environment: this interpreter as ``python`` first on PATH (msrun starts
    ``python``), this process's import path (its roots: not a package's own folder), quiet MindSpore
    logs, one thread per worker."""
    shims = os.path.join(job_dir, "bin")
    os.makedirs(shims, exist_ok=True)
    shim = os.path.join(shims, "python")
    with open(shim, "w", encoding="utf-8") as handle:
        handle.write(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    os.chmod(shim, 0o755)
    paths = [os.path.abspath(p or os.getcwd()) for p in sys.path if p is not None]
    # A package's own folder is no root to import from, and first on a worker's path it shadows the
    # standard library: MindSpore's mixed-precision rewrite (amp O1) leaves mindspore/nn/layer, whose
    # math.py then stands for `math`.
    paths = [p for p in paths if not os.path.isfile(os.path.join(p, "__init__.py"))]
    env = dict(
        os.environ,
        PATH=shims + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)),
    )
    env.setdefault("GLOG_v", "3")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


class Launch:
    """One framework's workers: started, waited for with a time limit, stopped for good."""

    def __init__(self, framework: str, job_dir: str, workers: int, timeout: float):
        self.framework, self.job_dir, self.workers, self.timeout = framework, job_dir, workers, timeout
        self.label = LABELS[framework]
        self.processes: List[subprocess.Popen] = []
        self.logs: List[str] = []
        self.started = self.deadline = self.seconds = 0.0

    def start(self, env: Dict[str, str]) -> None:
        env = dict(env, PARITY_DP_TIMEOUT=str(self.timeout))
        self.started = time.monotonic()
        self.deadline = self.started + self.timeout
        module = ["-m", "parity.engine.data_parallel.worker", self.job_dir, self.framework]
        if self.framework == "mindspore":
            self.logs = [os.path.join(self.job_dir, "msrun", f"worker_{r}.log") for r in range(self.workers)]
            launcher = [
                _find_msrun(),
                f"--worker_num={self.workers}",
                f"--local_worker_num={self.workers}",
                "--master_addr=127.0.0.1",
                f"--master_port={_free_port()}",
                "--join=True",
                f"--cluster_time_out={int(self.timeout)}",
                f"--log_dir={os.path.join(self.job_dir, 'msrun')}",
            ]
            self.processes = [self._popen(launcher + ["python"] + module, env, os.path.join(self.job_dir, "msrun.log"))]
            return
        self.logs = [os.path.join(self.job_dir, f"torch-{r}.log") for r in range(self.workers)]
        for rank in range(self.workers):
            self.processes.append(
                self._popen(
                    [sys.executable] + module, dict(env, RANK=str(rank), WORLD_SIZE=str(self.workers)), self.logs[rank]
                )
            )

    def _popen(self, command, env, log: str) -> subprocess.Popen:
        with open(log, "wb") as handle:
            return subprocess.Popen(
                command,
                cwd=self.job_dir,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def done(self) -> bool:
        """Whether every process has exited (then checked: results of every worker); a crash or the
        time limit stops the rest and raises."""
        codes = [p.poll() for p in self.processes]
        reported = [
            r for r in range(self.workers) if os.path.exists(worker.error_path(self.job_dir, self.framework, r))
        ]
        results = [
            os.path.exists(worker.result_path(self.job_dir, self.framework, True, r)) for r in range(self.workers)
        ]
        # A PyTorch worker (process i is rank i) that wrote its results whole (renamed into place
        # when complete) and then died leaving gloo has lost nothing; any other exit code fails.
        crashed = [
            i for i, c in enumerate(codes) if c not in (None, 0) and not (self.framework == "torch" and results[i])
        ]
        if reported or crashed:
            self.stop()
            raise ParityUsageError(f"{WHERE}: a {self.label} worker failed.{self._tail(crashed)}")
        if self.framework == "mindspore" and all(results):  # msrun's shutdown (measured: 5-11 s) is left to stop()
            self.seconds = time.monotonic() - self.started
            return True
        if any(c is None for c in codes):
            if time.monotonic() > self.deadline:
                self.stop()
                raise ParityUsageError(
                    f"{WHERE}: the {self.label} workers did not finish within {self.timeout:g} s; "
                    f"a slow machine needs a larger timeout=...{self._tail()}"
                )
            return False
        missing = [r for r, found in enumerate(results) if not found]
        if missing:
            raise ParityUsageError(f"{WHERE}: {self.label} worker(s) {missing} exited without results.{self._tail()}")
        self.seconds = time.monotonic() - self.started
        return True

    def _tail(self, crashed: Sequence[int] = ()) -> str:
        """The workers' own error reports, else the end of the first worker log with output."""
        reports = []
        for rank in range(self.workers):
            path = worker.error_path(self.job_dir, self.framework, rank)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read().strip().replace("\n", "\n    ")
                reports.append(f"\n{self.label} worker {rank}:\n    {text}")
        if reports:
            return "".join(reports)
        # the logs of the processes that failed first (PyTorch's process i writes log i), then the rest
        died = [self.logs[i] for i in crashed if self.framework == "torch"]
        for path in died + self.logs + [os.path.join(self.job_dir, "msrun.log")]:
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = [line.rstrip() for line in handle if line.strip() and not _MS_LOG_LINE.match(line)]
            if lines:
                return f"\nEnd of {os.path.basename(path)}:\n    " + "\n    ".join(lines[-15:])
        return ""

    def stop(self) -> None:
        """Stop what is still running: msrun first by SIGINT (once running, it stops its workers),
        then, by id, every process whose command line names this job's folder (each worker's does),
        until none is left."""
        for process in self.processes:
            if process.poll() is None and self.framework == "mindspore":
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        for _ in range(10):
            pids = set(self._job_pids()) | {p.pid for p in self.processes if p.poll() is None}
            if not pids:
                break
            for pid in pids:
                _kill(pid)
            time.sleep(0.2)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def _job_pids(self) -> List[int]:
        """Live processes of this launch: those whose command line names its part of the job folder
        (a unique temporary path: the workers' command, msrun's log folder, which msrun's own
        ``tail -f`` of each worker log names too), or, without /proc, those that wrote their pid."""
        if not os.path.isdir("/proc/self"):
            prefix = f"pid-{self.framework}-"
            return [int(n[len(prefix) :]) for n in os.listdir(self.job_dir) if n.startswith(prefix)]
        markers = [f"{self.job_dir}\0{self.framework}".encode()]
        if self.framework == "mindspore":
            markers.append(os.path.join(self.job_dir, "msrun").encode())
        found = []
        for pid in (int(n) for n in os.listdir("/proc") if n.isdigit()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    line = handle.read()
            except OSError:
                continue
            if pid != os.getpid() and any(m in line for m in markers):
                found.append(pid)
        return found


def _kill(pid: int) -> None:
    """SIGKILL ``pid``, and its process group where it leads one (msrun starts each worker in its own)."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def wait_all(launches: Sequence[Launch]) -> None:
    pending = list(launches)
    while pending:
        pending = [launch for launch in pending if not launch.done()]
        if pending:
            time.sleep(0.2)
