"""``fairplace schema auction|placement``: print the published JSON Schema."""

from __future__ import annotations

import json

HELP = "print the JSON Schema of an instance kind"


def add_arguments(p) -> None:
    p.add_argument("kind", help="auction | placement")


def run(args) -> int:
    from fairplace.instances.schema import schema

    print(json.dumps(schema(args.kind), indent=1))
    return 0
