"""The I/O layer: frames in, files out, and the report of a run.

- :mod:`~bpvideo.io.stream`: a stream of numbered frames (:class:`~bpvideo.io.stream.FrameSource`),
  from video files and image folders (:mod:`~bpvideo.io.sources`), stdin
  (:mod:`~bpvideo.io.pipes`) or frames in memory (:mod:`~bpvideo.io.arrays`);
- :mod:`~bpvideo.io.video`: frames as a pixels x frames matrix;
- :mod:`~bpvideo.io.observation`: the observation mask;
- :mod:`~bpvideo.io.outputs`: the atomic output directory; :mod:`~bpvideo.io.writers`:
  encoders and mask files; :mod:`~bpvideo.io.sinks`: a run's outputs, window by window;
- :mod:`~bpvideo.io.summary`: the report (``summary.json``);
- :mod:`~bpvideo.io.paths`: output names and templates, globs.
"""
