"""Regenerate the stored small suite (``instances/suites/small``): every instance's optimum by brute
force, cross-checked by the exact solver with presolve off. It solves instances, so it lives above the
solvers (a run), not in ``fairplace.instances``."""

from __future__ import annotations

import json
from pathlib import Path

from fairplace.api import solve
from fairplace.instances import generators, io
from fairplace.instances.suites import SMALL_SPECS, SUITE_DIR
from fairplace.solvers.brute_force import brute_force


def make_small(out: Path = SUITE_DIR / "small", tol: float = 1e-6) -> list[Path]:
    """Regenerate the stored small suite: brute force and the exact solver must agree within ``tol``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, (kind, kw) in enumerate(SMALL_SPECS):
        gen = generators.random_auction if kind == "auction" else generators.random_placement
        inst = gen(seed=k, **kw)
        oracle = brute_force(inst)
        exact = solve(inst, "exact", presolve=False)
        if exact.status != "optimal" or abs(exact.objective - oracle["objective"]) > tol:
            raise AssertionError(f"{inst.name}: brute force {oracle} != exact {exact.objective}")
        doc = io.to_dict(inst)
        doc["name"] = f"small-{k:02d}-{kind}"
        doc["meta"]["optimum"] = {
            **oracle,
            "exact": exact.objective,
            "oracle": "brute force + HiGHS (presolve off)",
        }
        p = out / f"{doc['name']}.json"
        p.write_text(json.dumps(doc, indent=1) + "\n")
        paths.append(p)
    return paths
