"""Reading input files: regular files up to the limit, anything else refused at once. Writing the
harness's own files: never through a planted link, never into a special file, temporaries under
names no one can guess."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.base.files import (
    MAX_FILE_BYTES,
    FileRefused,
    UnsafeFile,
    append_to,
    check_own_file,
    create_new,
    open_lock,
    own_folder,
    read_own_file,
    read_regular_file,
    replacing,
    temporary_name,
    write_atomic,
    write_new,
)


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"#" * MAX_FILE_BYTES)
    assert len(read_regular_file(str(path))) == MAX_FILE_BYTES
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(FileRefused, match="larger than 1,048,576 bytes"):
        read_regular_file(str(path))


def test_a_fifo_without_a_writer_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = str(tmp_path / "pipe.yaml")
    os.mkfifo(fifo)
    with ThreadPoolExecutor(1) as pool:
        reading = pool.submit(read_regular_file, fifo)
        try:
            # An open() that waits for a writer waits for ever: a bound no loaded machine reaches
            # still tells it from a refusal at once, and the test fails instead of hanging.
            refused = reading.exception(timeout=10)
        except TimeoutError:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the writer it waits for: the thread ends
            raise AssertionError(f"reading {fifo} waited for a writer") from None
    assert isinstance(refused, FileRefused)
    assert re.fullmatch(r"a named pipe \(FIFO\), not a regular file; give a .yaml file", str(refused))


def test_a_device_that_never_ends_is_refused_before_reading() -> None:
    with pytest.raises(FileRefused, match="^a character device"):
        read_regular_file("/dev/zero")


def test_a_missing_file_is_left_to_the_caller_to_word(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(str(tmp_path / "nope.yaml"))


# --- Writing the harness's own files: never through a link, never into a special file -------------

SECRET = "root:$6$not-for-your-eyes:19000:0:99999:7:::\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the folder the harness writes in, which a planted link points at."""
    path = tmp_path / "elsewhere" / "victim"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "out"
    path.mkdir()
    return path


def test_appending_creates_a_missing_file_and_appends_to_a_regular_one(folder: Path) -> None:
    for line in ("a\n", "b\n"):
        with append_to(folder / "calls.jsonl") as handle:
            handle.write(line)
    assert (folder / "calls.jsonl").read_text() == "a\nb\n"


@pytest.mark.parametrize("opening", [append_to, open_lock, check_own_file], ids=["append", "lock", "check"])
def test_a_file_of_the_harness_that_is_a_symlink_is_refused_and_its_target_left_whole(
    folder: Path, victim: Path, opening: Callable[[Path], object]
) -> None:
    (folder / "calls.jsonl").symlink_to(victim)
    with pytest.raises(UnsafeFile, match=r"calls\.jsonl: a symbolic link, where the harness keeps a file of its own"):
        opening(folder / "calls.jsonl")
    assert victim.read_text() == SECRET


@pytest.mark.parametrize("opening", [append_to, open_lock, check_own_file], ids=["append", "lock", "check"])
def test_a_dangling_symlink_is_refused_and_nothing_is_created_where_it_points(
    folder: Path, tmp_path: Path, opening: Callable[[Path], object]
) -> None:
    (folder / ".lock").symlink_to(tmp_path / "created-by-following")
    with pytest.raises(UnsafeFile, match="a symbolic link"):
        opening(folder / ".lock")
    assert not (tmp_path / "created-by-following").exists()


@pytest.mark.parametrize("opening", [append_to, open_lock, check_own_file], ids=["append", "lock", "check"])
def test_a_fifo_is_refused_at_once_with_one_line(folder: Path, opening: Callable[[Path], object]) -> None:
    os.mkfifo(folder / ".lock")
    with ThreadPoolExecutor(1) as pool:
        opened = pool.submit(opening, folder / ".lock")
        try:
            refused = opened.exception(timeout=10)
        except TimeoutError:
            os.close(os.open(folder / ".lock", os.O_RDONLY | os.O_NONBLOCK))  # the reader it waits for
            raise AssertionError("opening a FIFO waited for the other end") from None
    assert isinstance(refused, UnsafeFile) and "\n" not in str(refused)
    assert "a named pipe (FIFO), where the harness keeps a file of its own; remove it" in str(refused)


@pytest.mark.parametrize("opening", [append_to, open_lock, check_own_file], ids=["append", "lock", "check"])
def test_a_file_with_another_name_elsewhere_is_refused(
    folder: Path, victim: Path, opening: Callable[[Path], object]
) -> None:
    os.link(victim, folder / "turns.csv")  # a hard link: writing to one name writes to the other
    with pytest.raises(UnsafeFile, match="has another name .a hard link.") as refused:
        opening(folder / "turns.csv")
    assert "give it a copy of its own" in str(refused.value) and "\n" not in str(refused.value)
    assert victim.read_text() == SECRET


def test_a_folder_where_a_file_goes_is_refused(folder: Path) -> None:
    (folder / "calls.jsonl").mkdir()
    with pytest.raises(UnsafeFile, match="calls.jsonl: a folder, where the harness keeps a file of its own"):
        append_to(folder / "calls.jsonl")


