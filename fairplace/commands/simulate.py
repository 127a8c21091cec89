"""``fairplace simulate --trace NAME|FILE.csv --scheduler NAME --placement NAME [options]``."""

from __future__ import annotations

import json
import math

from fairplace.commands import _args
from fairplace.core.errors import DataError, OptionError
from fairplace.core.params import Boolean, Param
from fairplace.core.shared_params import BASELINE_LEASE, DECISION_TICK, LOCALITY_PENALTY

HELP = "trace-driven cluster simulation (scheduler x placement x trace)"


def _choices(names, notes: dict[str, str]) -> str:
    """Help text listing every name of a registry, with a note where one is given."""
    return ", ".join(f"{n} ({notes[n]})" if n in notes else n for n in names)


def _spec_help(registry) -> str:
    """``KEY=VALUE`` help of a registry's option specs: each spec once, grouped by the names that
    take it where not all do (``pm-first: ties=machine|level (default machine)``)."""
    takers: dict = {}
    for name, entry in registry.items():
        for spec in entry.params:
            takers.setdefault(spec, []).append(name)
    groups: dict[tuple, list[str]] = {}
    for spec, names in takers.items():
        values = getattr(spec.constraint, "values", None)
        values = ("true", "false") if isinstance(spec.constraint, Boolean) else values
        if values:
            text = f"{spec.name}={'|'.join(map(str, values))}"
            text += "" if spec.default is None else f" (default {spec.default})"
        else:
            text = f"{spec.name} ({spec.help()})"
        groups.setdefault(tuple(names) if len(names) < len(registry) else (), []).append(text)
    return "; ".join(
        (f"{', '.join(names)}: " if names else "") + ", ".join(texts)
        for names, texts in groups.items()
    )


def _named(spec: Param, notes: dict[str, str]) -> str:
    """Help text of a parameter that takes a name: its doc and its names, with notes."""
    return f"{spec.doc}: " + _choices(getattr(spec.constraint, "values", ()), notes)


