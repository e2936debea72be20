"""The one registry of finding codes: every ``BGCnnn`` bgc reports, with its default severity,
its one-line summary and the docs section that explains it.

A code is a promise to users: CI dashboards key dismissals on it (SARIF ``ruleId``) and people
search for it. So a code is defined once, here, and everything else refers to it by name —
emitters (``Finding(codes.ALLOW_SHADOWED, ...)``, ``PolicyError(..., code=codes.BAD_PATTERN)``),
SARIF rule metadata (:mod:`bgc.app.render.sarif`) and the docs' table (docs/codes.md, checked
against this module by tests/test_codes.py, which also refuses a code spelled as a bare string
anywhere else in bgc). Defining a code twice fails at import.

This module imports nothing of bgc, so every layer may use it.

Ranges (docs/codes.md):

- ``BGC0xx`` a policy or another input that cannot be used (exit 2)
- ``BGC1xx`` lints of a policy that loads
- ``BGC2xx`` expectations: inline ``expect`` (20x), policy tests (21x), recorded orders (22x)
- ``BGC3xx`` reserved: ``bgc diff`` and ``bgc check --baseline``
- ``BGC4xx`` reserved: deciding tool calls and agent hooks (400–449), shell commands and
  ``bgc import`` (450–499)
- ``BGC5xx`` reserved: the kernel (tokens, attenuation, authorize, approvals, nonces)
- ``BGC6xx`` formatting
- ``BGC7xx`` compile results (a request not granted as asked, a call not covered)
"""

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"
NOTE = "note"


@dataclass(frozen=True, slots=True)
class Code:
    """One finding code. ``severity`` is its default level (``error``, ``warning`` or ``note``;
    compile results are errors at or above ``--fail-on`` and notes below it). ``doc`` is the
    docs page and section that explain it, as ``file.md#anchor`` under docs/."""

    id: str
    severity: str
    summary: str
    doc: str


@dataclass(frozen=True, slots=True)
class Range:
    """A block of codes given to one part of bgc, including blocks reserved for work to come."""

    first: int
    last: int
    owner: str


RANGES: tuple[Range, ...] = (
    Range(0, 99, "a policy or another input that cannot be used (exit 2)"),
    Range(100, 199, "lints of a policy that loads"),
    Range(200, 209, "inline `expect` lines"),
    Range(210, 219, "policy tests (`*.bgt.yaml`)"),
    Range(220, 229, "recorded expectations of work orders"),
    Range(300, 399, "reserved: `bgc diff` and `bgc check --baseline`"),
    Range(400, 449, "reserved: deciding tool calls and agent hooks"),
    Range(450, 499, "reserved: shell commands and `bgc import`"),
    Range(500, 599, "reserved: the kernel (tokens, attenuation, authorize, approvals, nonces)"),
    Range(600, 699, "formatting (`bgc fmt --check`)"),
    Range(700, 799, "compile results (`bgc compile --format sarif|github`)"),
)
"""Every block of codes and who owns it (docs/codes.md shows them)."""

CODES: dict[str, Code] = {}
"""Every code by id, in the order defined (ids ascending)."""


def _code(id: str, severity: str, summary: str, doc: str) -> str:
    """Register one code and return its id, which is what findings and errors carry."""
    if id in CODES:
        raise ValueError(f"finding code {id} is defined twice")
    number = int(id.removeprefix("BGC"))
    if not any(block.first <= number <= block.last for block in RANGES):
        raise ValueError(f"finding code {id} lies in no range")
    CODES[id] = Code(id, severity, summary, doc)
    return id


_ERRORS = "policy-language.md#errors-the-policy-does-not-load-exit-2"
_LINTS = "policy-language.md#lints-and-expects-exit-1"

# --- BGC0xx: input that cannot be used ------------------------------------------------------------

