"""The table-driven command builder: options declared as :class:`Opt` rows become a typer
command; parameter names in errors become the options a user typed.

Every command is a plain function ``body(**values)`` over API keyword names, and a list of
:class:`Opt`. :func:`command` turns them into a function whose signature typer reads, and
wraps the body so that

- a deprecated spelling works, with a one-line hint on stderr (``--quiet`` silences it), and
  giving it beside the new spelling is refused;
- an alias with an ``alias_note`` prints that note on stderr when it is used, once the command
  has run (so that a refusal stays one line; ``--quiet`` silences it);
- defaults are applied after parsing, so "not given" can be told from "given the default";
- a :class:`~rdpcalc.errors.ParameterError` naming an API keyword (``dp_delta``, ``m``) is
  reported under the option that sets it (``--dp-delta``, ``--levels``), see :func:`option_text`.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import typer
from rich.markup import escape

from ..errors import ParameterError
from ..exactnum import fmt
from ..params import Param
from .clicklib import ParameterSource, StringParamType, get_current_context

#: set by ``--quiet``: no progress bars, hints or "wrote …" lines on stderr
QUIET = {"on": False}

#: API keywords whose option is not ``--`` + the name with dashes
SPECIAL_OPTIONS = {"alphas": "--alpha", "alpha_ranges": "--alphas", "mechanism": "MECHANISM", "ids": "ID"}

#: the options of the command being run, by API keyword (read by :func:`option_text`)
_CURRENT: dict[str, str] = {}


@dataclass(frozen=True)
class Opt:
    """One option: ``name`` is the keyword the command body receives (the API's), ``option``
    its spelling (default ``--name``), ``kind`` its click type (``str``, ``int``, ``float``,
    ``bool`` for a flag, or a tuple of choices), ``default`` applied when it is not given
    (``show`` overrides how help shows it), ``multiple`` for a repeatable option, ``aliases``
    documented alternative spellings (a paper's symbol), ``alias_note`` a note printed when an
    alias is used, ``deprecated`` old spellings that still work with a hint, ``panel`` the
    help section, ``required`` marks it; ``argument`` makes it a positional argument named by
    its ``metavar`` (optional unless ``required``)."""

    name: str
    help: str
    kind: object = str
    default: object = None
    option: str = ""
    aliases: tuple[str, ...] = ()
    alias_note: str = ""
    deprecated: tuple[str, ...] = ()
    multiple: bool = False
    required: bool = False
    panel: str = "Options"
    metavar: str | None = None
    show: str | None = None
    hidden: bool = False
    argument: bool = False

    @property
    def spelling(self) -> str:
        if self.argument:
            return self.metavar or self.name.upper()
        return self.option or "--" + self.name.replace("_", "-")

    def described(self) -> str:
        """The spelling in errors: with its aliases, e.g. ``--levels (--m)``."""
        return self.spelling + (f" ({', '.join(self.aliases)})" if self.aliases else "")


def from_param(param: Param, panel: str, required: bool | None = None) -> Opt:
    """The option of a mechanism's :class:`~rdpcalc.mechanisms.Param` (its converter and range
    stay with the mechanism: the option passes the text through, integers typed as such)."""
    kind: object = {"integer": int, "choice": param.choices}.get(param.kind, str)
    show = None if param.default is None else default_text(param.default)
    return Opt(param.name, param.help, kind=kind, option=param.option, aliases=param.aliases,
               alias_note=param.alias_note, deprecated=param.deprecated, panel=panel, show=show,
               required=param.required if required is None else required,
               metavar={"integer": "INTEGER", "number": "NUMBER", "float": "NUMBER",
                        "integer-or-inf": "INTEGER|inf"}.get(param.kind))


def option(param: Param, panel: str, *, help: str | None = None, metavar: str | None = None, **extra) -> Opt:
    """The option of an API keyword declared as a :class:`~rdpcalc.params.Param` (``n``, ``dps``,
    ``budget``, …): :func:`from_param`'s, but typed for the API (numbers as floats) and with its
    default applied here; its kind, default and help (``help`` overrides the declared text; either
    has ``{range}`` filled in) come from the declaration, and the API converts and checks the
    value against the same declaration. ``extra``: other :class:`Opt` fields (``deprecated``,
    ``required``), or a ``default`` or ``kind`` of the command's own (``kind=str`` keeps a
    number's text, for the API to read exactly)."""
    kind: object = {"integer": int, "number": float, "float": float, "choice": param.choices}.get(param.kind, str)
    fields = {"help": param.help_text(help), "kind": kind, "default": param.default, "show": None, "metavar": metavar,
              "required": False}
    return dataclasses.replace(from_param(param, panel), **{**fields, **extra})


def default_text(value) -> str:
    """A default as the command line would spell it (exact values as decimals: 0.005333)."""
    return fmt(value) if isinstance(value, Fraction) else str(value)


def option_text(name: str) -> str:
    """How the command line spells the API keyword ``name``."""
    if name in _CURRENT:
        return _CURRENT[name]
    return SPECIAL_OPTIONS.get(name, "--" + name.replace("_", "-"))


def with_options(text: str) -> str:
    """``text`` with each backticked API keyword replaced by its option."""
    return re.sub(r"`([A-Za-z_][A-Za-z0-9_]*)`", lambda match: option_text(match[1]), text)


def hint(text: str) -> None:
    """A one-line note on stderr, unless ``--quiet``."""
    if not QUIET["on"]:
        try:
            print(f"rdpcalc: note: {text}", file=sys.stderr)
        except (OSError, ValueError):
            pass


def _text_type():
    """click's string type, named TEXT in help as the options are (typer would print ``<str>``)."""
    class Text(StringParamType):
        def get_metavar(self, param, ctx=None) -> str:
            return "TEXT"

    return Text()


def _click_type(opt: Opt):
    if isinstance(opt.kind, tuple):
        annotation = Literal.__getitem__(opt.kind)
    else:
        annotation = opt.kind
    return list[annotation] if opt.multiple else annotation


def _parameter(name: str, opt: Opt, spellings: Sequence[str], deprecated: bool = False) -> inspect.Parameter:
    """The typer parameter of ``opt`` under ``spellings``; a deprecated spelling's is hidden and
    has no default (so that giving it can be told apart)."""
    if opt.kind is bool:
        default, show_default = False, False
    elif deprecated or opt.default is None:
        default, show_default = None, (opt.show or False) if not deprecated else False
    else:
        default = list(opt.default) if opt.multiple else opt.default
        show_default = opt.show if opt.show is not None else True

    # a required option with a deprecated spelling is checked by :func:`command` (click would
    # refuse the deprecated spelling alone), the others by click, which marks them in the help
    enforced = opt.required and not opt.deprecated and not deprecated
    text = opt.help + (" [required]" if opt.required and not enforced and not deprecated else "")
    if isinstance(show_default, str):  # typer would print a text default in parentheses: "(inf)"
        text, show_default = f"{text} [default: {show_default}]", False
    text = escape(text)
    if opt.argument:
        info = typer.Argument(... if opt.required else None, help=text, metavar=opt.spelling, show_default=False,
                              click_type=_text_type())
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=_click_type(opt))
    info = typer.Option(... if enforced else default, *spellings, help=text, rich_help_panel=opt.panel,
                        show_default=show_default, metavar=metavar(opt), hidden=opt.hidden or deprecated)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=_click_type(opt))