def add_arguments(p) -> None:
    # heavy: imported on use (the registries' names for the help; keeps `fairplace --help` light)
    from fairplace.instances.trace_generators import TRACE_GENERATORS
    from fairplace.instances.traces import SIA_PHILLY
    from fairplace.sim import SCHEDULERS
    from fairplace.sim.config import SIM_PARAM as P
    from fairplace.sim.schedulers import SCHEDULER_REGISTRY
    from fairplace.sim.setups import SETUPS
    from fairplace.solvers.placement.policies import POLICY_NAMES, POLICY_REGISTRY

    p.add_argument(
        "--trace",
        required=True,
        help=f"{', '.join(SIA_PHILLY)} (bundled Sia-Philly), {', '.join(TRACE_GENERATORS)} "
        "(generated with the seed; see --trace-option) or FILE.csv",
    )
    p.add_argument(
        "--trace-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="argument of a generated trace's generator, repeatable (an integral VALUE is an "
        "integer; jobs_range=LOW,HIGH): " + _spec_help(TRACE_GENERATORS),
    )
    p.add_argument(
        "--scheduler",
        default="fifo",
        metavar="NAME",  # validated by simulate() (exit 2 naming --scheduler)
        help=f"job order: {', '.join(SCHEDULERS)} (default fifo)",
    )
    p.add_argument(
        "--placement",
        default="pal",
        metavar="NAME",
        help=f"placement policy: {', '.join(POLICY_NAMES)} (default pal)",
    )
    p.add_argument(
        P["gpus"].flag,
        type=_args.param(P["gpus"]),
        default=64,
        metavar="N",
        help="cluster size (default 64)",
    )
    p.add_argument(
        P["gpus_per_machine"].flag,
        type=_args.param(P["gpus_per_machine"]),
        default=P["gpus_per_machine"].default,
        metavar="K",
        help=P["gpus_per_machine"].help(),
    )
    p.add_argument(
        P["profile"].flag,
        default=None,
        help=_named(
            P["profile"],
            {
                "longhorn-runs": "per-run rows sampled per GPU, PAL §IV-C",
                "uniform": "homogeneous GPUs (every PM-score 1)",
                "longhorn": "per-GPU medians",
                "longhorn-artifact": "the PAL artifact's seeded draw",
            },
        ),
    )
    p.add_argument(
        "--setup",
        default=None,
        help="a named set-up fixing every option of a published experiment: "
        + _choices(SETUPS, {"pal-artifact": "the PAL artifact exactly", "pal-paper": "the paper"})
        + "; options you give explicitly win (docs/pal-setups.md)",
    )
    p.add_argument(
        P["grid_origin"].flag,
        default=None,
        help=_named(P["grid_origin"], {"first-arrival": "default", "zero": "the PAL artifact"}),
    )
    p.add_argument(
        P["stamping"].flag,
        default=None,
        help=_named(P["stamping"], {"exact": "default", "round-end": "the PAL artifact"}),
    )
    p.add_argument(
        LOCALITY_PENALTY.flag,
        type=float,
        default=None,
        metavar="L",
        help=LOCALITY_PENALTY.help(),
    )
    p.add_argument(
        P["locality_model"].flag,
        default=None,
        help=_named(
            P["locality_model"],
            {
                "constant": "--locality-penalty for every spread job",
                "measured": "the PAL artifact's per (model, GPUs) Frontera table; policies still "
                "decide with --locality-penalty",
            },
        ),
    )
    # default None: the trace's (THEMIS: 60, 600)
    for spec in (P["round_length"], DECISION_TICK, BASELINE_LEASE):
        p.add_argument(spec.flag, type=float, default=None, metavar="S", help=spec.help())
    p.add_argument(
        P["restart"].flag,
        type=float,
        default=None,
        metavar="S",
        help="checkpoint+restart seconds per GPU-set change (default 10+35; 0 = PAL artifact; "
        "Python: checkpoint=0, restart=S)",
    )
    p.add_argument(
        P["with_replacement"].flag,
        action="store_const",
        const=True,
        default=None,
        help=P["with_replacement"].doc,
    )
    p.add_argument(
        P["classes"].flag,
        default=None,
        help=_named(P["classes"], {"paper": "A/B/C", "artifact": "A-D"}),
    )
    p.add_argument(P["binning"].flag, default=None, help=P["binning"].help())
    p.add_argument(
        P["outlier_side"].flag,
        default=None,
        help=_named(P["outlier_side"], {"both": "default", "upper": "slow only, the PAL artifact"}),
    )
    p.add_argument(
        P["iter_times"].flag,
        default=None,
        help=_named(
            P["iter_times"],
            {"rounded": "default, 4 digits", "artifact": "the PAL artifact's, full precision"},
        ),
    )
    p.add_argument(
        P["recycle_jobs_per_hour"].flag,
        type=float,
        default=None,
        metavar="R",
        help=P["recycle_jobs_per_hour"].help(),
    )
    p.add_argument(
        P["recycle_seed"].flag,
        type=_args.param(P["recycle_seed"]),
        default=None,
        metavar="N",
        help=P["recycle_seed"].help(),
    )
    p.add_argument(
        "--scheduler-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="scheduler option, repeatable: e.g. LAS threshold=3200, starve_factor=10; "
        + _spec_help(SCHEDULER_REGISTRY),
    )
    p.add_argument(
        "--placement-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="policy option, repeatable: " + _spec_help(POLICY_REGISTRY),
    )
    p.add_argument(
        P["rho_variant"].flag,
        default=P["rho_variant"].default,
        help=_named(
            P["rho_variant"],
            {
                "themis": "headline: alone on a 1/N_avg share",
                "literal": "Eq. 1/2 as printed",
                "isolated": "re-runs every app alone: one extra simulation per app",
                "solo": "each app alone on its 1/N_avg share under THEMIS: one per app",
            },
        ),
    )
    p.add_argument(
        P["seed"].flag,
        type=_args.param(P["seed"]),
        default=P["seed"].default,
        metavar="N",
        help=f"{P['seed'].doc} (default {P['seed'].default})",
    )
    p.add_argument("--out", default=None, metavar="DIR", help="write parquet frames + summary.json")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument(P["debug"].flag, action="store_true", help=P["debug"].doc)


