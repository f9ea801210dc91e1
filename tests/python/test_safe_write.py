"""Every file vramplan writes (`--out` of sweep / fit / calibrate, `colocate --compose`, the
header cache) goes through one writer: only a regular file is replaced, atomically, a link is
not followed, a FIFO or device is refused before anything is written, the old file is intact
when writing fails, the mode comes from the file replaced or the umask, and standard output
that cannot be written is a named error. Each CLI run is a child with a timeout (a FIFO opened
for writing would block it)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from vramplan import Error, _io

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "calibration"
OLD = "the old file\n"


def _cli(*args: str, stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def _writers(out: Path) -> dict[str, list[str]]:
    """A command line per write site, each writing `out`."""
    small = "Qwen/Qwen3-0.6B --max-model-len 4096 --gpu-memory-utilization 0.3"
    sweep = ["sweep", "Qwen/Qwen3-0.6B", "--gpu", "L4", "--max-model-len", "4096"]
    calibrate = ["calibrate", str(LOGS / "qwen25_7b_h100_v019_tp1.log"), "--priors"]
    return {
        "colocate --compose": ["colocate", small, small, "--gpu", "H100", "--compose", str(out)],
        "sweep --out": [*sweep, "--out", str(out)],
        "calibrate --out": [*calibrate, "--gpu", "H100-80GB", "--out", str(out)],
    }


@pytest.mark.parametrize("site", ["colocate --compose", "sweep --out", "calibrate --out"])
def test_a_symbolic_link_is_refused_and_its_target_kept(site: str, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text(OLD)
    link = tmp_path / ("out.csv" if site == "sweep --out" else "out.yaml")
    link.symlink_to(target)
    done = _cli(*_writers(link)[site])
    assert done.returncode == 2, done.stderr
    assert "symbolic link" in done.stderr
    assert str(link) in done.stderr
    assert target.read_text() == OLD
    assert link.is_symlink()


@pytest.mark.parametrize("site", ["colocate --compose", "sweep --out", "calibrate --out"])
def test_a_fifo_is_refused_without_blocking(site: str, tmp_path: Path) -> None:
    fifo = tmp_path / ("out.csv" if site == "sweep --out" else "out.yaml")
    os.mkfifo(fifo)
    done = _cli(*_writers(fifo)[site])  # the timeout ends a writer that blocks on the FIFO
    assert done.returncode == 2, done.stderr
    assert "a FIFO" in done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_is_not_replaced(tmp_path: Path) -> None:
    null = tmp_path / "null.csv"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    done = _cli(*_writers(null)["sweep --out"])
    assert done.returncode == 2, done.stderr
    assert "character device" in done.stderr
    assert stat.S_ISCHR(null.lstat().st_mode)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Error, match="a directory"):
        _io.write_text_atomic(tmp_path, "x", what="profile")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "profile.yaml"
    out.write_text(OLD)

    def disk_full(self: Path, text: str, **_: object) -> int:
        with self.open("w") as handle:
            handle.write(text[: len(text) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", disk_full)
    with pytest.raises(Error, match="No space left on device") as caught:
        _io.write_text_atomic(out, "new contents " * 100, what="profile")
    assert str(out) in str(caught.value)
    monkeypatch.undo()
    assert out.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.yaml"]


def test_the_mode_comes_from_the_umask_or_the_file_replaced(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh.yaml"
        _io.write_text_atomic(fresh, "x", what="profile")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640
        kept = tmp_path / "kept.yaml"
        kept.write_text(OLD)
        kept.chmod(0o604)
        _io.write_text_atomic(kept, "y", what="profile")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o604
        assert kept.read_text() == "y"
    finally:
        os.umask(previous)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_standard_output_is_a_named_error() -> None:
    with Path("/dev/full").open("w") as full:
        done = _cli("models", stdout=full.fileno())
    assert done.returncode == 74, done.stderr
    assert "standard output" in done.stderr
    assert "internal error" not in done.stderr
