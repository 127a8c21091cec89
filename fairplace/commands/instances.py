"""``fairplace instances list | show NAME | generate SUITE --out DIR``."""

from __future__ import annotations

import json

HELP = "list, show and generate instance suites"


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="registered suites and their sizes")
    show = sub.add_parser("show", help="a suite's instances and features, or one instance's JSON")
    show.add_argument("name", metavar="NAME", help="suite name, or SUITE/INSTANCE")
    show.add_argument("--json", action="store_true", help="print JSON")
    gen = sub.add_parser("generate", help="write a suite's instances as JSON files")
    gen.add_argument("suite", metavar="SUITE")
    gen.add_argument("--out", required=True, metavar="DIR")


def _list() -> int:
    from fairplace.instances import suites

    for name in suites.suite_names():
        n = len(suites.suite_items(name))
        print(f"{name:<8} {n:>4} instances  {suites.describe(name)}")
    return 0


def _show(name: str, as_json: bool) -> int:
    import pandas as pd

    from fairplace.errors import OptionError
    from fairplace.instances import io, suites

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
        print(df.to_string(index=False) if not df.empty else "(no instances)")
    return 0


def run(args) -> int:
    if args.action == "list":
        return _list()
    if args.action == "show":
        return _show(args.name, args.json)
    from fairplace.commands._args import out_dir
    from fairplace.instances import suites

    out_dir(args.out)
    paths = suites.generate(args.suite, args.out)
    print(f"{len(paths)} instances -> {args.out}")
    return 0