def _clean(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def key_values(items, flag: str) -> dict:
    """``["backfill=true", "threshold=3200"]`` -> options: booleans and numbers parsed, the rest kept
    as strings (the policy / scheduler validates names and values)."""

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise OptionError(flag, f"expected KEY=VALUE, got {item!r}")
        low = value.lower()
        if low in ("true", "false"):
            out[key] = low == "true"
            continue
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    return out


#: simulate() arguments besides the SimulationConfig fields -> the flags that set them
OTHER_FLAGS: dict[str, str] = {
    "trace": "--trace",
    "trace_options": "--trace-option",
    "scheduler": "--scheduler",
    "placement": "--placement",
    "setup": "--setup",
    "scheduler_options": "--scheduler-option",
    "placement_options": "--placement-option",
}


def flags() -> dict[str, str]:
    """simulate() parameter -> the flag that sets it (the library names parameters, the CLI its
    flags): the specs' flags (``SimulationConfig``'s :class:`Param`s) and :data:`OTHER_FLAGS`."""
    from fairplace.sim.config import SIM_PARAMS  # heavy: imported on use

    return {**{p.name: p.flag for p in SIM_PARAMS if p.flag}, **OTHER_FLAGS}


def flag_path(path: str) -> str:
    """An error path in parameter names (``placement_options.ties``) in flags
    (``--placement-option ties``); paths that name no parameter pass through."""
    head, dot, rest = str(path).partition(".")
    known = flags()
    if head not in known:
        return path
    return f"{known[head]} {rest}" if dot else known[head]


def _trace_options(items) -> dict:
    """``--trace-option`` values: integers stay integers (``n_apps=8``), then numbers, booleans;
    ``LOW,HIGH`` is a pair (``jobs_range=8,24``)."""
    out = key_values(items, "trace_options")
    for item in items:
        key, _, value = item.partition("=")
        if "," in value:
            out[key] = [_args.number(v.strip()) for v in value.split(",")]
        elif not isinstance(out[key], bool):
            out[key] = _args.number(value)
    return out


def run(args) -> int:
    from fairplace.sim import simulate  # heavy: imported on use (keeps --help light)

    if args.out:
        _args.out_dir(args.out)
    try:
        res = _simulate(simulate, args)
    except DataError as exc:  # the library names parameters; the CLI names its flags
        raise type(exc)(flag_path(exc.path), exc.problem) from None
    if args.out:
        res.save(args.out)
    if args.json:
        print(json.dumps({k: _clean(v) for k, v in res.summary.items()}))
    else:
        print(repr(res))
    return 0


#: simulate() parameter -> the argparse attribute of a flag that is passed only when given (so it
#: counts as explicit and wins over a --setup; the library's default applies otherwise)
OPTIONAL = {
    "profile": "profile",
    "locality_penalty": "locality_penalty",
    "locality_model": "locality_model",
    "classes": "classes",
    "with_replacement": "with_replacement",
    "binning": "binning",
    "outlier_side": "outlier_side",
    "iter_times": "iter_times",
    "recycle_jobs_per_hour": "recycle_jobs_per_hour",
    "recycle_seed": "recycle_seed",
    "round_length": "round",
    DECISION_TICK.name: DECISION_TICK.name,
    BASELINE_LEASE.name: BASELINE_LEASE.name,
    "grid_origin": "grid_origin",
    "stamping": "stamping",
}


def _simulate(simulate, args):
    kw = {k: getattr(args, a) for k, a in OPTIONAL.items() if getattr(args, a) is not None}
    if args.restart_cost is not None:  # checked by restart's spec (an error names the flag)
        kw |= {"checkpoint": 0.0, "restart": args.restart_cost}
    if args.placement_option:
        kw["placement_options"] = key_values(args.placement_option, "placement_options")
    return simulate(
        trace=args.trace,
        scheduler=args.scheduler,
        placement=args.placement,
        gpus=args.gpus,
        gpus_per_machine=args.gpus_per_machine,
        scheduler_options=key_values(args.scheduler_option, "scheduler_options"),
        trace_options=_trace_options(args.trace_option) or None,
        rho_variant=args.rho_variant,
        seed=args.seed,
        debug=args.debug,
        setup=args.setup,
        **kw,
    )
