"""Helpers of the pipeline tests: the real colmet-collector, colmet-node,
colmet-job and colmet-ctl, job cgroups made as a scheduler makes them, and
the CPU truth of colmet-cputime (the parent's wait4, see
tests/integration/shell_common.sh)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import h5py

CGROOT = "/sys/fs/cgroup"
V1_CONTROLLERS = ("cpuacct", "cpu", "memory", "blkio", "pids", "cpuset")


def free_port():
    """A port that is free with its successor (the collector publishes its
    acknowledgements on port + 1), as free_port in
    tests/integration/shell_common.sh: odd ports only, so that two calls
    never return a port and its successor; bind(0) first, then odd ports
    from 20001 in turn."""
    for wanted in [0] * 200 + list(range(20001, 32767, 2)):
        with socket.socket() as s, socket.socket() as t:
            try:
                s.bind(("127.0.0.1", wanted))
                port = s.getsockname()[1]
                if port % 2 == 0 or port >= 65534:
                    continue
                t.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise AssertionError("no free pair of ports")


def wait_until(predicate, timeout, step=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def stop(proc, sig=signal.SIGTERM, timeout=10):
    """Signal a process and reap it (SIGKILL after the timeout). Returns its status."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


class Collector:
    """colmet-collector on a tcp:// port of the loopback, writing into out_dir."""

    def __init__(self, colmet_bin, out_dir, log_path, flush_interval=1, port=None):
        self.bin, self.out, self.log_path = colmet_bin, out_dir, log_path
        self.flush_interval = flush_interval
        self.port = port or free_port()
        self.uri = f"tcp://127.0.0.1:{self.port}"
        self.proc = None

    def start(self):
        before = self._listening_lines()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [os.path.join(self.bin, "colmet-collector"), "--config", "/dev/null", "--allow-root", "--zeromq-bind-uri", self.uri,
             "--hdf5-dir", str(self.out), "--flush-interval", str(self.flush_interval), "-v"],
            stdout=log, stderr=log)
        log.close()
        wait_until(lambda: self._alive() and self._listening_lines() > before, 10,
                   what=f"the collector to listen on {self.uri}")
        return self

    def _listening_lines(self):
        """The collector says "listening on <uri>" once bound (a probe connection would be a failed handshake)."""
        try:
            return open(self.log_path).read().count(f"listening on {self.uri}")
        except OSError:
            return 0

    def _alive(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"colmet-collector exited with {self.proc.returncode}: "
                                 f"{open(self.log_path).read()[-2000:]}")
        return True

    def kill(self):
        stop(self.proc, signal.SIGKILL)

    def stop(self):
        return stop(self.proc)


def rows(path, host, backend="cgroup_cpu"):
    """Rows of a backend's last segment now in the file (while the collector writes it), or 0."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            g = f["hosts"][host][backend]
            segs = sorted((k for k in g if k.startswith("segment_")), key=lambda s: int(s.split("_")[1]))
            return sum(g[s]["time"].shape[0] for s in segs)
    except (OSError, KeyError):
        return 0


def has_summary(path):
    try:
        with h5py.File(path, "r", locking=False) as f:
            return "summary" in f
    except OSError:
        return False


# --- job cgroups, as a scheduler makes them (tests/integration/helpers.bash) ---
def cgroup_is_v2():
    return os.path.exists(os.path.join(CGROOT, "cgroup.controllers"))


def cgroup_dirs(rel):
    if cgroup_is_v2():
        return [CGROOT + rel]
    return [f"{CGROOT}/{c}{rel}" for c in V1_CONTROLLERS if os.path.isdir(f"{CGROOT}/{c}")]


def make_cgroup(rel):
    for d in cgroup_dirs(rel):
        os.makedirs(d, exist_ok=True)
        if "/cpuset/" in d:
            parent = os.path.dirname(d)
            for f in ("cpuset.cpus", "cpuset.mems"):
                value = open(f"{CGROOT}/cpuset/{f}").read()
                for where in (parent, d):
                    try:
                        with open(os.path.join(where, f), "w") as out:
                            out.write(value)
                    except OSError:
                        pass


def remove_cgroup(rel):
    dirs = cgroup_dirs(rel) + [f"{CGROOT}/perf_event{rel}"]
    for d in dirs:
        try:
            for pid in open(os.path.join(d, "cgroup.procs")).read().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        except OSError:
            pass
    time.sleep(0.1)
    for d in dirs:
        for root, subdirs, _ in os.walk(d, topdown=False):
            try:
                os.rmdir(root)
            except OSError:
                pass
    for d in dirs:
        try:
            os.rmdir(os.path.dirname(d))   # /colmet-test, when empty
        except OSError:
            pass


def run_in_cgroup(rel, argv, stdout=subprocess.DEVNULL):
    """Start argv inside the cgroup rel (every hierarchy), before it execs."""
    dirs = cgroup_dirs(rel)

    def enter():
        for d in dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    return subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL, preexec_fn=enter)


def cputime(path):
    """The whole-life CPU time colmet-cputime measured (its last JSON line)."""
    lines = [line for line in open(path) if '"wrapper_cpu_seconds"' in line]
    return float(json.loads(lines[-1])["cpu_seconds"])


# --- node-level fixtures: RAPL energy that grows, temperatures --------------
class FakeSysfs:
    """A copy of tests/fixtures/node/{intel-2s,thermal}/sys whose package-0
    energy_uj grows by 10 J every 0.1 s while the feeder runs."""

    def __init__(self, source_dir, where):
        self.root = os.path.join(where, "sys")
        for fixture in ("intel-2s", "thermal"):
            shutil.copytree(os.path.join(source_dir, "tests", "fixtures", "node", fixture, "sys"), self.root,
                            dirs_exist_ok=True)
        self.energy = os.path.join(self.root, "class", "powercap", "intel-rapl:0", "energy_uj")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, daemon=True)

    def _feed(self):
        e = int(open(self.energy).read())
        with open(self.energy, "r+b") as f:
            while not self._stop.wait(0.1):
                e += 10_000_000
                f.seek(0)
                f.write(b"%012d\n" % e)    # same width: overwritten in place, never empty
                f.flush()

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()