def test_a_replaced_file_is_written_whole_with_the_mode_a_plain_open_gives(folder: Path) -> None:
    write_atomic(folder / "manifest.json", "{}\n")
    plain = folder / "plain"
    plain.write_text("")
    assert (folder / "manifest.json").read_text() == "{}\n"
    assert os.stat(folder / "manifest.json").st_mode == os.stat(plain).st_mode
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "plain"]  # no temporary left


def test_a_link_planted_at_the_old_fixed_temporary_name_is_not_followed(folder: Path, victim: Path) -> None:
    (folder / ".manifest.json.tmp").symlink_to(victim)
    write_atomic(folder / "manifest.json", "{}\n")
    assert victim.read_text() == SECRET
    assert (folder / "manifest.json").read_text() == "{}\n" and not (folder / "manifest.json").is_symlink()


def test_a_link_planted_at_the_temporary_name_drawn_is_not_followed(
    folder: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The name is drawn at random; an attacker who guessed it (here: the first draw is a name
    # already planted) makes the creation fail, and another name is drawn.
    drawn = iter(["planted", "fresh"])
    monkeypatch.setattr(
        "harness.base.files.temporary_name", lambda path: path.with_name(f".{path.name}.{next(drawn)}.tmp")
    )
    (folder / ".report.md.planted.tmp").symlink_to(victim)
    with replacing(folder / "report.md") as out:
        out.write("# report\n")
    assert victim.read_text() == SECRET
    assert (folder / "report.md").read_text() == "# report\n"
    assert next(drawn, None) is None  # the planted name was passed over


def test_temporary_names_are_not_predictable(folder: Path) -> None:
    names = {temporary_name(folder / "manifest.json").name for _ in range(20)}
    assert len(names) == 20
    assert all(re.fullmatch(rf"\.harness-tmp-{os.getpid()}-[0-9a-f]{{16}}\.manifest\.json\.tmp", n) for n in names)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_a_file_to_replace_that_is_not_a_regular_file_is_refused(folder: Path, victim: Path, kind: str) -> None:
    target = folder / "index.md"
    {"symlink": lambda: target.symlink_to(victim), "fifo": lambda: os.mkfifo(target), "folder": target.mkdir}[kind]()
    with pytest.raises(UnsafeFile, match="index.md: a .*, where the harness keeps a file of its own"):
        write_atomic(target, "# Reports\n")
    assert victim.read_text() == SECRET
    assert sorted(p.name for p in folder.iterdir()) == ["index.md"]  # nothing left beside it


def test_a_failed_write_leaves_the_old_file_and_no_temporary(folder: Path) -> None:
    (folder / "report.md").write_text("old\n")
    with pytest.raises(RuntimeError), replacing(folder / "report.md") as out:
        out.write("half")
        raise RuntimeError("stopped")
    assert [p.name for p in folder.iterdir()] == ["report.md"] and (folder / "report.md").read_text() == "old\n"


def test_a_new_file_is_never_written_through_a_link(folder: Path, victim: Path) -> None:
    (folder / "x.yaml").symlink_to(victim)
    with pytest.raises(FileExistsError):
        create_new(folder / "x.yaml")
    assert victim.read_text() == SECRET


def test_a_folder_of_the_harness_that_is_a_link_is_refused(folder: Path, victim: Path) -> None:
    (folder / "charts").symlink_to(victim.parent)
    with pytest.raises(UnsafeFile, match="charts: a symbolic link, where the harness keeps a folder of its own"):
        own_folder(folder / "charts")
    assert own_folder(folder / "new") == folder / "new" and (folder / "new").is_dir()
    assert own_folder(folder / "new") == folder / "new"  # an existing folder of its own is fine


def test_reading_a_file_of_its_own_refuses_links_and_special_files(folder: Path, victim: Path) -> None:
    (folder / "a.md").write_text("# a\n")
    (folder / "b.md").symlink_to(victim)
    os.mkfifo(folder / "c.md")
    os.link(victim, folder / "d.md")  # a hard link: another file of the user's, never read as the harness's
    assert read_own_file(folder / "a.md", 100) == b"# a\n"
    for name in ("b.md", "c.md", "d.md"):
        with pytest.raises(FileRefused):
            read_own_file(folder / name, 100)
    assert read_own_file(folder / "a.md", 2) == b"# "  # no further than asked


def test_write_new_creates_a_file_whole_where_nothing_is(tmp_path: Path) -> None:
    write_new(tmp_path / "v.jsonl", "one\n")
    assert (tmp_path / "v.jsonl").read_text() == "one\n"
    assert os.stat(tmp_path / "v.jsonl").st_nlink == 1 and sorted(os.listdir(tmp_path)) == ["v.jsonl"]


@pytest.mark.parametrize("planted", ["file", "link"])
def test_write_new_never_replaces_what_appeared_at_its_path(tmp_path: Path, planted: str) -> None:
    """A command checks its output path is free when it starts; what another command wrote there
    meanwhile (or a link planted there) is left as it is, and nothing of this write remains."""
    target = tmp_path / "target"
    target.write_text("theirs\n")
    path = tmp_path / "v.jsonl"
    if planted == "file":
        path.write_text("theirs\n")
    else:
        path.symlink_to(target)
    with pytest.raises(FileExistsError):
        write_new(path, "mine\n")
    assert path.read_text() == "theirs\n" and target.read_text() == "theirs\n"
    assert sorted(os.listdir(tmp_path)) == ["target", "v.jsonl"]
