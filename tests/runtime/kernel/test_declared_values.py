"""A value where a declaration names a path, URL or command must fill it: an empty list, a
nested list, a map, null, a boolean or a number with a fraction fills nothing and is refused
(BGC517), never allowed with nothing checked. Generated over every tool the bundled policy
declares and every parameter its declaration names, the other parameters well filled."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bgc.runtime.kernel.authorize import Kernel
from tests.kernel_support import ISSUER, NOW, line, make_token, request
from tests.samples import examples

WELL_FILLED = {
    "fs.read": {"path": "/src/a.py"},
    "fs.list": {"path": "/src/lib"},
    "fs.write": {"path": "/src/a.py"},
    "fs.delete": {"path": "/src/a.py"},
    "fs.move": {"src": "/src/a.py", "dst": "/src/b.py"},
    "shell.run": {"argv0": "pytest"},
}
TOKEN = make_token(tools=tuple(WELL_FILLED))
KERNEL = Kernel([ISSUER.public], clock=lambda: NOW)

unfilled = st.one_of(
    st.just([]),
    st.lists(st.just([]), min_size=1, max_size=2),
    st.lists(st.sampled_from(["/src/a.py", "pytest"]), max_size=2).map(lambda items: [items]),
    st.dictionaries(st.sampled_from(["path", "0"]), st.just("/src/a.py"), max_size=1),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda number: not number.is_integer()),
)


@settings(max_examples=examples(200), deadline=None)
@given(tool=st.sampled_from(sorted(WELL_FILLED)), data=st.data(), value=unfilled)
def test_a_value_that_fills_nothing_is_refused(tool: str, data: Any, value: Any) -> None:
    params = dict(WELL_FILLED[tool])
    spoiled = data.draw(st.sampled_from(sorted(params)))
    params[spoiled] = value
    decision = KERNEL.authorize_line(line(request(TOKEN, tool=tool, params=params)))
    assert (decision.decision, decision.code) == ("deny", "BGC517"), decision
    assert KERNEL.authorize_line(line(request(TOKEN, tool=tool, params=WELL_FILLED[tool]))).decision == "allow"
