"""moto's DynamoDB server with the changes the ledger's tests and benchmarks need. Hand-written because no emulator
with transactions offers them (dynalite has no transactions; DynamoDB Local is not open source).

1. Requests are served one at a time. moto's server is threaded but its conditional writes are
   check-then-write in Python; two concurrent conditional writes on one item could both pass. Real
   DynamoDB never allows that, and the ledger's race tests (two planners, two processors at once)
   depend on it.
2. TransactWriteItems snapshots only the items it touches. moto deep-copies the whole table once per
   action to roll back a cancelled transaction, so a 100-action transaction on a 20,000-item table
   takes seconds; the planner benchmark sends hundreds of them.
3. Hot paths that give the same answers faster (the planner benchmark's 10,000-partition runs spent
   their time here): a parsed condition expression is reused while its text and the names and
   values that text uses are the same (moto parses each one up to three times per transaction
   action); a parsed update
   expression is reused by its text (moto's validator works on its own deep copy); each AST
   traverser builds its node-type map once instead of at every node; and AttributeValue maps in
   requests and responses are converted directly instead of through the generic shape walkers;
   a transaction snapshots by reference what it replaces (Put, Delete) and copies only what it
   changes in place (Update); update_item skips the pre-image copy it makes only for tables with
   a stream; and updates of the shape sink counters use (`ADD #a :n ... SET #b = :v ...` on
   top-level attributes of a table without indexes) are applied without moto's ten passes over
   their syntax tree. Setting MOTO_VERIFY_FAST=1 runs the generic parser and serializer as well (on
   the first 64 AttributeValue maps of each request and response) and the generic update (on the
   first 8 direct updates of each request), and fails a request or response that differs. The
   package's module list, which moto reads from disk at every request, is read once; and the app
   is served by waitress, which keeps connections open (werkzeug's server closes each one).
4. A single-item UpdateItem of that simple shape is applied without moto's request stack (section
   4 below); anything else, and any error but a failed condition, goes through moto's stack.
5. A BatchExecuteStatement of the two PartiQL shapes the ledger sends for a folded batch's marked
   writes (an INSERT, a guarded UPDATE) is applied here (section 5 below): moto's own PartiQL copies
   every item of every table per statement. Any other statement goes to moto.

Every moto (and werkzeug) internal this file replaces, and why, in the order they appear below:

| replaced | why |
| --- | --- |
| `moto.dynamodb.models.copy` (module alias) | whole-table deep copies per transaction action become no-ops (2) |
| `DynamoDBBackend.transact_write_items` | snapshots and restores only the items a transaction touches (2) |
| `create_condition_expression_parser` (as imported by moto's modules) | parsed conditions reused by text and the names and values it uses (3) |
| `UpdateExpressionParser.make` | parsed update expressions reused by text (3) |
| `moto.dynamodb.parsing.validators.deepcopy` | the validator's private copy of a cached AST is made with pickle (3) |
| `dynamo_type.Item.__init__` | the 400 KB item limit is checked once per item, not once per attribute (3) |
| `DepthFirstTraverser.nodes_to_be_processed`, `.process`, `.traverse_node_recursively` | node handlers looked up once per class (3) |
| `ast_nodes.Node.find_clauses` | clause search with memoised class checks (3) |
| `BaseJSONSerializer._serialize_type_map` | AttributeValue maps serialised directly (3; checked by MOTO_VERIFY_FAST) |
| `RequestParser._parse_map` | AttributeValue maps parsed directly (3; checked by MOTO_VERIFY_FAST) |
| `DynamoDBBackend.update_item` | no pre-image copy on tables without a stream; simple `ADD`/`SET` updates applied directly (3; checked by MOTO_VERIFY_FAST) |
| `moto.backends.list_of_moto_modules` | the module list is read once, not per request (3) |
| (none: a request served before moto's stack) | BatchExecuteStatement of the ledger's two statement shapes (5; checked by MOTO_VERIFY_FAST) |
| `moto.server.run_simple` (werkzeug's) | the WSGI app is served by waitress, with keep-alive, one request at a time (1, 3) |

These are moto internals, so the launcher refuses any moto version other than the one it was
written for (the pin in requirements.txt beside it), before importing moto.
"""
import copy as _copy
import logging
import sys
import threading
from importlib.metadata import PackageNotFoundError, version as _installed_version

SUPPORTED_MOTO_VERSION = "5.2.5"


def _check_moto_version():
    try:
        found = _installed_version("moto")
    except PackageNotFoundError:
        found = None
    if found != SUPPORTED_MOTO_VERSION:
        sys.stderr.write(
            f"moto_server.py: moto {found or '(not installed)'} found, but this launcher patches moto "
            f"{SUPPORTED_MOTO_VERSION}'s internals; install moto=={SUPPORTED_MOTO_VERSION} "
            "(infra/local/dynamodb/requirements.txt)\n"
        )
        sys.exit(3)


