"""``fairplace schema auction|placement``: print the published JSON Schema."""

from __future__ import annotations

import json

from fairplace.instances.schema import SCHEMAS, schema

HELP = "print the JSON Schema of an instance kind"


def add_arguments(p) -> None:
    p.add_argument("kind", metavar="KIND", help=f"instance kind: {', '.join(sorted(SCHEMAS))}")
    p.add_argument(
        "--json", action="store_true", help="compact JSON on one line (default indented)"
    )


def run(args) -> int:
    print(json.dumps(schema(args.kind), indent=None if args.json else 1))
    return 0
