"""``fairplace instances list | show NAME | generate SUITE --out DIR`` and
``fairplace instances generate --kind auction|placement|agent-auction [--apps N --machines M
--seed S] -o FILE.json`` (one custom instance, checked against the published schema)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import fairplace
from fairplace.commands import _args
from fairplace.commands._args import out_dir, out_file
from fairplace.commands._table import frame, table
from fairplace.core.errors import OptionError
from fairplace.core.limits import JSON_BYTES, size_limit
from fairplace.core.registry import Entry, Registry
from fairplace.instances import generators, io

HELP = "list, show and generate instance suites, or generate one custom instance"

#: --kind -> the generator of fairplace.instances.generators; ``capabilities["size"]``: its size
#: parameter, which --apps sets
KINDS = Registry(
    "kind",
    {
        "auction": Entry(
            generators.random_auction,
            None,
            "random auction",
            generators.AUCTION_PARAMS,
            {"size": "apps"},
        ),
        "placement": Entry(
            generators.random_placement,
            None,
            "random placement",
            generators.PLACEMENT_PARAMS,
            {"size": "jobs"},
        ),
        "agent-auction": Entry(
            generators.random_agent_auction,
            None,
            "random agent-form auction",
            generators.AGENT_AUCTION_PARAMS,
            {"size": "apps"},
        ),
    },
    where="--kind",
)


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    ls = sub.add_parser("list", help="registered suites and their sizes")
    ls.add_argument("--json", action="store_true", help="print a JSON list of suites")
    show = sub.add_parser("show", help="a suite's instances and features, or one instance's JSON")
    show.add_argument("name", metavar="NAME", help="suite name, or SUITE/INSTANCE")
    show.add_argument("--json", action="store_true", help="print JSON")
    gen = sub.add_parser(
        "generate",
        help="write a suite's instances as JSON files, or one custom instance (--kind)",
        description="SUITE -o DIR writes a registered suite; --kind KIND -o FILE.json writes one "
        "random instance of that kind (validated against the instance schema).",
    )
    gen.add_argument("suite", nargs="?", metavar="SUITE", help="registered suite name (or --kind)")
    gen.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="PATH",
        help="folder for a suite's JSON files, or the instance JSON file with --kind",
    )
    gen.add_argument(
        "--kind",
        default=None,
        metavar="KIND",
        help="generate one custom instance: auction (explicit bids), placement (PAL jobs) or "
        "agent-auction (THEMIS agents, bids made per offer)",
    )
    # the auction's specs and defaults, for every kind (a placement's jobs and every kind's sizes
    # have the same ranges); --apps is checked by the kind's spec (_generate_one), so that an
    # error names --apps or --jobs, not both
    spec = {p.name: p for p in generators.AUCTION_PARAMS}
    apps = replace(spec["apps"], doc="apps (auctions) or jobs (placement)")
    gen.add_argument(
        "--apps", "--jobs", dest="apps", type=_args.number, default=apps.default, metavar="N",
        help=apps.help(),
    )  # fmt: skip
    for flag, name, metavar in (("--machines", "machines", "M"),
                                ("--gpus-per-machine", "gpus_per_machine", "K"),
                                ("--seed", "seed", "S")):  # fmt: skip
        gen.add_argument(
            flag,
            type=_args.param(spec[name]),
            default=spec[name].default,
            metavar=metavar,
            help=spec[name].help(),
        )
    gen.add_argument("--json", action="store_true", help="print the written paths as JSON")


def _list(as_json: bool) -> int:
    from fairplace.instances import suites  # heavy: imported on use (keeps --help light)

    if as_json:
        rows = [
            {"suite": n, "instances": len(suites.suite_items(n)), "description": suites.describe(n)}
            for n in suites.suite_names()
        ]
        print(json.dumps(rows))
        return 0
    lines = [(n, len(suites.suite_items(n)), suites.describe(n)) for n in suites.suite_names()]
    print(table(lines, ["suite", "instances", "description"]))
    return 0


def _show(name: str, as_json: bool) -> int:
    import pandas as pd  # heavy: imported on use

    from fairplace.instances import suites  # heavy: imported on use (keeps --help light)

    suite, _, inst_name = name.partition("/")
    items = dict(suites.suite_items(suite))
    if inst_name:
        if inst_name not in items:
            raise OptionError("NAME", f"suite {suite!r} has no instance {inst_name!r}")
        doc = io.to_dict(suites.load_item(items[inst_name]))
        print(json.dumps(doc, indent=1 if as_json else None))
        return 0
    rows = []
    for n, payload in items.items():
        inst = suites.load_item(payload)
        rows.append({"instance": n, **suites.summary(inst), "optimum": suites.stored_optimum(inst)})
    df = pd.DataFrame(rows)
    if as_json:
        print(df.to_json(orient="records"))
    else:
        print(f"{suite}: {suites.describe(suite)}")
        print(frame(df) if not df.empty else "(no instances)")
    return 0


#: generator argument -> the flag that sets it (the generators name their arguments; their other
#: arguments are given from Python only)
FLAGS = {
    "apps": "--apps",
    "jobs": "--jobs",
    "machines": "--machines",
    "gpus_per_machine": "--gpus-per-machine",
    "seed": "--seed",
    "bids_per_app": "--apps",
}


def _generate_one(args) -> str:
    """Write one random instance of ``args.kind`` to ``args.out``; load it back through the schema.
    Sizes are bounded by the generators' specs (``generators.AUCTION_PARAMS``, ...)."""
    entry = KINDS.get(args.kind)
    gen, size = entry.factory, entry.capabilities["size"]
    given = {
        size: args.apps,
        "machines": args.machines,
        "gpus_per_machine": args.gpus_per_machine,
        "seed": args.seed,
    }
    try:
        KINDS.check(args.kind, given)  # by the generator's specs, before the output path
        out_file(args.out, (".json",), "-o")
        inst = gen(**given)
    except OptionError as exc:
        raise OptionError(FLAGS.get(exc.path, exc.path), exc.problem) from None
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    path = io.save(inst, args.out)
    with size_limit(JSON_BYTES, path.stat().st_size):  # our own output: whatever its size
        fairplace.load(path)  # the published schema accepts what we wrote
    return str(path)


def run(args) -> int:
    if args.action == "list":
        return _list(args.json)
    if args.action == "show":
        return _show(args.name, args.json)
    if (args.suite is None) == (args.kind is None):
        raise OptionError("SUITE", "give a suite name or --kind (not both)")
    if args.kind is not None:
        KINDS.get(args.kind)  # UnknownName: "unknown kind ...; known: ..."
        path = _generate_one(args)
        print(
            json.dumps({"kind": args.kind, "path": path}) if args.json else f"{args.kind} -> {path}"
        )
        return 0
    from fairplace.instances import suites  # heavy: imported on use (keeps --help light)

    out_dir(args.out)
    paths = suites.generate(args.suite, args.out)
    if args.json:
        print(json.dumps({"suite": args.suite, "paths": [str(p) for p in paths]}))
    else:
        print(f"{len(paths)} instances -> {args.out}")
    return 0
