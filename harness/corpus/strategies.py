"""Hypothesis strategies for the generated slice: random tool schemas, valid arguments, tools, scenarios.

Exported strategies:

- :func:`json_schemas` -- random *object* schemas (tool ``parameters``): properties of type string,
  integer, number, boolean, null, array and object, nested up to ``max_depth``, with ``required``,
  ``additionalProperties: false``, optional ``enum`` (strings, integers) and ``anyOf [T, null]``
  (pydantic's ``Optional[T]``). Sizes are small: at most 4 properties, arrays of at most 3 items.
- :func:`arguments_for_schema` -- values valid for a schema built by :func:`json_schemas` (or the curated
  catalog's subset: type, properties, required, items, enum, anyOf). Strings are biased towards quotes,
  commas, braces, brackets, colons, backslashes (also trailing), newlines/CR/tab, control characters,
  unicode (CJK, emoji with ZWJ, RTL, combining marks) and, occasionally, protocol marker text; numbers
  include negatives, zero, floats that round-trip through ``str()`` (every finite Python float does),
  exponents, 64-bit limits and integers up to ``2**70``.
- :func:`tools_and_calls` -- 1-3 tools with distinct random names (with ``-``, ``.``, digits) and 1-3
  calls of them.
- :func:`scenarios` -- :class:`~harness.core.scenarios.Scenario` objects (id ``"gen"``; :mod:`harness.corpus.generated`
  numbers them) with optional prose before/after and optional reasoning.
- :func:`rendered_tool_calls` -- :class:`~harness.core.cases.Case` objects: a scenario rendered through a catalog
  model's real chat template (raw completion ``text``, ``prefix``, ``tools`` and the ``expected`` message).

Use from another project's tests (``parse`` is the parser under test; it must return a
:class:`~harness.core.messages.Message`)::

    from hypothesis import given, settings
    from harness.formats import get_format
    from harness.score.verdicts import score
    from harness.corpus.strategies import arguments_for_schema, rendered_tool_calls

    @settings(max_examples=50, deadline=None)      # rendering through Jinja takes milliseconds
    @given(rendered_tool_calls("gemma-4-e2b"))
    def test_my_parser(case):
        got = parse(case.text, case.tools, case.prefix)
        verdict = score(case, got, get_format(case.format))
        assert verdict.passed, f"{verdict.error_type}: {verdict.detail}"

    SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

    @given(arguments_for_schema(SCHEMA, forbid=('<|"|>',)))
    def test_my_argument_writer(arguments):
        assert read_back(write(arguments)) == arguments

Every strategy takes ``forbid``: a tuple of substrings no generated string (names, keys, values, enum
members, descriptions, prose) may contain -- the format-specific guard, e.g. ``('<|"|>',)`` for Gemma 4
(``FormatSpec.unrepresentable``). :func:`scenarios` forbids ``<|"|>`` by default.

Decisions:

- NaN and infinities are never generated (JSON has no spelling for them).
- ``-0.0`` is never generated: floats are normalised so ``-0.0`` becomes ``0.0``. Python compares
  ``-0.0 == 0.0 == 0``, so a random ``-0.0`` would only test scoring, not parsing; the curated case
  ``edge-number-negative-zero`` covers it deliberately.
- U+0000 and surrogates are never generated (the curated ``edge-string-nul`` covers NUL; surrogates cannot
  be encoded as UTF-8).
- Object keys never contain ``:``, ``,``, braces, quotes or ``=``: some formats write keys bare (Gemma 4)
  and cannot represent them; keys do contain ``-``, ``.``, spaces, digits and non-ASCII letters.

:func:`schema_errors` validates generated arguments with ``jsonschema``.
"""

from __future__ import annotations

import functools
import json
from functools import lru_cache, wraps
from typing import Any

import jsonschema
from hypothesis import strategies as st

from harness.core.errors import UnrepresentableError
from harness.core.messages import ToolCall
from harness.core.scenarios import MARKER_TEXTS, Scenario, make_tool, shape_tags
from harness.formats import get_format
from harness.template.catalog import get_model
from harness.template.render import render_scenario
from harness.template.sources import load_template

Forbid = tuple[str, ...]


def _cached(fn):
    """``lru_cache`` for strategy factories, taking ``forbid`` as any sequence (lists become tuples)."""
    cached = lru_cache(maxsize=None)(fn)

    @wraps(fn)
    def wrapper(*args, **kwargs):
        args = tuple(tuple(a) if isinstance(a, list) else a for a in args)
        kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        return cached(*args, **kwargs)

    return wrapper


