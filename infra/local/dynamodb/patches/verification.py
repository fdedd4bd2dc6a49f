"""Checks and diagnostics the tests rely on (moto 5.2.5).

MOTO_VERIFY_FAST=1 (the test suite sets it) runs moto's generic code beside each faster path of
speed.py and correctness.py, on a sample, and fails the request when the two differ; the functions
here decide which requests are checked and compare. The request log and the rotating log file are
what an operator (and the local-stack tests) read when a request fails.
"""
import copy as _copy
import itertools as _itertools
import json as _json
import logging
import os as _os

from moto.dynamodb.exceptions import ConditionalCheckFailed as _ConditionalCheckFailed
from moto.dynamodb.exceptions import ItemSizeTooLarge as _ItemSizeTooLarge
from moto.dynamodb.exceptions import ItemSizeToUpdateTooLarge as _ItemSizeToUpdateTooLarge
from moto.dynamodb.models import DynamoDBBackend as _DynamoDBBackend

from . import common

VERIFY = _os.environ.get("MOTO_VERIFY_FAST") == "1"

# --- Which conversions and updates are checked ------------------------------------------------------
# MOTO_VERIFY_FAST checks the first maps of each request and of each response, not all of them: the
# generic serializer costs ~1 ms per item, so a Query answering with 1,000 items took a second of
# the emulator's one core to check, more than half its time in the load scenario. Every attribute
# type a request or response holds is almost always in its first items.
_VERIFY_MAPS_PER_MESSAGE = 64
# Likewise the first direct updates of each request: the generic update costs ~4 ms an item, so
# checking all 100 of a folded batch's transactions cost 0.4 s each and the large-batch scenario
# most of its budget; the update's shape (ADD/SET, new or existing attributes) shows in a few.
_VERIFY_UPDATES_PER_REQUEST = 8
_VERIFY_BUDGET = {"serialize": _VERIFY_MAPS_PER_MESSAGE, "parse": _VERIFY_MAPS_PER_MESSAGE, "update": _VERIFY_UPDATES_PER_REQUEST}
_verify_budget = dict(_VERIFY_BUDGET)
# The first direct UpdateItem and TransactWriteItems requests of a server run, then one in 16:
# checking one runs moto's whole stack beside it (~4 ms an update), and a folded batch sends thousands.
_DIRECT_VERIFIED_FIRST = 256
_DIRECT_VERIFIED_EVERY = 16
_direct_count = _itertools.count()
# Likewise the first 256 directly applied PartiQL statements of a run, then one in 16.
_STATEMENT_VERIFIED_FIRST = 256
_STATEMENT_VERIFIED_EVERY = 16
_statement_count = _itertools.count()


def verify_this(kind):
    """Whether the next AttributeValue map of this request ("parse") or response ("serialize"), or its next direct update, is checked."""
    if not VERIFY or _verify_budget[kind] <= 0:
        return False
    _verify_budget[kind] -= 1
    return True


def verify_direct():
    """Whether the next directly served UpdateItem or TransactWriteItems request is checked against moto's stack."""
    if not VERIFY:
        return False
    n = next(_direct_count)
    return n < _DIRECT_VERIFIED_FIRST or n % _DIRECT_VERIFIED_EVERY == 0


def verify_statement():
    """Whether the next directly applied PartiQL statement is checked against moto's generic writes."""
    if not VERIFY:
        return False
    n = next(_statement_count)
    return n < _STATEMENT_VERIFIED_FIRST or n % _STATEMENT_VERIFIED_EVERY == 0


def reset_verify_budget_per_request():
    """Replaces nothing in moto: a WSGI layer (inside the lock) giving each request its own
    MOTO_VERIFY_FAST budget of checked maps and updates (verify_this). Without it the budget would
    run out after the first requests of a server run."""

    def wrap(app):
        def wsgi(environ, start_response):
            _verify_budget.update(_VERIFY_BUDGET)
            return app(environ, start_response)

        return wsgi

    common.set_layer("verify_budget", wrap)


# --- The comparisons ---------------------------------------------------------------------------------
def check_map(what, fast, slow, shown=None):
    """A directly converted AttributeValue map must equal moto's generic conversion (what: "serialization" or "parsing")."""
    if slow != fast:
        raise AssertionError(f"fast AttributeValue {what} differs: {fast!r} != {slow if shown is None else shown!r}")


def check_simple_update(table, key, mine, item):
    """The attributes a direct update computed (`mine`, without the key) must be the item moto's generic update stored."""
    mine = {k: v.to_json() for k, v in mine.items()}
    for k in (table.hash_key_attr, table.range_key_attr):
        if k:
            mine[k] = key[k]
    theirs = item.to_json()["Attributes"]
    # to_json leaves the elements of a list or map as DynamoTypes: serialise those the same way.
    as_text = lambda value: _json.dumps(value, sort_keys=True, default=lambda o: o.to_json())  # noqa: E731
    if as_text(mine) != as_text(theirs):
        raise RuntimeError(f"moto_server.py: direct update differs from moto's: {mine} != {theirs}")


