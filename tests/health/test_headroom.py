"""One cluster's INODE HEADROOM verdict (sweep_core.health.headroom) from the gather's records."""

from __future__ import annotations

from pathlib import Path

from sweep_core.health.headroom import quota_verdict

FIX = Path(__file__).parents[1] / "fixtures" / "quota"
DF = (0, (FIX / "df_i_this_machine.txt").read_text(), "")


def _ok(name: str) -> tuple[int, str, str]:
    return (0, (FIX / name).read_text(), "")


def test_jutil_over_soft_limit_is_over_whatever_df_says() -> None:
    v = quota_verdict("inodes", "jutil project dataquota -p datasets", _ok("jutil_dataquota_over.txt"), [])
    assert v["status"] == "OVER" and "inode" in v["reason"]


def test_jutil_table_near() -> None:
    v = quota_verdict(
        "inodes", "jutil project dataquota -p datasets", _ok("jutil_dataquota_table.txt"), [], warn_fraction=0.9
    )
    assert v["status"] == "NEAR"


def test_failed_or_unknown_command_is_unknown_never_ok() -> None:
    err = (1, "", (FIX / "jutil_error.txt").read_text())
    v = quota_verdict("inodes", "jutil project dataquota -p datasets", err, [])
    assert v["status"] == "UNKNOWN" and "exited 1" in v["reason"]
    v = quota_verdict("inodes", "quota -s", (0, "whatever", ""), [])
    assert v["status"] == "UNKNOWN" and "no parser" in v["reason"] and "taccinfo" in v["reason"]
    v = quota_verdict("inodes", "/usr/local/etc/taccinfo", (0, "whatever", ""), [])
    assert v["status"] == "UNKNOWN" and "no taccinfo disk-quota header" in v["reason"]
    v = quota_verdict("inodes", "jutil project dataquota -p x", None, [])
    assert v["status"] == "UNKNOWN" and "did not run" in v["reason"]


def test_df_with_explicit_soft_limit() -> None:
    assert quota_verdict("inodes", "", None, [_ok("df_i_gpfs_near.txt")], soft_limit=10)["status"] == "OVER"


def test_bytes_bind_judges_bytes() -> None:
    v = quota_verdict("bytes", "lfs quota -h -u u /leonardo_scratch", _ok("lfs_quota_h_over.txt"), [])
    assert v["status"] == "OVER" and v["kind"] == "bytes"


def test_taccinfo_is_read_for_tacc() -> None:
    """TACC's ops.md quota command (/usr/local/etc/taccinfo) is parsed: a verdict, not UNKNOWN."""
    v = quota_verdict("inodes", "/usr/local/etc/taccinfo", _ok("taccinfo.txt"), [], warn_fraction=0.9)
    assert v["status"] == "NEAR" and "on /work" in v["reason"]
