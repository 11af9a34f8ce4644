"""Where the tests find the repository's own files, wherever a test module sits."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "chronologies"
