"""``fairplace`` command line: a thin dispatcher over the ``fairplace.commands.<name>`` modules
(:data:`COMMANDS`, a :class:`~fairplace.core.registry.Registry`).

Each command module defines ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``. Bad input
(any :class:`~fairplace.core.errors.FairplaceError`, a bad option, a path that cannot be read or written,
a full disk, running out of memory) prints one line on stderr and exits 2; Ctrl-C exits 130 and a
closed stdout (``| head``, or ``>&-``) exits 141 quietly. With ``--json`` every error is one JSON
object on stderr, ``{"error": PROBLEM, "where": FIELD-FLAG-OR-PATH or null}`` (stdout carries only
results; docs/solutions.md, "Exit codes"). Set ``FAIRPLACE_DEBUG=1`` to see tracebacks of unexpected
errors.

Status lines go through :mod:`logging` (the ``fairplace`` logger, on stderr): every command takes
``-q/--quiet`` (warnings and errors only, no progress bars) and ``-v/--verbose`` (debug lines too:
how a batch or sweep runs, cluster start-up, per-experiment timings).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys

from fairplace import __version__
from fairplace.commands import (
    batch,
    bench,
    instances,
    plot,
    reproduce,
    schema,
    simulate,
    solve,
    sweep,
)
from fairplace.core.blas import one_blas_thread
from fairplace.core.errors import FairplaceError
from fairplace.core.progress import progress_lines
from fairplace.core.registry import Entry, Registry

#: commands that print progress lines when stderr is not a terminal (core/progress.py)
LONG_COMMANDS = ("reproduce", "sweep", "batch", "bench")


def _command(module) -> Entry:
    """A command module's entry: ``run(args) -> int``, its ``HELP`` and ``add_arguments``."""
    return Entry(module.run, (), module.HELP, (), {"add_arguments": module.add_arguments})


#: the commands, in the order ``fairplace --help`` lists them
COMMANDS = Registry(
    "command",
    {
        "solve": _command(solve),
        "schema": _command(schema),
        "instances": _command(instances),
        "batch": _command(batch),
        "sweep": _command(sweep),
        "simulate": _command(simulate),
        "plot": _command(plot),
        "reproduce": _command(reproduce),
        "bench": _command(bench),
    },
)


class UsageError(SystemExit):
    """A bad command line (exit 2): :func:`main` reports ``message`` (as JSON under ``--json``)."""

    def __init__(self, message: str):
        super().__init__(2)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage + message by default)
        raise UsageError(f"{self.prog}: {message}")


def _report(prog: str, problem: str, where: str | None, as_json: bool, kind: str = "error"):
    """One error line on stderr: ``PROG: error: WHERE: PROBLEM``, or the JSON object."""
    if as_json:
        text = json.dumps(
            {"error": problem if kind == "error" else f"{kind}: {problem}", "where": where}
        )
    else:
        text = f"{prog}: {kind}: {f'{where}: ' if where else ''}{problem}"
    try:
        sys.stderr.write(text + "\n")
    except (OSError, ValueError, AttributeError):  # stderr closed too: the exit code says it
        pass


DESCRIPTION = (
    "fairplace: fair (THEMIS, NSDI'20) and variability-aware (PAL) GPU-cluster scheduling as "
    "mathematical programs solved exactly (HiGHS via highspy, Pyomo, CVXPY), next to the papers' "
    "heuristics. Solve one auction or placement instance, batch-solve suites on Dask, run "
    "trace-driven simulations and sweeps, plot results, and reproduce both papers' headline claims."
)
EPILOG = (
    "Start with: fairplace reproduce --quick (report in ./fairplace-report/). "
    "'fairplace COMMAND --help' lists a command's options. Bad input exits 2 with one line."
)


def add_verbosity(parser: argparse.ArgumentParser) -> None:
    """``-q/--quiet`` and ``-v/--verbose`` on ``parser`` and on its sub-commands' parsers (``instances
    list``); absent flags set nothing, so a flag given before a sub-command is kept."""
    g = parser.add_argument_group("output").add_mutually_exclusive_group()
    g.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
        help="only warnings and errors on stderr; no progress bars",
    )  # fmt: skip
    g.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
        help="debug lines on stderr too",
    )  # fmt: skip
    for action in parser._actions:  # argparse keeps sub-command parsers here
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                add_verbosity(child)


