"""IPython magics: ``%%placement`` and ``%tfteach``; loaded by ``%load_ext tfteach``.

``%%placement [--soft] [--log] [--run] [--trace] [--warmup] [--virtual-gpus N] [--target
grpc://...] [--config EXPR] [--backend tfteach|tensorflow|compare] [--gpus-as-cpus]
[--model PROFILE]`` builds the cell's
graph in a fresh default graph (in the notebook's namespace), places it as such a session
would and shows the placement view; ``--run`` also shows the fetched values and the step's
device timeline, ``--trace`` the timeline only (``--warmup``: of a second, warm step),
``--log`` TF's log lines, ``--model PROFILE`` the step's timeline modelled on a hardware
profile (``tfteach.hardware``; captioned and marked as modelled). The result stays in
``_placement`` (graph, session, views, values, error). tfteach errors are shown as a short box
with the message and its ``Hint:``. ``--backend tensorflow`` runs the cell on real TensorFlow
instead (``tf_backend``; notes say which devices TF lacks here, ``--gpus-as-cpus`` maps
tfteach's GPUs onto TF CPUs standing in for them); ``--backend compare`` runs it on both and
shows both, then the differences (``backend_compare``; TF's result in ``_placement_tf``, the
differences in ``_comparison``).

``%%solution 5.2`` starts an exercise's solution cell: the cell's code runs only once the
learner asked for that solution (``tfteach.lessons.solution("5.2")``), so Run All computes no
answers; until then it prints a note (``exercises.revealed``). Where every solution runs
(``TFTEACH_RUN_SOLUTIONS=1``), a solution whose check does not pass raises AssertionError.

``%tfteach devices [--virtual-gpus N]`` shows the device table.
``%tfteach cluster start [--ps N] [--workers N] [--gpus-per-task N] [--speeds 1,1,0.3]
[--network PROFILE]``,
``status``, ``kill worker:1``, ``restart worker:1``, ``stop`` drive the kernel's LocalCluster
(also bound to the name ``cluster``); it stops when the kernel shuts down.
``%tfteach errors friendly|full`` chooses how tfteach errors raised by ordinary cells look.
Loading the extension makes matplotlib's defaults theme-neutral (``palette.theme_matplotlib``:
transparent figures, grey ink), so figures read in a dark JupyterLab.
``%%placement --help`` (``-h``) and ``%tfteach --help`` (or no arguments) print every option
and subcommand; ``%tfteach?`` shows the same text.

State (per shell): the magics object holds the last ``PlacementResult`` of each backend (their
sessions are closed when the next ``%%placement`` runs) and the ``ClusterController``.
"""
from __future__ import annotations

import argparse
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from tfteach.errors import OpError
from tfteach.i18n import tr
from tfteach.notebook import exercises, graphviz_svg
from tfteach.notebook.backend_compare import compare
from tfteach.notebook.cluster_view import ClusterController, parse_task
from tfteach.notebook.displays import DeviceTable, ErrorBox, Heading, Note
from tfteach.notebook.palette import theme_matplotlib
from tfteach.notebook.placement_cell import (
    PlacementOptions,
    PlacementResult,
    is_fetchable,
    result_displays,
    run_placement_cell,
    virtual_gpus,
)
from tfteach.notebook.tf_backend import run_tf_cell
from tfteach.notebook.view import View

BACKENDS = ("tfteach", "tensorflow", "compare")