_check_moto_version()

from moto.dynamodb import models as _models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table


class _CopyWithoutTableBackups:
    """Stands in for `copy` inside moto.dynamodb.models: whole-table backups become no-ops."""

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, Table):
            return value
        if _skip_item_copy and (value is None or isinstance(value, _dynamo_type.Item)):
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
        if "ConditionCheck" in entry:
            continue
        # Put and Delete replace or drop the item object; only Update changes it in place.
        snapshots.append((table, hash_value, range_value, _copy.deepcopy(current) if "Update" in entry else current))
    try:
        return _original_transact(self, transact_items)
    except Exception:
        for table, hash_value, range_value, item in reversed(snapshots):
            _restore(table, hash_value, range_value, item)
        raise


_models.DynamoDBBackend.transact_write_items = transact_write_items


# --- 3. Hot paths, same answers -------------------------------------------------------------------
import json as _json
import os as _os
import pickle as _pickle
from collections import OrderedDict as _OrderedDict

from moto.core import parse as _parse
from moto.core import serialize as _serialize
from moto.dynamodb import comparisons as _comparisons
from moto.dynamodb import responses as _responses
from moto.dynamodb.parsing import ast_nodes as _ast_nodes
from moto.dynamodb.parsing import expressions as _expressions
from moto.dynamodb.parsing import validators as _validators
from moto.dynamodb.models import dynamo_type as _dynamo_type
from moto.dynamodb.models.utilities import bytesize as _bytesize
from moto.dynamodb.exceptions import ItemSizeTooLarge as _ItemSizeTooLarge
from moto.dynamodb.exceptions import ConditionalCheckFailed as _ConditionalCheckFailed
from moto.dynamodb.exceptions import IncorrectDataType as _IncorrectDataType
from moto.dynamodb.exceptions import ItemSizeToUpdateTooLarge as _ItemSizeToUpdateTooLarge
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords as _ReservedKeywords
import re as _re

_PARSE_CACHE_SIZE = 4096
_PLACEHOLDER = _re.compile(r"[#:][A-Za-z0-9_]+")
_ITEM_SIZE_LIMIT = 405000  # moto's own figure (LimitedSizeDict)
_original_condition_parser = _comparisons.create_condition_expression_parser


class _CachedConditionParser:
    """Same interface as moto's ConditionExpressionParser; parses once per (text, names, values)."""

    _cache = _OrderedDict()

    def __init__(self, expr, names, values):
        self._args = (expr, names, values)
        self.expr_attr_names_found = []
        self.expr_attr_values_found = []

    def parse(self):
        expr, names, values = self._args
        # Keyed by the placeholders the text uses: a transaction's actions share one condition text
        # while their other values (the update's) differ.
        used = set(_PLACEHOLDER.findall(expr or ""))
        names_used = {k: v for k, v in (names or {}).items() if k in used}
        values_used = {k: v for k, v in (values or {}).items() if k in used}
        key = (expr, _json.dumps(names_used, sort_keys=True), _json.dumps(values_used, sort_keys=True))
        hit = self._cache.get(key)
        if hit is None:
            parser = _original_condition_parser(expr, names, values)
            op = parser.parse()  # errors are raised every time, never cached
            hit = (op, tuple(parser.expr_attr_names_found), tuple(parser.expr_attr_values_found))
            self._cache[key] = hit
            if len(self._cache) > _PARSE_CACHE_SIZE:
                self._cache.popitem(last=False)
        self.expr_attr_names_found = list(hit[1])
        self.expr_attr_values_found = list(hit[2])
        return hit[0]


for _module in (_comparisons, _models, _responses):
    _module.create_condition_expression_parser = _CachedConditionParser

_original_update_make = _expressions.UpdateExpressionParser.make.__func__
_update_cache = _OrderedDict()


def _cached_update_make(cls, expression_str):
    hit = _update_cache.get(expression_str)
    if hit is None:
        hit = _original_update_make(cls, expression_str)
        _update_cache[expression_str] = hit
        if len(_update_cache) > _PARSE_CACHE_SIZE:
            _update_cache.popitem(last=False)
    return hit


_expressions.UpdateExpressionParser.make = classmethod(_cached_update_make)

# The validator deep-copies the (cached) AST before rewriting it; a pickle round trip of the AST
# gives an equal tree several times faster than copy.deepcopy's Python-level recursion.
_pickled_asts = {}


def _validator_deepcopy(value, memo=None):
    if memo is None and isinstance(value, _ast_nodes.Node):
        entry = _pickled_asts.get(id(value))
        if entry is None or entry[0] is not value:
            try:
                entry = (value, _pickle.dumps(value, protocol=_pickle.HIGHEST_PROTOCOL))
            except Exception:
                return _copy.deepcopy(value)
            if len(_pickled_asts) > _PARSE_CACHE_SIZE:
                _pickled_asts.clear()
            _pickled_asts[id(value)] = entry
        return _pickle.loads(entry[1])
    return _copy.deepcopy(value, memo)


