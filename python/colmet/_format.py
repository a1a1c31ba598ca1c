"""Human-readable numbers, as colmet-job run prints them (src/job/Summary.cpp)."""

import math

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def is_nan(x):
    return x is None or (isinstance(x, float) and math.isnan(x))


def human_bytes(n):
    if is_nan(n):
        return "unknown"
    n = float(n)
    u = 0
    while abs(n) >= 1024 and u < len(_BYTE_UNITS) - 1:
        n /= 1024
        u += 1
    return f"{n:.0f} {_BYTE_UNITS[u]}" if u == 0 else f"{n:.1f} {_BYTE_UNITS[u]}"


def human_seconds(s):
    if is_nan(s):
        return "unknown"
    s = float(s)
    if s < 120:
        return f"{s:.2f} s"
    if s < 7200:
        return f"{int(s) // 60} min {int(s) % 60:02d} s"
    if s < 172800:
        return f"{int(s) // 3600} h {(int(s) // 60) % 60:02d} min"
    return f"{int(s) // 86400} d {(int(s) // 3600) % 24:02d} h"


def human_energy(j):
    if is_nan(j):
        return "unknown"
    return f"{j:,.1f} J = {j / 3.6e6:.6f} kWh"


def human_number(x, digits=3):
    """3 significant digits, with k/M/G/T suffixes for large values."""
    if is_nan(x):
        return "unknown"
    x = float(x)
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.{digits}g}{suffix}"
    return f"{x:.{digits}g}"


def byte_scale(max_value):
    """(divisor, unit) so that max_value / divisor reads well: B, KiB, MiB, ..."""
    if is_nan(max_value) or max_value <= 0:
        return 1.0, "B"
    u = 0
    while max_value >= 1024 and u < len(_BYTE_UNITS) - 1:
        max_value /= 1024
        u += 1
    return float(1024 ** u), _BYTE_UNITS[u]


def number_scale(max_value):
    """(divisor, prefix) for plain counts per second: '', k, M, G, T."""
    if is_nan(max_value) or max_value <= 0:
        return 1.0, ""
    for div, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if max_value >= div:
            return div, prefix
    return 1.0, ""


def time_scale(duration_s):
    """(divisor, unit) for an elapsed-time axis."""
    if is_nan(duration_s) or duration_s < 180:
        return 1.0, "s"
    if duration_s < 3 * 3600:
        return 60.0, "min"
    if duration_s < 3 * 86400:
        return 3600.0, "h"
    return 86400.0, "d"