class _Parser(argparse.ArgumentParser):
    """argparse that reports mistakes as IPython usage errors instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message}\n\n{self.format_usage()}")


HELP_FLAGS = ("-h", "--help")


def _tfteach_parser() -> _Parser:
    parser = _Parser(prog="%tfteach", add_help=False)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    devices = sub.add_parser("devices", add_help=False, help=tr("show this kernel's devices"))
    devices.add_argument("--virtual-gpus", type=int, default=None,
                         help=tr("pretend this many virtual GPUs for the table"))
    errors = sub.add_parser("errors", add_help=False,
                            help=tr("how tfteach errors from ordinary cells look"))
    errors.add_argument("style", choices=["friendly", "full"],
                        help=tr("friendly: a short box with the hint; full: the traceback"))
    cluster = sub.add_parser("cluster", add_help=False, help=tr("drive this kernel's LocalCluster"))
    actions = cluster.add_subparsers(dest="action", required=True, parser_class=_Parser)
    start = actions.add_parser("start", add_help=False, help=tr("start one (bound to `cluster`)"))
    start.add_argument("--ps", type=int, default=1, help=tr("parameter server tasks (1)"))
    start.add_argument("--workers", type=int, default=2, help=tr("worker tasks (2)"))
    start.add_argument("--gpus-per-task", type=int, default=0, help=tr("virtual GPUs per task (0)"))
    start.add_argument("--speeds", type=_speeds, default=None,
                       help=tr("relative worker speeds, e.g. 1,1,0.3"))
    start.add_argument("--network", default=None, metavar="PROFILE",
                       help=tr("model the network between tasks, e.g. \"1 Gbit Ethernet\" or "
                               "a hardware profile's name"))
    actions.add_parser("status", add_help=False, help=tr("show every task's state"))
    actions.add_parser("stop", add_help=False, help=tr("stop every task"))
    for name, what in (("kill", tr("kill a task, e.g. worker:1")),
                       ("restart", tr("start a killed task again, e.g. worker:1"))):
        actions.add_parser(name, add_help=False, help=what).add_argument(
            "task", help=tr("job:index, e.g. worker:1"))
    return parser


def tfteach_help() -> str:
    """Every subcommand of ``%tfteach`` with its options (what ``%tfteach --help`` prints)."""
    lines = ["%tfteach: tfteach's notebook commands.", ""]
    lines += _subcommand_help(_tfteach_parser(), "%tfteach")
    return "\n".join(lines)


def _subcommand_help(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    """One usage line and the option lines of each (nested) subcommand."""
    lines: list[str] = []
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, sub in action.choices.items():
            command = f"{prefix} {name}"
            if sub._subparsers is not None:
                lines.append(f"{command} ...: {helps.get(name) or ''}")
                lines += _subcommand_help(sub, command)
                continue
            usage = " ".join(sub.format_usage().split()[1 + len(sub.prog.split()):])
            lines.append(f"{command} {usage}".rstrip() + f"\n    {helps.get(name) or ''}")
            lines += [f"      {', '.join(a.option_strings) or a.dest}: {a.help}"
                      for a in sub._actions if a.help]
    return lines


def _stand_ins(virtual_gpus: int | None) -> int:
    """How many TF CPUs stand in for tfteach's GPUs: this cell's or the kernel's GPU count."""
    if virtual_gpus is not None:
        return virtual_gpus
    import tfteach.config

    return sum(d.device_type == "GPU" for d in tfteach.config.list_devices())


