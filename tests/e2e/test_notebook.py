"""``examples/quickstart.ipynb`` runs top to bottom in a fresh ``python3`` kernel."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"


@pytest.mark.slow
def test_quickstart_notebook_executes(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 5  # the plots were drawn, fairplace's own among them
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "optimal" in html and "exact" in html
    assert "SimulationResult" in html and "average JCT" in html  # the simulation's summary table
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for call in ("plots.heuristic_gap(", "res.plot(ax=", "plots.jct_normalised(", "plots.rho_cdf("):
        assert call in code
