"""Compact PF arbiter: no bid enumeration (THEMIS' PF step over the AGENTs' rho tables).

Groups q of interchangeable offered GPUs (one machine, one PM level per class in play; capacity
|q|). For app i, integer x_iq GPUs of group q and one binary selector z_ic per *cell*
c = (n, s, v): "n offered GPUs, union spread <= s, worst level <= v", worth w_ic = -log rho_i(n, s, v)
(precomputed by ``agents.rho_table``; w decreases in s and v, so "<=" is exact at an optimum):

    maximise  sum_i sum_c (w_ic - w_i0) z_ic + sum_i w_i0          (w_i0 = -log rho_i(nothing))
    s.t.      sum_c z_ic <= 1                                       one cell per app
              sum_q x_iq = sum_c n_c z_ic                           count
              x_iq <= u_iq * sum_{c: v_c >= V_i(q)} z_ic            worst level
              x_iq <= u_iq * (y_i,m(q) + sum_{c: s_c >= 1} z_ic),   sum_m y_im = sum_{c: s_c = 0} z_ic
              x_iq <= u_iq * (r_i,k(q) + sum_{c: s_c = 2} z_ic),    sum_k r_ik = sum_{c: s_c <= 1} z_ic
              sum_i x_iq <= |q|                                     no GPU used twice

Apps holding GPUs fix y / r to their held machine / rack (or lose the tighter spreads). Apps with
an unbounded rho(nothing) get the ``PFProgram`` big-M convention (serve as many as possible first).
Cells dominated by a cheaper cell (fewer GPUs or a looser spread/level with the same value) are
dropped; they never change the optimum value. ``reduced`` (default): y / r per (place, cell) instead
of the big-M rows, capacity knapsack rows, symmetry rows on interchangeable machines; same optima
(argument in ``compact_sym.py``). An app as the program sees it: ``compact_app.py`` (re-exported).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from fairplace.core.domain import Cluster

from . import compact_milp
from .agents import Group, groups, one_type
from .compact_agg import Aggregation, aggregation
from .compact_app import CompactApp, compact_app, compact_apps  # noqa: F401 - re-exported: the old path
from .compact_cache import OfferCache
from .pf import PFValue
from .program import MILP

#: CompactProgram's cached properties that depend on the offer and on each app alone, not on which
#: apps are excluded, and that the offer's memo does not already share (handed on by
#: :meth:`CompactProgram.variant`)
_OFFER_CACHES = ("classes", "offer_memo", "_level_cache", "_feasible_cache")


class _per_offer(cached_property):
    """A cached property of :class:`CompactProgram` that depends on the cluster, the offer and the
    classes in play alone: computed once per (offer, classes) and shared, through the program's
    :class:`~fairplace.formulations.compact_cache.OfferCache`, by every program on the same offer
    (without a cache: by the program and its variants). Arrays in it are read-only: they are shared."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        v = obj.__dict__[self.attrname] = obj.shared(self.attrname, lambda: self.func(obj))
        return v


def _read_only(v):
    if isinstance(v, np.ndarray):
        v.flags.writeable = False
    elif isinstance(v, tuple):
        for x in v:
            _read_only(x)
    return v


