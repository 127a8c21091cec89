"""The Dask clusters of batches, sweeps and reproductions: a loopback ``LocalCluster`` (TLS with
credentials of its own, no dashboard, no listening HTTP routes, workers deaf to Ctrl-C, a quiet
close), or an existing scheduler at ``--scheduler-address``.

* TLS on a shared host: a local cluster's scheduler and workers talk TLS with Dask's temporary
  credentials (``Security.temporary()``: a self-signed certificate made in memory for this cluster,
  never written to disk), and require it, so another user of the machine can neither join as a
  worker nor connect as a client (Dask exchanges pickles: a connection could run code as this
  user). :data:`LOCAL_TLS` turns it off (for the start-up measurement only).
* An existing scheduler (``--scheduler-address tls://...``): the client takes its TLS files from
  the Dask configuration (``distributed.comm.tls.ca-file``, ``distributed.comm.tls.client.cert`` /
  ``.key``; e.g. ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE``), docs/dask.md. A plain-text address
  (``tcp://``, ``ws://``, ``ucx://`` or no scheme) to a host that is not loopback is refused
  (:func:`checked_address`: Dask sends pickles over it) unless accepted knowingly
  (``--allow-insecure``, :class:`KnowinglyInsecure`).

* Dashboard off for real: ``dashboard_address=None`` alone still serves Dask's HTTP routes on :8787
  (Scheduler always starts an HTTP server; ``None`` means "the default port"). Here the scheduler's
  and the workers' HTTP servers bind an ephemeral loopback port with no routes at all.
* Ctrl-C: a terminal sends SIGINT to the whole foreground process group, workers included, and each
  worker printed its KeyboardInterrupt traceback. Worker processes are started with SIGINT ignored
  (an ignored signal stays ignored across fork and exec, and Python then installs no
  KeyboardInterrupt handler), so only the parent sees Ctrl-C; it closes the cluster quietly. Workers
  stopped mid-task leave semaphores that multiprocessing's resource tracker (started with the
  cluster) cleans up; its "leaked semaphore" warning is silenced through the ``-W`` option the
  tracker inherits.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import sys
import threading
import time
from pathlib import Path

from fairplace.core.errors import ClusterUnavailable, OptionError
from fairplace.runs.batch_results import read_journal

#: dask config while the cluster starts: no HTTP routes on the scheduler or the workers.
NO_HTTP: dict[str, list[str]] = {
    "distributed.scheduler.http.routes": [],
    "distributed.worker.http.routes": [],
}
#: ``-W`` option handed to multiprocessing's resource tracker when the cluster starts it.
QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"


#: schemes whose traffic Dask encrypts (``inproc``: never leaves the process)
ENCRYPTED = ("tls", "wss", "inproc")


class KnowinglyInsecure(str):
    """A scheduler address whose plain-text traffic was accepted knowingly (``--allow-insecure``):
    :func:`connect` uses it as given."""


def _host(address: str) -> str:
    """The host of ``scheme://host:port`` (``[::1]`` -> ``::1``)."""
    rest = address.split("://", 1)[-1]
    if rest.startswith("["):
        return rest[1:].split("]", 1)[0]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP (127.0.0.0/8, ::1); a name is never resolved."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def checked_address(
    address: str | None, allow_insecure: bool = False, flag: str = "--scheduler-address"
) -> str | None:
    """``address`` when its traffic is encrypted (``tls://``) or stays on this host (loopback);
    a plain-text one to another host: an :class:`OptionError` naming ``flag`` with the way out,
    or (``allow_insecure``) the address as :class:`KnowinglyInsecure`. Nothing is connected."""
    if not address or isinstance(address, KnowinglyInsecure):
        return address
    scheme = address.split("://", 1)[0].lower() if "://" in address else "tcp"
    host = _host(address)
    if scheme in ENCRYPTED or is_loopback(host):
        return address
    if allow_insecure:
        return KnowinglyInsecure(address)
    raise OptionError(
        flag,
        f"{address!r} is plain {scheme}:// to {host}, not loopback: Dask would send pickles "
        f"(code) unencrypted; use tls://{address.split('://', 1)[-1]} with TLS files "
        "(docs/dask.md), or add --allow-insecure to accept it knowingly",
    )


@contextlib.contextmanager
def _quiet_resource_tracker():
    added = QUIET_TRACKER not in sys.warnoptions
    if added:
        sys.warnoptions.append(QUIET_TRACKER)
    try:
        yield
    finally:
        if added:
            sys.warnoptions.remove(QUIET_TRACKER)


