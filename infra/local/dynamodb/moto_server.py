"""moto's DynamoDB server with two changes the ledger's tests need. Hand-written because no emulator
with transactions offers them (dynalite has no transactions; DynamoDB Local is not open source).

1. Requests are served one at a time. moto's server is threaded but its conditional writes are
   check-then-write in Python; two concurrent conditional writes on one item could both pass. Real
   DynamoDB never allows that, and the ledger's race tests (two planners, two processors at once)
   depend on it.
2. TransactWriteItems snapshots only the items it touches. moto deep-copies the whole table once per
   action to roll back a cancelled transaction, so a 100-action transaction on a 20,000-item table
   takes seconds; the planner benchmark sends hundreds of them.
"""
import copy as _copy
import sys
import threading

from moto.dynamodb import models as _models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
import werkzeug.serving as _serving


class _CopyWithoutTableBackups:
    """Stands in for `copy` inside moto.dynamodb.models: whole-table backups become no-ops."""

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, Table):
            return value
        return _copy.deepcopy(value, memo)

    def __getattr__(self, name):
        return getattr(_copy, name)


_models.copy = _CopyWithoutTableBackups()
_original_transact = _models.DynamoDBBackend.transact_write_items


def _key_values(table, op):
    attrs = op.get("Item") or op.get("Key") or {}
    hash_value = DynamoType(attrs[table.hash_key_attr])
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


def _restore(table, hash_value, range_value, item):
    if item is None:
        if table.range_key_attr:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items.pop(hash_value, None)
    elif table.range_key_attr:
        table.items[hash_value][range_value] = item
    else:
        table.items[hash_value] = item


def transact_write_items(self, transact_items):
    snapshots = []
    for entry in transact_items:
        op = next(iter(entry.values()), {})
        table = self.tables.get(op.get("TableName"))
        if table is None:
            continue
        try:
            hash_value, range_value = _key_values(table, op)
            current = table.get_item(hash_value, range_value)
        except Exception:  # malformed key: moto rejects it before writing anything
            continue
        snapshots.append((table, hash_value, range_value, _copy.deepcopy(current)))
    try:
        return _original_transact(self, transact_items)
    except Exception:
        for table, hash_value, range_value, item in reversed(snapshots):
            _restore(table, hash_value, range_value, item)
        raise


_models.DynamoDBBackend.transact_write_items = transact_write_items

_lock = threading.Lock()
_original_run_simple = _serving.run_simple


def _serialized(app):
    def wsgi(environ, start_response):
        with _lock:
            # moto builds the whole response body inside the call; materialise it under the lock.
            return list(app(environ, start_response))

    return wsgi


def run_simple(hostname, port, application, *args, **kwargs):
    return _original_run_simple(hostname, port, _serialized(application), *args, **kwargs)


import moto.server as _server  # noqa: E402

_server.run_simple = run_simple

if __name__ == "__main__":
    _server.main(sys.argv[1:])
