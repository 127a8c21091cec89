"""Packaging files agree with pyproject: licence, citation, typing marker, pinned constraints."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_licence_file_matches_pyproject():
    assert PYPROJECT["project"]["license"]["text"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "License :: OSI Approved :: MIT License" in PYPROJECT["project"]["classifiers"]


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