# --------------------------------------------------------------------------------------------------------
# Strings
# --------------------------------------------------------------------------------------------------------

_SYNTAX = "\"',:{}[]\\\n\r\t "
# Syntax characters three times over, so about half of the characters drawn are syntax.
_HEAVY_ALPHABET = st.sampled_from(
    list(_SYNTAX) * 3
    + list("abcxyz019=<>|/#$%&*-_.;?!`~")
    + ["\x01", "\x1b", "\x7f", "é", "中", "😀", "\u200d", "ש", "\u0301"]
)
_FRAGMENTS = (
    '"',
    "'",
    "\\",
    ",",
    ":",
    "{",
    "}",
    "[",
    "]",
    "\n",
    "\r\n",
    "\r",
    "\t",
    " ",
    "  ",
    "\\n",
    '\\"',
    "\\\\",
    "a",
    "word",
    "0",
    "-1",
    "1e5",
    "null",
    "None",
    "true",
    "false",
    "{}",
    "[]",
    '{"a": 1}',
    "key: value",
    "é",
    "東京",
    "👨‍👩‍👧",
    "🏳️‍🌈",
    "مرحبا",
    "שלום",
    "e\u0301",
    "\u2028",
    "\u00a0",
    "\x01",
    "\x1b[0m",
    "\x7f",
    'np.genfromtxt("train.csv", delimiter=",")',
    "def f(x):\n    return {'x': x}\n",
)
_MARKER_FRAGMENTS = tuple(MARKER_TEXTS)
_ANY_CHAR = st.characters(codec="utf-8", exclude_characters="\x00")


@_cached
def _index(n: int) -> st.SearchStrategy[int]:
    """``integers(0, n - 1)``, cached: a choice among ``n`` options that shrinks towards the first."""
    return st.integers(0, n - 1)


def _ok(s: str, forbid: Forbid) -> bool:
    return not any(f in s for f in forbid)


def _guard(strategy: st.SearchStrategy[str], forbid: Forbid) -> st.SearchStrategy[str]:
    return strategy.filter(lambda s: _ok(s, forbid)) if forbid else strategy


@_cached
def text_values(forbid: Forbid = (), max_size: int = 24) -> st.SearchStrategy[str]:
    """Argument strings: syntax-heavy characters, fragment mixes (with markers, rarely), any unicode.

    The first branch (syntax-heavy text) is the one hypothesis shrinks towards, so a shrunk failing string
    is short and made of the character that matters (e.g. ``","``).
    """
    fragments = st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=5).map("".join)
    with_marker = st.tuples(
        st.sampled_from(_FRAGMENTS + ("",)), st.sampled_from(_MARKER_FRAGMENTS), st.sampled_from(_FRAGMENTS + ("",))
    ).map("".join)
    strategy = st.one_of(
        st.text(_HEAVY_ALPHABET, max_size=max_size),
        fragments,
        st.text(_ANY_CHAR, max_size=max_size),
        st.sampled_from(("", " ", "\\", "123", "true", "null", "None", "{}", "[1,2]", "  padded  ")),
        with_marker,
    )
    return _guard(strategy, forbid)


_PROSE_WORDS = (
    "Let",
    "me",
    "check",
    "that",
    "for",
    "you.",
    "Sure,",
    "calling",
    "the",
    "tool",
    "now:",
    "done.",
    "Here",
    "are",
    "results",
    "(2",
    "items)",
    "it's",
    '"quoted"',
    "naïve",
    "東京",
    "🙂",
    "e.g.",
    "a,b",
    "50%",
)


@_cached
def prose(forbid: Forbid = ()) -> st.SearchStrategy[str]:
    """Short natural-looking prose for content/reasoning: words, punctuation, a newline at most.

    No markers and no braces, so a correct parser can keep it as content; never empty, never only spaces.
    """
    sentence = st.lists(st.sampled_from(_PROSE_WORDS), min_size=1, max_size=8).map(" ".join)
    strategy = st.lists(sentence, min_size=1, max_size=2).map("\n".join)
    return _guard(strategy, forbid)


# --------------------------------------------------------------------------------------------------------
# Names and keys
# --------------------------------------------------------------------------------------------------------