@dataclass(frozen=True)
class CompactProgram:
    """The compact PF MILP over ``apps`` (indices not in ``exclude``) and the ``offer`` GPU indices."""

    cluster: Cluster
    offer: tuple[int, ...]
    apps: tuple[CompactApp, ...]
    exclude: frozenset[int] = frozenset()
    fixed: tuple[tuple[int, tuple[int, int, int]], ...] | None = None  # (app, cell): placement only
    reduced: bool = True  # per-(place, cell) selectors + symmetry rows (``compact_sym``)
    #: per-(rack, cell) selectors for spread-1 cells even when not ``reduced`` (few racks, and the
    #: LP then knows which racks can hold a cell; ``compact_sym`` item 1 with P = racks)
    rack_cells: bool = False
    #: spread-0 cells on machine kinds x patterns instead of per machine (``compact_agg``); falls
    #: back to per machine when a kind has too many patterns (``agg`` is None)
    aggregate: bool = False
    #: what programs on the same offer share (the caller's, for its run; None: this program and
    #: its variants alone); not part of the program's value
    cache: OfferCache | None = field(default=None, compare=False, repr=False)

    def excluding(self, apps) -> CompactProgram:
        """The same program without ``apps`` (a PF_{-i}), sharing what does not depend on who
        else bids: the offer's groups and counts, and the per-app level counts and feasible cells."""
        return self.variant(exclude=self.exclude | frozenset(apps))

    def variant(self, **changes) -> CompactProgram:
        """The same apps on the same offer with other settings (``exclude``, ``reduced``,
        ``rack_cells``, ``aggregate``), sharing what depends on the offer and each app alone."""
        if changes.keys() & {"cluster", "offer", "apps", "fixed"}:
            raise ValueError("a variant keeps the cluster, the offer, the apps and no fixed cells")
        sub = replace(self, **changes)
        for name in _OFFER_CACHES:
            if name in self.__dict__:
                sub.__dict__[name] = self.__dict__[name]
        return sub

    def per_cell(self, s: int) -> bool:
        """Whether spread-``s`` places have one selector per (place, cell) (else one per place)."""
        return self.reduced or (s == 1 and self.rack_cells)

    def fits(self, i: int, s: int, place: int, cell: tuple[int, int, int]) -> bool:
        """Whether ``cell`` of app i fits alone on machine (s = 0) / rack (s = 1) ``place``."""
        per, ids = self._level_counts(i)[s]
        row = int(np.searchsorted(ids, place))
        return bool(row < ids.size and ids[row] == place and per[row, cell[2]] >= cell[0])

    @cached_property
    def offer_memo(self) -> dict:
        """A dict shared by every program on this offer and classes (:attr:`cache`): the
        :class:`_per_offer` properties, and what a solver derives from the offer alone (key it by
        whatever else the value depends on; arrays in it are shared, so not to be changed)."""
        if self.cache is None:
            return {}
        offer = self.offer if type(self.offer) is tuple else tuple(np.asarray(self.offer).tolist())
        return self.cache.memo(self.cluster, offer, self.classes)

    def shared(self, key, make):
        """``make()`` computed once per offer and classes and kept in :attr:`offer_memo` under
        ``key``; its arrays are made read-only (every program on the offer reads them)."""
        memo = self.offer_memo
        if key not in memo:
            memo[key] = _read_only(make())
        return memo[key]

    @cached_property
    def active(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.apps)) if i not in self.exclude)

    @_per_offer
    def groups(self) -> tuple[Group, ...]:
        return groups(self.cluster, self.offer, self.classes)

    @cached_property
    def classes(self) -> tuple[str | None, ...]:
        """The apps' classes in play, in first-seen order (a group's ``scores`` follow it)."""
        return tuple(dict.fromkeys(a.cls for a in self.apps))

    @_per_offer
    def group_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(GPUs, machine, rack) of every group, as int arrays."""
        grps = self.groups
        return (
            np.array([len(g.gpus) for g in grps], dtype=np.int64),
            np.array([g.machine for g in grps], dtype=np.int64),
            np.array([g.rack for g in grps], dtype=np.int64),
        )

    @_per_offer
    def group_types(self) -> np.ndarray:
        """Index into :attr:`types` of every group's scores."""
        tpos = {t: k for k, t in enumerate(self.types)}
        return np.array([tpos[g.scores] for g in self.groups], dtype=np.int64)

    @_per_offer
    def place_members(self) -> tuple[np.ndarray, np.ndarray]:
        """(places, groups) membership of every machine and of every rack of the offer, places
        ascending: the places of an app that holds no single machine / rack."""
        _, mach, rack = self.group_arrays
        machines, racks = (at[None, :] == np.unique(at)[:, None] for at in (mach, rack))
        return machines, racks

    @cached_property
    def big_m(self) -> float:
        total = 1.0
        for i in self.active:
            w = -np.log(self.apps[i].table.rho[1:])
            w = w[np.isfinite(w)]
            if w.size:
                total += 2 * (np.abs(w).max() + w.max() - w.min())
            w_empty = self.apps[i].w_empty
            if w_empty is not None:
                total += 2 * abs(w_empty)
        return total

    @cached_property
    def log_sum_range(self) -> float:
        """S >= |log-sum| of any choice: sum over active apps of the largest |-log rho| they can get."""
        total = 0.0
        for i in self.active:
            w = np.abs(np.log(self.apps[i].table.rho[1:]))
            w = w[np.isfinite(w)]
            total += max(float(w.max()) if w.size else 0.0, abs(self.apps[i].w_empty or 0.0))
        return total

    @_per_offer
    def capacity(self) -> tuple[dict[int, int], dict[int, int]]:
        """Free GPUs per machine and per rack in the offer."""
        cm: dict[int, int] = {}
        cr: dict[int, int] = {}
        for g in self.groups:
            cm[g.machine] = cm.get(g.machine, 0) + len(g.gpus)
            cr[g.rack] = cr.get(g.rack, 0) + len(g.gpus)
        return cm, cr

    def feasible_cells(self, i: int) -> tuple[tuple[int, int, int], ...]:
        """Cells (n, s, v) of app i that fit the offer alone: n offered GPUs of app i's level <= v
        on one machine (s = 0; its held machine if any), in one rack (s = 1; its held rack if any)
        or anywhere (s = 2). A cell that does not fit alone is in no feasible integer point, so
        dropping it keeps every optimum (of PF and of any PF_{-i}) and tightens the LP."""
        if self.fixed is not None:
            return tuple(c for j, c in self.fixed if j == i)
        return self._feasible(i)[0]

    def feasible_cell_array(self, i: int) -> np.ndarray:
        """:meth:`feasible_cells` as a (cells, 3) int array (n, s, v)."""
        if self.fixed is not None:
            return np.array(self.feasible_cells(i), dtype=np.int64).reshape(-1, 3)
        return self._feasible(i)[1]

    def feasible_given(self, i: int, fit: np.ndarray) -> tuple[tuple, np.ndarray]:
        """(:meth:`feasible_cells`, :meth:`feasible_cell_array`) of app i from ``fit`` = its
        :meth:`_fit` table, which a caller that has counted the offer per place already holds."""
        return self._feasible(i, fit)

    def _feasible(self, i: int, fit: np.ndarray | None = None) -> tuple[tuple, np.ndarray]:
        cache = self._feasible_cache
        if i not in cache:
            a = self.apps[i]
            c = a.cell_array
            fit = self._fit(i) if fit is None else fit
            keep = np.flatnonzero(c[:, 0] <= fit[c[:, 1], c[:, 2]])
            cache[i] = (tuple(a.cells[k] for k in keep.tolist()), c[keep])
        return cache[i]

    @cached_property
    def _feasible_cache(self) -> dict:
        return {}

    def _fit(self, i: int) -> np.ndarray:
        """fit[s, v]: most offered GPUs of app i's level <= v on one machine (s = 0), in one rack
        (s = 1) and in the offer (s = 2), on the held machine / rack when app i holds one."""
        a = self.apps[i]
        (pm, machines), (pk, racks) = self._level_counts(i)
        if a.held_machine >= 0:
            pm = pm[machines == a.held_machine]
        if a.held_rack >= 0:
            pk = pk[racks == a.held_rack]
        out = np.zeros((3, a.table.levels.size), dtype=np.int64)
        out[0] = pm.max(0, initial=0)
        out[1] = pk.max(0, initial=0)
        out[2] = self._level_counts(i)[1][0].sum(0)
        return out

    def _level_counts(self, i: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """((per-machine, machine ids), (per-rack, rack ids)): offered GPUs of app i's level <= v
        (column v) per machine and per rack; cached per app."""
        cache = self._level_cache
        if i not in cache:
            a = self.apps[i]
            ci = self.classes.index(a.cls)
            lev = a.table.levels_at([t[ci] for t in self.types]).astype(np.int64)
            per_m, per_k, machines, racks = self._type_counts
            ok = (lev[:, None] <= np.arange(a.table.levels.size)[None, :]).astype(np.int64)
            cache[i] = ((per_m @ ok, machines), (per_k @ ok, racks))
        return cache[i]

    @cached_property
    def _level_cache(self) -> dict:
        return {}

    @_per_offer
    def _type_counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Offered GPUs per (machine, type) and (rack, type), with the machine and rack ids."""
        machines = np.array(sorted({g.machine for g in self.groups}), dtype=np.int64)
        racks = np.array(sorted({g.rack for g in self.groups}), dtype=np.int64)
        tpos = {t: k for k, t in enumerate(self.types)}
        per_m = np.zeros((machines.size, len(self.types)), dtype=np.int64)
        per_k = np.zeros((racks.size, len(self.types)), dtype=np.int64)
        mpos = {m: k for k, m in enumerate(machines.tolist())}
        kpos = {r: k for k, r in enumerate(racks.tolist())}
        for g in self.groups:
            t = tpos[g.scores]
            per_m[mpos[g.machine], t] += len(g.gpus)
            per_k[kpos[g.rack], t] += len(g.gpus)
        return per_m, per_k, machines, racks

    @_per_offer
    def types(self) -> tuple[tuple[float, ...], ...]:
        """Distinct PM score tuples (one per class in play) of the offered GPUs."""
        one = one_type(self.cluster, self.classes) if len(self.offer) else None
        if one is not None:  # one score per class on the whole cluster: no groups needed
            return (one,)
        return tuple(sorted({g.scores for g in self.groups}))

    @_per_offer
    def cap(self) -> dict[tuple, int]:
        """Free GPUs per ('m', machine, type), ('k', rack, type) and ('t', type)."""
        out: dict[tuple, int] = {}
        tpos = {t: k for k, t in enumerate(self.types)}
        for g in self.groups:
            t = tpos[g.scores]
            for key in (("m", g.machine, t), ("k", g.rack, t), ("t", t)):
                out[key] = out.get(key, 0) + len(g.gpus)
        return out

    @_per_offer
    def gpu_places(self) -> dict[int, tuple[int, int, int]]:
        """{offered GPU: (machine, rack, index into :attr:`types`)}."""
        tpos = {t: k for k, t in enumerate(self.types)}
        return {
            g: (grp.machine, grp.rack, tpos[grp.scores]) for grp in self.groups for g in grp.gpus
        }

    @cached_property
    def selector_index(self) -> tuple[np.ndarray, np.ndarray, list]:
        """(cell-selector columns in layout order, the app of each, its cell): every z_ic at once."""
        _, meta = self.layout
        cols = [np.arange(e["z"], e["z"] + len(e["cells"])) for e in meta]
        owner = [np.full(len(e["cells"]), e["i"]) for e in meta]
        cells = [c for e in meta for c in e["cells"]]
        return (
            np.concatenate(cols or [np.zeros(0, np.int64)]).astype(np.int64),
            np.concatenate(owner or [np.zeros(0, np.int64)]).astype(np.int64),
            cells,
        )

    @cached_property
    def layout(self) -> tuple[int, list[dict]]:
        """The MILP's columns per active app (:func:`~fairplace.formulations.compact_milp.milp_layout`)."""
        return compact_milp.milp_layout(self)

    @cached_property
    def _lev(self) -> dict[int, list[int]]:
        """Each active app's level index per type."""
        classes = self.classes
        out = {}
        for i in self.active:
            a = self.apps[i]
            ci = classes.index(a.cls)
            out[i] = [a.table.level(t[ci]) for t in self.types]
        return out

    @cached_property
    def agg(self) -> Aggregation | None:
        """The machine aggregation (``compact_agg``) when ``aggregate`` and it is small enough."""
        return aggregation(self, self._lev) if self.aggregate else None

    def cell_gain(self, i: int, cell: tuple[int, int, int]) -> float:
        a = self.apps[i]
        w = -float(np.log(a.table.rho[cell]))
        return w - a.w_empty if a.w_empty is not None else w + self.big_m

    @cached_property
    def offset(self) -> float:
        return float(sum(self.apps[i].w_empty or 0.0 for i in self.active))

    @cached_property
    def milp(self) -> MILP:
        """:meth:`to_milp` built once, shared by the solves of this program (the PF's LP and its
        leave-one-out payments). Not to be changed: :meth:`to_milp` builds a copy to extend."""
        return self.to_milp()

    def to_milp(self) -> MILP:
        """The program as a MILP (:func:`~fairplace.formulations.compact_milp.to_milp`): a new
        one on each call, for a caller to extend."""
        return compact_milp.to_milp(self)

    @cached_property
    def _rack_of(self) -> dict[int, int]:
        return {g.machine: g.rack for g in self.groups}

    # --- decoding ---------------------------------------------------------------------------------
    def decode(self, x: np.ndarray) -> dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]:
        """{app index: (cell, GPU indices)} of a point of :meth:`to_milp`
        (:func:`~fairplace.formulations.compact_milp.decode`)."""
        return compact_milp.decode(self, x)

    def start_vector(
        self, choice: dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]
    ) -> np.ndarray:
        """A feasible point giving each app in ``choice`` its cell and GPUs (e.g. PF minus i;
        :func:`~fairplace.formulations.compact_milp.start_vector`)."""
        return compact_milp.start_vector(self, choice)

    def value_terms(self, choice: dict) -> list[tuple[int, bool, float]]:
        """(app, unbounded and served, its term of the log-sum) of every active app that adds one
        to :meth:`value` of ``choice``, in :meth:`value`'s order (summing them gives its floats)."""
        terms = []
        for i in self.active:
            a = self.apps[i]
            if i in choice:
                terms.append((i, a.w_empty is None, -float(np.log(a.table.rho[choice[i][0]]))))
            elif a.w_empty is not None:
                terms.append((i, False, a.w_empty))
        return terms

    def value(self, choice: dict) -> PFValue:
        """(#unbounded apps served, sum of -log rho over finite apps) of a decoded choice."""
        served, log_sum = 0, 0.0
        for _, unb, w in self.value_terms(choice):
            log_sum += w
            served += unb
        return PFValue(served, log_sum)

    def value_without(self, choice: dict, i: int) -> PFValue:
        """:meth:`value` of ``choice`` without app i, on the program without i: the others' value
        in PF (c_i's numerator) or PF_{-i} (its denominator), the same sums whoever solved it."""
        sub = CompactProgram(self.cluster, self.offer, self.apps, self.exclude | {i})
        return sub.value({j: v for j, v in choice.items() if j != i})
