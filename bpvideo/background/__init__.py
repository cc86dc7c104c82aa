"""The background model: what each frame is compared with, and how it is kept current.

- :mod:`~bpvideo.background.reference`: the reference background of a window (each
  pixel's stillest frames, observed entries, carried across windows);
- :mod:`~bpvideo.background.covered`: pixels with no trusted still frame;
- :mod:`~bpvideo.background.light`: the global light of each frame;
- :mod:`~bpvideo.background.empty_scene`: a given empty scene (``--background-from``);
- :mod:`~bpvideo.background.online`: the live update policy (learn, then keep current);
- :mod:`~bpvideo.background.tuning`: the tuned constants of all of them, in one place.

The per-pixel appearance samples, the sample bank and ghosts judge each frame's pixels
and stay with the mask rule in :mod:`bpvideo.masks` (the rule needs them, and masks sit
below this package).
"""
