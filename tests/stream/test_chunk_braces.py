"""The scan of a chunk's braces (the compiled build's one C loop over its characters) says of
every text what the str methods and regexes of the pure build say."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.stream.files import _braces_scan, _braces_str

# the characters the scan decides on, with some that it only passes over
TEXT = st.text(alphabet=st.sampled_from("{}\n\r\t [(_:#<>.ab\u00e9\U0001f600"), max_size=60)


@settings(max_examples=600, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=10**6))
def test_scan_equals_str_methods(text: str, line: int) -> None:
    assert _braces_scan(text, line) == _braces_str(text, line)


def test_examples() -> None:
    chunk = ':t :p 1 .\n:g {\n :s :p [ :q 1 ] .\n}\n:h\n  {\n}\n'
    # the "{" lines, one "}" each, the line after, alternating, a name above its "{", blank nodes
    assert _braces_scan(chunk, 7) == ([8, 12], 2, 14, True, True, True)
    assert _braces_str(chunk, 7) == ([8, 12], 2, 14, True, True, True)
    for text, want in [("", ([], 0, 1, True, False, False)),
                       ("}{", ([1], 1, 1, False, False, False)),
                       ("{{}}", ([1, 1], 2, 1, False, False, False)),
                       ("_ : x", ([], 0, 1, True, False, False)),
                       ("a_:b", ([], 0, 1, True, False, True)),
                       ("\r\n{", ([2], 0, 2, False, True, False)),
                       ("x \t{", ([1], 0, 1, False, False, False))]:
        assert _braces_scan(text, 1) == want, text
        assert _braces_str(text, 1) == want, text
