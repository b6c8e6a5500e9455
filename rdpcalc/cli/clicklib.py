"""click as typer runs it: typer 0.26 and later carry their own copy as ``typer._click``; older
typer (flwr 1.42 requires typer < 0.21) runs on the click package. The command line takes
click's parts from here, so that it works under either."""

from __future__ import annotations

import inspect

from typer.core import TyperArgument, TyperGroup

try:  # typer ≥ 0.26
    from typer._click import core, exceptions, types
    from typer._click.globals import get_current_context
except ModuleNotFoundError:  # typer < 0.26
    from click import core, exceptions, types
    from click.globals import get_current_context

ParameterSource = core.ParameterSource
MissingParameter, UsageError = exceptions.MissingParameter, exceptions.UsageError
StringParamType = types.StringParamType

__all__ = ["MissingParameter", "ParameterSource", "StringParamType", "UsageError", "get_current_context",
           "restore_argument_help"]


def restore_argument_help(group: TyperGroup) -> None:
    """Give back the help of positional arguments that typer lost: typer < 0.26 sets it before
    calling click's constructor, which from click 8.5 on sets its own (None). The text is that
    of the ``typer.Argument`` in the command function's signature."""
    for command in group.commands.values():
        if isinstance(command, TyperGroup):
            restore_argument_help(command)
            continue
        declared = inspect.signature(command.callback).parameters
        for param in command.params:
            if isinstance(param, TyperArgument) and param.help is None and param.name in declared:
                param.help = getattr(declared[param.name].default, "help", None)
