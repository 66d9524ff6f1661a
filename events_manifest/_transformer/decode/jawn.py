"""The words of the reference's JSON parser (jawn 1.x, through circe) for text that is not JSON,
which the transformer's bad rows carry after `ParsingFailure: ` and users query in their bad-row
tables: `expected json value got '&&&' (line 1, column 1)`, or `exhausted input`.

`error` walks the text as jawn's string parser walks it (the same states, the same positions) up
to its first error. It is only asked about text Python's parser refused, so it is written for
fidelity, not speed. Positions count UTF-16 code units, as the JVM's strings do.
"""

from __future__ import annotations

CONTEXT = 6
"""How many characters jawn shows from where it stopped."""
EXHAUSTED = "exhausted input"

_WHITESPACE = " \t\r"
_DIGITS = "0123456789"
_HEX = set("0123456789abcdefABCDEF")
_ARRBEG, _OBJBEG, _DATA, _KEY, _SEP, _ARREND, _OBJEND = range(7)


class _Stop(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Exhausted(Exception):
    """jawn's `IndexOutOfBoundsException`, which it reports as `exhausted input`."""


class _Parser:
    def __init__(self, text: str) -> None:
        raw = text.encode("utf-16-le", "surrogatepass")
        self.units = [raw[n] | raw[n + 1] << 8 for n in range(0, len(raw), 2)]
        self.line = 0
        self.start = 0

    def at(self, i: int) -> str:
        if i >= len(self.units):
            raise _Exhausted
        return chr(self.units[i])

    def eof(self, i: int) -> bool:
        return i >= len(self.units)

    def span(self, i: int, j: int) -> str:
        if j > len(self.units):
            raise _Exhausted
        return b"".join(unit.to_bytes(2, "little") for unit in self.units[i:j]).decode("utf-16-le", "surrogatepass")

    def newline(self, i: int) -> None:
        self.line += 1
        self.start = i + 1

    def die(self, i: int, message: str, chars: int = CONTEXT) -> _Stop:
        if self.eof(i):
            got = "eof"
        else:
            offset = 0
            while offset < chars and not self.eof(i + offset):
                offset += 1
            shown = self.span(i, i + offset)
            got = f"'{shown}'" if self.eof(i + offset) else f"'{shown}...'"
        return _Stop(f"{message} got {got} (line {self.line + 1}, column {i - self.start + 1})")

    def parse(self) -> None:
        i = self.top(0)
        while not self.eof(i):
            c = self.at(i)
            if c == "\n":
                self.newline(i)
            elif c not in _WHITESPACE:
                raise self.die(i, "expected whitespace or eof")
            i += 1

    def top(self, i: int) -> int:
        while True:
            c = self.at(i)
            if c in _WHITESPACE:
                i += 1
            elif c == "\n":
                self.newline(i)
                i += 1
            elif c == "[":
                return self.nested(_ARRBEG, i + 1, ["["])
            elif c == "{":
                return self.nested(_OBJBEG, i + 1, ["{"])
            elif c == "-" or c in _DIGITS:
                return self.number(i, at_top=True)
            elif c == '"':
                return self.string(i)
            elif c in "tfn":
                return self.constant(i)
            else:
                raise self.die(i, "expected json value")

    def constant(self, i: int) -> int:
        word = {"t": "true", "f": "false", "n": "null"}[self.at(i)]
        for n in range(1, len(word)):
            if self.at(i + n) != word[n]:
                raise self.die(i, f"expected {word}")
        return i + len(word)

    def number(self, i: int, *, at_top: bool = False) -> int:
        """jawn's `parseNum` (in a structure) and `parseNumSlow` (a value alone, which may end
        the text); both say where the number began."""
        j, c = i, self.at(i)
        if c == "-":
            j += 1
            c = self.at(j)
        if c == "0":
            j += 1
            if at_top and self.eof(j):
                return j
            c = self.at(j)
        elif "1" <= c <= "9":
            while c in _DIGITS:
                j += 1
                if at_top and self.eof(j):
                    return j
                c = self.at(j)
        else:
            raise self.die(i, "expected digit")
        if c == ".":
            j += 1
            c = self.at(j)
            j = self.digits(i, j, c, at_top)
            if j < 0:
                return -j
            c = self.at(j)
        if c in "eE":
            j += 1
            c = self.at(j)
            if c in "+-":
                j += 1
                c = self.at(j)
            j = self.digits(i, j, c, at_top)
            if j < 0:
                return -j
        return j

    def digits(self, i: int, j: int, c: str, at_top: bool) -> int:
        """At least one digit from `j`; where they end (negated when the text ends there)."""
        if c not in _DIGITS:
            raise self.die(i, "expected digit")
        while c in _DIGITS:
            j += 1
            if at_top and self.eof(j):
                return -j
            c = self.at(j)
        return j

    def string(self, i: int) -> int:
        j = i + 1
        c = self.at(j)
        while c != '"':
            if ord(c) < 0x20:
                raise self.die(j, f"control char ({ord(c)}) in string", 1)
            if c == "\\":
                escaped = self.at(j + 1)
                if escaped in 'bfnrt"/\\':
                    j += 2
                elif escaped == "u":
                    code = self.span(j + 2, j + 6)
                    if any(ord(h) >= 128 for h in code):
                        raise _Exhausted  # jawn's table of hex digits has 128 entries
                    if not set(code) <= _HEX:
                        raise self.die(j, "expected valid unicode escape")
                    j += 6
                else:
                    raise self.die(j, f"illegal escape sequence (\\{escaped})", 1)
            else:
                j += 1
            c = self.at(j)
        return j + 1

    def value(self, c: str, i: int, stack: list[str]) -> tuple[int, int]:
        """A value inside an array or object, at `c`: the state after it and where it ends (an
        array or object opened: its first state, just inside it)."""
        if c in "[{":
            stack.append(c)
            return (_ARRBEG if c == "[" else _OBJBEG), i + 1
        if c == "-" or c in _DIGITS:
            i = self.number(i)
        elif c == '"':
            i = self.string(i)
        elif c in "tfn":
            i = self.constant(i)
        else:
            raise self.die(i, "expected json value")
        return (_OBJEND if stack[-1] == "{" else _ARREND), i

    def nested(self, state: int, i: int, stack: list[str]) -> int:
        while True:
            c = self.at(i)
            if c == "\n":
                self.newline(i)
                i += 1
            elif c in _WHITESPACE:
                i += 1
            elif state == _DATA:
                state, i = self.value(c, i, stack)
            elif (c == "]" and state in (_ARREND, _ARRBEG)) or (c == "}" and state in (_OBJEND, _OBJBEG)):
                stack.pop()
                if not stack:
                    return i + 1
                state, i = (_OBJEND if stack[-1] == "{" else _ARREND), i + 1
            elif state == _KEY:
                if c != '"':
                    raise self.die(i, 'expected "')
                state, i = _SEP, self.string(i)
            elif state == _SEP:
                if c != ":":
                    raise self.die(i, "expected :")
                state, i = _DATA, i + 1
            elif state == _ARREND:
                if c != ",":
                    raise self.die(i, "expected ] or ,")
                state, i = _DATA, i + 1
            elif state == _OBJEND:
                if c != ",":
                    raise self.die(i, "expected } or ,")
                state, i = _KEY, i + 1
            else:
                state = _DATA if state == _ARRBEG else _KEY


def error(text: str) -> str | None:
    """jawn's message for `text` (`expected ... got ... (line L, column C)` or `exhausted input`),
    None when jawn would parse it."""
    try:
        _Parser(text).parse()
    except _Stop as e:
        return e.message
    except _Exhausted:
        return EXHAUSTED
    return None
