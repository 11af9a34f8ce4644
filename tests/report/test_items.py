"""Imported items in a report: the main report summarises them by (dataset, category), a page per
category lists its items, a page per item holds the sections the main report would have shown for
it; the main report does not grow with the items, and pages that no longer belong are removed."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness.base.temporaries import is_temporary
from harness.chronology.loading import load_chronologies
from harness.importing.formats import ImportOptions, import_file
from harness.models.reference import ReferenceModel
from harness.report.document import build_report, write_report
from harness.report.items import HEADING, category_page, item_page, item_source
from harness.results.digests import settings_digests
from harness.results.tables import Results, load_results
from harness.run.batch import Runtime, run_batch
from harness.run.spec import RunSpec
from tests.conftest import builtin_registry
from tests.importing.goldens import FIXTURES
from tests.paths import SHIPPED
from tests.report_text import pages_of

REGISTRY = builtin_registry()
POLICIES = ("full-history", "last-turns:turns=1")
CATEGORIES = [  # (dataset, category) of the fixtures' items, as the report orders them
    "factconsolidation_sh_6k",  # its items name no category: the dataset alone
    "longmemeval_oracle · knowledge-update",
    "longmemeval_oracle · single-session-preference",
    "longmemeval_oracle · single-session-user",
    "multichallenge · INFERENCE_MEMORY",
    "multichallenge · INSTRUCTION_RETENTION",
]


def run(
    directory: Path, chronologies: Sequence[Path], run_id: str = "r", policies: Sequence[str] = POLICIES
) -> Results:
    plan = RunSpec(load_chronologies(list(chronologies)), [REGISTRY.parse(p) for p in policies], ["reference"])
    run_batch(plan, directory, run_id, Runtime(REGISTRY, factory=lambda _name, _stack: ReferenceModel()))
    return load_results(directory)


def imported(folder: Path) -> list[Path]:
    """Every format's fixture imported into `folder`, and one chronology written by hand."""
    import_file("longmemeval", FIXTURES / "longmemeval_oracle.json", folder, ImportOptions())
    import_file("multichallenge", FIXTURES / "benchmark_questions.jsonl", folder, ImportOptions(accept_licence="x"))
    import_file("factconsolidation", FIXTURES / "conflict_resolution.jsonl", folder, ImportOptions(facts_per_turn=2))
    shutil.copy(SHIPPED / "memory-drift.yaml", folder)
    return sorted(folder.glob("*.yaml"))


@pytest.fixture(scope="module")
def items_run(tmp_path_factory: pytest.TempPathFactory) -> Results:
    root = tmp_path_factory.mktemp("items")
    return run(root / "r", imported(root / "chronologies"))


@pytest.fixture(scope="module")
def report(items_run: Results, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report([items_run.directory], tmp_path_factory.mktemp("reports"), charts=False)


def section(markdown: str, heading: str) -> str:
    """From `heading` (a `## ` line) to the next `## ` heading or the end."""
    start = markdown.index(f"\n{heading}\n") + 1
    end = markdown.find("\n## ", start + len(heading))
    return markdown[start : None if end < 0 else end + 1]


def links(page: Path) -> list[Path]:
    """The files a page's relative links name (anchors dropped), each checked to be relative."""
    targets = [unquote(t) for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))]
    assert all(not t.startswith("/") and "://" not in t for t in targets)
    return [page.parent / t for t in targets]


def item_pages(report: Path) -> list[Path]:
    return sorted((report.parent / report.stem).glob("item-*.md"))


def test_the_main_report_has_one_row_per_category_and_no_section_per_item(report: Path) -> None:
    text = report.read_text(encoding="utf-8")
    rows = [line for line in section(text, f"## {HEADING}").splitlines() if line.startswith("| [")]
    assert [re.match(r"\| \[([^\]]*)\]", row)[1].replace("\\_", "_") for row in rows] == CATEGORIES  # type: ignore[index]
    assert "## memory-drift" in text and "## longmemeval\\_oracle-e47becba" not in text
    glance = section(text, "## At a glance")
    assert "[longmemeval\\_oracle · knowledge-update (1 item)]" in glance and "[memory-drift]" in glance
    assert "| longmemeval\\_oracle-e47becba |" not in section(text, "## What ran")  # items are on their pages


def test_every_link_of_the_report_and_its_pages_resolves(report: Path) -> None:
    pages = [report, *sorted((report.parent / report.stem).glob("*.md"))]
    # the report, a page per category, a page per item, the hand-written chronology's page
    assert len(pages) == 1 + len(CATEGORIES) + 6 + 1
    for page in pages:
        for target in links(page):
            assert target.is_file(), f"{page.name} links {target}, which is not there"


