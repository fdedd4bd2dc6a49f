"""Where moto 5.2.5 answers differently from DynamoDB, for what the ledger and its tests send.

Each patch names the moto behaviour it replaces and what DynamoDB does instead.
"""
import re as _re
import json as _json
import threading

from moto.dynamodb.exceptions import ItemSizeTooLarge as _ItemSizeTooLarge
from moto.dynamodb.models.dynamo_type import DynamoType

from . import common, verification


def serialise_requests():
    """Replaces moto's threaded server (`moto.server.main` runs werkzeug's `run_simple` with
    threaded=True; speed.serve_with_waitress keeps 4 threads): requests are served one at a time.

    moto's conditional writes are check-then-write in Python (`DynamoDBBackend.put_item`,
    `update_item`, `transact_write_items` evaluate the condition, then store), so two concurrent
    conditional writes on one item can both pass. DynamoDB never lets both succeed; the ledger's race
    tests (two planners, two processors at once) depend on that. A WSGI layer holding one lock while
    moto builds the whole response body (materialised under the lock)."""
    lock = threading.Lock()

    def wrap(app):
        def wsgi(environ, start_response):
            with lock:
                return list(app(environ, start_response))

        return wsgi

    common.set_layer("serialised", wrap)


# --- The ledger's PartiQL statements ----------------------------------------------------------------
# A folded batch's marked writes go 25 to a BatchExecuteStatement (lib/ledger/statements.dynamodb.ts):
# `INSERT INTO "t" VALUE {'a' : ?, ...}` and `UPDATE "t" SET "a" = ? ... [REMOVE "b" ...] WHERE "k" = ?
# AND "c" = ? AND "d" IS MISSING AND "m" < ?`.
_BATCH_EXECUTE = "DynamoDB_20120810.BatchExecuteStatement"
_INSERT = _re.compile(r'INSERT INTO "([^"]+)" VALUE \{(.*)\}', _re.S)
_INSERT_ENTRY = _re.compile(r"\s*'([^']+)' : \?\s*(?:,|$)")
_UPDATE = _re.compile(r'UPDATE "([^"]+)" (.*?) WHERE (.*)', _re.S)
_UPDATE_ACTION = _re.compile(r'\s*(?:SET "([^"]+)" = \?|REMOVE "([^"]+)")')
_CONDITION = _re.compile(r'\s*"([^"]+)" (= \?|< \?|IS MISSING)\s*(?:AND|$)')


def serve_ledger_statements():
    """Replaces moto's `DynamoDBBackend.batch_execute_statement` (moto/dynamodb/models/__init__.py,
    through py-partiql-parser) for the two statement shapes the ledger sends, on tables without
    indexes or streams; any other BatchExecuteStatement goes to moto unchanged.

    moto cannot parse a parameterised `INSERT ... VALUE {'a' : ?}` (py-partiql-parser raises a
    TypeError, answered as a 500), answers success for an UPDATE whose WHERE is false or whose item
    is missing (and changes nothing), and copies every item of every table into a new document for
    each statement. DynamoDB applies the statements one after the other and answers per statement:
    DuplicateItem for an INSERT of an existing key, ConditionalCheckFailed for an UPDATE whose WHERE
    does not hold, nothing changed by a failed statement. A batch naming one item twice is left to
    moto (DynamoDB refuses it). With MOTO_VERIFY_FAST=1 a sample of statements is also applied as the
    equivalent PutItem/UpdateItem through moto's generic code (verification.check_statement)."""
    common.set_layer("direct_statements", _statements_layer)


def _statements_layer(app):
    def wsgi(environ, start_response):
        direct = _direct_statements(environ)
        if direct is None:
            return app(environ, start_response)
        return common.answer(direct, start_response)

    return wsgi


def _scan(pattern, text):
    """All matches of `pattern` covering `text` end to end, or None."""
    out, at = [], 0
    while at < len(text):
        m = pattern.match(text, at)
        if m is None or m.end() == at:
            return None
        out.append(m)
        at = m.end()
    return out