_PLAIN_KEYS = ("query", "path", "city", "2fa", "limit", "id", "x", "content", "名前", "sort_by", "ID")
_ODD_KEYS = ("max-results", "a.b", "first name")
_PLAIN_TOOLS = ("search", "get_weather", "get_v2", "run_python", "write_file")
_ODD_TOOLS = ("manim-video", "web.search", "fs.read-file2")


@_cached
def keys(forbid: Forbid = ()) -> st.SearchStrategy[str]:
    """Object keys: mostly identifiers (realistic, random ``[a-z][a-z0-9_]*``, leading digits, non-ASCII
    letters); about one draw in eight is odd: ``-``, ``.`` or an inner space (the curated slice covers those
    shapes one by one, so they should not dominate the generated slice)."""
    plain = st.one_of(
        st.sampled_from(_PLAIN_KEYS),
        st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
        st.from_regex(r"[0-9][a-z0-9]{0,3}", fullmatch=True),
    )
    odd = st.one_of(
        st.sampled_from(_ODD_KEYS), st.from_regex(r"[a-z][a-z0-9]{0,5}([-. ][a-z0-9]{1,5}){1,2}", fullmatch=True)
    )
    return _guard(_one_in_eight(odd, plain), forbid)


def _one_in_eight(rare: st.SearchStrategy, common: st.SearchStrategy) -> st.SearchStrategy:
    """``rare`` about one draw in eight, else ``common`` (shrinks towards ``common``)."""
    return st.integers(0, 7).flatmap(lambda i: rare if i == 7 else common)


@_cached
def tool_names(forbid: Forbid = ()) -> st.SearchStrategy[str]:
    """Tool names: mostly plain identifiers (realistic or random ``[a-z][a-z0-9_]*``); about one draw in
    eight is an odd name joined with ``-`` or ``.`` (the curated slice covers those shapes one by one, so
    they should not dominate the generated slice)."""
    plain = st.one_of(st.sampled_from(_PLAIN_TOOLS), st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True))
    odd = st.one_of(
        st.sampled_from(_ODD_TOOLS), st.from_regex(r"[a-z][a-z0-9_]{0,8}([-.][a-z0-9_]{1,6}){1,2}", fullmatch=True)
    )
    return _guard(_one_in_eight(odd, plain), forbid)


# --------------------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------------------


def _nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


@_cached
def _leaf_schemas(forbid: Forbid) -> st.SearchStrategy[dict]:
    """Scalar schemas; plain strings weigh most, enums are a quarter of the draws."""
    plain = st.sampled_from(("string", "string", "integer", "number", "string", "boolean", "null")).map(
        lambda t: {"type": t}
    )
    string_enum = st.lists(text_values(forbid, max_size=8), min_size=1, max_size=3, unique=True).map(
        lambda e: {"type": "string", "enum": e}
    )
    int_enum = st.lists(st.integers(-5, 100), min_size=1, max_size=3, unique=True).map(
        lambda e: {"type": "integer", "enum": e}
    )

    @st.composite
    def build(draw):
        roll = draw(_index(8))
        if roll < 6:
            return draw(plain)
        return draw(string_enum if roll == 6 else int_enum)

    return build()


def _object_schema(
    prop: st.SearchStrategy[dict], forbid: Forbid, max_properties: int, empty_one_in: int
) -> st.SearchStrategy[dict]:
    """Object schemas with 1-``max_properties`` properties, or none once in ``empty_one_in`` draws;
    each property is required with probability 3/4."""
    key_strategy = keys(forbid)

    @st.composite
    def build(draw):
        # the simplest draw (all zeros) is one required property; empty is the last choice
        count = 0 if draw(_index(empty_one_in)) == empty_one_in - 1 else 1 + draw(_index(max_properties))
        props: dict[str, dict] = {}
        for _ in range(count):
            k = draw(key_strategy)
            if k not in props:
                props[k] = draw(prop)
        required = [k for k in props if draw(_index(4)) < 3]
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}

    return build()


@_cached
def _property_schemas(depth: int, forbid: Forbid, max_properties: int) -> st.SearchStrategy[dict]:
    """Property schemas: 6/10 scalar, 2/10 array, 2/10 object (while ``depth`` > 0); one in five is made
    nullable as ``anyOf [T, null]``."""
    leaf = _leaf_schemas(forbid)
    if depth > 0:
        inner = _property_schemas(depth - 1, forbid, max_properties)
        obj = _object_schema(inner, forbid, max_properties, empty_one_in=6)

    @st.composite
    def build(draw):
        roll = draw(_index(10)) if depth > 0 else 0
        if roll < 6:
            schema = draw(leaf)
        elif roll < 8:
            schema = {"type": "array", "items": draw(inner)}
        else:
            schema = draw(obj)
        if schema.get("type") != "null" and draw(_index(5)) == 4:
            schema = _nullable(schema)
        return schema

    return build()