@contextlib.contextmanager
def sigint_ignored():
    """Ignore SIGINT while processes are spawned (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


#: worker preload: imports the HiGHS solver stack while each worker starts (in parallel), before
#: any task runs (:func:`fairplace.runs.batch_worker.dask_setup`).
WORKER_PRELOAD = "fairplace.runs.batch_worker"


#: local clusters talk TLS with credentials of their own (module docstring)
LOCAL_TLS = True


def local_cluster(workers: int, preload: bool = True, tls: bool | None = None):
    """``workers`` processes on 127.0.0.1, one thread each (processes, not threads: the model
    building is Python and holds the GIL), no dashboard, no HTTP routes, TLS with temporary
    credentials (``tls``: default :data:`LOCAL_TLS`); ``preload``: each worker imports the solver
    stack as it starts (:data:`WORKER_PRELOAD`). ``cluster.security`` holds the credentials a
    client needs (``Client(cluster)`` takes them)."""
    import dask  # heavy: imported on use
    from dask.distributed import LocalCluster  # heavy: imported on use
    from distributed.security import Security  # heavy: imported on use

    tls = LOCAL_TLS if tls is None else tls
    security = Security.temporary() if tls else Security(require_encryption=False)
    with sigint_ignored(), dask.config.set(NO_HTTP), _quiet_resource_tracker():
        return LocalCluster(
            n_workers=workers,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # not the default :8787
            silence_logs=logging.CRITICAL,
            preload=[WORKER_PRELOAD] if preload else [],
            security=security,
            protocol="tls://" if tls else "tcp://",
        )


def connect(
    workers: int,
    scheduler_address: str | None = None,
    security=None,
    flag: str = "--scheduler-address",
):
    """``(client, cluster)``: a client of the scheduler at ``scheduler_address`` (``cluster`` None;
    ``security``: a ``distributed.security.Security``, default from the Dask configuration), or of
    a new :func:`local_cluster` of ``workers`` processes. A scheduler that cannot be reached, or
    a plain-text address to another host not accepted knowingly (:func:`checked_address`), is an
    :class:`~fairplace.core.errors.OptionError` naming ``flag``."""
    checked_address(scheduler_address, flag=flag)  # before any connection
    from dask.distributed import Client  # heavy: imported on use

    if scheduler_address:
        try:
            return Client(scheduler_address, timeout="20s", security=security), None
        except (ValueError, OSError, TimeoutError, TypeError) as exc:
            hint = ""
            if scheduler_address.startswith("tls://") and isinstance(exc, TypeError):
                hint = (
                    " (no TLS credentials: set distributed.comm.tls.ca-file, .client.cert and "
                    ".client.key in the Dask configuration; docs/dask.md)"
                )
            raise OptionError(
                flag, f"cannot connect to {scheduler_address!r}: {exc}{hint}"
            ) from None
    cluster = local_cluster(workers)
    try:
        return Client(cluster), cluster
    except BaseException:
        close_quietly(None, cluster)
        raise


@contextlib.contextmanager
def sigint_deferred():
    """Hold SIGINT back while the block runs (main thread only; elsewhere a no-op): a Ctrl-C that
    arrives meanwhile goes to the previous handler once the block is done (KeyboardInterrupt by
    default), so it is neither lost nor raised half-way through the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if got and callable(old):
        old(signal.SIGINT, None)


def close_quietly(client, cluster=None) -> None:
    """Close a client and its cluster, swallowing the errors of a cluster torn down mid-task. A
    Ctrl-C during the close is delivered after it (the close may overlap the driver's last
    solves: the batch must still stop, not finish, on a Ctrl-C)."""
    with sigint_deferred():
        for obj in (client, cluster):
            if obj is None:
                continue
            with contextlib.suppress(Exception):
                obj.close()


class NoWorkersWatch:
    """Raises :class:`ClusterUnavailable` once the scheduler has had no worker for ``timeout`` s
    (Dask itself would wait forever); polls the scheduler at most once a second."""

    def __init__(self, client, timeout: float | None, jpath: Path, what: str = "batch"):
        self.client, self.timeout, self.jpath, self.what = client, timeout, jpath, what
        self.last_poll = 0.0
        self.since: float | None = None

    def check(self) -> None:
        now = time.monotonic()
        if self.timeout is None or now - self.last_poll < 1.0:
            return
        self.last_poll = now
        if self.client.nthreads():
            self.since = None
            return
        self.since = self.since or now
        if now - self.since >= self.timeout:
            done = len(read_journal(self.jpath, ()))
            raise ClusterUnavailable(
                self.what,
                f"no Dask worker for {self.timeout:g} s; {done} rows are safe in {self.jpath}: "
                "start workers and rerun with --resume",
            )