def _unquoted(word: str | None) -> str | None:
    """A magic's argument without the quotes that kept its spaces together (IPython's
    argument splitting keeps them: ``--model "8x V100 NVLink"``)."""
    if word and len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def _speeds(text: str) -> list[float]:
    try:
        return [float(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(tr("--speeds takes numbers separated by commas, "
                                            "e.g. 1,1,0.3 (got {text})", text=repr(text))) from None


@magics_class
class TfteachMagics(Magics):
    """``%%placement`` and ``%tfteach``."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.last: PlacementResult | None = None
        self.last_tf: PlacementResult | None = None
        self.clusters = ClusterController()
        self.friendly_errors = True

    # -- %%placement ------------------------------------------------------------------
    @magic_arguments()
    @argument("--soft", action="store_true", help=tr("allow_soft_placement=True"))
    @argument("--log", action="store_true", help=tr("log_device_placement=True (TF's log lines)"))
    @argument("--run", action="store_true", help=tr("run the last expression; show values and "
              "a device timeline"))
    @argument("--trace", action="store_true", help=tr("run and show the device timeline"))
    @argument("--warmup", action="store_true", help=tr("with --run/--trace: run once untraced "
              "first, so the timeline shows a warm step"))
    @argument("--virtual-gpus", type=int, default=None, help=tr("virtual GPUs for this cell"))
    @argument("--target", default="", help=tr("session target, e.g. grpc://localhost:2222"))
    @argument("--config", default=None, help=tr("a tf.ConfigProto expression"))
    @argument("--backend", choices=BACKENDS, default="tfteach",
              help=tr("tfteach, real TensorFlow (compat.v1, graph mode), or compare: both, and "
              "what differs"))
    @argument("--gpus-as-cpus", action="store_true", help=tr("TensorFlow: run tfteach's virtual "
              "GPU:i on a TF CPU device CPU:i+1 standing in for it"))
    @argument("--model", default=None, metavar="PROFILE", help=tr(
              "also draw the step's timeline in modelled time on a hardware profile (a "
              "shipped name such as \"8x V100 NVLink\", or a profile file)"))
    @cell_magic
    def placement(self, line: str, cell: str) -> None:
        """Place (and optionally run) the graph this cell builds, and show where ops went."""
        if set(shlex.split(line)) & set(HELP_FLAGS):
            print(self.placement.parser.format_help().replace("::\n\n", "", 1))
            return
        args = parse_argstring(self.placement, line)
        options = PlacementOptions(args.soft, args.log, args.run, args.trace,
                                   args.virtual_gpus, args.target, args.config, args.backend,
                                   _stand_ins(args.virtual_gpus) if args.gpus_as_cpus else 0,
                                   args.warmup, _unquoted(args.model))
        for result in (self.last, self.last_tf):
            if result is not None:
                result.close()
        self.last = self.last_tf = None
        source = self.shell.transform_cell(cell)
        ours = theirs = None
        if options.backend != "tensorflow":
            ours = self._placement_tfteach(source, options)
        if options.backend != "tfteach":
            theirs = self._placement_tensorflow(source, options)
        if ours is not None and theirs is not None:
            self.shell.user_ns["_comparison"] = comparison = compare(
                ours, theirs, options.gpus_as_cpus)
            display(comparison)

    def _placement_tfteach(self, source: str, options: PlacementOptions
                           ) -> PlacementResult | None:
        if options.backend == "compare":
            display(Heading(tr("tfteach:")))
        try:
            result = run_placement_cell(source, options, self.shell.user_ns)
        except OpError as err:
            display(ErrorBox(err, tr("building the graph")))
            return None
        self.last = self.shell.user_ns["_placement"] = result
        self._show(result)
        return result

    def _placement_tensorflow(self, source: str, options: PlacementOptions
                              ) -> PlacementResult | None:
        if options.backend == "compare":
            display(Heading(tr("TensorFlow:")))
        try:
            result = run_tf_cell(source, options, self.shell.user_ns)
        except OpError as err:
            display(ErrorBox(err, tr("starting TensorFlow")))
            return None
        self.last_tf = result
        self.shell.user_ns["_placement_tf" if options.backend == "compare"
                           else "_placement"] = result
        for note in result.notes:
            display(Note(note))
        self._show(result)
        return result

    def _show(self, result: PlacementResult) -> None:
        if result.session is None and result.error is None:
            print(tr("The cell created no ops, so there is nothing to place."))
        elif result.view is None and result.error is None:
            print(tr("A cluster session places the graph when it first runs it: add --run (or "
                     "--trace) to see where the ops went."))
        for item in result_displays(result):
            item.show() if isinstance(item, View) else display(item)
        if result.error is not None:
            display(ErrorBox(result.error, result.stage))
        value = result.last_value
        if value is not None and not is_fetchable(value) and result.backend == "tfteach":
            display(value)

    # -- %%solution ---------------------------------------------------------------------
    @cell_magic
    def solution(self, line: str, cell: str) -> None:
        """An exercise's solution: runs only after the learner asked for it."""
        name = line.strip()
        if not exercises.revealed(name):
            print(exercises.hidden_solution_note(name))
            return
        result = self.shell.run_cell(cell, store_history=False)
        result.raise_error()
        failed = getattr(result.result, "passed", True) is False
        if failed and exercises.running_every_solution():
            raise AssertionError(f"the solution of exercise {name} does not pass its check")

    # -- %tfteach -----------------------------------------------------------------------
    @line_magic
    def tfteach(self, line: str) -> Any:
        words = shlex.split(line)
        if not words or set(words) & set(HELP_FLAGS):
            print(tfteach_help())
            return None
        args = _tfteach_parser().parse_args(words)
        if args.command == "devices":
            import tfteach.config

            with virtual_gpus(args.virtual_gpus):
                display(DeviceTable(tfteach.config.list_devices()))
            return None
        if args.command == "errors":
            self.friendly_errors = args.style == "friendly"
            install_error_display(self.shell, self.friendly_errors)
            return None
        try:
            status = self._cluster(args)
        except (OpError, RuntimeError, ValueError) as err:
            display(ErrorBox(err, tr("running %tfteach cluster {action}", action=args.action)))
            return None
        if status is not None:
            display(status)
        return None

    tfteach.__doc__ = tfteach_help()

    def _cluster(self, args: argparse.Namespace) -> Any:
        clusters = self.clusters
        if args.action == "start":
            status = clusters.start(args.ps, args.workers, args.gpus_per_task, args.speeds,
                                    args.network)
            self.shell.user_ns["cluster"] = clusters.cluster
            status.title += tr(" (the variable `cluster`; e.g. "
                               "tf.Session(cluster.target('worker', 0)))")
            return status
        if args.action == "status":
            return clusters.show(tr("Cluster status"))
        if args.action == "stop":
            status = clusters.stop()
            if status is None:
                print(tr("No cluster is running."))
            return status
        job, task = parse_task(args.task)
        return clusters.kill(job, task) if args.action == "kill" else clusters.restart(job, task)


# ---- errors raised by ordinary cells --------------------------------------------------------
def _friendly_handler(shell: Any, etype: type, value: BaseException, tb: Any,
                      tb_offset: int | None = None) -> list[str]:
    """IPython's custom-exception hook: the box, pointing at the learner's line."""
    display(ErrorBox(value, user_line(tb)))
    return []


def user_line(tb: Any) -> str:
    """``at line N: <code>`` for the innermost frame of the learner's own code."""
    import linecache
    import traceback
    from pathlib import Path

    package = str(Path(__file__).resolve().parents[1])
    frames = [f for f in traceback.extract_tb(tb)
              if not f.filename.startswith(package) and "site-packages" not in f.filename]
    if not frames:
        return ""
    last = frames[-1]
    code = (last.line or linecache.getline(last.filename, last.lineno or 0)).strip()
    return tr("running line {line}: {code}", line=last.lineno, code=code) if code else ""


def install_error_display(shell: Any, friendly: bool = True) -> None:
    """Show tfteach errors from any cell as the friendly box (or restore tracebacks)."""
    if friendly:
        shell.set_custom_exc((OpError,), _friendly_handler)
    else:
        shell.set_custom_exc((), None)


# ---- extension entry points -------------------------------------------------------------------
_loaded: dict[int, TfteachMagics] = {}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext tfteach``: register the magics once per shell."""
    if id(ipython) in _loaded:
        return
    magics = TfteachMagics(ipython)
    ipython.register_magics(magics)
    install_error_display(ipython, True)
    theme_matplotlib()
    graphviz_svg.warm_up()
    _loaded[id(ipython)] = magics


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext tfteach``: stop the cluster and restore tracebacks."""
    magics = _loaded.pop(id(ipython), None)
    if magics is not None:
        magics.clusters.stop()
        for result in (magics.last, magics.last_tf):
            if result is not None:
                result.close()
    install_error_display(ipython, False)
