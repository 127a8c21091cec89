"""Packaging files agree with pyproject: licence, citation, typing marker, pinned constraints."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_licence_file_matches_pyproject():
    # an SPDX expression and the file (PEP 639; the table form stops working in setuptools 2027)
    assert PYPROJECT["project"]["license"] == "MIT"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    # PEP 639: no licence classifier next to a licence expression
    assert not any(c.startswith("License ::") for c in PYPROJECT["project"]["classifiers"])


def _floor(requirement: str) -> tuple[int, ...]:
    version = re.search(r">=\s*([0-9.]+)", requirement).group(1)
    return tuple(int(x) for x in version.split("."))


def test_floors_exclude_known_vulnerable_versions():
    deps = {_name(r): r for r in PYPROJECT["project"]["dependencies"]}
    assert _floor(deps["pyarrow"]) >= (14, 0, 1)  # CVE-2023-47248: code execution from Parquet
    build = {_name(r): r for r in PYPROJECT["build-system"]["requires"]}
    assert _floor(build["setuptools"]) >= (77,)  # SPDX licence; CVE-2024-6345 is < 70.0


def test_ci_installs_the_validated_versions():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "-c constraints.txt" in ci


def test_citation_cites_both_papers():
    cff = (ROOT / "CITATION.cff").read_text()
    assert "cff-version: 1.2.0" in cff
    assert "Themis: Fair and Efficient GPU Cluster Scheduling" in cff and "NSDI '20" in cff
    assert "PAL: A Variability-Aware Policy for Scheduling ML Workloads in GPU Clusters" in cff


def test_package_is_marked_typed():
    assert (ROOT / "fairplace" / "py.typed").exists()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["fairplace"]


def test_constraints_pin_every_dependency():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{line!r} is not pinned with =="
            pins[_name(name)] = version
    project = PYPROJECT["project"]
    needed = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    assert {_name(r) for r in needed} - set(pins) == set()
    assert "distributed" in pins  # the extra of dask[distributed]