_validators.deepcopy = _validator_deepcopy

# An item's size limit is checked on every attribute insert (quadratic in its attributes); sizes
# only grow, so checking the whole item once when it is built raises exactly when moto would.
_Item = _dynamo_type.Item
_LimitedSizeDict = _dynamo_type.LimitedSizeDict


def _item_init(self, hash_key, range_key, attrs):
    self.hash_key = hash_key
    self.range_key = range_key
    converted = [(key, DynamoType(value)) for key, value in attrs.items()]
    total = sum(_bytesize(key) + value.size() for key, value in converted)
    if total > _ITEM_SIZE_LIMIT:
        raise _ItemSizeTooLarge
    self.attrs = _LimitedSizeDict()
    dict.update(self.attrs, converted)


_Item.__init__ = _item_init

_Traverser = _ast_nodes.DepthFirstTraverser


def _processing_map_once(self):
    cached = self.__dict__.get("_fast_processing_map")
    if cached is None:
        cached = self._processing_map()
        self.__dict__["_fast_processing_map"] = cached
    return cached


def _nodes_to_be_processed(self):
    cached = self.__dict__.get("_fast_node_types")
    if cached is None:
        cached = tuple(_processing_map_once(self).keys())
        self.__dict__["_fast_node_types"] = cached
    return cached


def _process(self, node):
    for class_key, processor in _processing_map_once(self).items():
        if isinstance(node, class_key):
            return processor(node)


_Traverser.nodes_to_be_processed = _nodes_to_be_processed
_Traverser.process = _process

# isinstance() against moto's ABC node classes dominates the validator's ten tree walks per update;
# the answers depend only on the node's class, so they are worked out once per class.
_subclass_memo = {}


def _is_a(cls, base):
    key = (cls, base)
    hit = _subclass_memo.get(key)
    if hit is None:
        hit = issubclass(cls, base)
        _subclass_memo[key] = hit
    return hit


def _processor_for(traverser, cls):
    """The method `process` would pick for nodes of this class, or None if it is not processed."""
    key = (type(traverser), cls)
    mapped = _mapped_class.get(key, _UNKNOWN)
    if mapped is _UNKNOWN:
        # A traverser class maps the same node classes on every instance (its map is a literal).
        mapped = None
        if any(_is_a(cls, t) for t in traverser.nodes_to_be_processed()):
            mapped = next((k for k in _processing_map_once(traverser) if _is_a(cls, k)), _NOT_MAPPED)
        _mapped_class[key] = mapped
    if mapped is None or mapped is _NOT_MAPPED:
        return mapped
    return _processing_map_once(traverser)[mapped]


_mapped_class = {}
_UNKNOWN = object()
_NOT_MAPPED = object()
_original_traverse = _Traverser.traverse_node_recursively


def _traverse_node_recursively(self, node, child_id=-1):
    kind = type(self)
    if kind.nodes_to_be_processed is not _nodes_to_be_processed or kind.process is not _process:
        return _original_traverse(self, node, child_id)
    if not _is_a(type(node), _ast_nodes.Node):
        return node
    parent_node = node.parent
    if node.children is not None:
        for i, child_node in enumerate(node.children):
            self.pre_processing_of_child(node, i)
            self.traverse_node_recursively(child_node, i)
    processor = _processor_for(self, type(node))
    if processor is not None:
        node = None if processor is _NOT_MAPPED else processor(node)
        node.parent = parent_node
        if parent_node:
            parent_node.children[child_id] = node
    return node


_Traverser.traverse_node_recursively = _traverse_node_recursively


def _find_clauses(self, clause_types):
    clauses = []
    for child in self.children or []:
        cls = type(child)
        if cls in clause_types:
            clauses.append(child)
        elif _is_a(cls, _ast_nodes.Expression) or _is_a(cls, _ast_nodes.UpdateExpressionFunction):
            clauses.extend(child.find_clauses(clause_types))
    return clauses


_ast_nodes.Node.find_clauses = _find_clauses


class _SlowPath(Exception):
    pass


def _fast_attribute_value(value, blob, new_map=dict):
    """One AttributeValue as moto's JSON parser (blob = decode) or serializer (blob = encode) would
    convert it. Anything unusual raises _SlowPath, and the generic code converts it instead."""
    if not isinstance(value, dict):
        raise _SlowPath()
    out = new_map()
    for kind, v in value.items():
        if v is None:
            continue
        if kind in ("S", "N") and isinstance(v, str):
            out[kind] = v
        elif kind in ("SS", "NS") and isinstance(v, list) and all(isinstance(e, str) for e in v):
            out[kind] = list(v)
        elif kind == "B":
            out[kind] = blob(v)
        elif kind == "BS" and isinstance(v, list):
            out[kind] = [blob(e) for e in v]
        elif kind == "M" and isinstance(v, dict):
            m = new_map()
            for k, e in v.items():
                m[k] = _fast_attribute_value(e, blob, new_map)
            out[kind] = m
        elif kind == "L" and isinstance(v, list):
            out[kind] = [_fast_attribute_value(e, blob, new_map) for e in v]
        elif kind in ("NULL", "BOOL") and isinstance(v, bool):
            out[kind] = v
        else:
            raise _SlowPath()
    return out