SYNTAX = _code("BGC001", ERROR, "syntax error: the text does not follow the grammar", _ERRORS)
BAD_ATOM = _code(
    "BGC002", ERROR, "malformed atom: not `resource:action:pattern`, or a bad resource/action name", _ERRORS
)
BAD_PATTERN = _code(
    "BGC003",
    ERROR,
    "malformed pattern (unclosed `[`, trailing `\\`, empty, ...) or one beyond the size bounds",
    _ERRORS,
)
BAD_STRING = _code("BGC004", ERROR, "bad string: unknown escape or empty where text is required", _ERRORS)
UNKNOWN_FIELD = _code("BGC005", ERROR, "unknown condition field", _ERRORS)
BAD_PLACEHOLDER = _code("BGC006", ERROR, "bad tool template placeholder (`{name}`)", _ERRORS)
BAD_APPROVALS = _code(
    "BGC007", ERROR, "bad approvals (count below 1 or above the number of names, repeated name)", _ERRORS
)
MISPLACED_CLAUSE = _code(
    "BGC008", ERROR, "misplaced or repeated clause (`when`, `because`, `approvals`, `in mode`, `in sandbox`)", _ERRORS
)
BAD_EXPECT = _code("BGC009", ERROR, "bad inline expect (pattern instead of a value, context not `==`/`and`)", _ERRORS)
BAD_INCLUDE = _code(
    "BGC010", ERROR, "bad include (missing file, absolute path, outside the root policy's directory, cycle)", _ERRORS
)
UNKNOWN_MODE = _code("BGC011", ERROR, "unknown mode", _ERRORS)
DUPLICATE_MODE = _code("BGC012", ERROR, "duplicate mode or second `default mode`", _ERRORS)
DUPLICATE_TOOL = _code("BGC013", ERROR, "duplicate tool declaration", _ERRORS)
CONFLICTING_FILESYSTEM = _code("BGC014", ERROR, "conflicting `filesystem` declarations", _ERRORS)
UNREADABLE_POLICY = _code("BGC015", ERROR, "unreadable policy file (missing, not UTF-8, too large)", _ERRORS)
BAD_NAME = _code("BGC016", ERROR, "bad name (tool or mode)", _ERRORS)
HIDDEN_CHARACTER = _code(
    "BGC017",
    ERROR,
    "a character a reader may not see as bgc reads it (line break other than a newline, "
    "bidirectional control, invisible format or control character)",
    _ERRORS,
)
FALLBACK_ALLOW = _code(
    "BGC018",
    ERROR,
    "`otherwise allow`: a fallback may ask or deny, never allow (write `allow`: it already gives way to asks and denies)",
    _ERRORS,
)
UNREADABLE_FILE = _code(
    "BGC099",
    ERROR,
    "a test file, work order or recording could not be read or is malformed",
    "ci.md#bgc-check-over-a-repository",
)

# --- BGC1xx: lints --------------------------------------------------------------------------------

ALLOW_SHADOWED = _code(
    "BGC101", WARNING, "an allow pattern that can never take effect: it lies entirely inside ask/deny rules", _LINTS
)
ASK_SHADOWED = _code(
    "BGC102", WARNING, "an ask pattern that can never take effect: it lies entirely inside deny rules", _LINTS
)
DIRECTORY_ITSELF = _code(
    "BGC103", WARNING, "`deny X/**` without `X` itself: the directory itself stays writable", _LINTS
)
WRITE_EVERYWHERE = _code("BGC104", WARNING, "an allow of `/**` on write: everything becomes writable", _LINTS)
ATOM_AS_PATTERN = _code(
    "BGC105", WARNING, "a second pattern that looks like an atom (`fs:read:/x` after a `,`)", _LINTS
)
ALLOW_ON_CALL_TOOL = _code(
    "BGC106",
    WARNING,
    "an allow conditioned on `call.tool`: requests are compiled without a call, so it grants nothing",
    _LINTS,
)
NEVER_MATCHES = _code(
    "BGC107",
    WARNING,
    "a pattern that can never match a normalised value (fs: relative, `//`, trailing `/`; "
    "net: not a canonical URL; others: a segment a URL parser reads as `.`/`..`)",
    _LINTS,
)
LINT_UNDECIDED = _code(
    "BGC109", NOTE, "a lint could not decide (pattern algebra bound hit); the rule was not checked", _LINTS
)
UNKNOWN_TARGET = _code(
    "BGC110",
    WARNING,
    "a deny or ask on a resource:action that no tool needs and no allow or ask mentions: it never takes effect",
    _LINTS,
)
PROPOSER_CHOSEN_GRANT = _code(
    "BGC111",
    WARNING,
    "an allow whose condition can hold on fields the proposer writes (intent.kind, origin.model)",
    _LINTS,
)
HOST_LABEL_WILDCARD = _code(
    "BGC112",
    WARNING,
    "an allow whose URL host has a wildcard inside a label (`*example.com` also matches `evilexample.com`)",
    _LINTS,
)
FALLBACK_WITHOUT_EFFECT = _code(
    "BGC113",
    WARNING,
    "a fallback (`otherwise ask`/`otherwise deny`) pattern that can never take effect: other rules decide everything it matches",
    _LINTS,
)

