"""The version of bpvideo: one string, read by the package, its metadata and its reports."""

__version__ = "0.1.0"
