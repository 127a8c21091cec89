"""Ground floor used by every layer: the frozen domain dataclasses, typed errors and `Solution`."""