UNUSED_SUPPRESSION = _code(
    "BGC120",
    WARNING,
    "a `# bgc: ignore[...]` that suppresses nothing: no such finding on its line, no code named, or a code "
    "that is not a lint",
    "policy-language.md#suppressing-a-lint-on-one-line",
)

# --- BGC2xx: expectations -------------------------------------------------------------------------

EXPECT_FAILED = _code("BGC201", ERROR, "an inline expect gave a different effect", _LINTS)
EXPECT_UNDECIDED = _code(
    "BGC202", ERROR, "an inline expect could not be decided (the compiler reported an error)", _LINTS
)
TEST_VERDICT = _code("BGC211", ERROR, "a policy test's expected verdict did not hold", "ci.md#policy-tests")
TEST_CALLS = _code("BGC212", ERROR, "a policy test's expected call coverage did not hold", "ci.md#policy-tests")
TEST_PLAN = _code("BGC213", ERROR, "a policy test's expected plan excerpt did not match", "ci.md#policy-tests")
RECORDING_DIFFERS = _code(
    "BGC221", ERROR, "an order's result differs from its recorded expectation", "ci.md#recorded-expectations"
)
RECORDING_MISSING = _code("BGC222", ERROR, "an order has no recorded expectation", "ci.md#recorded-expectations")
RECORDING_STALE = _code("BGC223", ERROR, "a recorded expectation belongs to no order", "ci.md#recorded-expectations")

# --- BGC3xx: policy diffs -------------------------------------------------------------------------

_DIFF = "diff.md#what-counts-as-new-access"
NEW_ACCESS = _code(
    "BGC310",
    ERROR,
    "a policy change grants new access (a value moves from deny to allow, ask to allow or deny to ask)",
    _DIFF,
)
REMOVED_ACCESS = _code("BGC311", NOTE, "a policy change removes access", _DIFF)
TOOL_NEEDS_LESS = _code(
    "BGC312", ERROR, "a tool declaration changed so that its calls may need less", "diff.md#tool-declarations"
)
TOOL_NEEDS_MORE = _code(
    "BGC313",
    NOTE,
    "a tool declaration changed so that its calls need more, or the tool is gone",
    "diff.md#tool-declarations",
)
DIFF_UNDECIDED = _code(
    "BGC314",
    ERROR,
    "a policy difference could not be decided within the work bound (counts as new access)",
    "diff.md#bounds",
)
NO_BASELINE = _code("BGC315", NOTE, "a policy is not in the baseline revision: nothing to compare it with", _DIFF)

# --- BGC5xx: the kernel -----------------------------------------------------------------------------