def test_a_category_page_lists_its_items_each_linked_to_its_page(report: Path) -> None:
    page = report.parent / report.stem / category_page(("multichallenge", "INSTRUCTION_RETENTION"))
    text = page.read_text(encoding="utf-8")
    [item] = [line for line in text.splitlines() if line.startswith("| [")]
    assert item.startswith(f"| [6741c4b7a2f0d1a1]({item_page('multichallenge-6741c4b7a2f0d1a1')}) |")
    assert len(item.split(" | ")) == 2 + len(POLICIES)  # the item, its chronology, a cell per policy


def older(results: Results, folder: Path) -> Results:
    """The same run as one written before the manifest recorded sources."""
    shutil.copytree(results.directory, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["chronologies"]:
        del entry["source"]
    manifest["settings_sha256"] = settings_digests(manifest)  # as it was sealed then
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return load_results(folder)


def answering(results: Results, folder: Path) -> Results:
    """The same run as if its model were not a literal reader (a model that answers)."""
    shutil.copytree(results.directory, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["model_settings"]["reference"]["reader"] = "a model that answers"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return load_results(folder)


@pytest.mark.slow
def test_an_item_page_holds_exactly_the_sections_the_report_would_have_shown(
    items_run: Results, tmp_path: Path
) -> None:
    # Under a model that answers: under a literal reader, an item's expectations read apart (test_offline.py).
    run = answering(items_run, tmp_path / "answering")
    report = write_report([run.directory], tmp_path / "reports", charts=False)
    # every chronology hand-written: each with its page of every section
    whole = pages_of(older(run, tmp_path / "older"), charts=False)
    for page in item_pages(report):
        text = page.read_text(encoding="utf-8")
        name = re.search(r"^## (.*)$", text, flags=re.MULTILINE)[1]  # type: ignore[index]
        [own] = [p for p in whole.values() if f"\n## {name}\n" in p]
        assert text[text.index(f"## {name}\n") :].rstrip() == section(own, f"## {name}").rstrip()


def test_a_run_written_before_sources_were_recorded_reads_as_no_items(items_run: Results, tmp_path: Path) -> None:
    run = older(items_run, tmp_path / "older")
    assert all(item_source(entry) is None for entry in run.manifest.chronologies)
    text = build_report(run, charts=False)
    assert f"## {HEADING}" not in text and "## longmemeval\\_oracle-e47becba" in text


def generated(path: Path, count: int) -> Path:
    """`count` LongMemEval-shaped items of two question types, alike but for their ids."""
    items = [
        {
            "question_id": f"q{n:04d}",
            "question_type": ("knowledge-update", "multi-session")[n % 2],
            "question": "Where do I live now?",
            "answer": "Lisbon",
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": ["s1"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21"],
            "haystack_sessions": [
                [
                    {"role": "user", "content": "I moved to Lisbon.", "has_answer": True},
                    {"role": "assistant", "content": "Nice."},
                ]
            ],
        }
        for n in range(count)
    ]
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_main_report_is_the_same_size_for_4_items_as_for_40(tmp_path: Path) -> None:
    texts = []
    for count in (4, 40):
        folder = tmp_path / str(count)
        written = import_file("longmemeval", generated(tmp_path / f"lme{count}.json", count), folder, ImportOptions())
        texts.append(
            write_report([run(tmp_path / f"r{count}", written).directory], tmp_path / f"rep{count}").read_text()
        )
        assert len(item_pages(tmp_path / f"rep{count}" / "r.md")) == count
    digits = [re.sub(r"\d+", "N", text) for text in texts]  # counts and times aside, the same text
    assert digits[0] == digits[1]
    assert abs(len(texts[1]) - len(texts[0])) < 200


@pytest.mark.slow
def test_a_rebuild_removes_pages_that_no_longer_belong_and_keeps_other_files(report: Path, items_run: Results) -> None:
    folder = report.parent / report.stem
    (folder / "item-gone.md").write_text("old")
    (folder / "category-gone.md").write_text("old")
    (folder / "notes.md").write_text("the user's")
    write_report([items_run.directory], report.parent, charts=False)
    assert not (folder / "item-gone.md").exists() and not (folder / "category-gone.md").exists()
    assert (folder / "notes.md").read_text() == "the user's"
    assert len(item_pages(report)) == 6


@pytest.mark.slow
def test_an_item_page_shows_its_charts_from_beside_it(tmp_path: Path) -> None:
    item = FIXTURES.parent / "golden" / "longmemeval-joined" / "longmemeval_oracle-e47becba.yaml"
    path = write_report([run(tmp_path / "r", [item], policies=("full-history",)).directory], tmp_path / "rep")
    [page] = item_pages(path)
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8"))
    assert len(images) == 2 and all("/" not in image for image in images)
    assert all((page.parent / image).read_bytes()[:4] == b"\x89PNG" for image in images)


@pytest.mark.slow
def test_a_comparison_of_two_runs_shows_each_runs_columns_per_category(items_run: Results, tmp_path: Path) -> None:
    chronologies = [Path(e["path"]) for e in items_run.manifest.chronologies]
    other = run(tmp_path / "s", chronologies, run_id="s", policies=("full-history",))
    path = write_report([items_run.directory, other.directory], tmp_path / "rep", charts=False)
    text = path.read_text(encoding="utf-8")
    header = next(line for line in section(text, f"## {HEADING}").splitlines() if line.startswith("| category"))
    assert header == "| category | items | full-history @ r | full-history @ s | last-turns:turns=1 @ r |"
    for page in [path, *sorted((tmp_path / "rep" / "compare-r+s").glob("*.md"))]:
        assert all(target.is_file() for target in links(page))


def test_a_hand_written_run_has_no_items_and_only_its_chronologies_pages(tmp_path: Path) -> None:
    path = write_report(
        [run(tmp_path / "r", [SHIPPED / "memory-drift.yaml"]).directory], tmp_path / "rep", charts=False
    )
    assert f"## {HEADING}" not in path.read_text(encoding="utf-8")
    assert [p.name for p in (tmp_path / "rep" / "r").glob("*.md")] == ["chronology-memory-drift.md"]


@pytest.mark.parametrize(
    "names",
    [("a/../b c", "a-b-c"), ("../../etc/passwd", "etc-passwd"), ("x" * 300, "x" * 50)],
)
def test_page_names_are_safe_file_names(names: tuple[str, str]) -> None:
    chronology, _ = names
    for name in (item_page(chronology), category_page((chronology, chronology)), category_page((chronology, None))):
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,100}\.md", name)
    assert category_page(("a|b", "c")) != category_page(("a", "b|c"))


