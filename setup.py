"""Build the optional compiled round kernel (everything else is in pyproject.toml).

``optional=True``: without a C compiler the install still succeeds and placement rounds run on
the Python path (``fairplace.solvers.placement.round_kernel.available()`` is then False).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fairplace.solvers.placement._round_kernel",
            sources=["solvers/placement/_round_kernel.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