_JSONSerializer = _serialize.BaseJSONSerializer
_original_serialize_map = _JSONSerializer._serialize_type_map
_VERIFY = _os.environ.get("MOTO_VERIFY_FAST") == "1"
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


def _verify_this(kind):
    """Whether the next AttributeValue map of this request ("parse") or response ("serialize"), or its next direct update, is checked."""
    if not _VERIFY or _verify_budget[kind] <= 0:
        return False
    _verify_budget[kind] -= 1
    return True


def _serialize_type_map(self, serialized, value, shape, key):
    if getattr(shape.value, "name", None) == "AttributeValue" and isinstance(value, dict):
        try:
            fast = {k: _fast_attribute_value(v, self._base64) for k, v in value.items()}
        except _SlowPath:
            fast = None
        if fast is not None:
            if _verify_this("serialize"):
                slow = {}
                _original_serialize_map(self, slow, value, shape, key)
                if list(slow.values())[0] != fast:
                    raise AssertionError(f"fast AttributeValue serialization differs: {fast!r} != {slow!r}")
            self._default_serialize(serialized, fast, shape, key)
            return
    _original_serialize_map(self, serialized, value, shape, key)


_JSONSerializer._serialize_type_map = _serialize_type_map


_Parser = _parse.BaseJSONParser
_original_parse_map = _parse.RequestParser._parse_map
def _parse_map(self, shape, value):
    if isinstance(self, _Parser) and getattr(shape.value, "name", None) == "AttributeValue" and isinstance(value, dict):
        try:
            fast = self.MAP_TYPE()
            for k, v in value.items():
                fast[k] = _fast_attribute_value(v, self._blob_parser, self.MAP_TYPE)
        except _SlowPath:
            fast = None
        if fast is not None:
            if _verify_this("parse"):
                slow = _original_parse_map(self, shape, value)
                if slow != fast:
                    raise AssertionError(f"fast AttributeValue parsing differs: {fast!r} != {slow!r}")
            return fast
    return _original_parse_map(self, shape, value)


_parse.RequestParser._parse_map = _parse_map

# Every request asks whether its Host header names a moto module, and moto answers by listing its
# package directory (a listdir and ~200 stats, ~2 ms of the emulator's core per request: more than a
# simple update itself). The installed package does not change while the server runs.
from moto import backends as _backends

_MOTO_MODULES = tuple(_backends.list_of_moto_modules())


def _list_of_moto_modules():
    return _MOTO_MODULES


_backends.list_of_moto_modules = _list_of_moto_modules


# update_item deep-copies the item before changing it only to feed DynamoDB Streams; tables here
# have no stream, so that copy is skipped for them (moto reads it only when the table has one).
_original_update_item = _models.DynamoDBBackend.update_item
_skip_item_copy = False


def update_item(self, table_name, *args, **kwargs):
    global _skip_item_copy
    table = self.tables.get(table_name)
    fast = _simple_update(table, *args, **kwargs)
    if fast is not None and not _verify_this("update"):
        return fast()
    before = _copy.deepcopy(table.get_item(*self.get_keys_value(table, args[0]))) if fast is not None else None
    _skip_item_copy = table is not None and table.stream_shard is None
    try:
        item = _original_update_item(self, table_name, *args, **kwargs)
    finally:
        _skip_item_copy = False
    if fast is not None:
        _verify_simple_update(table, args[0], before, fast, item)
    return item


# Update expressions of the shape the sinks' folded writes and counters use, `ADD #a :n, ... SET #b
# = :v, ...` on top-level attributes of a table without indexes or streams, are applied directly:
# moto's generic path validates the expression's syntax tree about ten times per item (~4 ms of the
# emulator's one core per item), which bounds every sink benchmark. Anything else (functions, paths,
# REMOVE/DELETE, sets, unused or missing placeholders, key attributes) takes the generic path, which
# also raises every error. MOTO_VERIFY_FAST=1 runs both and fails the request when they differ.
_CLAUSE_WORDS = _re.compile(r"\b(SET|ADD|REMOVE|DELETE)\b", _re.IGNORECASE)
_BARE_NAME = _re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_RESERVED = set(_ReservedKeywords.get_reserved_keywords())