@_cached
def json_schemas(max_depth: int = 2, max_properties: int = 4, forbid: Forbid = ()) -> st.SearchStrategy[dict]:
    """Random tool ``parameters`` schemas: an object whose properties nest up to ``max_depth`` levels.

    Shape: ``{"type": "object", "properties": {...}, "required": [...], "additionalProperties": false}``;
    property schemas are leaves (``string``/``integer``/``number``/``boolean``/``null``, string or
    integer ``enum``), ``{"type": "array", "items": ...}``, nested objects, or ``{"anyOf": [T, null]}``.
    About one schema in ten has no properties (a zero-argument tool); nested objects may be empty too.
    """
    return _object_schema(_property_schemas(max_depth, forbid, max_properties), forbid, max_properties, empty_one_in=16)


# --------------------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------------------

_SPECIAL_INTS = (0, -1, 1, 2**31 - 1, -(2**31), 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64, 10**30)
_SPECIAL_FLOATS = (
    0.5,
    -2.25,
    0.1,
    1e-07,
    6.02e23,
    1e16,
    3.14159,
    -1.5e-300,
    5e-324,
    1.7976931348623157e308,
    0.30000000000000004,
    100.0,
    1.0,
)


@_cached
def integers() -> st.SearchStrategy[int]:
    """Small, special (32/53/63/64-bit limits, 10**30) and large (up to 2**70) integers."""
    return st.one_of(st.integers(-1000, 1000), st.sampled_from(_SPECIAL_INTS), st.integers(-(2**70), 2**70))


def _no_negative_zero(x: float) -> float:
    return 0.0 if x == 0 else x


@_cached
def floats() -> st.SearchStrategy[float]:
    """Finite floats (no NaN/inf), ``-0.0`` normalised to ``0.0``; special values and the whole range."""
    return st.one_of(
        st.sampled_from(_SPECIAL_FLOATS),
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
        st.floats(allow_nan=False, allow_infinity=False),
    ).map(_no_negative_zero)


@_cached
def _numbers() -> st.SearchStrategy[float | int]:
    return st.one_of(floats(), st.integers(-1000, 1000))


_MAX_ITEMS = 3


def _draw_value(draw, schema: dict, forbid: Forbid) -> Any:
    """Draw one value for ``schema`` from cached primitive strategies (no per-schema strategy objects,
    which would cost more to build and validate than to draw from)."""
    if "enum" in schema:
        return schema["enum"][draw(_index(len(schema["enum"])))]
    if "anyOf" in schema:
        return _draw_value(draw, schema["anyOf"][draw(_index(len(schema["anyOf"])))], forbid)
    kind = schema.get("type")
    if kind == "string":
        return draw(text_values(forbid))
    if kind == "integer":
        return draw(integers())
    if kind == "number":
        return draw(_numbers())
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        items = schema.get("items", {"type": "string"})
        return [_draw_value(draw, items, forbid) for _ in range(draw(_index(_MAX_ITEMS + 1)))]
    if kind == "object":
        required = set(schema.get("required", []))
        out = {}
        for k, s in schema.get("properties", {}).items():
            if k in required or draw(_index(4)) < 3:  # optional keys present 3 times in 4
                out[k] = _draw_value(draw, s, forbid)
        return out
    raise ValueError(f"unsupported schema for argument generation: {schema!r}")


def arguments_for_schema(schema: dict, forbid: Forbid = ()) -> st.SearchStrategy[Any]:
    """Values valid for ``schema`` (JSON-schema subset: type, properties, required, items, enum, anyOf).

    Objects always hold their required keys and any subset of the optional ones, in the schema's property
    order; arrays hold 0-3 items. ``number`` draws floats and, sometimes, integers. Raises ``ValueError``
    (when drawn) for an unsupported schema, e.g. a type list or ``$ref``.
    """
    forbid = tuple(forbid)

    @st.composite
    def values(draw):
        return _draw_value(draw, schema, forbid)

    return values()


