"""Read colmet's per-job HDF5 files (docs/hdf5-layout.md) with pandas.

    import colmet
    job = colmet.open("123.h5")
    job.user, job.hosts, job.start, job.end, job.summary
    cpu = job.frame("node-1", "cgroup_cpu")      # a DataFrame indexed by time
    cores = cpu.rates()["usage"]                  # counters as per-second rates
    jobs = colmet.open_many("/var/lib/colmet")    # one row per job, with its summary

Only h5py, numpy and pandas are needed to read; matplotlib only for
colmet-report (colmet.report).
"""

from colmet._errors import ColmetError, FileError, LayoutVersionError
from colmet._frame import MetricFrame
from colmet._job import SUPPORTED_LAYOUT_VERSIONS, Host, Job, open
from colmet._many import open_many

__version__ = "0.1.0"

__all__ = [
    "ColmetError",
    "FileError",
    "Host",
    "Job",
    "LayoutVersionError",
    "MetricFrame",
    "SUPPORTED_LAYOUT_VERSIONS",
    "open",
    "open_many",
]