_KERNEL = "kernel.md#codes"
MESSAGE_UNREADABLE = _code(
    "BGC500", ERROR, "not one AgentMessage (not JSON, not a variant, a duplicate key, NaN, a line over 1 MiB)", _KERNEL
)
MESSAGE_UNKNOWN_FIELD = _code("BGC501", ERROR, "a field the message schema does not have, at any level", _KERNEL)
MESSAGE_BAD_FIELD = _code(
    "BGC502", ERROR, "a missing field or a field of the wrong type, anywhere in the message", _KERNEL
)
APPROVAL_TOKEN_AND_TOKENS = _code("BGC503", ERROR, "approval_token together with approval_tokens", _KERNEL)
APPROVAL_TOKENS_WITHOUT_PROPOSAL = _code(
    "BGC504", ERROR, "approval_tokens without a threshold_approval_proposal", _KERNEL
)
PROPOSAL_WITHOUT_APPROVAL_TOKENS = _code(
    "BGC505", ERROR, "a threshold_approval_proposal without approval_tokens", _KERNEL
)
APPROVAL_WITHOUT_INTENT = _code("BGC506", ERROR, "an approval without governed_intent", _KERNEL)
BAD_THRESHOLD = _code("BGC507", ERROR, "a threshold of zero or larger than its approver list", _KERNEL)
APPROVER_TWICE = _code("BGC508", ERROR, "the same approver twice", _KERNEL)
NONCE_OF_ANOTHER_REQUEST = _code("BGC509", ERROR, "an execution nonce bound to another request", _KERNEL)
TOKEN_MALFORMED = _code("BGC510", ERROR, "a malformed capability token", _KERNEL)
TOKEN_SIGNATURE = _code("BGC511", ERROR, "a token signature or proof that does not verify", _KERNEL)
TOKEN_ISSUER_UNTRUSTED = _code("BGC512", ERROR, "a token whose issuer is not trusted", _KERNEL)
TOKEN_EXPIRED = _code("BGC513", ERROR, "an expired token", _KERNEL)
TOKEN_NOT_YET_VALID = _code("BGC514", ERROR, "a token not yet valid", _KERNEL)
SERVER_NOT_IN_AUDIENCE = _code("BGC515", ERROR, "a server not in the token's audience", _KERNEL)
TOOL_NOT_IN_SCOPE = _code("BGC516", ERROR, "a tool (on its server) not in the token's scope", _KERNEL)
PARAMS_DO_NOT_FILL = _code("BGC517", ERROR, "params that do not fill the tool's declaration", _KERNEL)
VALUE_REFUSED = _code("BGC518", ERROR, "a value refused by normalisation", _KERNEL)
ATOM_OUTSIDE_GRANTS = _code("BGC519", ERROR, "an atom outside the token's grants", _KERNEL)
ATOM_NEEDS_APPROVAL = _code("BGC520", ERROR, "an atom that needs approval", _KERNEL)
NONCE_MISSING = _code("BGC521", ERROR, "a required execution nonce is missing", _KERNEL)
NONCE_INVALID = _code(
    "BGC522", ERROR, "an execution nonce not this kernel's, out of its lifetime, or not consumable", _KERNEL
)
NONCE_REPLAYED = _code("BGC523", ERROR, "an execution nonce used again (replay)", _KERNEL)
TOKEN_CHAIN_WIDENS = _code(
    "BGC524", ERROR, "a token link not chained to its parent, or wider than it (with a counterexample)", _KERNEL
)
APPROVAL_FOR_ANOTHER_INTENT = _code(
    "BGC525", ERROR, "an approval token whose intent is not the governed intent's permission request", _KERNEL
)
APPROVAL_NOT_BOUND = _code(
    "BGC526", ERROR, "a governed intent that names no permission request of this kernel for this exact call", _KERNEL
)
PROPOSAL_TOO_WEAK = _code("BGC527", ERROR, "a threshold proposal weaker than the rule's approval requirement", _KERNEL)
REQUEST_ENDED = _code("BGC528", ERROR, "a permission request rejected, cancelled, expired or already used", _KERNEL)
LEDGER_UNAVAILABLE = _code(
    "BGC529", ERROR, "an allow that could not be recorded in the ledger (so it is a deny)", _KERNEL
)
AUTHORIZED = _code("BGC530", NOTE, "allowed: every atom is granted", _KERNEL)
HEARTBEAT = _code("BGC531", NOTE, "heartbeat answered", _KERNEL)
PREFLIGHT_NOT_A_CALL = _code("BGC532", ERROR, "preflight of a message that is not a ToolCallRequest", _KERNEL)
CAPABILITIES_LISTED = _code("BGC533", NOTE, "capabilities listed", _KERNEL)
APPROVED_ONCE = _code(
    "BGC534", NOTE, "allowed once: what needed approval was approved by enough trusted people", _KERNEL
)
BAD_TRUST = _code("BGC540", ERROR, "a bad `trust` declaration in a policy", _ERRORS)
APPROVER_NOT_BOUND = _code("BGC541", WARNING, "an approver no `trust approver` binds to a key", _LINTS)
TOKEN_CANNOT_BE_MADE = _code(
    "BGC550", ERROR, "a token that cannot be made as asked (no audience, a non-positive lifetime, a bad atom)", _KERNEL
)

# --- BGC6xx: formatting ---------------------------------------------------------------------------

UNFORMATTED = _code(
    "BGC601",
    ERROR,
    "a policy file is not in the canonical layout (bgc fmt would change it)",
    "ci.md#machine-formats",
)

# --- BGC7xx: compile results ----------------------------------------------------------------------

_COMPILE = "ci.md#machine-formats"
NARROWED = _code("BGC701", ERROR, "a requested atom was narrowed: only part of it is granted", _COMPILE)
ASKED = _code("BGC702", ERROR, "a requested atom awaits human approval", _COMPILE)
DENIED = _code("BGC703", ERROR, "a requested atom was denied", _COMPILE)
CALL_PENDING = _code("BGC704", ERROR, "a proposed tool call awaits approval (pending)", _COMPILE)
CALL_UNCOVERED = _code("BGC705", ERROR, "a proposed tool call is not covered by the plan", _COMPILE)


def summary(code: str) -> str:
    """The one-line meaning of ``code`` (SARIF's ``shortDescription``); the id itself for a code
    this registry does not know, which tests/test_codes.py makes sure never happens."""
    known = CODES.get(code)
    return known.summary if known is not None else code