def _simple_plan(table, expression, names, values, condition):
    """[(clause, attribute, value)] for a simple update expression, or None."""
    names = names or {}
    values = values or {}
    used = set(_PLACEHOLDER.findall(expression)) | set(_PLACEHOLDER.findall(condition or ""))
    if used != set(names) | set(values):
        return None
    parts = _CLAUSE_WORDS.split(expression)
    if parts[0].strip() or len(parts) < 3:
        return None
    plan, seen = [], set()
    keys = {table.hash_key_attr, table.range_key_attr}
    for word, body in zip(parts[1::2], parts[2::2]):
        word = word.upper()
        for action in body.split(","):
            if word == "SET" and action.count("=") == 1:
                path, value = (x.strip() for x in action.split("="))
            elif word == "ADD" and len(action.split()) == 2:
                path, value = action.split()
            else:
                return None
            if path.startswith("#"):
                attr = names.get(path)
            elif _BARE_NAME.match(path) and path.upper() not in _RESERVED:
                attr = path
            else:
                return None
            raw = values.get(value) if value.startswith(":") else None
            if attr is None or raw is None or attr in seen or attr in keys:
                return None
            if word == "ADD" and list(raw) != ["N"]:
                return None
            seen.add(attr)
            plan.append((word, attr, raw))
    return plan


def _simple_update(table, key, update_expression=None, expression_attribute_names=None,
                   expression_attribute_values=None, attribute_updates=None, expected=None,
                   condition_expression=None, return_values_on_condition_check_failure=None):
    """A function applying the update directly when it is simple (see above), else None."""
    if table is None or not update_expression or attribute_updates or expected or table.stream_shard is not None:
        return None
    if table.global_indexes or table.indexes:
        return None
    plan = _simple_plan(table, update_expression, expression_attribute_names, expression_attribute_values, condition_expression)
    if plan is None:
        return None

    def apply():
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        item = table.get_item(hash_value, range_value)
        condition = _CachedConditionParser(condition_expression, expression_attribute_names, expression_attribute_values).parse()
        if not condition.expr(item):
            if return_values_on_condition_check_failure == "ALL_OLD" and item is not None:
                raise _ConditionalCheckFailed(item=item.to_json()["Attributes"])
            raise _ConditionalCheckFailed
        attrs = _simple_apply(item, plan)
        data = {table.hash_key_attr: key[table.hash_key_attr]}
        if table.range_key_attr:
            data[table.range_key_attr] = key[table.range_key_attr]
        data.update({k: v.to_json() for k, v in attrs.items()})
        try:
            return table.put_item(data, overwrite=True)
        except _ItemSizeTooLarge:
            raise _ItemSizeToUpdateTooLarge()

    apply.plan = plan
    return apply


def _simple_apply(item, plan):
    """The item's attributes after the plan (ADD of numbers, SET); raises moto's error on a non-number ADD."""
    attrs = {k: v for k, v in (item.attrs.items() if item is not None else ()) if k}
    for word, attr, raw in plan:
        value = DynamoType(raw)
        if word == "ADD":
            current = attrs.get(attr)
            if current is not None and current.type != "N":
                raise _IncorrectDataType()
            value = (current if current is not None else DynamoType({"N": "0"})) + value
        attrs[attr] = value
    return attrs


def _verify_simple_update(table, key, before, fast, item):
    """MOTO_VERIFY_FAST: the direct update must give the item the generic path gave."""
    mine = {k: v.to_json() for k, v in _simple_apply(before, fast.plan).items()}
    for k in (table.hash_key_attr, table.range_key_attr):
        if k:
            mine[k] = key[k]
    theirs = item.to_json()["Attributes"]
    # to_json leaves the elements of a list or map as DynamoTypes: serialise those the same way.
    as_text = lambda value: _json.dumps(value, sort_keys=True, default=lambda o: o.to_json())  # noqa: E731
    if as_text(mine) != as_text(theirs):
        raise RuntimeError(f"moto_server.py: direct update differs from moto's: {mine} != {theirs}")


_models.DynamoDBBackend.update_item = update_item

_lock = threading.Lock()


# --- 4. Single-item updates without moto's request stack ------------------------------------------
# A folded batch's marked writes are one UpdateItem per sink item. Through moto's request stack
# (dispatch by host, Flask routing, response class set-up by introspection, the generic parser and
# serializer, a deep copy of the item for ReturnValues) one costs ~1.5 ms of the emulator's core,
# ten times the update itself. A request of the simple shape (_simple_plan: ADD/SET of top-level
# attributes, an optional condition, no ReturnValues) on a table without indexes or streams is
# applied here with the same functions and answered as moto answers it; anything else, and any
# error but a failed condition, goes through moto's stack, which also words every error. With
# MOTO_VERIFY_FAST=1 the requests whose updates are verified go through moto's stack too.
import io as _io
import itertools as _itertools
import zlib as _zlib
from typing import NamedTuple as _NamedTuple

