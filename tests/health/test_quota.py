"""Quota/inode parsers and the headroom verdict, on captured-format fixtures (tests/fixtures/quota)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep_core.health.quota import (
    NEAR,
    OK,
    OVER,
    UNKNOWN,
    QuotaReading,
    judge_headroom,
)
from sweep_core.health.quota_parsers import (
    parse_cindata,
    parse_count,
    parse_df_inodes,
    parse_jutil_dataquota,
    parse_lfs_quota,
    parse_taccinfo,
    parser_for,
)

FIX = Path(__file__).parents[1] / "fixtures" / "quota"


def fx(name: str) -> str:
    return (FIX / name).read_text()


def test_df_this_machine_real_capture() -> None:
    """`df -i -P / /dev/shm /proc` as captured on this machine: proc has no inode counts."""
    p = parse_df_inodes(fx("df_i_this_machine.txt"))
    by = {r.target: r for r in p.readings}
    assert by["/"].capacity == 16777216 and by["/"].used == 578361 and by["/"].use_pct == 4
    assert by["/dev/shm"].filesystem == "tmpfs"
    assert [pr.line.split()[-1] for pr in p.problems] == ["/proc"]
    # /proc cannot be judged, so the whole verdict is not OK
    v = judge_headroom(p, 0.9)
    assert v.status == UNKNOWN and "/proc" in v.reason
    assert judge_headroom(p.readings, 0.9).status == OK


def test_df_near_by_fraction_and_over_by_explicit_soft() -> None:
    p = parse_df_inodes(fx("df_i_gpfs_near.txt"))
    assert not p.problems
    v = judge_headroom(p, 0.9)
    assert v.status == NEAR and v.worst is not None and v.worst.target == "/e/scratch"
    assert "IUse% 92%" in v.reason
    assert judge_headroom(p, 0.95).status == OK
    # an explicit soft limit from config (8.0M on the scratch tier) makes 8.07M OVER
    scratch = [r for r in p.readings if r.target == "/e/scratch"]
    v = judge_headroom(scratch, 0.9, explicit_soft=8_000_000)
    assert v.status == OVER and v.red_flag
    assert v.reason.startswith("inodes 8.07M/8M soft (config) (101%)")


def test_df_dash_columns_are_unknown_not_zero() -> None:
    p = parse_df_inodes(fx("df_i_dash.txt"))
    assert [r.target for r in p.readings] == ["/"]
    assert "no inode counts" in p.problems[0].reason and "/mnt/projects" in p.problems[0].line
    v = judge_headroom(p, 0.9)
    assert v.status == UNKNOWN and "/mnt/projects" in v.reason


def test_df_long_filesystem_name_and_spaces_in_mount() -> None:
    p = parse_df_inodes(fx("df_i_longname.txt"))
    assert not p.problems
    assert p.readings[0].filesystem.startswith("very-long-filesystem-name")
    assert p.readings[0].target == "/leonardo_work" and p.readings[0].used == 9_600_000
    assert p.readings[1].target == "/var/my data"
    assert judge_headroom(p, 0.9).status == NEAR


@pytest.mark.parametrize("name", ["df_i_truncated.txt", "df_i_error.txt"])
def test_df_malformed_or_error_is_unknown_with_the_line(name: str) -> None:
    p = parse_df_inodes(fx(name))
    v = judge_headroom(p, 0.9)
    assert v.status == UNKNOWN
    assert p.problems and p.problems[0].line.strip()[:10] in v.reason


@pytest.mark.parametrize("text", ["", "\n\n", "Filesystem Inodes IUsed IFree IUse% Mounted on\n", "\x00\xff garbage"])
def test_df_empty_or_garbage_never_crashes(text: str) -> None:
    v = judge_headroom(parse_df_inodes(text), 0.9)
    assert v.status == UNKNOWN and v.reason.startswith("quota unreadable")


def test_jutil_json_over_soft() -> None:
    p = parse_jutil_dataquota(fx("jutil_dataquota.json"))
    assert not p.problems
    inodes = [r for r in p.readings if r.kind == "inodes"]
    assert inodes[0].target == "/e/data1/datasets"
    assert (inodes[0].used, inodes[0].soft, inodes[0].hard) == (118_000_000, 110_000_000, 121_000_000)
    data = [r for r in p.readings if r.kind == "bytes"]
    assert data[0].used == 1932735283200 * 1024 and data[1].soft is None  # 0KB = no limit
    v = judge_headroom(p, 0.9, kind="inodes")
    assert v.status == OVER and v.reason.startswith("inodes 118M/110M soft (107%) on /e/data1/datasets")


def test_jutil_table_near_and_at_soft() -> None:
    p = parse_jutil_dataquota(fx("jutil_dataquota_table.txt"))
    assert not p.problems and len(p.readings) == 4
    v = judge_headroom(p, 0.9, kind="inodes")
    assert v.status == NEAR and "96M/100M soft (96%)" in v.reason
    at = judge_headroom(parse_jutil_dataquota(fx("jutil_dataquota_over.txt")), 0.9, kind="inodes")
    assert at.status == OVER and "(100%)" in at.reason  # AT the soft limit is over


def test_jutil_bytes_judged_separately() -> None:
    p = parse_jutil_dataquota(fx("jutil_dataquota_table.txt"))
    v = judge_headroom(p, 0.9, kind="bytes")
    assert v.status == OK and v.worst is not None and v.worst.kind == "bytes"


@pytest.mark.parametrize(
    "text",
    [
        fx("jutil_error.txt"),
        '[{"project": "datasets", "inode-usage": "lots"}]',
        '[{"project": "datasets"',
        "project filesystem inode-usage inode-soft-limit inode-hard-limit\ndatasets exa_data1 118000000\n",
    ],
)
def test_jutil_unparseable_is_unknown(text: str) -> None:
    v = judge_headroom(parse_jutil_dataquota(text), 0.9, kind="inodes")
    assert v.status == UNKNOWN and "quota unreadable" in v.reason


def test_cindata_bytes_against_hard_cap() -> None:
    p = parse_cindata(fx("cindata.csv"))
    work = [r for r in p.readings if r.target == "/leonardo_work/EUHPC_E03_068" and r.kind == "bytes"][0]
    assert work.used == 103079215104 * 1024 and work.hard == 107374182400 * 1024 and work.soft is None
    ino = [r for r in p.readings if r.kind == "inodes"][0]
    assert ino.hard is None  # areainmax 0 = no cap
    v = judge_headroom(p, 0.9, kind="bytes")
    assert v.status == NEAR and "hard (96%)" in v.reason
    assert judge_headroom(p, 0.9, kind="inodes").status == UNKNOWN  # no inode limit printed


def test_lfs_quota_plain_and_human_over() -> None:
    p = parse_lfs_quota(fx("lfs_quota_u.txt"))
    b = [r for r in p.readings if r.kind == "bytes"][0]
    assert b.target == "/leonardo_scratch" and b.used == 943718400 * 1024 and b.soft == 1073741824 * 1024
    assert judge_headroom(p, 0.9, kind="bytes").status == OK  # 88%
    assert judge_headroom(p, 0.85, kind="bytes").status == NEAR
    h = parse_lfs_quota(fx("lfs_quota_h_over.txt"))  # wrapped long name, "*" over marker, grace
    assert not h.problems
    hb = [r for r in h.readings if r.kind == "bytes"][0]
    assert hb.target == "/leonardo_work/EUHPC_E03_068" and hb.soft == 1024**4
    v = judge_headroom(h, 0.9, kind="bytes")
    assert v.status == OVER and "1.05TiB/1TiB soft (105%)" in v.reason
    assert [r.used for r in h.readings if r.kind == "inodes"] == [4_200_000]


def test_lfs_quota_truncated_is_unknown() -> None:
    text = fx("lfs_quota_h_over.txt").splitlines()
    v = judge_headroom(parse_lfs_quota("\n".join(text[:3])), 0.9, kind="bytes")
    assert v.status == UNKNOWN and "truncated" in v.reason


def test_no_limit_reading_is_unknown_and_bad_fraction_raises() -> None:
    r = QuotaReading("/x", "fs", "inodes", used=5)
    assert judge_headroom([r], 0.9).status == UNKNOWN
    assert judge_headroom([], 0.9).status == UNKNOWN
    with pytest.raises(ValueError):
        judge_headroom([r], 0)


def test_parse_count_and_parser_for() -> None:
    assert parse_count("9.6M", binary=False) == 9_600_000
    assert parse_count("1T", binary=True) == 1024**4
    assert parse_count("12KB", binary=True) == 12 * 1024
    assert parse_count("-", binary=False) is None
    assert parser_for("jutil project dataquota -p datasets") == "jutil"
    assert parser_for("df -i /home/sweep") == "df"
    assert parser_for("cindata") == "cindata"
    assert parser_for("lfs quota -h -u bob /leonardo_scratch") == "lfs"
    assert parser_for("/usr/local/etc/taccinfo") == "taccinfo"
    assert parser_for("quota -s") == ""


def test_taccinfo_bytes_and_files_per_filesystem() -> None:
    """TACC's taccinfo (fixture synthesized from TACC's documented layout): used/limit in GB and files
    per filesystem; a 0 limit (scratch: purged, no quota) is no reading, never 'unlimited OK'."""
    p = parse_taccinfo(fx("taccinfo.txt"))
    assert not p.problems
    by = {(r.target, r.kind): r for r in p.readings}
    assert set(by) == {("/home1", "bytes"), ("/home1", "inodes"), ("/work", "bytes"), ("/work", "inodes")}
    assert by["/work", "bytes"].used == 512 * 1024**3 and by["/work", "bytes"].hard == 1024 * 1024**3
    assert by["/work", "inodes"].used == 2_850_000 and by["/work", "inodes"].hard == 3_000_000
    assert by["/home1", "bytes"].used == round(9.2 * 1024**3)
    v = judge_headroom(p, 0.9, kind="inodes")
    assert v.status == NEAR and v.worst is not None and v.worst.target == "/work"
    assert judge_headroom(p, 0.9, kind="bytes").status == OK


def test_taccinfo_unreadable_is_unknown_with_the_reason() -> None:
    p = parse_taccinfo(fx("taccinfo_no_quota_section.txt"))
    assert not p.readings and "no taccinfo disk-quota header" in p.problems[0].reason
    v = judge_headroom(p, 0.9, kind="inodes")
    assert v.status == UNKNOWN and "no taccinfo disk-quota header" in v.reason
    # a row cut short is named, and the verdict is not OK even though /home1 reads fine
    text = fx("taccinfo.txt").replace("| /work             512.0    1024.0    50.00", "| /work             512.0")
    p = parse_taccinfo(text)
    assert [pr.reason for pr in p.problems] == ["taccinfo row has 5 cells, need 7 (Disk ... %Used)"]
    assert judge_headroom(p, 0.9, kind="inodes").status == UNKNOWN
    assert parse_taccinfo("").problems[0].reason.startswith("no taccinfo disk-quota header")