def _parse_statement(backend, stmt):
    """(table, kind, item or (key, sets, removes, conditions)) of a statement of the two shapes, or None."""
    if not isinstance(stmt, dict) or not set(stmt) <= {"Statement", "Parameters"}:
        return None
    text, params = stmt.get("Statement"), list(stmt.get("Parameters") or [])
    if not isinstance(text, str) or not all(isinstance(p, dict) and len(p) == 1 for p in params):
        return None
    m = _INSERT.fullmatch(text)
    if m:
        entries = _scan(_INSERT_ENTRY, m.group(2))
        table = backend.tables.get(m.group(1))
        if not entries or table is None or len(entries) != len(params) or not common.plain_table(table):
            return None
        item = {e.group(1): v for e, v in zip(entries, params)}
        if len(item) != len(entries) or not common.key_matches(table, {k: item.get(k) for k in common.key_names(table)}):
            return None
        return table, "insert", item
    m = _UPDATE.fullmatch(text)
    if not m:
        return None
    actions, conditions = _scan(_UPDATE_ACTION, m.group(2)), _scan(_CONDITION, m.group(3))
    table = backend.tables.get(m.group(1))
    if not actions or not conditions or table is None or not common.plain_table(table):
        return None
    sets = [(a.group(1), params.pop(0) if params else None) for a in actions if a.group(1)]
    removes = [a.group(2) for a in actions if a.group(2)]
    checks = []
    for c in conditions:
        op = c.group(2)
        checks.append((c.group(1), op, params.pop(0) if params and op != "IS MISSING" else None))
    key = {name: value for name, op, value in checks if name in common.key_names(table) and op == "= ?"}
    touched = [n for n, _ in sets] + removes
    if params or any(v is None for _, v in sets) or any(op != "IS MISSING" and v is None for _, op, v in checks):
        return None
    if not common.key_matches(table, key) or len(set(touched)) != len(touched) or set(touched) & set(key):
        return None
    return table, "update", (key, sets, removes, checks)


def _holds(item, name, op, raw):
    """One condition of an UPDATE's WHERE on the stored item."""
    current = item.attrs.get(name)
    if op == "IS MISSING":
        return current is None
    if current is None or current.type != list(raw)[0] or current.type not in ("S", "N", "BOOL"):
        return False
    other = DynamoType(raw)
    return current == other if op == "= ?" else current.type in ("S", "N") and current < other


def _run_statement(table, kind, parsed):
    """Applies one parsed statement; returns its per-statement error (code, message) or None."""
    if kind == "insert":
        where = common.item_key(table, parsed)
        if table.get_item(*where) is not None:
            return "DuplicateItem", "Duplicate primary key exists in table"
        data = parsed
    else:
        key, sets, removes, checks = parsed
        item = table.get_item(*common.item_key(table, key))
        if item is None or not all(_holds(item, n, op, v) for n, op, v in checks):
            return "ConditionalCheckFailed", "The conditional request failed"
        data = {k: v.to_json() for k, v in item.attrs.items() if k not in removes}
        data.update({n: v for n, v in sets})
    try:
        table.put_item(data, overwrite=True)
    except _ItemSizeTooLarge:
        return "ValidationError", "Item size has exceeded the maximum allowed size"
    return None


def _direct_statements(environ):
    """The answer (common.Direct) of a BatchExecuteStatement of the ledger's shapes applied directly, or None."""
    request = common.direct_request(environ, _BATCH_EXECUTE)
    if request is None:
        return None
    req, backend = request
    if set(req) != {"Statements"} or not isinstance(req["Statements"], list) or not 1 <= len(req["Statements"]) <= 25:
        return None
    parsed = [_parse_statement(backend, stmt) for stmt in req["Statements"]]
    if any(p is None for p in parsed):
        return None
    where = [common.item_key(p[0], p[2] if p[1] == "insert" else p[2][0]) for p in parsed]
    if len(set(where)) != len(where):
        return None  # two statements on one item: left to moto (DynamoDB refuses such a batch)
    responses = []
    for (table, kind, stmt), at in zip(parsed, where):
        verify = verification.verify_statement()
        before = verification.copy_before(table, at, verify)
        error = _run_statement(table, kind, stmt)
        if verify:
            verification.check_statement(backend, table, kind, stmt, at, before, error)
        entry = {"TableName": table.name}
        if error:
            entry["Error"] = {"Code": error[0], "Message": error[1]}
        responses.append(entry)
    body = _json.dumps({"Responses": responses}).encode()
    return common.Direct("200 OK", None, "application/x-amz-json-1.0", body)
