"""What is optimised: objectives and constraints as solver-neutral programs (never calls a solver)."""
