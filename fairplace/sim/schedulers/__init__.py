"""Every scheduler the simulator knows by name: the queue baselines that only order the active jobs
(:mod:`.queue`: FIFO, LAS, SRTF, DRF, Gandiva, SRPT oracle, SLAQ; :mod:`.gavel`: Gavel's FTF), Optimus,
which places jobs itself (:mod:`.optimus`), and the registry of all of them with THEMIS
(:mod:`.registry`; THEMIS itself is :mod:`fairplace.sim.themis`). What a scheduler sees and the
Protocols it satisfies are in :mod:`fairplace.sim.protocols`."""

from .gavel import GavelFTF
from .optimus import Optimus
from .queue import DRF, FIFO, LAS, SLAQ, SRTF, GandivaPacking, SRPTOracle
from .registry import QUEUE_SCHEDULERS, SCHEDULER_REGISTRY, SCHEDULERS, make_scheduler

__all__ = [
    "DRF",
    "FIFO",
    "LAS",
    "QUEUE_SCHEDULERS",
    "SCHEDULERS",
    "SCHEDULER_REGISTRY",
    "SLAQ",
    "SRTF",
    "GandivaPacking",
    "GavelFTF",
    "Optimus",
    "SRPTOracle",
    "make_scheduler",
]