# --------------------------------------------------------------------------------------------------------
# Tools, calls, scenarios
# --------------------------------------------------------------------------------------------------------


@_cached
def _tool_name_lists(forbid: Forbid, max_tools: int) -> st.SearchStrategy[list[str]]:
    return st.lists(tool_names(forbid), min_size=1, max_size=max_tools, unique=True)


def tools_and_calls(
    forbid: Forbid = (), max_tools: int = 3, max_calls: int = 3
) -> st.SearchStrategy[tuple[list, list]]:
    """``(tools, calls)``: 1-``max_tools`` OpenAI-style tools with distinct names and random parameter
    schemas, and 1-``max_calls`` :class:`~harness.core.messages.ToolCall` of them with valid arguments."""
    forbid = tuple(forbid)

    @st.composite
    def build(draw):
        names = draw(_tool_name_lists(forbid, max_tools))
        tools = [make_tool(n, draw(json_schemas(forbid=forbid)), f"Generated tool {n}.") for n in names]
        n_calls = 1 + draw(_index(max_calls))
        calls = []
        for _ in range(n_calls):
            i = draw(_index(len(tools)))
            calls.append(
                ToolCall(name=names[i], arguments=_draw_value(draw, tools[i]["function"]["parameters"], forbid))
            )
        return tools, calls

    return build()


def scenarios(forbid: Forbid = ('<|"|>',)) -> st.SearchStrategy[Scenario]:
    """Random :class:`~harness.core.scenarios.Scenario`: tools and calls, optional prose before and after the calls
    and optional reasoning. ``id`` is ``"gen"`` and ``tags`` empty; :mod:`harness.corpus.generated` fills both."""
    forbid = tuple(forbid)
    optional_prose = st.one_of(st.just(""), prose(forbid))
    optional_reasoning = st.one_of(st.none(), prose(forbid))
    pairs = tools_and_calls(forbid)

    @st.composite
    def build(draw):
        tools, calls = draw(pairs)
        before = draw(optional_prose)
        after = draw(optional_prose)
        reasoning = draw(optional_reasoning)
        return Scenario(
            id="gen", tools=tools, calls=calls, content_before=before, content_after=after, reasoning=reasoning
        )

    return build()


# --------------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)


def schema_errors(value: Any, schema: dict) -> list[str]:
    """Where ``value`` breaks the JSON ``schema`` (validated with ``jsonschema``, Draft 2020-12 by default);
    empty when valid. Each message is ``<JSON path>: <jsonschema message>``."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    return [f"{error.json_path}: {error.message}" for error in validator.iter_errors(value)]


# --------------------------------------------------------------------------------------------------------
# Rendered cases (for other projects' tests)
# --------------------------------------------------------------------------------------------------------


@functools.cache
def _template_and_format(model: str):

    return load_template(model), get_format(get_model(model).format)


def rendered_tool_calls(model: str = "gemma-4-e2b", forbid: Forbid = ()) -> st.SearchStrategy:
    """:class:`~harness.core.cases.Case` objects: a random :func:`scenarios` draw rendered through ``model``'s real
    chat template (:func:`harness.template.render.render_scenario`, offline template of the catalog row).

    ``case.text`` is the completion a model would generate, ``case.prefix`` what the prompt pre-filled,
    ``case.tools`` the declarations and ``case.expected`` the message a correct parser returns (compare with
    :func:`harness.score.verdicts.score`, which applies the project's content and number conventions). Strings
    never contain the format's ``FormatSpec.unrepresentable`` substrings nor ``forbid``; scenarios the
    template cannot write (e.g. Harmony's second call) are rejected (``hypothesis.reject``), so formats that
    drop much may need ``suppress_health_check=[HealthCheck.filter_too_much]``. Ids are ``"gen"``, slice
    ``"generated"``, tags the shapes present. The template is loaded once per model when the strategy is
    built: raises :class:`~harness.core.errors.UnknownModelError` or
    :class:`~harness.core.errors.TemplateNotFoundError` (FunctionGemma has no offline template).
    """
    from hypothesis import reject

    template, fmt = _template_and_format(model)
    source = scenarios(forbid=tuple(fmt.unrepresentable) + tuple(forbid))

    @st.composite
    def build(draw):
        scenario = draw(source)
        scenario.tags = shape_tags(scenario)
        try:
            return render_scenario(template, scenario, fmt, slice="generated")
        except UnrepresentableError:
            reject()

    return build()