from moto.dynamodb.models import dynamodb_backends as _dynamodb_backends
from moto.iam.models import get_account_id_from as _account_id_from

_UPDATE_ITEM = "DynamoDB_20120810.UpdateItem"
_request_ids = _itertools.count(1)  # unique per server run; os.urandom cost more than the update
_DIRECT_FIELDS = {"TableName", "Key", "UpdateExpression", "ConditionExpression", "ExpressionAttributeNames",
                  "ExpressionAttributeValues", "ReturnValues"}
_CREDENTIAL = _re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/dynamodb/")
# Says which requests took this path (the emulator's tests check it did).
_DIRECT_HEADER = ("x-emulator-path", "direct")
_CONDITION_FAILED = _json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
                                 "message": "The conditional request failed"}).encode()


def _direct_request(environ, target):
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


def _direct_update(environ):
    """(status, headers, body) of a simple UpdateItem applied directly, or None for moto's stack."""
    request = _direct_request(environ, _UPDATE_ITEM)
    if request is None:
        return None
    req, backend = request
    if not set(req) <= _DIRECT_FIELDS or req.get("ReturnValues", "NONE") != "NONE":
        return None
    table = backend.tables.get(req.get("TableName"))
    key = req.get("Key")
    if table is None or not isinstance(key, dict) or not _key_matches(table, key):
        return None
    apply = _simple_update(table, key, req.get("UpdateExpression"), req.get("ExpressionAttributeNames"),
                           req.get("ExpressionAttributeValues"), condition_expression=req.get("ConditionExpression"))
    if apply is None:
        return None
    where = _item_key(table, key)
    before = _copy.deepcopy(table.get_item(*where)) if _VERIFY else None
    try:
        apply()
    except _ConditionalCheckFailed:
        return _Direct("400 Bad Request", "ConditionalCheckFailedException", "application/json", _CONDITION_FAILED, table, where, before)
    except Exception:  # noqa: BLE001 - nothing was stored; moto's stack raises and words it
        return None
    body = _json.dumps({"ConsumedCapacity": {"TableName": table.name, "CapacityUnits": 0.5}}).encode()
    return _Direct("200 OK", None, "application/x-amz-json-1.0", body, table, where, before)


class _Direct(_NamedTuple):
    """A directly applied update's answer, and what MOTO_VERIFY_FAST needs to check it."""

    status: str
    error_type: str | None
    content_type: str
    body: bytes
    table: Table
    where: tuple
    before: object


def _item_key(table, key):
    return DynamoType(key[table.hash_key_attr]), DynamoType(key[table.range_key_attr]) if table.range_key_attr else None


def _key_matches(table, key):
    """The key names exactly the table's key attributes, each of its declared type."""
    want = {table.hash_key_attr: table.hash_key_type}
    if table.range_key_attr:
        want[table.range_key_attr] = table.range_key_type
    return set(key) == set(want) and all(isinstance(v, dict) and list(v) == [want[k]] for k, v in key.items())


def _answer(direct, start_response):
    status, error_type, content_type, body = direct[:4]
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))),
               ("x-amzn-RequestId", f"direct-{next(_request_ids)}"), ("x-amz-crc32", str(_zlib.crc32(body)))]
    if error_type:
        headers.append(("x-amzn-ErrorType", error_type))
    start_response(status, headers + [_DIRECT_HEADER])
    return [body]


# MOTO_VERIFY_FAST checks the first direct updates of a server run, then one in 16: checking one
# runs moto's whole stack beside it (~4 ms), and a folded batch sends thousands of them.
_DIRECT_VERIFIED_FIRST = 256
_DIRECT_VERIFIED_EVERY = 16
_direct_count = _itertools.count()


def _verify_direct():
    if not _VERIFY:
        return False
    n = next(_direct_count)
    return n < _DIRECT_VERIFIED_FIRST or n % _DIRECT_VERIFIED_EVERY == 0


def _verified(app, environ, start_response, direct):
    """MOTO_VERIFY_FAST: moto's stack, given the item as it was, must answer and store what the direct update did."""
    item = direct.table.get_item(*direct.where)
    mine = item.to_json() if item is not None else None
    _restore(direct.table, *direct.where, direct.before)
    started = []
    body = list(app(environ, lambda status, headers, *exc: started.append((status, headers))))
    item = direct.table.get_item(*direct.where)
    theirs = item.to_json() if item is not None else None
    same_answer = started[0][0].split(" ")[0] == direct.status.split(" ")[0] and _json.loads(b"".join(body)) == _json.loads(direct.body)
    if not same_answer or mine != theirs:
        mine_text = f"{direct.status} {direct.body!r} {mine}"[:1000]
        theirs_text = f"{started[0][0]} {b''.join(body)!r} {theirs}"[:1000]
        raise RuntimeError(f"moto_server.py: direct UpdateItem differs from moto's: {mine_text} != {theirs_text}")
    status, headers = started[0]
    start_response(status, list(headers) + [_DIRECT_HEADER])
    return body



