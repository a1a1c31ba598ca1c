"""The errors colmet raises for files it cannot read."""


class ColmetError(Exception):
    """A job file colmet cannot read. str(e) is one line naming the file."""


class FileError(ColmetError):
    """Not a readable HDF5 file (missing, truncated, damaged), or not a colmet job file."""


class LayoutVersionError(ColmetError):
    """A colmet job file of a layout version this package does not know."""
