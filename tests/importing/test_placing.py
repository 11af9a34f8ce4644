"""Placing: every chronology validated before any is written; none overwritten unless --force."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.base.errors import RunInUse
from harness.base.files import MAX_FILE_BYTES
from harness.chronology.loading import load_chronology
from harness.importing import placing
from harness.importing.placing import place
from harness.importing.source import ImportRefused
from harness.importing.turns import Item

SOURCE = {"dataset": "d", "item_id": "a", "sha256": "0" * 64, "licence": "MIT"}


def item(stem: str, user: str = "Where do I live?", **turn: object) -> Item:
    document = {"title": stem, "source": {**SOURCE, "item_id": stem}, "turns": [{"user": user, **turn}]}
    return Item(stem, stem, document)


def test_each_item_is_written_as_a_chronology_that_loads(tmp_path: Path) -> None:
    paths = place([item("a"), item("b", probe="p", expect={"value": "Lisbon"})], tmp_path / "out")
    assert [p.name for p in paths] == ["a.yaml", "b.yaml"]
    assert load_chronology(paths[1]).name == "b"
    assert sorted(os.listdir(tmp_path / "out")) == ["a.yaml", "b.yaml"]  # no staging folder left behind


def test_an_existing_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text("mine\n")
    with pytest.raises(
        ImportRefused, match=r"b\.yaml already exists; import into another --out folder, or replace it with --force"
    ):
        place([item("a"), item("b")], tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["b.yaml"] and (tmp_path / "b.yaml").read_text() == "mine\n"


def test_force_replaces_an_existing_file(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("mine\n")
    place([item("a")], tmp_path, force=True)
    assert "title: a" in (tmp_path / "a.yaml").read_text()


def test_a_folder_in_the_way_is_refused_even_with_force(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").mkdir()
    with pytest.raises(ImportRefused, match="is a folder"):
        place([item("a")], tmp_path, force=True)


def test_one_chronology_the_loader_refuses_writes_none(tmp_path: Path) -> None:
    bad = item("b", probe="p", assistant="A probe may not have a scripted reply.")
    with pytest.raises(ImportRefused) as refused:
        place([item("a"), bad], tmp_path / "out")
    assert str(refused.value).startswith("nothing written: the chronology loader refuses")
    assert f"{tmp_path / 'out' / 'b.yaml'}:" in str(refused.value)  # named as the file it would have been
    assert not (tmp_path / "out").exists()  # the import made the folder: it leaves none behind


def test_a_refused_import_leaves_a_folder_it_did_not_make_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("x")
    with pytest.raises(ImportRefused):
        place([item("a"), item("b", probe="p", assistant="No.")], tmp_path)
    assert os.listdir(tmp_path) == ["mine.txt"]


def test_items_are_converted_one_at_a_time_as_they_are_placed(tmp_path: Path) -> None:
    seen = []

    def items():
        for stem in ("a", "b"):
            seen.append(sorted(p.name for p in tmp_path.glob(".harness-tmp-*.import/*.yaml")))
            yield item(stem)

    place(items(), tmp_path)
    assert seen == [[], ["a.yaml"]]  # a was staged (and validated) before b was made


def test_two_items_of_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportRefused, match=r"two items would both be a\.yaml"):
        place([item("a"), item("a")], tmp_path)


def test_a_chronology_over_the_size_limit_is_refused_by_item(tmp_path: Path) -> None:
    # its text within the limit, its YAML over it: each quote written as an escape
    with pytest.raises(
        ImportRefused, match=rf"item 'a': its chronology would be [\d,]+ bytes, over the {MAX_FILE_BYTES:,}"
    ):
        place([item("a", user="\x01" * (MAX_FILE_BYTES // 2))], tmp_path)


def test_an_item_whose_text_alone_is_over_the_limit_is_refused_before_it_is_written_as_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dumped: list[object] = []
    monkeypatch.setattr(placing, "yaml_text", lambda document: dumped.append(document) or "")
    with pytest.raises(
        ImportRefused, match=r"item 'a': its chronology would be at least [\d,]+ bytes \(its text alone\), over the"
    ):
        place([item("a", user="x" * MAX_FILE_BYTES)], tmp_path)
    assert dumped == []


def test_an_empty_input_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportRefused, match="holds no item"):
        place([], tmp_path)


def test_a_link_named_as_out_is_followed_to_its_folder(tmp_path: Path) -> None:
    (tmp_path / "disk").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "disk")
    place([item("a")], tmp_path / "out")
    assert os.listdir(tmp_path / "disk") == ["a.yaml"] and (tmp_path / "out").is_symlink()


@pytest.mark.parametrize(
    ("target", "message"),
    [("missing", "a symbolic link to nothing"), ("file", "a regular file, not a folder; give a folder")],
)
def test_a_link_to_no_folder_is_refused_and_left(tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "file").write_text("mine\n")
    (tmp_path / "out").symlink_to(tmp_path / target)
    with pytest.raises(ImportRefused, match=message):
        place([item("a")], tmp_path / "out")
    assert (tmp_path / "out").is_symlink() and (tmp_path / "file").read_text() == "mine\n"


def test_a_second_import_into_a_folder_being_imported_into_is_refused(tmp_path: Path) -> None:
    """Two imports overlapping in time: the folder is held from the first check to the last
    rename, so the second is refused instead of both finding `a.yaml` free."""
    out = tmp_path / "out"
    second: list[BaseException | list[Path]] = []

    def first_items() -> Iterator[Item]:
        yield item("a", user="first")
        # the first import is between its check and its rename: another process imports now
        worker = threading.Thread(target=lambda: second.append(_outcome(lambda: place([item("a")], out))))
        worker.start()
        worker.join()

    place(first_items(), out)
    assert isinstance(second[0], RunInUse)
    assert "wait for that import to end, or import into another --out folder" in str(second[0])
    assert "first" in (out / "a.yaml").read_text()  # the first's file, not replaced
    assert sorted(os.listdir(out)) == ["a.yaml"]  # its lock leaves no file behind


def _outcome(call: Callable[[], list[Path]]) -> BaseException | list[Path]:
    try:
        return call()
    except BaseException as exc:  # noqa: BLE001  the test inspects what the other import met
        return exc