# --- 5. Batched marked writes: the PartiQL statements the ledger sends -----------------------------
# A folded batch's marked writes go 25 to a BatchExecuteStatement (lib/ledger/statements.dynamodb.ts):
# `INSERT INTO "t" VALUE {'a' : ?, ...}` and `UPDATE "t" SET "a" = ? ... [REMOVE "b" ...] WHERE "k" = ?
# AND "c" = ? AND "d" IS MISSING AND "m" < ?`. moto's PartiQL engine copies every item of every table
# into a new document for each statement, so it cannot serve them; a request whose statements all
# have exactly these shapes, on tables without indexes or streams, is applied here, one statement
# after the other, with DynamoDB's per-statement answers (DuplicateItem, ConditionalCheckFailed).
# Anything else goes to moto's stack. MOTO_VERIFY_FAST=1 applies the first 256 statements of a run,
# then one in 16, also as the equivalent PutItem/UpdateItem through moto's generic code on the item
# as it was, and fails the request when the stored items differ.
_BATCH_EXECUTE = "DynamoDB_20120810.BatchExecuteStatement"
_INSERT = _re.compile(r'INSERT INTO "([^"]+)" VALUE \{(.*)\}', _re.S)
_INSERT_ENTRY = _re.compile(r"\s*'([^']+)' : \?\s*(?:,|$)")
_UPDATE = _re.compile(r'UPDATE "([^"]+)" (.*?) WHERE (.*)', _re.S)
_UPDATE_ACTION = _re.compile(r'\s*(?:SET "([^"]+)" = \?|REMOVE "([^"]+)")')
_CONDITION = _re.compile(r'\s*"([^"]+)" (= \?|< \?|IS MISSING)\s*(?:AND|$)')
_STATEMENT_VERIFIED_FIRST = 256
_STATEMENT_VERIFIED_EVERY = 16
_statement_count = _itertools.count()


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
        if not entries or table is None or len(entries) != len(params) or not _plain_table(table):
            return None
        item = {e.group(1): v for e, v in zip(entries, params)}
        if len(item) != len(entries) or not _key_matches(table, {k: item.get(k) for k in _key_names(table)}):
            return None
        return table, "insert", item
    m = _UPDATE.fullmatch(text)
    if not m:
        return None
    actions, conditions = _scan(_UPDATE_ACTION, m.group(2)), _scan(_CONDITION, m.group(3))
    table = backend.tables.get(m.group(1))
    if not actions or not conditions or table is None or not _plain_table(table):
        return None
    sets = [(a.group(1), params.pop(0) if params else None) for a in actions if a.group(1)]
    removes = [a.group(2) for a in actions if a.group(2)]
    checks = []
    for c in conditions:
        op = c.group(2)
        checks.append((c.group(1), op, params.pop(0) if params and op != "IS MISSING" else None))
    key = {name: value for name, op, value in checks if name in _key_names(table) and op == "= ?"}
    touched = [n for n, _ in sets] + removes
    if params or any(v is None for _, v in sets) or any(op != "IS MISSING" and v is None for _, op, v in checks):
        return None
    if not _key_matches(table, key) or len(set(touched)) != len(touched) or set(touched) & set(key):
        return None
    return table, "update", (key, sets, removes, checks)


def _plain_table(table):
    return table.stream_shard is None and not table.global_indexes and not table.indexes


def _key_names(table):
    return [k for k in (table.hash_key_attr, table.range_key_attr) if k]


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
        where = _item_key(table, parsed)
        if table.get_item(*where) is not None:
            return "DuplicateItem", "Duplicate primary key exists in table"
        data = parsed
    else:
        key, sets, removes, checks = parsed
        item = table.get_item(*_item_key(table, key))
        if item is None or not all(_holds(item, n, op, v) for n, op, v in checks):
            return "ConditionalCheckFailed", "The conditional request failed"
        data = {k: v.to_json() for k, v in item.attrs.items() if k not in removes}
        data.update({n: v for n, v in sets})
    try:
        table.put_item(data, overwrite=True)
    except _ItemSizeTooLarge:
        return "ValidationError", "Item size has exceeded the maximum allowed size"
    return None


def _generic_statement(backend, table, kind, parsed):
    """The same write through moto's generic PutItem/UpdateItem (MOTO_VERIFY_FAST); its error code or None."""
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
        _original_update_item(backend, table.name, key, " ".join(clauses), names, values,
                              condition_expression=" AND ".join(conds))
        return None
    except _ConditionalCheckFailed:
        return "DuplicateItem" if kind == "insert" else "ConditionalCheckFailed"
    except (_ItemSizeTooLarge, _ItemSizeToUpdateTooLarge):
        return "ValidationError"


