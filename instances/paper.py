"""THEMIS worked examples as auction instances (in ``suites.PAPER_INSTANCES``, the ``paper`` suite).

Figure 5 (§3.1.2, Theorem 3.1), written as bid tables. Each app is one job of 4 tasks (d_max = 4) whose
independent share is one 4-GPU machine (half the cluster), so by Eq. 1 with no elapsed time

    rho(G) = S(G) * 4 / |G|,     S(G) = 1 within a machine, S_spread across machines,

and every app bids on every GPU subset of size 1..4 (162 bids on 8 GPUs), so that any allocation a
placement-unaware scheduler can produce is priced by the app's own table. An app given nothing makes no
progress: ``rho_empty = None``.

The summary of the paper does not reproduce Table 1's throughputs, so the slowdowns are parameters:
VGG16 (placement-sensitive) S_spread = 1.6 by default, Inception-v3 (insensitive) S_spread = 1.0 — the
paper's PE argument ("swapping improves A2 without hurting A1") needs Inception-v3 to be exactly
indifferent; with S_spread > 1 for Inception-v3 the swap is an improvement in sum -log rho but not a
Pareto improvement.
"""

from __future__ import annotations

import itertools

from fairplace.core.domain import GPU, App, AuctionInstance, Bid, Cluster

VGG16_SPREAD = 1.6
INCEPTION_SPREAD = 1.0


def _table(cluster: Cluster, s_spread: float, d_max: int = 4) -> tuple[Bid, ...]:
    bids = []
    n = len(cluster)
    for k in range(1, d_max + 1):
        for idx in itertools.combinations(range(n), k):
            machines = {cluster.gpus[g].machine for g in idx}
            S = 1.0 if len(machines) == 1 else s_spread
            bids.append(Bid(tuple(cluster.ids(idx)), S * d_max / k))
    return tuple(bids)


def _cluster(sizes: dict[str, int]) -> Cluster:
    return Cluster(
        tuple(GPU(f"{m}/{g}", m, "r0") for m, size in sizes.items() for g in range(size))
    )


def fig5_instance1(vgg_spread: float = VGG16_SPREAD) -> AuctionInstance:
    """Instance 1: two VGG16 apps (4 tasks each), two 4-GPU machines."""
    cl = _cluster({"m0": 4, "m1": 4})
    apps = tuple(App(a, _table(cl, vgg_spread), None) for a in ("A1-vgg16", "A2-vgg16"))
    meta = {"source": "THEMIS Fig. 5, Instance 1", "vgg_spread": vgg_spread}
    return AuctionInstance(cl, apps, name="themis-fig5-instance1", meta=meta)


def fig5_instance2(
    vgg_spread: float = VGG16_SPREAD, inception_spread: float = INCEPTION_SPREAD
) -> AuctionInstance:
    """Instance 2: A1 Inception-v3 (insensitive), A2 VGG16 (sensitive); one 4-GPU and two 2-GPU machines."""
    cl = _cluster({"m0": 4, "m1": 2, "m2": 2})
    apps = (
        App("A1-inception", _table(cl, inception_spread), None),
        App("A2-vgg16", _table(cl, vgg_spread), None),
    )
    meta = {
        "source": "THEMIS Fig. 5, Instance 2",
        "vgg_spread": vgg_spread,
        "inception_spread": inception_spread,
    }
    return AuctionInstance(cl, apps, name="themis-fig5-instance2", meta=meta)
