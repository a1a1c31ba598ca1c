"""The few HDF5 C calls open_many() needs, through ctypes, on the very
library h5py loaded.

Reading a file's /summary through h5py's low-level API costs about 1.4 ms,
most of it in h5py's Python-level wrapping of each call; the same calls
through ctypes cost about 0.5 ms. Everything else in colmet uses h5py.
When anything here is unavailable (another HDF5 build, a library h5py does
not expose), reader() returns None and open_many() uses h5py alone; a file
this reader cannot read is read again through h5py, which says why.
"""

import ctypes
import math
import re

import h5py
from h5py._objects import phil   # h5py's lock around HDF5 calls: taken here too

hid_t = ctypes.c_int64
H5P_DEFAULT = 0
H5E_DEFAULT = 0
H5F_ACC_RDONLY = 0
H5T_VARIABLE = ctypes.c_size_t(-1).value
H5T_CSET_UTF8 = 1
H5_INDEX_NAME, H5_ITER_INC = 0, 0


class _GroupInfo(ctypes.Structure):
    _fields_ = [("storage_type", ctypes.c_int), ("nlinks", ctypes.c_uint64), ("max_corder", ctypes.c_int64),
                ("mounted", ctypes.c_bool)]


def _library_path():
    """The libhdf5 h5py's extension modules are linked with (Debian's
    libhdf5_serial.so.103, or the copy inside an h5py wheel), mapped since h5py was imported."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if "/" in line else ""
            name = path.rsplit("/", 1)[-1]
            if re.match(r"libhdf5(_serial|_openmpi|_mpich)?([-.][^_]*)?\.so", name) and "_hl" not in name:
                return path
    return None


class Reader:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        major, minor, release = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        lib.H5get_libversion(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(release))
        version = (major.value, minor.value, release.value)
        if version < (1, 10, 0) or version != tuple(h5py.version.hdf5_version_tuple):
            raise OSError(f"{path} is HDF5 {'.'.join(map(str, version))}, not h5py's")
        sig = {
            "H5open": (ctypes.c_int, []),
            "H5Eset_auto2": (ctypes.c_int, [hid_t, ctypes.c_void_p, ctypes.c_void_p]),
            "H5Fopen": (hid_t, [ctypes.c_char_p, ctypes.c_uint, hid_t]),
            "H5Fclose": (ctypes.c_int, [hid_t]),
            "H5Gopen2": (hid_t, [hid_t, ctypes.c_char_p, hid_t]),
            "H5Gclose": (ctypes.c_int, [hid_t]),
            "H5Gget_info": (ctypes.c_int, [hid_t, ctypes.POINTER(_GroupInfo)]),
            "H5Lexists": (ctypes.c_int, [hid_t, ctypes.c_char_p, hid_t]),
            "H5Lget_name_by_idx": (ctypes.c_ssize_t, [hid_t, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                                      ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t, hid_t]),
            "H5Aexists": (ctypes.c_int, [hid_t, ctypes.c_char_p]),
            "H5Aopen": (hid_t, [hid_t, ctypes.c_char_p, hid_t]),
            "H5Aread": (ctypes.c_int, [hid_t, hid_t, ctypes.c_void_p]),
            "H5Aclose": (ctypes.c_int, [hid_t]),
            "H5Tcopy": (hid_t, [hid_t]),
            "H5Tset_size": (ctypes.c_int, [hid_t, ctypes.c_size_t]),
            "H5Tset_cset": (ctypes.c_int, [hid_t, ctypes.c_int]),
            "H5free_memory": (ctypes.c_int, [ctypes.c_void_p]),
        }
        for name, (restype, argtypes) in sig.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = restype, argtypes
        with phil:
            lib.H5open()
            self.f8 = hid_t.in_dll(lib, "H5T_NATIVE_DOUBLE_g").value
            self.i8 = hid_t.in_dll(lib, "H5T_NATIVE_LLONG_g").value
            self.vlen = lib.H5Tcopy(hid_t.in_dll(lib, "H5T_C_S1_g").value)
            lib.H5Tset_size(self.vlen, H5T_VARIABLE)
            lib.H5Tset_cset(self.vlen, H5T_CSET_UTF8)
        self.lib = lib
        self._double = ctypes.c_double()
        self._int = ctypes.c_int64()
        self._str = ctypes.c_char_p()

    def number(self, obj, name, integer=False):
        """A numeric attribute, None when absent; raises OSError when unreadable."""
        lib = self.lib
        if lib.H5Aexists(obj, name) <= 0:
            return None
        attr = lib.H5Aopen(obj, name, H5P_DEFAULT)
        if attr < 0:
            raise OSError(name)
        try:
            buf = self._int if integer else self._double
            if lib.H5Aread(attr, self.i8 if integer else self.f8, ctypes.byref(buf)) < 0:
                raise OSError(name)
            return buf.value
        finally:
            lib.H5Aclose(attr)

    def string(self, obj, name):
        """A scalar variable-length string attribute (as the collector writes them)."""
        lib = self.lib
        if lib.H5Aexists(obj, name) <= 0:
            return None
        attr = lib.H5Aopen(obj, name, H5P_DEFAULT)
        if attr < 0:
            raise OSError(name)
        try:
            self._str.value = None
            if lib.H5Aread(attr, self.vlen, ctypes.byref(self._str)) < 0:
                raise OSError(name)
            value = self._str.value
            if value is not None:
                lib.H5free_memory(self._str)
            return value.decode("utf-8", "replace") if value is not None else ""
        finally:
            lib.H5Aclose(attr)

    def row(self, path, floats, ints, host_strings, supported):
        """open_many()'s row of one file, or None when h5py should read it."""
        lib = self.lib
        with phil:
            lib.H5Eset_auto2(H5E_DEFAULT, None, None)   # no error stack on stderr
            fid = lib.H5Fopen(path.encode(), H5F_ACC_RDONLY, H5P_DEFAULT)
            if fid < 0:
                return None
            opened = []
            try:
                version = self.number(fid, b"colmet_layout_version", integer=True)
                if version is None or version not in supported:
                    return None
                row = {"path": path, "layout_version": int(version), "job_id": self.string(fid, b"job_id")}
                if lib.H5Lexists(fid, b"hosts", H5P_DEFAULT) > 0:
                    hosts = lib.H5Gopen2(fid, b"hosts", H5P_DEFAULT)
                    if hosts < 0:
                        return None
                    opened.append(hosts)
                    info = _GroupInfo()
                    if lib.H5Gget_info(hosts, ctypes.byref(info)) < 0:
                        return None
                    row["hosts"] = int(info.nlinks)
                    if info.nlinks:
                        name = ctypes.create_string_buffer(1024)
                        if lib.H5Lget_name_by_idx(hosts, b".", H5_INDEX_NAME, H5_ITER_INC, 0, name, 1024,
                                                  H5P_DEFAULT) < 0:
                            return None
                        first = lib.H5Gopen2(hosts, name.value, H5P_DEFAULT)
                        if first < 0:
                            return None
                        opened.append(first)
                        for attr_name in host_strings:
                            row[attr_name.decode()] = self.string(first, attr_name)
                has_summary = lib.H5Lexists(fid, b"summary", H5P_DEFAULT) > 0
                row["has_summary"] = has_summary
                if has_summary:
                    summary = lib.H5Gopen2(fid, b"summary", H5P_DEFAULT)
                    if summary < 0:
                        return None
                    opened.append(summary)
                    for name in floats:
                        value = self.number(summary, name)
                        row[name.decode()] = value if value is not None else math.nan
                    for name in ints:
                        value = self.number(summary, name, integer=True)
                        if value is not None:
                            row[name.decode()] = value
                    row["cgroup_warning"] = self.string(summary, b"cgroup_warning")
                return row
            except OSError:
                return None
            finally:
                for g in reversed(opened):
                    lib.H5Gclose(g)
                lib.H5Fclose(fid)


_reader = False


def reader():
    """The shared Reader, or None when ctypes cannot reach h5py's HDF5."""
    global _reader
    if _reader is False:
        try:
            path = _library_path()
            _reader = Reader(path) if path else None
        except (OSError, AttributeError, ValueError):
            _reader = None
    return _reader