@pytest.mark.slow
def test_the_report_made_as_text_is_the_one_written_beside_its_pages(items_run: Results, report: Path) -> None:
    assert build_report(items_run, charts=False) == report.read_text(encoding="utf-8")


def test_an_items_chronology_name_is_escaped_once_on_its_category_page(report: Path) -> None:
    page = report.parent / report.stem / category_page(("longmemeval_oracle", "knowledge-update"))
    assert "| longmemeval\\_oracle-e47becba |" in page.read_text(encoding="utf-8")


@pytest.mark.slow
def test_an_item_that_differs_between_two_runs_is_counted_in_the_caveats_and_named_on_its_page(
    items_run: Results, tmp_path: Path
) -> None:
    changed = tmp_path / "longmemeval_oracle-e47becba.yaml"
    [entry] = [e for e in items_run.manifest.chronologies if e["name"] == changed.stem]
    original = Path(entry["path"])
    changed.write_text(original.read_text(encoding="utf-8").replace("title: ", "title: Changed ", 1), encoding="utf-8")
    other = run(tmp_path / "s", [changed], run_id="s", policies=("full-history",))
    path = write_report([items_run.directory, other.directory], tmp_path / "rep", charts=False)
    caveats = section(path.read_text(encoding="utf-8"), "## Caveats")
    assert "- 1 imported item differs between runs (sha256 differ)" in caveats and "e47becba" not in caveats
    page = (tmp_path / "rep" / "compare-r+s" / item_page(changed.stem)).read_text(encoding="utf-8")
    assert f"| r: {entry['sha256']}; s: " in page


@pytest.mark.slow
def test_a_build_that_fails_half_way_leaves_the_previous_pages_beside_the_previous_report(
    items_run: Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages are staged and moved into place only once the whole report is made: a chart that
    cannot be drawn leaves the earlier build's report and pages as they were, nothing staged."""
    import harness.report.document as document
    import harness.report.items as items

    main = write_report([items_run.directory], tmp_path, charts=False)
    folder = tmp_path / main.stem
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    report_before = main.read_bytes()

    def broken(*_args: object, **_kwargs: object) -> None:
        raise OSError("no space left on device")

    monkeypatch.setattr(items, "item_text", lambda *args: "a later build's page\n")
    monkeypatch.setattr(document, "item_text", items.item_text)
    monkeypatch.setattr(document, "write_charts", broken)
    with pytest.raises(OSError, match="no space"):
        write_report([items_run.directory], tmp_path, charts=True)
    assert main.read_bytes() == report_before
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix != ".png"} == before
    assert not [p for p in folder.iterdir() if is_temporary(p.name)]
