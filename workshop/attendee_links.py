"""The attendee page's table of notebooks with their Colab links, generated so it cannot drift.

``python workshop/attendee_links.py`` checks that ``book/workshop/attendee.md`` holds the table
for every notebook the pipeline discovers; ``--fix`` rewrites it between its markers. The table
is made by ``tools/authoring/link_tables.py``, like the README's (the Colab addresses from
``_config.yml``); ``tools/checks/nbcheck.py`` checks both.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make `tools` importable
    sys.path.insert(0, str(ROOT))

from tools.authoring.link_tables import attendee_problems, fix_attendee  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Check the attendee page's table; with --fix, regenerate it first."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="rewrite the table")
    args = parser.parse_args(argv)
    if args.fix:
        fix_attendee()
    found = attendee_problems()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
