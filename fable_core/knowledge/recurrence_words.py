"""Recurrence in words: plain-English phrases as RRULEs, and what is wrong with a rule, in words.

People and models say "every weekday", not ``FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR``. A handful of
phrases whose meaning is not in doubt are translated (:func:`rule_from_words`) and stored as
the RRULE, which the result shows; anything else is refused with what to send instead
(:func:`check_parts` for a rule, :func:`rule_from_words` for words), e.g.:

    daily, every day                         FREQ=DAILY
    weekly, monthly, yearly (annually)       FREQ=WEEKLY / MONTHLY / YEARLY
    every weekday, weekdays                  FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR
    every weekend                            FREQ=WEEKLY;BYDAY=SA,SU
    every 2 weeks, every other week,
    fortnightly                              FREQ=WEEKLY;INTERVAL=2
    every 3 days / months / years            FREQ=DAILY;INTERVAL=3, ...
    every monday and thursday, mondays       FREQ=WEEKLY;BYDAY=MO,TH
    every other friday                       FREQ=WEEKLY;INTERVAL=2;BYDAY=FR
    monthly on the 15th, ... the last day    FREQ=MONTHLY;BYMONTHDAY=15 / -1

"biweekly" (every two weeks, or twice a week?) and times of day (tasks recur by date) are
refused, saying which rule to use.
"""

from __future__ import annotations

import re

from fable_core.tools.suggest import closest, hint

__all__ = ["check_parts", "looks_like_rule", "rule_from_words"]

_DAYS = {"monday": "MO", "tuesday": "TU", "wednesday": "WE", "thursday": "TH", "friday": "FR",
         "saturday": "SA", "sunday": "SU"}
_SHORT_DAYS = {"mon": "MO", "tue": "TU", "tues": "TU", "wed": "WE", "thu": "TH", "thur": "TH", "thurs": "TH",
               "fri": "FR", "sat": "SA", "sun": "SU"}
_ORDER = list(_DAYS.values())
_WEEKDAYS = "MO,TU,WE,TH,FR"
_UNITS = {"day": "DAILY", "week": "WEEKLY", "month": "MONTHLY", "year": "YEARLY"}
_ADVERBS = {"daily": "FREQ=DAILY", "weekly": "FREQ=WEEKLY", "monthly": "FREQ=MONTHLY", "yearly": "FREQ=YEARLY",
            "annually": "FREQ=YEARLY", "fortnightly": "FREQ=WEEKLY;INTERVAL=2",
            "weekdays": f"FREQ=WEEKLY;BYDAY={_WEEKDAYS}", "weekends": "FREQ=WEEKLY;BYDAY=SA,SU"}
