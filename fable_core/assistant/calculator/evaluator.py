"""A safe calculator: arithmetic, dates and durations, from the words people (and small models) use.

The text is first rewritten into a Python expression: dates (``2027-03-01``, ``today``) and
durations (``3h 20min``, ``90 days``) become names bound to typed values, phrases become
arithmetic ("days until D" is ``D - today`` in days, "weeks between A and B" is ``B - A`` in
weeks, "15% of 240" is ``15/100*240``, ``^`` is a power). The expression is parsed with
:mod:`ast` and walked over an allow-list of nodes (numbers, names, + - * / // % **, unary
signs, calls of a few math functions): nothing else runs, ``eval`` never does.

Caps make abuse a clear error, never a hang: the text's length, a number's digits, the nesting,
an integer result's size (:data:`MAX_DIGITS`), a power's result estimated before it is computed
(so ``9**9**9**9`` is refused at once), a factorial's argument.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from dateutil.relativedelta import relativedelta

from fable_core.errors import InvalidInput

__all__ = ["MAX_DIGITS", "MAX_LENGTH", "Duration", "Result", "evaluate", "needs_today"]

MAX_LENGTH = 300
MAX_DIGITS = 1000  # of an integer, at any step
MAX_NUMBER = 30  # digits of a number as written
MAX_DEPTH = 30
MAX_FACTORIAL = 400

# unit → (seconds, months) and the name a result is given in
_UNITS: dict[str, tuple[float, int, str]] = {}
for _names, _seconds, _months, _label in (
    (("s", "sec", "secs", "second", "seconds"), 1, 0, "seconds"),
    (("m", "min", "mins", "minute", "minutes"), 60, 0, "minutes"),
    (("h", "hr", "hrs", "hour", "hours"), 3600, 0, "hours"),
    (("d", "day", "days"), 86400, 0, "days"),
    (("w", "wk", "wks", "week", "weeks"), 604800, 0, "weeks"),
    (("mo", "month", "months"), 0, 1, "months"),
    (("y", "yr", "yrs", "year", "years"), 0, 12, "years"),
):
    for _name in _names:
        _UNITS[_name] = (_seconds, _months, _label)
_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_NUM = r"\d+(?:\.\d+)?"
_DATE = r"\d{4}-\d{2}-\d{2}"
_DAY_WORDS = {"today": 0, "tomorrow": 1, "yesterday": -1}


@dataclass(frozen=True)
class Duration:
    """A length of time: seconds, and calendar months (which only dates can add). ``span`` is
    kept when it is the difference of two dates, so it can be said in months too."""

    seconds: float = 0
    months: int = 0
    span: tuple[date, date] | None = None

    def __add__(self, other: Duration) -> Duration:
        return Duration(self.seconds + other.seconds, self.months + other.months)

    def scaled(self, factor: float) -> Duration:
        months = self.months * factor
        if months != int(months):
            raise InvalidInput("months and years can only be counted whole", field="expression")
        return Duration(self.seconds * factor, int(months))

    def in_unit(self, unit: str) -> float:
        seconds, months, label = _UNITS[unit]
        if months:
            return _months_of(self) / months
        if self.months:
            raise InvalidInput(f"months vary in length: cannot say a span of months in {label}",
                               field="expression")
        return self.seconds / seconds


def _months_of(d: Duration) -> float:
    if d.span is None:
        if d.seconds:
            raise InvalidInput("a span of days is said in months only between two dates", field="expression")
        return d.months
    start, end = sorted(d.span)
    delta = relativedelta(end, start)
    whole = delta.years * 12 + delta.months
    rest = (end - (start + relativedelta(months=whole))).days
    sign = 1 if d.span[1] >= d.span[0] else -1
    return sign * (whole + rest / 30.4375)


@dataclass(frozen=True)
class Result:
    expression: str  # what was evaluated, as rewritten
    text: str
    value: float | int | None = None
    date: date | None = None


def needs_today(text: str) -> bool:
    """Whether ``text`` speaks of today (so the caller's today must be looked up)."""
    return bool(re.search(r"\b(today|tomorrow|yesterday|until|till|since|ago)\b", text, re.IGNORECASE))


def evaluate(text: str, today: date | None = None) -> Result:
    """Evaluate ``text``; InvalidInput saying why when it cannot be (or may not be)."""
    if len(text) > MAX_LENGTH:
        raise InvalidInput(f"expression longer than {MAX_LENGTH} characters", field="expression")
    if _nesting(text) > MAX_DEPTH:
        raise InvalidInput(f"nested deeper than {MAX_DEPTH}", field="expression")
    expression, unit = _rewrite(text)
    names: dict[str, Any] = {}
    python = _bind(expression, names, today)
    try:
        tree = ast.parse(python, mode="eval")
    except (SyntaxError, RecursionError, MemoryError) as e:
        raise InvalidInput(f"cannot read {text!r} as a calculation", field="expression") from e
    value = _Walker(names).walk(tree.body, 0)
    return _result(expression if unit is None else f"{expression} in {unit}", value, unit)


def _nesting(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "([":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]":
            depth -= 1
    return deepest


# --- from words to an expression -----------------------------------------------------------------

_PHRASES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"^(?:how many\s+)?({_UNIT})\s+(?:between|from)\s+(.+?)\s+(?:and|to|until)\s+(.+)$", re.IGNORECASE),
     r"(\3) - (\2) in \1"),
    (re.compile(rf"^(?:how many\s+)?({_UNIT})\s+(?:until|till|to)\s+(.+)$", re.IGNORECASE), r"(\2) - today in \1"),
    (re.compile(rf"^(?:how many\s+)?({_UNIT})\s+(?:since|from)\s+(.+)$", re.IGNORECASE), r"today - (\2) in \1"),
    (re.compile(rf"^({_NUM}\s*(?:{_UNIT}))\s+ago$", re.IGNORECASE), r"today - \1"),
]
_LEAD = re.compile(r"^(?:what\s+is|what's|calculate|compute|how\s+much\s+is)\s+", re.IGNORECASE)
_IN_UNIT = re.compile(rf"^(.+?)\s+(?:in|to|as|into)\s+({_UNIT})$", re.IGNORECASE)
_WORDS = [(re.compile(r"\bdivided\s+by\b", re.IGNORECASE), "/"), (re.compile(r"\btimes\b", re.IGNORECASE), "*"),
          (re.compile(r"\bplus\b", re.IGNORECASE), "+"), (re.compile(r"\bminus\b", re.IGNORECASE), "-"),
          (re.compile(r"\bmod\b", re.IGNORECASE), "%"),
          (re.compile(r"(?<=[\d)])\s*[×x]\s*(?=[\d(])", re.IGNORECASE), " * "),
          (re.compile("÷"), "/"), (re.compile(r"\^"), "**"),
          (re.compile(rf"({_NUM})\s*%\s*of\b", re.IGNORECASE), r"(\1/100)*")]


