"""How programs are solved: HiGHS (highspy), Pyomo, CVXPY back ends and heuristics."""
