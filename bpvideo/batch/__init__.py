"""Batch runs: many ``separate`` jobs from a YAML config (``bpvideo batch``).

- :mod:`~bpvideo.batch.config`: loading the YAML with line numbers, checking every job
  before any runs (types and bounds from :mod:`bpvideo.settings`);
- :mod:`~bpvideo.batch.run`: running the jobs (:func:`bpvideo.separate_file` each) on
  local processes or a Dask cluster, and the report.
"""

from __future__ import annotations

from bpvideo.batch.config import BatchConfig, ConfigError, Job, load_config
from bpvideo.batch.run import BatchOptions, run_batch, run_job

__all__ = [
    "BatchConfig",
    "BatchOptions",
    "ConfigError",
    "Job",
    "load_config",
    "run_batch",
    "run_job",
]