def _verify_statement():
    if not _VERIFY:
        return False
    n = next(_statement_count)
    return n < _STATEMENT_VERIFIED_FIRST or n % _STATEMENT_VERIFIED_EVERY == 0


def _direct_statements(environ):
    """(status, headers, body) of a BatchExecuteStatement of the ledger's shapes applied directly, or None."""
    request = _direct_request(environ, _BATCH_EXECUTE)
    if request is None:
        return None
    req, backend = request
    if set(req) != {"Statements"} or not isinstance(req["Statements"], list) or not 1 <= len(req["Statements"]) <= 25:
        return None
    parsed = [_parse_statement(backend, stmt) for stmt in req["Statements"]]
    if any(p is None for p in parsed):
        return None
    where = [_item_key(p[0], p[2] if p[1] == "insert" else p[2][0]) for p in parsed]
    if len(set(where)) != len(where):
        return None  # two statements on one item: left to moto (DynamoDB refuses such a batch)
    responses = []
    for (table, kind, stmt), at in zip(parsed, where):
        verify = _verify_statement()
        before = _copy.deepcopy(table.get_item(*at)) if verify else None
        error = _run_statement(table, kind, stmt)
        if verify:
            mine = table.get_item(*at)
            mine = mine.to_json() if mine is not None else None
            _restore(table, *at, before)
            theirs_error = _generic_statement(backend, table, kind, stmt)
            theirs = table.get_item(*at)
            theirs = theirs.to_json() if theirs is not None else None
            if mine != theirs or (error and error[0]) != theirs_error:
                raise RuntimeError(f"moto_server.py: direct statement differs from moto's: {error} {mine} != {theirs_error} {theirs}"[:1000])
        entry = {"TableName": table.name}
        if error:
            entry["Error"] = {"Code": error[0], "Message": error[1]}
        responses.append(entry)
    body = _json.dumps({"Responses": responses}).encode()
    return _Direct("200 OK", None, "application/x-amz-json-1.0", body, None, None, None)


_request_log = logging.getLogger("moto_server.requests")


def _serialized(app):
    def wsgi(environ, start_response):
        status = []

        def started(code, headers, *exc_info):
            status.append(code.split(" ", 1)[0])
            return start_response(code, headers, *exc_info)

        with _lock:
            _verify_budget.update(_VERIFY_BUDGET)
            direct = _direct_update(environ)
            statements = _direct_statements(environ) if direct is None else None
            # moto builds the whole response body inside the call; materialise it under the lock.
            if statements is not None:
                body = _answer(statements, started)
            elif direct is None:
                body = list(app(environ, started))
            else:
                body = _verified(app, environ, started, direct) if _verify_direct() else _answer(direct, started)
        # The request log: a line per refused or failed request, the action named. Not one per request
        # (werkzeug's server wrote those): a flushed line costs a sixth of a direct update's time.
        code = status[0] if status else "-"
        if not code.startswith("2") and _request_log.isEnabledFor(logging.INFO):
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            _request_log.info("%s %s %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"), target, code)
        return body

    return wsgi


# werkzeug's development server answers every request with `Connection: close`, so each request
# costs a new TCP connection on both sides and a new thread here (about as much of the emulator's
# core as a simple update itself), and a client sending thousands of single-item writes a second
# runs out of ephemeral ports in TIME_WAIT. waitress (pure Python, HTTP/1.1 keep-alive) serves the
# same WSGI app; requests still run one at a time under the lock. Like werkzeug, it drops request
# headers spelled with an underscore (moto's own werkzeug handler kept those for S3 metadata; the
# project's clients send none).
_SERVER_THREADS = 4
_IDLE_CONNECTION_S = 3600  # clients keep sockets open between bursts; do not close them under them
_MAX_CONNECTIONS = 1000  # many in-process processors, each with its own pool of sockets


def run_simple(hostname, port, application, *args, **kwargs):
    import waitress

    waitress.serve(
        _serialized(application),
        host=hostname,
        port=port,
        threads=_SERVER_THREADS,
        channel_timeout=_IDLE_CONNECTION_S,
        connection_limit=_MAX_CONNECTIONS,
    )


import moto.server as _server  # noqa: E402

_server.run_simple = run_simple



def _rotating_log():
    """The request log (failed requests) and warnings in one size-rotated file (MOTO_LOG_FILE, set by dynamodb.ts),
    not on stderr: a stack left running for days must not fill the disk."""
    import logging.handlers
    import os

    path = os.environ.get("MOTO_LOG_FILE")
    if not path:
        return
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=int(os.environ.get("MOTO_LOG_FILE_BYTES", "5242880")), backupCount=int(os.environ.get("MOTO_LOG_FILES", "3"))
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    _request_log.setLevel(logging.INFO)
    # waitress warns each time requests queue behind the lock, which is how this server works.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)


if __name__ == "__main__":
    _rotating_log()
    _server.main(sys.argv[1:])
