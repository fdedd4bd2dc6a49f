"""What the patches share: moto's originals of what they replace, item-key helpers, the answers served
without moto's request stack, and the WSGI layers wrapped around moto's app. No patch is applied here."""
import io as _io
import itertools as _itertools
import json as _json
import os as _os
import re as _re
import zlib as _zlib
from typing import NamedTuple as _NamedTuple

from moto.dynamodb.models import dynamodb_backends as _dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.iam.models import get_account_id_from as _account_id_from

# --- moto's originals ------------------------------------------------------------------------------
_originals = {}


def replace(owner, name, new):
    """Sets `owner.name` (a moto module or class attribute) to `new`, keeping moto's own for `original`."""
    _originals.setdefault((owner, name), getattr(owner, name))
    setattr(owner, name, new)


def original(owner, name):
    """moto's own `owner.name`, whether or not a patch has replaced it."""
    return _originals.get((owner, name), getattr(owner, name))


# --- Items and keys --------------------------------------------------------------------------------
PARSE_CACHE_SIZE = 4096
# A placeholder (`#name`, `:value`) in an expression's text.
PLACEHOLDER = _re.compile(r"[#:][A-Za-z0-9_]+")


def key_values(table, op):
    """(hash, range) DynamoTypes of a transaction action's Item or Key."""
    attrs = op.get("Item") or op.get("Key") or {}
    hash_value = DynamoType(attrs[table.hash_key_attr])
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


def restore(table, hash_value, range_value, item):
    """Puts `item` back as the table's item at this key (None: no item there)."""
    if item is None:
        if table.range_key_attr:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items.pop(hash_value, None)
    elif table.range_key_attr:
        table.items[hash_value][range_value] = item
    else:
        table.items[hash_value] = item


def item_key(table, key):
    return DynamoType(key[table.hash_key_attr]), DynamoType(key[table.range_key_attr]) if table.range_key_attr else None


def key_matches(table, key):
    """The key names exactly the table's key attributes, each of its declared type."""
    want = {table.hash_key_attr: table.hash_key_type}
    if table.range_key_attr:
        want[table.range_key_attr] = table.range_key_type
    return set(key) == set(want) and all(isinstance(v, dict) and list(v) == [want[k]] for k, v in key.items())


def key_names(table):
    return [k for k in (table.hash_key_attr, table.range_key_attr) if k]


def plain_table(table):
    """No stream and no index: nothing but the item itself changes when an item is written."""
    return table.stream_shard is None and not table.global_indexes and not table.indexes


# --- Requests answered without moto's request stack -----------------------------------------------
_request_ids = _itertools.count(1)  # unique per server run; os.urandom cost more than the update
_CREDENTIAL = _re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/dynamodb/")
# Says which requests took a direct path (the emulator's tests check they did).
DIRECT_HEADER = ("x-emulator-path", "direct")


class Direct(_NamedTuple):
    """A directly served request's answer, and what MOTO_VERIFY_FAST needs to check its writes: each
    item it wrote, as (table, item key, the item before it)."""

    status: str
    error_type: str | None
    content_type: str
    body: bytes
    touched: tuple = ()


def direct_request(environ, target):
    """(JSON body, DynamoDB backend) of a signed request for `target`, or None; leaves the body readable again."""
    if environ.get("HTTP_X_AMZ_TARGET") != target:
        return None
    raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    environ["wsgi.input"] = _io.BytesIO(raw)  # moto's stack reads it again when it serves the request
    credential = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if credential is None:
        return None
    try:
        req = _json.loads(raw)
    except ValueError:
        return None
    if not isinstance(req, dict):
        return None
    account = _os.environ.get("MOTO_ACCOUNT_ID") or environ.get("HTTP_X_MOTO_ACCOUNT_ID") or _account_id_from(credential.group(1))
    return req, _dynamodb_backends[account][credential.group(2)]


def answer(direct, start_response):
    """Starts the response of a directly served request, headers as moto's would be; returns its body."""
    status, error_type, content_type, body = direct[:4]
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))),
               ("x-amzn-RequestId", f"direct-{next(_request_ids)}"), ("x-amz-crc32", str(_zlib.crc32(body)))]
    if error_type:
        headers.append(("x-amzn-ErrorType", error_type))
    start_response(status, headers + [DIRECT_HEADER])
    return [body]


# --- WSGI layers around moto's app -----------------------------------------------------------------
# Outermost first. A patch fills its slot with a function (app -> app); the server (speed.py's
# serve_with_waitress) wraps moto's app in the filled ones. The order is fixed here, not by the
# order the patches are applied in: the request log sees every answer, the lock holds for the rest,
# the verification budget is reset inside the lock, and the direct paths answer before moto's stack.
LAYERS = ("request_log", "serialised", "verify_budget", "direct_update", "direct_transact", "direct_statements")
_layers = {}


def set_layer(slot, wrap):
    if slot not in LAYERS:
        raise ValueError(f"unknown WSGI layer {slot!r}")
    _layers[slot] = wrap


def wrapped(app):
    """moto's WSGI app inside the layers the applied patches filled."""
    for slot in reversed(LAYERS):
        if slot in _layers:
            app = _layers[slot](app)
    return app
