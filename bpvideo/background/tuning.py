"""The tuned constants of the background model, in one place.

Each was chosen by a procedure written beside it (leave one sequence out, the worst
case decides: docs/quality.md and docs/performance.md). The modules read them from
here when they run (``tuning.MOTION_BOX``, not a copy taken at import), so that the
benchmarks' candidates (``benchmarks/select_defaults.py``, ``live_replay.py``) and the
tests can set one for a run.
"""

from __future__ import annotations

from bpvideo.masks.thresholds import AGREE_K

# The reference background (:mod:`bpvideo.background.reference`): still frames, motion.

#: Fraction of each pixel's frames taken as its still ones (at least :data:`MIN_STILL`).
#: Chosen by leave-one-sequence-out on the dev sequences (docs/quality.md): 0.1 against
#: 0.2 (cdnet_office 0.94 / 0.74: a person reading moves less than a still background
#: in more than a fifth of the frames).
STILL_FRAMES_FRACTION = 0.1

#: Fewest still frames per pixel.
MIN_STILL = 3

#: Side of the box of the motion score, as a fraction of the smaller frame side at the
#: solve scale (at least 3 pixels); 0.06 of 60 rows is 4 pixels, 14 at full resolution.
#: With the frames before and after whose motion counts (``MOTION_REACH``), chosen by
#: leave-one-sequence-out on the 17 scenes (docs/quality.md, issue 26's third step): a
#: wide box over a long reach (0.12, 5 frames) always holds someone in a crowd or the
#: holly of PeopleAndFoliage, so the stillest frames there were the people's (F 0.785
#: there; 0.865 with a reach of 2, 0.882 with the box of 0.06 as well); a reach of 1
#: takes a swaying person's still instants for background (synthetic stayer 0.480).
MOTION_BOX = 0.06
MOTION_REACH = 2

#: An entry is consistent with the reference within this many noise levels (as it agrees
#: with a solved background, :data:`bpvideo.masks.thresholds.AGREE_K`).
CONSISTENT_K = AGREE_K

#: Side of the box over which the light's local gain is averaged, as a fraction of the
#: smaller frame side (:func:`changed_objects`).
LIGHT_BOX = 0.25

#: Whether the still frames are brought to one light before their median is taken.
ONE_LIGHT = True

#: Bounds of ``sparsity="auto"`` with a reference background.
AUTO_SPARSITY_BOUNDS = (0.05, 0.5)


# Pixels with no trusted still frame (:mod:`bpvideo.background.covered`).

#: Whether pixels with no still frame take the median of all frames
#: (:func:`never_still`), and whether references unlike their neighbours' are replaced
#: (:func:`guided`): each chosen by leave-one-sequence-out (docs/quality.md).
NEVER_STILL = False
GUIDED = True

#: A pixel's still frames "move" when their motion exceeds this many times the
#: :data:`QUIET` quantile (over pixels) of the still frames' motion.
NEVER_STILL_K = 3.0

#: Quantile over pixels of the still frames' motion taken as what still looks like (the
#: quiet part of the view: in a crowd, the median pixel is in the crowd).
QUIET = 0.1

#: Side of the box of the second look for still frames (pixels at the solve scale).
SMALL_BOX = 3

#: The guide's box (fraction of the smaller side), how far (noise levels) a reference may
#: be from its guide, and the fewest frames (fraction) that must show the appearance
#: chosen instead.
GUIDE_BOX = 0.25
GUIDE_K = 8.0

GUIDE_SUPPORT = 0.05

#: Noise levels within which a frame shows the appearance closest to the guide.
NEAR_K = 4.0

#: Noise levels within which the two ends of a short span agree, and a frame shows their
#: appearance (:func:`both_ends`; the frames at each end are the caller's). Chosen with
#: the live frames of each end by the live replay's leave-one-out (docs/performance.md).
ENDS_K = 12.0

#: Fewest frames of the span that must show the ends' appearance.
ENDS_SUPPORT = 3


# Two still states at one pixel (:mod:`bpvideo.background.states`).

#: Whether a pixel whose frames hold a second still state takes it where the outline of
#: the region says the reference holds an object (:func:`second_state`).
STATES = True

#: Noise levels by which a second state differs from the reference.
STATES_K = 6.0

#: A frame is still enough to show a state when its motion is at most this many times
#: the :data:`QUIET` quantile (over pixels) of the still frames' motion.
STATES_MOTION_K = 3.0

