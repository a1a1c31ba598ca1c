#!/bin/bash
# gpu-check.sh: check colmet's gpu backend against nvidia-smi on a machine
# with a real NVIDIA GPU (the tests use a test double of NVML; only a real
# driver can say whether colmet reads it right).
#
#   sudo scripts/gpu-check.sh [SECONDS]        (default 20)
#   GPU_LOAD="command" sudo scripts/gpu-check.sh   a GPU load to run meanwhile
#
# It runs `colmet-job run --enable-gpu` (a private collector, 1 s samples)
# around the load, or around `sleep` when GPU_LOAD is unset (the GPUs idle),
# and meanwhile `nvidia-smi --query-gpu=... --format=csv` every second.
# Then, per GPU, it compares the medians over the same seconds:
#   utilisation within 10 percentage points, memory used within 5 % or
#   64 MiB, power within 10 % or 5 W
# (the two read at moments up to a second apart, and NVML's utilisation is
# itself an average over a driver-chosen window). One verdict line:
# "gpu-check: PASS ...", "gpu-check: FAIL ..." (exit 1) or
# "gpu-check: SKIP ..." (exit 77: no GPU, no driver, not root).
# COLMET_BIN: where colmet-job is (default: build/bin of this tree, else
# PATH); PYTHON: a Python 3 with h5py and numpy (default /usr/bin/python3).
set -u
seconds=${1:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${COLMET_BIN:-$here/build/bin}
job=$bin/colmet-job
[ -x "$job" ] || job=$(command -v colmet-job || true)

skip() { echo "gpu-check: SKIP: $*"; exit 77; }
command -v nvidia-smi >/dev/null || skip "nvidia-smi not found: no NVIDIA driver on this machine"
nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi sees no GPU: $(nvidia-smi -L 2>&1 | head -1)"
[ "$(id -u)" -eq 0 ] || skip "needs root (colmet-job run makes the job's cgroup)"
[ -n "$job" ] || skip "colmet-job not found (build it, or set COLMET_BIN)"
py=${PYTHON:-/usr/bin/python3}   # Debian's, where python3-h5py lives
"$py" -c 'import h5py, numpy' 2>/dev/null || skip "$py with h5py and numpy is needed (apt-get install python3-h5py)"

work=$(mktemp -d /tmp/colmet-gpu-check.XXXXXX)
trap 'kill "$smi" 2>/dev/null; rm -rf "$work"' EXIT
nvidia-smi --query-gpu=timestamp,uuid,utilization.gpu,memory.used,power.draw --format=csv,noheader,nounits -l 1 \
  >"$work/smi.csv" 2>"$work/smi.err" &
smi=$!
load=${GPU_LOAD:-sleep $seconds}
if ! "$job" run -q -s 1 --enable-gpu --job-id gpu-check --hdf5-dir "$work" -- timeout "$seconds" sh -c "$load" \
  >"$work/job.out" 2>"$work/job.err"; then
  [ -f "$work/gpu-check.h5" ] || { echo "gpu-check: FAIL: colmet-job run failed: $(tail -3 "$work/job.err")"; exit 1; }
fi
kill "$smi" 2>/dev/null
wait "$smi" 2>/dev/null

"$py" - "$work/gpu-check.h5" "$work/smi.csv" <<'PYEOF'
import csv, datetime, sys
import h5py, numpy as np

path, smi_path = sys.argv[1:]
with h5py.File(path, "r") as f:
    host = f["hosts"][list(f["hosts"])[0]]
    if "gpu" not in host:
        print("gpu-check: FAIL: no gpu data in the job's file (see colmet-node's log: backend gpu not available?)")
        sys.exit(1)
    gpus = host.attrs.get("gpus", b"")
    gpus = gpus.decode() if isinstance(gpus, bytes) else str(gpus)
    seg = host["gpu"]["segment_0"]
    names = [n.decode() if isinstance(n, bytes) else n for n in seg.attrs["names"]]
    values, times = seg["values"][:], seg["time"][:] / 1e9
uuid_of = dict(item.split(":", 1) for item in gpus.split(",") if ":" in item)
smi = {}
with open(smi_path) as f:
    for row in csv.reader(f):
        if len(row) < 5:
            continue
        try:
            t = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            smi.setdefault(row[1].strip(), []).append((t, float(row[2]), float(row[3]), float(row[4])))
        except ValueError:
            continue  # [N/A] or [Not Supported]: nothing to compare
if not smi:
    print("gpu-check: FAIL: nvidia-smi gave no readings")
    sys.exit(1)
verdicts, failed = [], False
for index, uuid in sorted(uuid_of.items()):
    rows = [r for r in smi.get(uuid, []) if times[0] <= r[0] <= times[-1]]
    if not rows:
        verdicts.append(f"gpu{index}: no nvidia-smi reading in the job's time")
        failed = True
        continue
    def col(metric):
        return values[:, names.index(f"gpu{index}_{metric}")]
    ours = {"util": np.nanmedian(col("utilisation")) * 100, "mem": np.nanmedian(col("memory_used")) / 2**20,
            "power": np.nanmedian(col("power"))}
    theirs = {"util": np.median([r[1] for r in rows]), "mem": np.median([r[2] for r in rows]),
              "power": np.median([r[3] for r in rows])}
    bounds = {"util": 10, "mem": max(0.05 * theirs["mem"], 64), "power": max(0.10 * theirs["power"], 5)}
    parts = []
    for k, unit in (("util", "%"), ("mem", "MiB"), ("power", "W")):
        ok = abs(ours[k] - theirs[k]) <= bounds[k]
        failed |= not ok
        parts.append(f"{k} {ours[k]:.1f}/{theirs[k]:.1f} {unit}{'' if ok else ' OFF'}")
    verdicts.append(f"gpu{index} ({', '.join(parts)})")
print(f"gpu-check: {'FAIL' if failed else 'PASS'}: colmet/nvidia-smi medians over {len(times)} samples: "
      + "; ".join(verdicts))
sys.exit(1 if failed else 0)
PYEOF
