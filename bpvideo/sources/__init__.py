"""Inputs: every source of frames a job reads, as one stream of numbered frames.

- :mod:`~bpvideo.sources.stream`: :class:`~bpvideo.sources.stream.FrameSource`, what every
  source is (size, rate, numbered frames, timestamps, how masks are numbered);
- :mod:`~bpvideo.sources.files`: video files and folders of frames
  (:func:`~bpvideo.sources.files.open_source`), :mod:`~bpvideo.sources.pipes`: stdin,
  :mod:`~bpvideo.sources.arrays`: frames in memory, :mod:`~bpvideo.sources.live`: URLs,
  capture devices and stdin read live (a reading thread, reconnection; one connection:
  :mod:`~bpvideo.sources.connection`);
- :mod:`~bpvideo.sources.probe`, :mod:`~bpvideo.sources.headers`,
  :mod:`~bpvideo.sources.folders`, :mod:`~bpvideo.sources.frame_times`,
  :mod:`~bpvideo.sources.ffmpeg`: what a source is before it is read, the decoder;
- :mod:`~bpvideo.sources.video`: frames as a pixels x frames matrix;
  :mod:`~bpvideo.sources.observation`: the observation mask;
  :mod:`~bpvideo.sources.regions`: ``--roi`` / ``--exclude`` read as a mask.
"""
