"""Every slash-command option checked in the bot: Discord's client enforces ranges, lengths and choices, but a
crafted request need not, and discord.py hands received values to the command unchecked."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import discord
from discord import AppCommandOptionType, app_commands

from . import replies

__all__ = (
    "UserInputError",
    "DateTransformer",
    "options_checked",
    "declared_options_hold",
    "check_options",
    "check_date_order",
    "check_forget_options",
    "shown",
)

# No Discord message is older than Discord; a member a day ahead of UTC may name their tomorrow.
DISCORD_EPOCH = datetime(2015, 1, 1, tzinfo=UTC)
DATE_SLACK = timedelta(days=2)
# Long enough for any ISO-8601 time ("2024-05-31T23:59:59.999999+05:30" is 32).
DATE_MAX_CHARS = 40
# A received value quoted back to the user is cut to this many characters.
SHOWN_CHARS = 40
# /memory forget: for each ``what``, the option it cannot do without (if any), and every option it takes.
FORGET_OPTIONS: dict[str, tuple[str | None, frozenset[str]]] = {
    "my messages": (None, frozenset({"channel"})),
    "a channel": ("channel", frozenset({"channel"})),
    "a member": ("member", frozenset({"member"})),
    "a message": ("message_link", frozenset({"message_link"})),
}
FORGET_NEEDS: dict[str, str] = {
    "channel": replies.FORGET_NEEDS_CHANNEL,
    "member": replies.FORGET_NEEDS_MEMBER,
    "message_link": replies.FORGET_NEEDS_LINK,
}

# The Python types a received value of each option type must have; bool is excluded from int separately.
VALUE_TYPES: dict[AppCommandOptionType, tuple[type, ...]] = {
    AppCommandOptionType.string: (str,),
    AppCommandOptionType.integer: (int,),
    AppCommandOptionType.number: (int, float),
    AppCommandOptionType.boolean: (bool,),
    AppCommandOptionType.user: (discord.User, discord.Member),
}
KIND_WORDS: dict[AppCommandOptionType, str] = {
    AppCommandOptionType.string: "text",
    AppCommandOptionType.integer: "a whole number",
    AppCommandOptionType.number: "a number",
    AppCommandOptionType.boolean: "true or false",
}
T = TypeVar("T")


class UserInputError(app_commands.AppCommandError):
    """Something the user can fix; the message says how."""


def shown(value: Any) -> str:
    """A received value, safe and short enough to quote back inside backticks."""
    text = " ".join(str(getattr(value, "id", value)).split()).replace("`", "'")
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _day(moment: datetime) -> str:
    midnight = moment.hour == moment.minute == moment.second == moment.microsecond == 0
    return moment.strftime("%Y-%m-%d" if midnight else "%Y-%m-%d %H:%M UTC")


class DateTransformer(app_commands.Transformer):
    """``YYYY-MM-DD`` (UTC midnight) or a full ISO-8601 time within Discord's lifetime, as an aware UTC datetime."""

    @property
    def max_value(self) -> int:
        return DATE_MAX_CHARS

    async def transform(self, interaction: discord.Interaction, value: str) -> datetime:
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise UserInputError(replies.BAD_DATE.format(value=shown(value))) from None
        try:
            moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        except OverflowError:  # 9999-12-31 late in a timezone west of UTC
            raise UserInputError(replies.DATE_OUT_OF_RANGE.format(value=shown(value))) from None
        if not DISCORD_EPOCH <= moment <= datetime.now(UTC) + DATE_SLACK:
            raise UserInputError(replies.DATE_OUT_OF_RANGE.format(value=shown(value)))
        return moment


def check_date_order(after: datetime | None, before: datetime | None) -> None:
    """An ``after`` that is not earlier than ``before`` leaves nothing to find: say so instead of finding nothing."""
    if after is not None and before is not None and after >= before:
        raise UserInputError(replies.DATES_REVERSED.format(after=_day(after), before=_day(before)))


def check_forget_options(what: str, **given: Any) -> None:
    """/memory forget: the companion option ``what`` needs is there, and none meant for another ``what`` is."""
    needed, takes = FORGET_OPTIONS[what]
    if needed is not None and given[needed] is None:
        raise UserInputError(FORGET_NEEDS[needed])
    unused = [name for name, value in given.items() if value is not None and name not in takes]
    if unused:
        raise UserInputError(replies.FORGET_OPTION_UNUSED.format(option=unused[0], what=what))


def _check_text(name: str, value: str, low: float | None, high: float | None) -> None:
    # Lengths are whole numbers; discord.py keeps them where a number option keeps its range (int | float).
    if not value.strip():
        raise UserInputError(replies.OPTION_BLANK.format(name=name))
    low = 1 if low is None else low
    if len(value) < low or (high is not None and len(value) > high):
        raise UserInputError(replies.OPTION_LENGTH.format(name=name, low=low, high=high, length=len(value)))


def _check_number(name: str, value: float, low: float | None, high: float | None) -> None:
    outside = not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high)
    if outside:
        raise UserInputError(replies.OPTION_RANGE.format(name=name, low=low, high=high, value=shown(value)))


def check_option(param: app_commands.Parameter, value: Any) -> None:
    """One received value against its declared type, choices, and range (numbers) or length (text)."""
    name = param.display_name
    types = VALUE_TYPES.get(param.type)
    if types is not None and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
        if param.type is AppCommandOptionType.user:
            raise UserInputError(replies.BAD_OPTION.format(value=shown(value)))
        raise UserInputError(replies.OPTION_NOT_A.format(name=name, kind=KIND_WORDS[param.type], value=shown(value)))
    if param.choices and value not in [choice.value for choice in param.choices]:
        choices = ", ".join(f"`{choice.value}`" for choice in param.choices)
        raise UserInputError(replies.OPTION_CHOICE.format(name=name, choices=choices, value=shown(value)))
    if isinstance(value, str):
        _check_text(name, value, param.min_value, param.max_value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(name, value, param.min_value, param.max_value)


def check_options(command: app_commands.Command[Any, ..., Any], namespace: app_commands.Namespace) -> None:
    """Every option the command declares against what the interaction carries: present if required, then valid."""
    received = dict(iter(namespace))  # Namespace answers None to any attribute, keys() included
    for param in command.parameters:
        value = received.get(param.display_name)
        if value is None:
            if param.required:
                raise UserInputError(replies.OPTION_MISSING.format(name=param.display_name))
            continue
        check_option(param, value)


async def declared_options_hold(interaction: discord.Interaction) -> bool:
    """The check ``options_checked`` adds; raises ``UserInputError`` with what to change."""
    if isinstance(interaction.command, app_commands.Command):
        check_options(interaction.command, interaction.namespace)
    return True


def options_checked() -> Callable[[T], T]:
    """Holds every option to what the command declares (``Range``, ``Literal``, types) before the command runs.

    Put it above the permission checks, so those run first and a member without access learns only that.
    """
    return app_commands.check(declared_options_hold)