_NUMBERS = {"other": 2, "second": 2, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_AMBIGUOUS = {
    "biweekly": "every two weeks is 'every 2 weeks' (FREQ=WEEKLY;INTERVAL=2); twice a week is e.g. "
                "'every monday and thursday' (FREQ=WEEKLY;BYDAY=MO,TH)",
    "bimonthly": "every two months is 'every 2 months' (FREQ=MONTHLY;INTERVAL=2); twice a month is e.g. "
                 "FREQ=MONTHLY;BYMONTHDAY=1,15",
    "twice a week": "name the days, e.g. 'every monday and thursday' (FREQ=WEEKLY;BYDAY=MO,TH)",
    "twice a month": "name the days of the month, e.g. FREQ=MONTHLY;BYMONTHDAY=1,15",
}
_TIME = re.compile(r"\s*(?:\b(?:at|@)\s*\d[\d:.]*\s*(?:am|pm|h)?|\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b"
                   r"|\b(?:at\s+)?(?:noon|midnight)\b|\bin the (?:morning|afternoon|evening)\b)")
_MONTH_DAY = re.compile(r"^(?:every month|monthly) on the (\d{1,2})(?:st|nd|rd|th)?(?: day)?$")
_LAST_DAY = re.compile(r"^(?:every month|monthly) on the last day$")
_EXAMPLES = ("'daily', 'weekly', 'every weekday', 'every 2 weeks', 'every monday and thursday', "
             "'monthly on the 15th'")


def looks_like_rule(text: str) -> bool:
    """Whether ``text`` is meant as an RRULE (``NAME=VALUE`` parts) rather than words."""
    return "=" in text


def rule_from_words(text: str) -> str:
    """The RRULE for a plain-English recurrence, or ValueError saying what to send instead."""
    said = " ".join(text.lower().replace(",", " , ").split()).strip(" .")
    timed = _TIME.search(said)
    if timed:
        rest = _TIME.sub("", said).strip(" ,")
        instead = _translate(rest)
        use = f": use {rest!r} ({instead})" if instead else f", e.g. {_EXAMPLES}"
        raise ValueError(f"tasks recur by date, not time of day: leave out {timed.group().strip()!r}{use}")
    for phrase, explanation in _AMBIGUOUS.items():
        if phrase in said:
            raise ValueError(f"{text.strip()!r} is ambiguous: {explanation}")
    rule = _translate(said)
    if rule is None:
        raise ValueError(f"{text.strip()!r} is not a recurrence rule: give an RFC 5545 RRULE such as "
                         f"{_example(said)!r}, or words such as {_EXAMPLES}")
    return rule


def _translate(said: str) -> str | None:
    """The RRULE of a normalised phrase, or None when it is not one of the phrases we know."""
    if said in _ADVERBS:
        return _ADVERBS[said]
    if (day := _MONTH_DAY.match(said)) and 1 <= int(day.group(1)) <= 31:
        return f"FREQ=MONTHLY;BYMONTHDAY={int(day.group(1))}"
    if _LAST_DAY.match(said):
        return "FREQ=MONTHLY;BYMONTHDAY=-1"
    words = said.removeprefix("on ").split()
    if words[:1] in (["every"], ["each"]):
        words = words[1:]
    elif words[:1] == ["weekly"] and words[1:2] == ["on"]:
        words = words[2:]
    interval = 1
    if words and (words[0].isdigit() or words[0] in _NUMBERS):
        interval = int(words[0]) if words[0].isdigit() else _NUMBERS[words[0]]
        words = words[1:]
    if not 1 <= interval <= 999 or not words:
        return None
    every = f";INTERVAL={interval}" if interval > 1 else ""
    unit = words[0].removesuffix("s")
    if len(words) == 1 and unit in _UNITS:
        return f"FREQ={_UNITS[unit]}{every}"
    if interval == 1 and (words in (["weekday"], ["weekdays"], ["working", "day"], ["business", "day"])):
        return f"FREQ=WEEKLY;BYDAY={_WEEKDAYS}"
    if interval == 1 and words in (["weekend"], ["weekends"]):
        return "FREQ=WEEKLY;BYDAY=SA,SU"
    days = _days(words)
    return f"FREQ=WEEKLY{every};BYDAY={','.join(days)}" if days else None


def _days(words: list[str]) -> list[str] | None:
    """``monday and thursday`` / ``mon, wed & fri`` / ``mondays`` as BYDAY codes in week order;
    None if any word is something else."""
    found: set[str] = set()
    for word in words:
        if word in (",", "and", "&", "or"):
            continue
        name = word.removesuffix("s") if word.removesuffix("s") in _DAYS else word
        code = _DAYS.get(name) or _SHORT_DAYS.get(name)
        if code is None:
            return None
        found.add(code)
    return [d for d in _ORDER if d in found] or None


def _example(said: str) -> str:
    """An RRULE in the spirit of what was said: its days and unit when it names some."""
    codes = [code for word in said.split() for name, code in (_DAYS | _SHORT_DAYS).items()
             if word.removesuffix("s") == name]
    if codes:
        return f"FREQ=WEEKLY;BYDAY={','.join(d for d in _ORDER if d in codes)}"
    unit = next((freq for word in said.split() for name, freq in _UNITS.items() if word.startswith(name)), "WEEKLY")
    return f"FREQ={unit}" + (";BYDAY=MO" if unit == "WEEKLY" else "")


# --- rules --------------------------------------------------------------------------------------

_NAMES = ("FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYMONTH", "BYSETPOS", "BYYEARDAY",
          "BYWEEKNO", "WKST", "BYWEEKDAY", "BYEASTER", "BYHOUR", "BYMINUTE", "BYSECOND")
_ALIASES = {"FREQUENCY": "FREQ", "DAYS": "BYDAY", "DAY": "BYDAY", "WEEKDAYS": "BYDAY", "BYDAYS": "BYDAY",
            "MONTHDAY": "BYMONTHDAY", "MONTH": "BYMONTH", "REPEAT": "COUNT", "TIMES": "COUNT", "END": "UNTIL"}
_FREQS = ("DAILY", "WEEKLY", "MONTHLY", "YEARLY")
_SUB_DAILY = ("HOURLY", "MINUTELY", "SECONDLY")
_TIME_PARTS = ("BYHOUR", "BYMINUTE", "BYSECOND")
_WEEKDAY = re.compile(r"^(?:[+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$|^(MO|TU|WE|TH|FR|SA|SU)\([+-]?\d{1,2}\)$")
_UNTIL = re.compile(r"^\d{8}(T\d{6})?$")
_EXAMPLE = "FREQ=WEEKLY;BYDAY=MO"


def check_parts(rule: str) -> None:
    """ValueError in words, with the rule to send instead, unless each ``NAME=VALUE`` part of
    ``rule`` (upper case) is one tasks can recur by; whether the whole rule parses and ever
    occurs is :mod:`.recurrence`'s business. Rules of several lines are left to it too."""
    if len(rule.split()) != 1 or ":" in rule:
        return
    parts: dict[str, str] = {}
    for part in filter(None, rule.split(";")):
        name, equals, value = part.partition("=")
        if not equals or not value:
            raise ValueError(f"{part!r} is not NAME=VALUE: write a rule as parts joined by ';', e.g. {_EXAMPLE!r}")
        if name not in _NAMES:
            raise ValueError(f"{name!r} is not part of an RRULE{_name_hint(name)}; its parts are FREQ, INTERVAL, "
                             f"COUNT, UNTIL, BYDAY, BYMONTHDAY, BYMONTH, BYSETPOS, e.g. {_EXAMPLE!r}")
        parts[name] = value
    _check_freq(rule, parts)
    _check_values(parts)
    timed = [name for name in _TIME_PARTS if name in parts]
    if timed:
        rest = ";".join(p for p in rule.split(";") if p and p.partition("=")[0] not in _TIME_PARTS)
        raise ValueError(f"tasks recur by date, not time of day: leave out {', '.join(timed)} "
                         f"(use {rest!r})")


def _name_hint(name: str) -> str:
    alias = _ALIASES.get(name)
    found = hint([alias] if alias else closest(name, _NAMES[:11], n=1))
    return f" ({found})" if found else ""


def _check_freq(rule: str, parts: dict[str, str]) -> None:
    freq = parts.get("FREQ")
    if freq is None:
        raise ValueError(f"a rule needs FREQ=DAILY, WEEKLY, MONTHLY or YEARLY, e.g. {'FREQ=WEEKLY;' + rule!r}")
    if freq in _SUB_DAILY:
        raise ValueError(f"tasks recur at most daily: FREQ={freq} is not possible; use FREQ=DAILY, WEEKLY, "
                         "MONTHLY or YEARLY")
    if freq not in _FREQS:
        said = freq.lower()
        unit = said.removesuffix("s").removesuffix("ly")
        instead = _ADVERBS.get(said) or (f"FREQ={_UNITS[unit]}" if unit in _UNITS else None) or \
            {"biweekly": "FREQ=WEEKLY;INTERVAL=2", "weekday": _ADVERBS["weekdays"]}.get(said, _EXAMPLE)
        raise ValueError(f"FREQ is DAILY, WEEKLY, MONTHLY or YEARLY, not {freq!r}: e.g. {instead!r}")


def _check_values(parts: dict[str, str]) -> None:
    for name in ("INTERVAL", "COUNT"):
        if name in parts and not parts[name].lstrip("-").isdigit():
            raise ValueError(f"{name} takes a whole number, not {parts[name]!r}: e.g. 'FREQ=WEEKLY;{name}=2'")
    if "UNTIL" in parts and not _UNTIL.match(parts["UNTIL"]):
        raise ValueError(f"UNTIL takes a date as YYYYMMDD, not {parts['UNTIL']!r}: e.g. 'FREQ=WEEKLY;UNTIL=20271231'")
    for name in ("BYDAY", "BYWEEKDAY"):
        days = parts.get(name, "").split(",") if name in parts else []
        wrong = [d for d in days if not _WEEKDAY.match(d)]
        if wrong:
            codes = [_DAYS.get(d.lower()) or _SHORT_DAYS.get(d.lower()) for d in days]
            use = ",".join(c for c in codes if c) if all(codes) else "MO,WE"
            raise ValueError(f"BYDAY takes the days MO, TU, WE, TH, FR, SA, SU (1MO: the first Monday), "
                             f"not {wrong[0]!r}: e.g. 'FREQ=WEEKLY;BYDAY={use}'")