#: Quantile over pixels of each frame's own motion that a frame's still pixels may reach
#: instead, where it is larger than the still frames' (None: never). Particles that fall
#: over the whole view (snow, rain) move every box of every frame.
STATES_FRAME_QUIET: float | None = 0.25

#: ... only where the median frame's :data:`STATES_WEATHER_QUANTILE` quantile of motion
#: is more than this many times the still frames' quiet (weather moves even the quietest
#: part of every frame).
STATES_WEATHER = 1.15
STATES_WEATHER_QUANTILE = 0.05

#: Whether a region where the two states differ is judged on the image of each pixel's
#: earlier and of its later state (their frames' mean index), rather than on the
#: reference and the second state: the reference may show the object at some of its
#: pixels and the scene at others (:func:`bpvideo.background.states._in_time`).
STATES_IN_TIME = True

#: Fewest frames (a fraction of the window, at least :data:`MIN_STILL`) that must show
#: the second state.
STATES_SUPPORT = 0.05

#: A pixel is busy when more than :data:`STATES_BUSY` of its frames differ from its
#: reference (by :data:`CONSISTENT_K` noise levels); a region is not judged when more
#: than :data:`STATES_BORDER` of the band around it is busy. Where someone sat or stood,
#: the region borders the scene, quiet but for passers-by; in a crowd its outline runs
#: from person to person (synthetic cover70 at 96 x 72: 0.72 -> 0.68 judging every region).
STATES_BUSY = 0.2
STATES_BORDER = 0.25


# The light of each frame (:mod:`bpvideo.background.light`).

#: How each frame's gain against the light base starts: ``"mode"``, the commonest ratio
#: of a frame's still entries to the base (:func:`mode_ratio`), or ``"median"``, their
#: median ratio. Where a crowd covers most of the view, the base (a median frame) shows
#: people at most pixels and the still entries show the ground there: the ratios of
#: those entries lean one way (people stand out from the ground), and their median is
#: a false light (gains from 0.60 to 1.10 on a steady synthetic crowd covering 70 %),
#: while the entries where frame and base show the same thing share one ratio.
RATIO_START = "mode"

#: Width of :func:`mode_ratio`'s bins, in log ratio (2 % of light).
RATIO_BIN = 0.02

#: Frames (evenly spread) whose per-pixel median is the light's reference.
LIGHT_BASE_FRAMES = 64


# A live stream's background: learned, then kept current (:mod:`bpvideo.background.online`).

#: Seconds of stream the first model is learned on, unless ``learn`` says otherwise.
LEARN_SECONDS = 4.0

#: Side of the motion box of the learning span's and the ring's solves (a fraction of the
#: smaller frame side; :data:`bpvideo.background.reference.MOTION_BOX` in batch runs). A
#: few seconds, or 48 frames, hold few still instants per pixel: a long, plain object
#: passing slowly (a trailer's side) is still within a small box from frame to frame, and
#: was taken for background (cdnet_fall live 0.57 with the batch box of 0.06). Chosen by
#: the live replay's leave-one-out (docs/performance.md, "Live streams").
LIVE_MOTION_BOX = 0.12

#: Frames at each end of the learning span whose agreement tells a pixel's background
#: (:func:`bpvideo.background.covered.both_ends`; 0: not looked at): a plain trailer that
#: passed slowly through the first seconds (cdnet_fall) covered the road for most of them,
#: its side still within any box. Chosen by the live replay's leave-one-out
#: (docs/performance.md, "Live streams").
LEARN_ENDS = 8

#: Frames at each end of a ring's solve, the same (0: not looked at; the ring's ends are
#: 30 s apart and its young foreground already replaced: 5 frames measured no better).
RING_ENDS = 0

#: Frames masked together at most (those that arrived while the previous batch was made).
MOST_FRAMES = 8

#: Frames of the ring that the model is solved again on.
RING_FRAMES = 48

#: Seconds of stream the ring spans (a frame joins it every ``RING_SECONDS / RING_FRAMES``).
RING_SECONDS = 30.0

#: New ring frames between two re-solves (every 5 s of stream).
REFRESH_FRAMES = 8

#: Masks judged by a bank of background samples refreshed by the masks
#: (:mod:`bpvideo.masks.bank`), started from the learning window's appearances.
SAMPLE_BANK = True

#: Seconds a pixel must have been background before the bank takes it in.
SETTLE_SECONDS = 1.0

#: Seconds a region must have been foreground before it is judged a ghost (the
#: background revealed: :mod:`bpvideo.masks.ghosts`) and taken in at once; 0: never.
GHOST_SECONDS = 1.0