def _rewrite(text: str) -> tuple[str, str | None]:
    """``text`` as an expression, and the unit its result is asked in (if any)."""
    expression = _LEAD.sub("", text.strip().rstrip("?=").strip())
    for pattern, replacement in _PHRASES:
        if pattern.match(expression):
            expression = pattern.sub(replacement, expression)
            break
    unit = None
    if (asked := _IN_UNIT.match(expression)) is not None:
        expression, unit = asked.group(1).strip(), asked.group(2).lower()
    for pattern, replacement in _WORDS:
        expression = pattern.sub(replacement, expression)
    return expression, unit


_DURATION_RUN = re.compile(rf"(?<![\w.])(?:{_NUM}\s*(?:{_UNIT})(?![a-z])\s*)+", re.IGNORECASE)
_DURATION = re.compile(rf"({_NUM})\s*({_UNIT})(?![a-z])", re.IGNORECASE)


def _bind(expression: str, names: dict[str, Any], today: date | None) -> str:
    """The expression in Python, its dates and durations replaced by names bound in ``names``."""
    def bind(value: Any) -> str:
        name = f"_v{len(names)}"
        names[name] = value
        return name

    def a_date(match: re.Match[str]) -> str:
        try:
            return bind(date.fromisoformat(match.group(0)))
        except ValueError as e:
            raise InvalidInput(f"{match.group(0)!r} is not a date", field="expression") from e

    def a_day(match: re.Match[str]) -> str:
        if today is None:
            raise InvalidInput("today is not known here", field="expression")
        return bind(today + timedelta(days=_DAY_WORDS[match.group(0).lower()]))

    def durations(run: re.Match[str]) -> str:
        parts = [f"({number}*{bind(_unit(unit))})" for number, unit in _DURATION.findall(run.group(0))]
        return "(" + "+".join(parts) + ")" + (" " if run.group(0).endswith(" ") else "")

    expression = re.sub(rf"\b{_DATE}\b", a_date, expression)
    expression = re.sub(r"\b(?:today|tomorrow|yesterday)\b", a_day, expression, flags=re.IGNORECASE)
    return _DURATION_RUN.sub(durations, expression)


