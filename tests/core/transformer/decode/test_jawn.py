"""JSON syntax errors in the words of the reference's parser (jawn)."""

from __future__ import annotations

import pytest

from events_manifest._transformer.decode import circe, jawn


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("&&&", "expected json value got '&&&' (line 1, column 1)"),
        ("abcdefghij", "expected json value got 'abcdef...' (line 1, column 1)"),
        ("", "exhausted input"),
        ('{"a":', "exhausted input"),
        ("[1,", "exhausted input"),
        ('"abc', "exhausted input"),
        ("tru", "exhausted input"),
        ("[1,]", "expected json value got ']' (line 1, column 4)"),
        ('{"a" 1}', "expected : got '1}' (line 1, column 6)"),
        ("{a:1}", "expected \" got 'a:1}' (line 1, column 2)"),
        ("[1 2]", "expected ] or , got '2]' (line 1, column 4)"),
        ('{"a":1 "b":2}', "expected } or , got '\"b\":2}' (line 1, column 8)"),
        ('"\\x"', "illegal escape sequence (\\x) got '\\...' (line 1, column 2)"),
        ('"\\u12G4"', "expected valid unicode escape got '\\u12G4...' (line 1, column 2)"),
        ('"a\tb"', "control char (9) in string got '\t...' (line 1, column 3)"),
        ("trux", "expected true got 'trux' (line 1, column 1)"),
        ("nulx", "expected null got 'nulx' (line 1, column 1)"),
        ("1.e5", "expected digit got '1.e5' (line 1, column 1)"),
        ("[-]", "expected digit got '-]' (line 1, column 2)"),
        ("-x", "expected digit got '-x' (line 1, column 1)"),
        ("01", "expected whitespace or eof got '1' (line 1, column 2)"),
        ("[01]", "expected ] or , got '1]' (line 1, column 3)"),
        ("\n\n  &", "expected json value got '&' (line 3, column 3)"),
        ("NaN", "expected json value got 'NaN' (line 1, column 1)"),
        ('{"a":1}}', "expected whitespace or eof got '}' (line 1, column 8)"),
        ('["\U0001f600", x]', "expected json value got 'x]' (line 1, column 8)"),
    ],
)
def test_json_syntax_errors_in_the_reference_parser_s_words(text: str, message: str) -> None:
    """jawn's words, line and column (UTF-16 units: an emoji counts two), where Python's parser
    has its own."""
    assert jawn.error(text) == message
    with pytest.raises(circe.JsonSyntaxError) as raised:
        circe.loads(text)
    assert str(raised.value) == message


def test_jawn_accepts_what_python_accepts() -> None:
    for text in ['{"a":[1,2.5e-3,true,false,null,"x\\u00e9"]}', " 1 ", '"\\ud800"', "[]", "{}"]:
        assert jawn.error(text) is None
