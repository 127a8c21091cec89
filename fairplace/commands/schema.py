"""``fairplace schema auction|placement``: print the published JSON Schema."""

from __future__ import annotations

import json

HELP = "print the JSON Schema of an instance kind"


def add_arguments(p) -> None:
    from fairplace.instances.schema import SCHEMAS

    p.add_argument("kind", metavar="KIND", help=f"instance kind: {', '.join(sorted(SCHEMAS))}")
    p.add_argument(
        "--json", action="store_true", help="compact JSON on one line (default indented)"
    )


def run(args) -> int:
    from fairplace.instances.schema import schema

    print(json.dumps(schema(args.kind), indent=None if args.json else 1))
    return 0
