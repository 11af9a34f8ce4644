"""`python -m harness` is the `harness` command."""

from harness.cli.commands import main

main()