@contextlib.contextmanager
def cli_logging(quiet: bool = False, verbose: bool = False):
    """Status lines of the ``fairplace`` logger on stderr, one line each as written (INFO;
    WARNING with ``quiet``, DEBUG with ``verbose``), while the block runs."""
    logger = logging.getLogger("fairplace")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    old = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old[0])
        logger.propagate = old[1]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; ``only``: add the options of that command alone (the others are listed
    with their one-line help): option choices come from the registries, whose modules are heavy."""
    parser = _Parser(prog="fairplace", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"fairplace {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, title="commands", metavar="COMMAND"
    )
    for name, entry in COMMANDS.items():
        p = sub.add_parser(name, help=entry.doc, description=entry.doc)
        if only is None or only == name:
            entry.capabilities["add_arguments"](p)
            add_verbosity(p)
        p.set_defaults(_run=entry.factory)
    return parser


#: exit status when stdout is closed early (``fairplace ... | head``): 128 + SIGPIPE, what the shell
#: reports for a Unix tool stopped by a closed pipe; nothing is printed.
EXIT_BROKEN_PIPE = 141


class _ClosedStdout:
    """Stands in for a stdout that was closed before start (``>&-``): writing to it is a broken
    pipe (exit 141, as for ``| head``); commands that print nothing run normally."""

    def write(self, text: str) -> int:
        if text:
            raise BrokenPipeError(32, "stdout is closed")
        return 0

    def flush(self) -> None:
        pass


def _check_stdout() -> None:
    """A stdout closed before start (``>&-``): fd 1 is pointed at /dev/null, so that no file the
    command opens lands on it, and ``sys.stdout`` is a :class:`_ClosedStdout`."""
    try:
        os.fstat(1)
        if sys.stdout is not None:
            return
    except OSError:
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != 1:
            os.dup2(devnull, 1)
            os.close(devnull)
    except OSError:
        pass
    sys.stdout = _ClosedStdout()


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests)
        pass


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), "")
    as_json = "--json" in argv
    _check_stdout()
    parser = build_parser(only=command)
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:  # "PROG: argument --flag: problem"
        prog, _, message = exc.message.partition(": ")
        where = None
        if message.startswith("argument ") and ": " in message:
            where, message = message[len("argument ") :].split(": ", 1)
        _report(prog, _one_line(message), where, as_json)
        raise SystemExit(2) from None  # as argparse does
    prog = f"fairplace {args.command}"
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
    if quiet and hasattr(args, "no_progress"):
        args.no_progress = True
    try:
        # fairplace parallelises itself (core/blas.py); the solvers limit scipy's BLAS too
        # long commands print a progress line per N steps or 30 s off a terminal (-q: none)
        lines = args.command in LONG_COMMANDS and not quiet
        with one_blas_thread(load_scipy=False), cli_logging(quiet, verbose), progress_lines(lines):
            code = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except FairplaceError as exc:
        path = getattr(exc, "path", None)
        problem = getattr(exc, "problem", None) if path else None
        _report(prog, _one_line(problem if problem is not None else exc), path or None, as_json)
        return 2
    except KeyboardInterrupt:
        _report(prog, "interrupted", None, as_json, kind="error")
        return 130
    except OSError as exc:  # a path given by the user that cannot be read or written, a full disk
        if os.environ.get("FAIRPLACE_DEBUG"):
            raise
        # a failed write (ENOSPC, EIO) names no file: the command's output is the one written
        where = exc.filename or getattr(args, "out", None)
        _report(prog, _one_line(exc.strerror or str(exc)), str(where) if where else None, as_json)
        return 2
    except MemoryError:
        _report(prog, "out of memory (the input is too large for this machine)", None, as_json)
        return 2
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback unless asked to
        if os.environ.get("FAIRPLACE_DEBUG"):
            raise
        problem = f"{type(exc).__name__}: {_one_line(exc)} (set FAIRPLACE_DEBUG=1 for a traceback)"
        _report(prog, problem, None, as_json, kind="internal error")
        return 1


if __name__ == "__main__":
    sys.exit(main())
