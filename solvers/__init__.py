"""How programs are solved: HiGHS (highspy), Pyomo, CVXPY back ends and heuristics.

By concern: ``options`` / ``budget`` (what every solve takes), ``registry`` + ``dispatch`` (solver
names, the route of ``fairplace.solve``), ``backends/`` (HiGHS, Pyomo, CVXPY), the explicit-bid
auction (``auction``, ``heuristics``, ``relaxation``, ``baselines``; ``brute_force``: oracles),
``compact/`` (the compact THEMIS arbiter) and ``placement/`` (the exact joint placement and PAL's
policies with their round and its compiled kernel).
"""