def _unit(name: str) -> Duration:
    seconds, months, _ = _UNITS[name.lower()]
    return Duration(seconds, months)


# --- the walk ------------------------------------------------------------------------------------

def _check_int(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_DIGITS * 3.33:
        raise InvalidInput(f"result longer than {MAX_DIGITS} digits", field="expression")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput("result too large", field="expression")
    return value


def _factorial(n: Any) -> int:
    if not isinstance(n, int) and not (isinstance(n, float) and n.is_integer()):
        raise InvalidInput("factorial takes a whole number", field="expression")
    if not 0 <= n <= MAX_FACTORIAL:
        raise InvalidInput(f"factorial takes 0 to {MAX_FACTORIAL}", field="expression")
    return math.factorial(int(n))


def _round(x: Any, digits: Any = 0) -> Any:
    if not isinstance(digits, int) or not -20 <= digits <= 20:
        raise InvalidInput("round takes -20 to 20 digits", field="expression")
    return round(x, digits) if digits else round(x)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "abs": abs, "round": _round, "floor": math.floor, "ceil": math.ceil,
    "ln": math.log, "log": math.log, "log10": math.log10, "log2": math.log2, "exp": math.exp,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "degrees": math.degrees, "radians": math.radians, "hypot": math.hypot,
    "min": min, "max": max, "factorial": _factorial,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


class _Walker:
    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names

    def walk(self, node: ast.AST, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise InvalidInput(f"nested deeper than {MAX_DEPTH}", field="expression")
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            if len(str(node.value)) > MAX_NUMBER:
                raise InvalidInput(f"a number longer than {MAX_NUMBER} digits", field="expression")
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.walk(node.operand, depth + 1)
            if isinstance(node.op, ast.UAdd):
                return operand
            return operand.scaled(-1) if isinstance(operand, Duration) else _negate(operand)
        if isinstance(node, ast.BinOp):
            left, right = self.walk(node.left, depth + 1), self.walk(node.right, depth + 1)
            return _check_int(_binary(node.op, left, right))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
                and node.func.id in _FUNCTIONS and len(node.args) <= 10:
            args = [self.walk(arg, depth + 1) for arg in node.args]
            if not all(_is_number(a) for a in args):
                raise InvalidInput(f"{node.func.id} takes numbers", field="expression")
            try:
                return _check_int(_FUNCTIONS[node.func.id](*args))
            except (ValueError, TypeError, OverflowError) as e:
                raise InvalidInput(f"{node.func.id}: {e}", field="expression") from e
        raise InvalidInput(f"{_said(node)} is not something calculate knows", field="expression")

    def _name(self, name: str) -> Any:
        if name in self.names:
            return self.names[name]
        if name.lower() in _CONSTANTS:
            return _CONSTANTS[name.lower()]
        raise InvalidInput(f"unknown name {name!r}", field="expression")


def _said(node: ast.AST) -> str:
    try:
        return repr(ast.unparse(node)[:60])
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
        return type(node).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _negate(value: Any) -> Any:
    if not _is_number(value):
        raise InvalidInput("a date cannot be negative", field="expression")
    return -value


def _binary(op: ast.operator, left: Any, right: Any) -> Any:
    if _is_number(left) and _is_number(right):
        return _arithmetic(op, left, right)
    dated = _dates(op, left, right)
    if dated is not None:
        return dated
    raise InvalidInput(f"cannot {_OP_WORDS.get(type(op), 'combine')} {_kind(left)} and {_kind(right)}",
                       field="expression")


_OP_WORDS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
             ast.Pow: "raise", ast.Mod: "take the remainder of", ast.FloorDiv: "divide"}


def _kind(value: Any) -> str:
    return "a date" if isinstance(value, date) else "a duration" if isinstance(value, Duration) else "a number"


def _arithmetic(op: ast.operator, a: float, b: float) -> Any:
    try:
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        if isinstance(op, ast.FloorDiv):
            return a // b
        if isinstance(op, ast.Mod):
            return a % b
        if isinstance(op, ast.Pow):
            return _power(a, b)
    except ZeroDivisionError as e:
        raise InvalidInput("division by zero", field="expression") from e
    except OverflowError as e:
        raise InvalidInput("result too large", field="expression") from e
    raise InvalidInput(f"operator {type(op).__name__} is not allowed", field="expression")


def _power(a: float, b: float) -> Any:
    """``a ** b``, refused before it is computed when its result would be too long."""
    if a not in (0, 1, -1) and abs(b) > 1:
        digits = abs(b) * math.log10(abs(a)) if a else 0
        if digits > MAX_DIGITS:
            raise InvalidInput(f"result longer than {MAX_DIGITS} digits", field="expression")
    if a == 0 and b < 0:
        raise InvalidInput("division by zero", field="expression")
    result = a ** b
    if isinstance(result, complex):
        raise InvalidInput("no real result (a negative number to a fractional power)", field="expression")
    return result


def _dates(op: ast.operator, left: Any, right: Any) -> Any:
    """Arithmetic of dates and durations; None when these operands do not combine this way."""
    if isinstance(op, ast.Sub) and isinstance(left, date) and isinstance(right, date):
        return Duration((left - right).days * 86400, span=(right, left))
    if isinstance(op, (ast.Add, ast.Sub)) and isinstance(left, date) and isinstance(right, Duration):
        return _shift(left, right if isinstance(op, ast.Add) else right.scaled(-1))
    if isinstance(op, ast.Add) and isinstance(left, Duration) and isinstance(right, date):
        return _shift(right, left)
    if isinstance(left, Duration) and isinstance(right, Duration):
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left + right.scaled(-1)
        if isinstance(op, ast.Div):
            if right.months or left.months:
                raise InvalidInput("months vary in length: divide spans of days or weeks", field="expression")
            if not right.seconds:
                raise InvalidInput("division by zero", field="expression")
            return left.seconds / right.seconds
    if isinstance(op, ast.Mult) and isinstance(left, Duration) and _is_number(right):
        return left.scaled(right)
    if isinstance(op, ast.Mult) and _is_number(left) and isinstance(right, Duration):
        return right.scaled(left)
    if isinstance(op, ast.Div) and isinstance(left, Duration) and _is_number(right):
        if not right:
            raise InvalidInput("division by zero", field="expression")
        return left.scaled(1 / right)
    return None


def _shift(day: date, by: Duration) -> date:
    if by.seconds % 86400:
        raise InvalidInput("a date moves by whole days", field="expression")
    try:
        return day + relativedelta(months=by.months) + timedelta(days=by.seconds // 86400)
    except (OverflowError, ValueError) as e:
        raise InvalidInput("that date is out of range", field="expression") from e


# --- the answer ----------------------------------------------------------------------------------

def _number(value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def _result(expression: str, value: Any, unit: str | None) -> Result:
    if unit is not None:
        if not isinstance(value, Duration):
            raise InvalidInput(f"only a duration can be said in {unit}", field="expression")
        amount = value.in_unit(unit)
        label = _UNITS[unit][2]
        return Result(expression, f"{_number(round(amount, 6))} {label}{_breakdown(value, label)}",
                      value=_plain(round(amount, 6)))
    if isinstance(value, date):
        return Result(expression, f"{value.isoformat()} ({value:%A})", date=value)
    if isinstance(value, Duration):
        return Result(expression, _spoken(value))
    return Result(expression, _number(value), value=_plain(value))


def _plain(value: float | int) -> float | int:
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else value


def _breakdown(value: Duration, label: str) -> str:
    """`` (48 weeks 1 day)`` when a result in weeks or hours is not whole."""
    if value.months or label not in ("weeks", "hours", "days"):
        return ""
    spoken = _spoken(value)
    return "" if spoken.endswith(label) and spoken.count(" ") == 1 else f" ({spoken})"


def _spoken(value: Duration) -> str:
    parts = []
    if value.months:
        years, months = divmod(abs(value.months), 12)
        parts += [f"{years} years"] * bool(years) + [f"{months} months"] * bool(months)
    seconds = abs(value.seconds)
    for size, name in ((604800, "weeks"), (86400, "days"), (3600, "h"), (60, "min"), (1, "s")):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{_number(count)} {name}")
    if seconds:
        parts.append(f"{_number(round(seconds, 3))} s")
    text = " ".join(parts) or "0 s"
    text = re.sub(r"\b1 (weeks|days|years|months)", lambda m: "1 " + m.group(1)[:-1], text)
    return ("-" if value.seconds < 0 or value.months < 0 else "") + text
