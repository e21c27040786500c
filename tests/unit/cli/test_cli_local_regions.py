"""`takt local --regions` refuses a bad region list in one line, before it starts anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from takt_cli.commands.main import main


@pytest.mark.parametrize(
    ("regions", "says"),
    [
        ("us-east-1", "--regions needs two regions or more"),
        ("us-east-1,us-east-1", "--regions names a region twice"),
        ("us-east-1,US_EAST_2", "'US_EAST_2' is not a region name"),
        ("us-east-1,,us-east-2", "'' is not a region name"),
    ],
)
def test_a_bad_region_list_is_one_error_line_and_starts_nothing(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    regions: str,
    says: str,
) -> None:
    def started(self: object) -> None:
        raise AssertionError("takt local --regions started a region before refusing the list")

    monkeypatch.setattr("takt_cli.local.regions.LocalRegions.start", started)

    code = main(["local", "--regions", regions])
    out, err = capsys.readouterr()

    assert (code, out) == (1, ""), "bad input exits 1 with nothing on stdout"
    assert len(err.splitlines()) == 1 and says in err, f"bad input is one error line: {err!r}"


def test_a_data_folder_with_regions_is_one_error_line_and_starts_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def started(self: object) -> None:
        raise AssertionError("takt local --regions started with a data folder it would ignore")

    monkeypatch.setattr("takt_cli.local.regions.LocalRegions.start", started)

    code = main(["local", "--regions", "us-east-1,us-east-2", "--data", str(tmp_path)])
    out, err = capsys.readouterr()

    assert (code, out) == (1, ""), "bad input exits 1 with nothing on stdout"
    assert len(err.splitlines()) == 1 and "--regions keeps every region in memory" in err, (
        f"a data folder --regions would ignore is refused in one line: {err!r}"
    )