def verified(app, environ, start_response, direct):
    """moto's stack, given the items as they were, must answer and store what the direct request did."""
    stored = lambda: [_as_json(table.get_item(*where)) for table, where, _ in direct.touched]  # noqa: E731
    mine = stored()
    for table, where, before in reversed(direct.touched):
        common.restore(table, *where, before)
    started = []
    body = list(app(environ, lambda status, headers, *exc: started.append((status, headers))))
    theirs = stored()
    same_answer = started[0][0].split(" ")[0] == direct.status.split(" ")[0] and _json.loads(b"".join(body)) == _json.loads(direct.body)
    if not same_answer or mine != theirs:
        mine_text = f"{direct.status} {direct.body!r} {mine}"[:1000]
        theirs_text = f"{started[0][0]} {b''.join(body)!r} {theirs}"[:1000]
        target = environ.get("HTTP_X_AMZ_TARGET", "").rsplit(".", 1)[-1]
        raise RuntimeError(f"moto_server.py: direct {target} differs from moto's: {mine_text} != {theirs_text}")
    status, headers = started[0]
    start_response(status, list(headers) + [common.DIRECT_HEADER])
    return body


def _as_json(item):
    return item.to_json() if item is not None else None


def _generic_statement(backend, table, kind, parsed):
    """The same write through moto's generic PutItem/UpdateItem; its error code or None."""
    try:
        if kind == "insert":
            backend.put_item(table.name, parsed, condition_expression="attribute_not_exists(#k)",
                             expression_attribute_names={"#k": table.hash_key_attr})
            return None
        key, sets, removes, checks = parsed
        names, values, conds = {}, {}, []
        for i, (n, op, v) in enumerate(checks):
            names[f"#c{i}"] = n
            if op == "IS MISSING":
                conds.append(f"attribute_not_exists(#c{i})")
            else:
                values[f":c{i}"] = v
                conds.append(f"#c{i} {op[0]} :c{i}")
        clauses = []
        if sets:
            names.update({f"#s{i}": n for i, (n, _) in enumerate(sets)})
            values.update({f":s{i}": v for i, (_, v) in enumerate(sets)})
            clauses.append("SET " + ", ".join(f"#s{i} = :s{i}" for i in range(len(sets))))
        if removes:
            names.update({f"#r{i}": n for i, n in enumerate(removes)})
            clauses.append("REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes))))
        update_item = common.original(_DynamoDBBackend, "update_item")
        update_item(backend, table.name, key, " ".join(clauses), names, values, condition_expression=" AND ".join(conds))
        return None
    except _ConditionalCheckFailed:
        return "DuplicateItem" if kind == "insert" else "ConditionalCheckFailed"
    except (_ItemSizeTooLarge, _ItemSizeToUpdateTooLarge):
        return "ValidationError"


def check_statement(backend, table, kind, parsed, where, before, error):
    """A directly applied statement (its error (code, message) or None) must store what the equivalent
    PutItem/UpdateItem through moto's generic code stores, given the item as it was (`before`)."""
    mine = table.get_item(*where)
    mine = mine.to_json() if mine is not None else None
    common.restore(table, *where, before)
    theirs_error = _generic_statement(backend, table, kind, parsed)
    theirs = table.get_item(*where)
    theirs = theirs.to_json() if theirs is not None else None
    if mine != theirs or (error and error[0]) != theirs_error:
        raise RuntimeError(f"moto_server.py: direct statement differs from moto's: {error} {mine} != {theirs_error} {theirs}"[:1000])


def copy_before(table, where, verify):
    """The item as it was, for a later check (None when this write is not checked)."""
    return _copy.deepcopy(table.get_item(*where)) if verify else None


# --- Diagnostics ---------------------------------------------------------------------------------------
_request_log = logging.getLogger("moto_server.requests")


def log_refused_requests():
    """Replaces werkzeug's per-request access log (werkzeug.serving.WSGIRequestHandler.log_request,
    which moto's server used): a line per refused or failed request only, its action named (method,
    path, X-Amz-Target, status). A flushed line per request cost a sixth of a direct update's time.
    A WSGI layer outside the lock, so it sees every answer, direct ones included."""

    def wrap(app):
        def wsgi(environ, start_response):
            status = []

            def started(code, headers, *exc_info):
                status.append(code.split(" ", 1)[0])
                return start_response(code, headers, *exc_info)

            body = app(environ, started)
            code = status[0] if status else "-"
            if not code.startswith("2") and _request_log.isEnabledFor(logging.INFO):
                target = environ.get("HTTP_X_AMZ_TARGET", "")
                _request_log.info("%s %s %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"), target, code)
            return body

        return wsgi

    common.set_layer("request_log", wrap)


def rotating_log_file():
    """Replaces moto's logging to stderr (no handler of its own): the request log (failed requests)
    and warnings go to one size-rotated file (MOTO_LOG_FILE, set by dynamodb.ts), so a stack left
    running for days does not fill the disk. Without MOTO_LOG_FILE, nothing changes."""
    import logging.handlers

    path = _os.environ.get("MOTO_LOG_FILE")
    if not path:
        return
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=int(_os.environ.get("MOTO_LOG_FILE_BYTES", "5242880")), backupCount=int(_os.environ.get("MOTO_LOG_FILES", "3"))
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    _request_log.setLevel(logging.INFO)
    # waitress warns each time requests queue behind the lock, which is how this server works.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
