"""Regions: polygons parsed and rasterised exactly, union of rois minus excludes."""

from __future__ import annotations

import numpy as np
import pytest

from bpvideo.errors import InputError
from bpvideo.events import Polygon, parse_region, rasterise_polygon, reported_region


def test_a_rectangle_covers_the_pixels_from_corner_to_corner_inclusive():
    region = rasterise_polygon(parse_region("2,3 5,3 5,7 2,7"), (10, 10))
    expected = np.zeros((10, 10), dtype=bool)
    expected[3:8, 2:6] = True
    np.testing.assert_array_equal(region, expected)


def test_a_triangle_holds_the_pixel_centres_inside():
    region = rasterise_polygon(parse_region("0,0 8,0 0,8"), (9, 9))
    ys, xs = np.mgrid[0:9, 0:9]
    np.testing.assert_array_equal(region, xs + ys <= 8)


def test_polygons_are_scaled_with_the_frames():
    full = rasterise_polygon(parse_region("0,0 19,0 19,9 0,9"), (20, 40))
    half = rasterise_polygon(parse_region("0,0 19,0 19,9 0,9"), (10, 20), scale=0.5)
    assert full.sum() == 20 * 10
    assert half[:5, :10].all() and half.sum() <= 11 * 6


def test_roi_union_minus_excludes():
    a, b = parse_region("0,0 3,0 3,3 0,3"), parse_region("6,6 9,6 9,9 6,9")
    hole = parse_region("1,1 2,1 2,2 1,2")
    region = reported_region([a, b], [hole], (10, 10))
    assert region.sum() == 16 + 16 - 4
    assert not region[1, 1] and region[0, 0] and region[9, 9] and not region[5, 5]
    only_excluded = reported_region([], [hole], (10, 10))
    assert only_excluded.sum() == 100 - 4
    assert reported_region([], [], (10, 10)) is None


def test_an_image_region_is_used_as_given():
    image = np.zeros((4, 4), dtype=bool)
    image[1:3, 1:3] = True
    np.testing.assert_array_equal(reported_region([image], [], (4, 4)), image)


@pytest.mark.parametrize("spec", ["1,2 3,4", "1,2 3,4 5", "1,2 3,4 5,x6", "1,,2 3,4 5,6"])
def test_bad_polygons_are_refused_naming_the_option(spec):
    with pytest.raises(InputError, match=r"roi="):
        parse_region(spec, "roi")


def test_a_spec_that_is_not_a_polygon_is_a_path():
    assert parse_region("zones/door.png") == "zones/door.png"
    assert isinstance(parse_region(" 1,2  3,4\t5,6 "), Polygon)


# --- a region that leaves nothing to report is a usage error (issue 42) -------------------


@pytest.mark.parametrize("big", ["1000000000000", str(2**40), "-1000001"])
def test_corners_far_beyond_any_frame_are_refused_in_the_parser(big):
    with pytest.raises(InputError, match=rf"roi=.* has a corner '{big},0' more than 1000000"):
        parse_region(f"0,0 {big},0 10,10", "roi")
    assert parse_region("0,0 1000000,0 10,10").points.max() == 1_000_000  # the bound itself


def test_a_polygon_reaching_to_the_bound_still_covers_its_pixels():
    region = reported_region([parse_region("-1000000,-1000000 1000000,-1000000 "
                                           "1000000,1000000 -1000000,1000000")], [], (6, 8),
                             scale=4.0)  # fmt: skip
    assert region.all()


@pytest.mark.parametrize("name", ["roi", "exclude"])
def test_a_polygon_wholly_outside_the_frame_is_refused_naming_the_option(name):
    outside = parse_region("50,50 60,50 60,60", name)
    rois, excludes = ([outside], []) if name == "roi" else ([], [outside])
    with pytest.raises(InputError, match=rf"^{name}='50,50 60,50 60,60' covers no pixel of "
                                         r"the 10x10 frames .*x 0..9, y 0..9"):  # fmt: skip
        reported_region(rois, excludes, (10, 10))


def test_an_empty_roi_image_is_refused_with_the_name_typed():
    with pytest.raises(InputError, match=r"^roi='door.png' covers no pixel .* non-zero"):
        reported_region([np.zeros((4, 4), bool)], [], (4, 4), labels=(["door.png"], []))


@pytest.mark.parametrize(
    ("rois", "excludes", "message"),
    [
        ([], ["0,0 9,0 9,9 0,9"], "exclude covers the whole 10x10 frame"),
        (["2,2 5,2 5,5 2,5"], ["2,2 5,2 5,5 2,5"], "exclude covers all of roi"),
        (["2,2 5,2 5,5"], ["0,0 9,0 9,9 0,9"], "exclude covers all of roi"),
    ],
)
def test_excludes_that_leave_nothing_to_report_are_refused(rois, excludes, message):
    with pytest.raises(InputError, match=f"^{message}: nothing would be reported") as error:
        reported_region([parse_region(r) for r in rois],
                        [parse_region(e, "exclude") for e in excludes], (10, 10))  # fmt: skip
    flags = {"roi": "--roi", "exclude": "--exclude"}
    assert error.value.render(flags).startswith(f"--{message.replace(' roi', ' --roi')}")
