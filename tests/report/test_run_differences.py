"""What differed between two runs, read from their manifests field by field."""

from __future__ import annotations

from harness.report.run_differences import differences
from harness.results.rows import Manifest


def manifest(**fields: object) -> Manifest:
    base: dict = {"format_version": 3, "run_id": "r", "policies": [], "repetitions": 1, "live": False}
    return Manifest(**(base | fields))


def test_equal_manifests_differ_in_nothing() -> None:
    differ, same = differences(manifest(models=["reference"]), manifest(models=["reference"]))
    assert differ == [] and "models" in same and "harness_version" in same


def test_a_changed_field_shows_both_values_and_a_dict_field_by_key() -> None:
    a = manifest(models=["reference"], harness_version="1.0", packages={"pandas": "2.0", "numpy": "1.0"})
    b = manifest(models=["openai:x"], harness_version="1.1", packages={"pandas": "2.1", "numpy": "1.0"})
    differ, _ = differences(a, b)
    found = {d.field: (d.a, d.b) for d in differ}
    assert found == {
        "models": ('["reference"]', '["openai:x"]'),
        "harness_version": ("1.0", "1.1"),
        "packages.pandas": ("2.0", "2.1"),
    }


def test_a_field_one_manifest_lacks_reads_not_recorded() -> None:
    differ, _ = differences(manifest(seed=None), manifest(seed=7))
    assert [(d.field, d.a, d.b) for d in differ] == [("seed", "not recorded", "7")]
