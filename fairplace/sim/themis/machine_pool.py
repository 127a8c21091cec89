"""GPUs taken machine by machine by best fit: the app-level job placement of THEMIS' app scheduler
(:mod:`.apps`) and of Optimus (:mod:`fairplace.sim.schedulers.optimus`)."""

from __future__ import annotations


def best_fit(pool: set, need: int, machine_of) -> list:
    """``need`` GPUs of ``pool``: all on the machine with the fewest pool GPUs that still has ``need``
    of them; otherwise from the machines with most pool GPUs first (``machine_of[g]``: g's machine,
    an array or a list).
    The app-level job placement of THEMIS' agents and of Optimus."""
    return MachinePool(pool, machine_of).take(need)


class MachinePool:
    """A pool of GPUs by machine (each machine's GPUs sorted once), from which jobs take GPUs one
    after another by :func:`best_fit`'s rule: the same GPUs as repeated :func:`best_fit` calls on
    the shrinking pool."""

    def __init__(self, pool: set, machine_of):
        self.by: dict[int, list[int]] = {}
        by = self.by
        ints = isinstance(machine_of, list)  # Python ints already (the app scheduler's)
        for g in sorted(pool):
            m = machine_of[g] if ints else int(machine_of[g])
            if m in by:
                by[m].append(g)
            else:
                by[m] = [g]

    def take(self, need: int) -> list[int]:
        by = self.by
        best, size = None, 0  # the best fit: fewest pool GPUs that hold ``need``, lowest machine
        for m, gs in by.items():
            k = len(gs)
            if k >= need and (best is None or k < size or (k == size and m < best)):
                best, size = m, k
        if best is not None:
            out = by[best][:need]
            del by[best][:need]
            return out
        out = []
        for m in sorted(by, key=lambda m: (-len(by[m]), m)):
            k = need - len(out)
            out += by[m][:k]
            del by[m][:k]
        return out

    def take_near(self, need: int, near: set) -> list[int]:
        """``need`` GPUs for a job growing on machines ``near``: first from those machines (most
        pool GPUs first), the rest by :meth:`take`'s rule."""
        out: list[int] = []
        for m in sorted(near, key=lambda m: (-len(self.by.get(m, ())), m)):
            gs = self.by.get(m, [])
            k = need - len(out)
            out += gs[:k]
            del gs[:k]
        return out + (self.take(need - len(out)) if len(out) < need else [])
