"""schemathesis hooks for scripts/schemathesis.sh.

Entry tokens. The booking API under `/api/{room}/` declares the `entry_token`
scheme: a token the origin gives an admitted visitor. `EntryToken` gets one
the way a visitor does, through the queue API of the running origin: it
joins `st-line` (capacity and rate large enough that a join is admitted at
once), reads `entry_token` from the status body and sends it as the
`Entry-Token` header on `/api/` operations (whose `room` is `st-line`, see
scripts/schemathesis.toml). A token serves a few seconds of cases, so the
stateful phase can hold seats and confirm or release that hold as the same
visitor; a 401 (a booking ended the session) fetches a new visitor at once.
Cases that drop the header on purpose (the `ignored_auth` check) still go
without it.

Real seats. A hold of generated seat ids is almost always `unknown_seat`
(422, which the schema cannot foresee: seat ids are data). So a positive
hold case of 1 to 4 seats asks for seats of the performance the rooms file
declares (`st-show`: sections A and B, 20 rows of 25), picked from the
generated ids, so the same case always asks for the same seats. Other
lengths (none, too many) are left as generated.

Admin writes to `st-line` are dropped (`filter_case`): the stateful phase
reuses room ids it has seen and would pause or close the room that gives
the entry tokens.

Refusals JSON Schema cannot foresee. JSON Schema describes each field, not
the rules between fields or the data behind them. The origin then answers
422, naming the rule, as the document says it does. Only these refusals
are excused; any other refusal of schema-valid data still fails the run:
  - a room's scheduled windows must each start before they end, come in
    time order and not overlap (`invalid_body`);
  - a performance's section names must be unique, and its sections hold at
    most 100,000 seats in all (`invalid_body`);
  - a hold's seats must each be listed once (`invalid_body`; the document
    cannot say `uniqueItems` through its generator), exist in the
    performance (`unknown_seat`) and be no
    more than its `max_seats_per_hold` (a setting of each performance).
And a cancelled booking stays readable (200, status `cancelled`, as the
document's booking statuses say), which the "deleted resource still
available" check (ST301) would otherwise count against DELETE.
"""

import json
import os
import zlib

import hypothesis
import requests
import schemathesis

# Targeted search off. schemathesis 4.32 feeds each fuzzed operation's
# success rate to `hypothesis.target`, and Hypothesis 6.170's optimiser,
# climbing that target, can fail inside itself (`IndexError: tuple index
# out of range` in `optimiser.attempt_replace`, seen on a clean-clone CI
# run on 2026-11-25, every one of the 5,528 cases having passed). The
# cases are still generated, sent and checked exactly as before; only the
# steering toward inputs an operation accepts is gone.
hypothesis.target = lambda *args, **kwargs: None

BASE_URL = os.environ["WR_ST_BASE_URL"]
LINE_ROOM = "st-line"
# The performance of scripts/schemathesis-rooms.toml.
SECTIONS = ("A", "B")
ROWS = 20
SEATS_PER_ROW = 25
MAX_SEATS_PER_HOLD = 4

CROSS_FIELD_RULES = (
    "windows: each window must start before it ends",
    "windows: windows must be in time order and not overlap",
    "sections[].name: names must be unique",
    "sections: at most 100000 seats per performance",
    "a seat is listed twice",
)


def _join():
    """A join to `st-line`: the status body of a visitor admitted at once."""
    joined = requests.post(f"{BASE_URL}/queue/{LINE_ROOM}/join", timeout=10)
    try:
        body = joined.json()
    except ValueError:
        body = {}
    if joined.status_code != 200 or not body.get("ticket") or not body.get("entry_token"):
        raise RuntimeError(f"a join to {LINE_ROOM} was not admitted: {joined.status_code} {joined.text[:300]}")
    return body


# schemathesis drops programmatic auth when the config file has any [auth]
# table, so every scheme of the document is provided here.


@schemathesis.auth(refresh_interval=None).apply_to(path_regex="^/admin/")
class AdminKey:
    """The `admin_key` scheme: the run's admin key (WR_ST_ADMIN_KEY)."""

    def get(self, case, ctx):
        return os.environ["WR_ST_ADMIN_KEY"]

    def set(self, case, data, ctx):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


@schemathesis.auth(refresh_interval=300).apply_to(path_regex="^/queue/")
class Ticket:
    """The `ticket` scheme: a real ticket for `st-line`, as an app sends it."""

    def get(self, case, ctx):
        return _join()["ticket"]

    def set(self, case, data, ctx):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


@schemathesis.auth(refresh_interval=3).apply_to(path_regex="^/api/")
class EntryToken:
    """The `entry_token` scheme: an admitted visitor's entry token for `st-line`."""

    def get(self, case, ctx):
        return _join()["entry_token"]

    def set(self, case, data, ctx):
        case.headers = case.headers or {}
        case.headers["Entry-Token"] = data


@schemathesis.hook
def filter_case(context, case):
    """Admin writes leave `st-line` alone: closing, pausing or reconfiguring
    the room (or replacing `st-show`) would end the entry tokens' supply. The
    stateful phase reuses room ids it has seen, so the rule is needed here,
    not only in the config's fixed parameters. Reading it is fine."""
    operation = context.operation
    if operation is None or not operation.path.startswith("/admin/") or operation.method.upper() == "GET":
        return True
    return (case.path_parameters or {}).get("room") != LINE_ROOM


def _positive(case):
    meta = getattr(case, "meta", None)
    generation = getattr(meta, "generation", None)
    mode = getattr(generation, "mode", None)
    return mode is not None and mode.is_positive


@schemathesis.hook
def map_case(context, case):
    operation = context.operation
    if (
        operation is None
        or operation.method.upper() != "POST"
        or not operation.path.endswith("/holds")
        or not _positive(case)
        or not isinstance(case.body, dict)
    ):
        return case
    seats = case.body.get("seats")
    if not isinstance(seats, list) or not 1 <= len(seats) <= MAX_SEATS_PER_HOLD:
        return case
    real = []
    for i, generated in enumerate(seats):
        h = zlib.crc32(f"{i}:{generated}".encode())
        seat = f"{SECTIONS[h % len(SECTIONS)]}-{1 + (h >> 1) % ROWS}-{1 + (h >> 8) % SEATS_PER_ROW}"
        if seat not in real:
            real.append(seat)
    case.body = {**case.body, "seats": real}
    return case


def _error(response):
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return None
    return error if isinstance(error, dict) else None


def _cancelled_booking(case, response):
    """A cancelled booking read back: the box office keeps it (status
    `cancelled`, one of the documented statuses); its seats are back on sale."""
    if case.operation.method.upper() != "GET" or "/bookings/" not in case.operation.path:
        return False
    try:
        return response.status_code == 200 and json.loads(response.content).get("status") == "cancelled"
    except (ValueError, AttributeError):
        return False


@schemathesis.hook
def filter_failure(context, failure, case, response):
    code = getattr(failure, "code", None)
    if code == "ST301" and _cancelled_booking(case, response):
        return False
    if code != "ST202" or response.status_code != 422:
        return True
    error = _error(response)
    if error is None:
        return True
    code = error.get("code")
    message = error.get("message", "")
    if code == "invalid_body" and any(rule in message for rule in CROSS_FIELD_RULES):
        return False
    path = case.operation.path
    if case.operation.method.upper() == "POST" and path.endswith("/holds"):
        seats = case.body.get("seats") if isinstance(case.body, dict) else None
        if code == "unknown_seat":
            return False
        if isinstance(seats, list) and len(seats) > MAX_SEATS_PER_HOLD:
            return False
    return True