def metavar(opt: Opt) -> str | None:
    """How help names an option's value, in one style: its own ``metavar``, else INTEGER,
    NUMBER or TEXT by its kind, or its choices as [a|b|c] (None for a flag)."""
    if opt.metavar is not None or opt.kind is bool:
        return opt.metavar
    if isinstance(opt.kind, tuple):
        return "[" + "|".join(opt.kind) + "]"
    return {int: "INTEGER", float: "NUMBER"}.get(opt.kind, "TEXT")


def _given(name: str) -> bool:
    """Whether the option ``name`` of the running command was given on the command line (not
    left at its default)."""
    return get_current_context().get_parameter_source(name) not in (None, ParameterSource.DEFAULT,
                                                                    ParameterSource.DEFAULT_MAP)


#: the arguments of the command line being run (set by :func:`rdpcalc.cli.main`)
ARGUMENTS: list[str] = []


def _used(spellings: Sequence[str]) -> list[str]:
    """Each of ``spellings`` that the command line uses, as often and in the order it does."""
    return [token.split("=", 1)[0] for token in ARGUMENTS if token.split("=", 1)[0] in spellings]


def _check_given_once(opt: Opt) -> None:
    """An option that takes one value, given more than once (as itself, an alias or a deprecated
    spelling) is refused: click would keep the last value without a word."""
    used = _used((opt.spelling, *opt.aliases, *opt.deprecated))
    if len(used) > 1:
        raise ParameterError(opt.name, f"is given {len(used)} times ({', '.join(used)}): give it once")


def command(body: Callable[..., None], options: Sequence[Opt]) -> Callable[..., None]:
    """A function typer can turn into a command: its parameters are ``options`` (and a hidden
    one per deprecated spelling); calling it merges deprecated spellings, checks required
    options, calls ``body`` with every option by its API keyword and then prints the notes of
    the aliases used."""
    names = [opt.name for opt in options]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate option names in {names}")
    parameters, old_spellings = [], {}
    for opt in options:
        parameters.append(_parameter(opt.name, opt, [opt.spelling, *opt.aliases]))
        for index, spelling in enumerate(opt.deprecated):
            key = f"{opt.name}__deprecated_{index}"
            old_spellings[key] = (opt, spelling)
            parameters.append(_parameter(key, opt, [spelling], deprecated=True))

    def run(**values) -> None:
        _CURRENT.clear()
        _CURRENT.update({opt.name: opt.described() for opt in options})
        QUIET["on"] = bool(values.get("quiet"))
        given = {opt.name for opt in options if _given(opt.name)}
        for opt in options:
            if not opt.multiple and not opt.argument:
                _check_given_once(opt)
        for key, (opt, spelling) in old_spellings.items():
            value = values.pop(key)
            if not _given(key):
                continue
            if opt.name in given:
                raise ParameterError(opt.name, f"is given twice, also as {spelling} (deprecated): give it once")
            hint(f"{spelling} is deprecated; use {opt.spelling}")
            values[opt.name] = value
            given.add(opt.name)
        for opt in options:
            if opt.required and opt.name not in given:
                raise ParameterError(opt.name, f"is required: {opt.help}")
            if opt.multiple and values[opt.name] is None:
                values[opt.name] = []
        notes = [opt.alias_note for opt in options if opt.alias_note and _used(opt.aliases)]
        body(**values)
        for note in notes:  # after the work: a refused value stays one line on stderr
            hint(note)

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return run
