"""Faster paths that give moto 5.2.5's own answers (the planner and sink benchmarks spent their time
in these places). Each patch names the moto function it replaces; DynamoDB's answers are moto's here,
unchanged. The ones marked "checked" run moto's generic code beside them under MOTO_VERIFY_FAST=1
(verification.py) and fail the request when the two differ.
"""
import copy as _copy
import json as _json
import pickle as _pickle
import re as _re
from collections import OrderedDict as _OrderedDict

from moto import backends as _backends
from moto.core import parse as _parse
from moto.core import serialize as _serialize
from moto.dynamodb import comparisons as _comparisons
from moto.dynamodb import models as _models
from moto.dynamodb import responses as _responses
from moto.dynamodb.exceptions import ConditionalCheckFailed as _ConditionalCheckFailed
from moto.dynamodb.exceptions import IncorrectDataType as _IncorrectDataType
from moto.dynamodb.exceptions import ItemSizeTooLarge as _ItemSizeTooLarge
from moto.dynamodb.exceptions import ItemSizeToUpdateTooLarge as _ItemSizeToUpdateTooLarge
from moto.dynamodb.models import dynamo_type as _dynamo_type
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.models.utilities import bytesize as _bytesize
from moto.dynamodb.parsing import ast_nodes as _ast_nodes
from moto.dynamodb.parsing import expressions as _expressions
from moto.dynamodb.parsing import validators as _validators
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords as _ReservedKeywords

from . import common, verification

_PARSE_CACHE_SIZE = common.PARSE_CACHE_SIZE
_PLACEHOLDER = common.PLACEHOLDER


# --- Transactions ------------------------------------------------------------------------------------
class _CopyStandIn:
    """Stands in for `copy` inside moto.dynamodb.models: whole-table backups become no-ops once
    transactions snapshot their own items, and an item's pre-image copy while update_item skips it."""

    skip_tables = False
    skip_items = False  # set by update_item around moto's own, for tables without a stream

    def deepcopy(self, value, memo=None):
        if self.skip_tables and isinstance(value, Table):
            return value
        if self.skip_items and (value is None or isinstance(value, _dynamo_type.Item)):
            return value
        return _copy.deepcopy(value, memo)

    def __getattr__(self, name):
        return getattr(_copy, name)


_copy_stand_in = _CopyStandIn()


def _install_copy_stand_in():
    if _models.copy is not _copy_stand_in:
        common.replace(_models, "copy", _copy_stand_in)


def transactions_snapshot_touched_items():
    """Replaces `moto.dynamodb.models.DynamoDBBackend.transact_write_items`'s backup, and the
    `copy` module as moto.dynamodb.models sees it: moto deep-copies every table a transaction names,
    once per action, to restore it when the transaction is cancelled, so a 100-action transaction on
    a 20,000-item table takes seconds (the planner benchmark sends hundreds). Here the table copy is
    a no-op and only the items the actions touch are snapshotted: by reference for Put and Delete
    (which replace or drop the item object), a deep copy for Update (which changes it in place);
    ConditionCheck changes nothing. A cancelled transaction restores them, then raises moto's error.
    DynamoDB: all or nothing, as moto and as here."""
    _install_copy_stand_in()
    _copy_stand_in.skip_tables = True
    transact = common.original(_models.DynamoDBBackend, "transact_write_items")

    def transact_write_items(self, transact_items):
        snapshots = []
        for entry in transact_items:
            op = next(iter(entry.values()), {})
            table = self.tables.get(op.get("TableName"))
            if table is None:
                continue
            try:
                hash_value, range_value = common.key_values(table, op)
                current = table.get_item(hash_value, range_value)
            except Exception:  # malformed key: moto rejects it before writing anything
                continue
            if "ConditionCheck" in entry:
                continue
            # Put and Delete replace or drop the item object; only Update changes it in place.
            snapshots.append((table, hash_value, range_value, _copy.deepcopy(current) if "Update" in entry else current))
        try:
            return transact(self, transact_items)
        except Exception:
            for table, hash_value, range_value, item in reversed(snapshots):
                common.restore(table, hash_value, range_value, item)
            raise

    common.replace(_models.DynamoDBBackend, "transact_write_items", transact_write_items)


# --- Expression parsers ------------------------------------------------------------------------------
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
            parser = common.original(_comparisons, "create_condition_expression_parser")(expr, names, values)
            op = parser.parse()  # errors are raised every time, never cached
            hit = (op, tuple(parser.expr_attr_names_found), tuple(parser.expr_attr_values_found))
            self._cache[key] = hit
            if len(self._cache) > _PARSE_CACHE_SIZE:
                self._cache.popitem(last=False)
        self.expr_attr_names_found = list(hit[1])
        self.expr_attr_values_found = list(hit[2])
        return hit[0]


def cache_condition_expressions():
    """Replaces `create_condition_expression_parser` (moto.dynamodb.comparisons, and the names
    moto.dynamodb.models and moto.dynamodb.responses imported it under): a parsed condition is
    reused while its text and the names and values that text uses are the same; moto parses each
    one up to three times per transaction action. Errors are raised by moto's parser every time,
    never cached."""
    for module in (_comparisons, _models, _responses):
        common.replace(module, "create_condition_expression_parser", _CachedConditionParser)


def cache_update_expressions():
    """Replaces `moto.dynamodb.parsing.expressions.UpdateExpressionParser.make`: a parsed update
    expression is reused by its text (moto's validator works on its own deep copy of the tree, so
    the cached tree is never changed)."""
    make = _expressions.UpdateExpressionParser.make.__func__
    cache = _OrderedDict()

    def cached_make(cls, expression_str):
        hit = cache.get(expression_str)
        if hit is None:
            hit = make(cls, expression_str)
            cache[expression_str] = hit
            if len(cache) > _PARSE_CACHE_SIZE:
                cache.popitem(last=False)
        return hit

    common.replace(_expressions.UpdateExpressionParser, "make", classmethod(cached_make))


def pickle_validator_copies():
    """Replaces `deepcopy` as moto.dynamodb.parsing.validators sees it: the validator's private copy
    of a (cached) syntax tree is made by a pickle round trip, an equal tree several times faster
    than copy.deepcopy's Python-level recursion. Anything that does not pickle is deep-copied."""
    pickled = {}

    def validator_deepcopy(value, memo=None):
        if memo is None and isinstance(value, _ast_nodes.Node):
            entry = pickled.get(id(value))
            if entry is None or entry[0] is not value:
                try:
                    entry = (value, _pickle.dumps(value, protocol=_pickle.HIGHEST_PROTOCOL))
                except Exception:
                    return _copy.deepcopy(value)
                if len(pickled) > _PARSE_CACHE_SIZE:
                    pickled.clear()
                pickled[id(value)] = entry
            return _pickle.loads(entry[1])
        return _copy.deepcopy(value, memo)

    common.replace(_validators, "deepcopy", validator_deepcopy)


_ITEM_SIZE_LIMIT = 405000  # moto's own figure (LimitedSizeDict)


def check_item_size_once():
    """Replaces `moto.dynamodb.models.dynamo_type.Item.__init__`: moto's LimitedSizeDict checks the
    item's size on every attribute insert (quadratic in its attributes); sizes only grow, so checking
    the whole item once when it is built raises ItemSizeTooLarge exactly when moto would (its limit,
    405,000 bytes; DynamoDB's is 400 KB)."""
    limited_size_dict = _dynamo_type.LimitedSizeDict

    def item_init(self, hash_key, range_key, attrs):
        self.hash_key = hash_key
        self.range_key = range_key
        converted = [(key, DynamoType(value)) for key, value in attrs.items()]
        total = sum(_bytesize(key) + value.size() for key, value in converted)
        if total > _ITEM_SIZE_LIMIT:
            raise _ItemSizeTooLarge
        self.attrs = limited_size_dict()
        dict.update(self.attrs, converted)

    common.replace(_dynamo_type.Item, "__init__", item_init)


# --- Syntax-tree walks -------------------------------------------------------------------------------
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


_mapped_class = {}
_UNKNOWN = object()
_NOT_MAPPED = object()


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


def traverse_with_class_maps():
    """Replaces `moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.nodes_to_be_processed`,
    `.process` and `.traverse_node_recursively`: each traverser builds its node-type map once instead
    of at every node, and which handler a node class gets is worked out once per (traverser class,
    node class). A traverser subclass overriding those methods keeps moto's walk."""
    traverse = common.original(_Traverser, "traverse_node_recursively")

    def traverse_node_recursively(self, node, child_id=-1):
        kind = type(self)
        if kind.nodes_to_be_processed is not _nodes_to_be_processed or kind.process is not _process:
            return traverse(self, node, child_id)
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

    common.replace(_Traverser, "nodes_to_be_processed", _nodes_to_be_processed)
    common.replace(_Traverser, "process", _process)
    common.replace(_Traverser, "traverse_node_recursively", traverse_node_recursively)


def find_clauses_memoised():
    """Replaces `moto.dynamodb.parsing.ast_nodes.Node.find_clauses`: the same search of an update
    expression's clauses, with its class checks memoised per class."""

    def find_clauses(self, clause_types):
        clauses = []
        for child in self.children or []:
            cls = type(child)
            if cls in clause_types:
                clauses.append(child)
            elif _is_a(cls, _ast_nodes.Expression) or _is_a(cls, _ast_nodes.UpdateExpressionFunction):
                clauses.extend(child.find_clauses(clause_types))
        return clauses

    common.replace(_ast_nodes.Node, "find_clauses", find_clauses)


# --- AttributeValue maps in requests and responses ---------------------------------------------------
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


def serialize_attribute_values_directly():
    """Replaces `moto.core.serialize.BaseJSONSerializer._serialize_type_map` for AttributeValue maps:
    converted directly instead of through the generic shape walker (checked: the first 64 maps of
    each response)."""
    serialize_map = common.original(_serialize.BaseJSONSerializer, "_serialize_type_map")

    def _serialize_type_map(self, serialized, value, shape, key):
        if getattr(shape.value, "name", None) == "AttributeValue" and isinstance(value, dict):
            try:
                fast = {k: _fast_attribute_value(v, self._base64) for k, v in value.items()}
            except _SlowPath:
                fast = None
            if fast is not None:
                if verification.verify_this("serialize"):
                    slow = {}
                    serialize_map(self, slow, value, shape, key)
                    verification.check_map("serialization", fast, list(slow.values())[0], shown=slow)
                self._default_serialize(serialized, fast, shape, key)
                return
        serialize_map(self, serialized, value, shape, key)

    common.replace(_serialize.BaseJSONSerializer, "_serialize_type_map", _serialize_type_map)


def parse_attribute_values_directly():
    """Replaces `moto.core.parse.RequestParser._parse_map` for AttributeValue maps of JSON requests:
    converted directly instead of through the generic shape walker (checked: the first 64 maps of
    each request)."""
    parse_map = common.original(_parse.RequestParser, "_parse_map")
    json_parser = _parse.BaseJSONParser

    def _parse_map(self, shape, value):
        if isinstance(self, json_parser) and getattr(shape.value, "name", None) == "AttributeValue" and isinstance(value, dict):
            try:
                fast = self.MAP_TYPE()
                for k, v in value.items():
                    fast[k] = _fast_attribute_value(v, self._blob_parser, self.MAP_TYPE)
            except _SlowPath:
                fast = None
            if fast is not None:
                if verification.verify_this("parse"):
                    slow = parse_map(self, shape, value)
                    verification.check_map("parsing", fast, slow)
                return fast
        return parse_map(self, shape, value)

    common.replace(_parse.RequestParser, "_parse_map", _parse_map)


def read_module_list_once():
    """Replaces `moto.backends.list_of_moto_modules`: every request asks whether its Host header names
    a moto module (moto/moto_server/werkzeug_app.py), and moto answers by listing its package
    directory (a listdir and ~200 stats, ~2 ms per request: more than a simple update itself). The
    installed package does not change while the server runs, so it is listed once, here."""
    modules = tuple(_backends.list_of_moto_modules())
    common.replace(_backends, "list_of_moto_modules", lambda: modules)


# --- Simple updates ----------------------------------------------------------------------------------
# Update expressions of the shape the sinks' folded writes and counters use, `ADD #a :n, ... SET #b
# = :v, ...` on top-level attributes of a table without indexes or streams. Anything else (functions,
# paths, REMOVE/DELETE, sets, unused or missing placeholders, key attributes) takes moto's generic
# path, which also raises every error.
_CLAUSE_WORDS = _re.compile(r"\b(SET|ADD|REMOVE|DELETE)\b", _re.IGNORECASE)
_BARE_NAME = _re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_RESERVED = set(_ReservedKeywords.get_reserved_keywords())


_plan_shapes = _OrderedDict()


def _simple_plan(table, expression, names, values, condition):
    """[(clause, attribute, value)] for a simple update expression, or None."""
    names = names or {}
    values = values or {}
    # The shape (clauses, attributes, placeholders) depends on the texts, the names and which values
    # are given, not on the values: worked out once per shape, as a batch's updates share one.
    key = (expression, condition, tuple(sorted(names.items())), tuple(sorted(values)), table.hash_key_attr, table.range_key_attr)
    shape = _plan_shapes.get(key, _PLACEHOLDER)
    if shape is _PLACEHOLDER:
        shape = _plan_shape(table, expression, names, values, condition)
        _plan_shapes[key] = shape
        if len(_plan_shapes) > _PARSE_CACHE_SIZE:
            _plan_shapes.popitem(last=False)
    if shape is None:
        return None
    plan = [(word, attr, values[placeholder]) for word, attr, placeholder in shape]
    if any(not isinstance(raw, dict) or (word == "ADD" and list(raw) != ["N"]) for word, _, raw in plan):
        return None
    return plan


def _plan_shape(table, expression, names, values, condition):
    """[(clause, attribute, value placeholder)] of a simple update expression, or None."""
    used = set(_PLACEHOLDER.findall(expression)) | set(_PLACEHOLDER.findall(condition or ""))
    if used != set(names) | set(values):
        return None
    parts = _CLAUSE_WORDS.split(expression)
    if parts[0].strip() or len(parts) < 3:
        return None
    shape, seen = [], set()
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
            if attr is None or not value.startswith(":") or value not in values or attr in seen or attr in keys:
                return None
            seen.add(attr)
            shape.append((word, attr, value))
    return shape


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
        condition = None
        if condition_expression is not None:  # no condition holds always, as moto's parser of none answers
            condition = _CachedConditionParser(condition_expression, expression_attribute_names, expression_attribute_values).parse()
        if condition is not None and not condition.expr(item):
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


def apply_simple_updates_directly():
    """Replaces `moto.dynamodb.models.DynamoDBBackend.update_item`:
    - an update of the simple shape above (`ADD #a :n ... SET #b = :v ...` on top-level attributes,
      a table without indexes or streams) is applied directly: moto's generic path validates the
      expression's syntax tree about ten times per item (~4 ms of the emulator's core per item),
      which bounds every sink benchmark (checked: the first 8 direct updates of each request);
    - otherwise moto's own runs, without the deep copy of the item it makes before changing it
      (`orig_item = copy.deepcopy(item)`), which moto reads only for a table with a stream."""
    _install_copy_stand_in()
    update = common.original(_models.DynamoDBBackend, "update_item")

    def update_item(self, table_name, *args, **kwargs):
        table = self.tables.get(table_name)
        fast = _simple_update(table, *args, **kwargs)
        if fast is not None and not verification.verify_this("update"):
            return fast()
        before = _copy.deepcopy(table.get_item(*self.get_keys_value(table, args[0]))) if fast is not None else None
        _copy_stand_in.skip_items = table is not None and table.stream_shard is None
        try:
            item = update(self, table_name, *args, **kwargs)
        finally:
            _copy_stand_in.skip_items = False
        if fast is not None:
            verification.check_simple_update(table, args[0], _simple_apply(before, fast.plan), item)
        return item

    common.replace(_models.DynamoDBBackend, "update_item", update_item)


# --- Single-item updates without moto's request stack -------------------------------------------------
_UPDATE_ITEM = "DynamoDB_20120810.UpdateItem"
_DIRECT_FIELDS = {"TableName", "Key", "UpdateExpression", "ConditionExpression", "ExpressionAttributeNames",
                  "ExpressionAttributeValues", "ReturnValues"}
_CONDITION_FAILED = _json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
                                 "message": "The conditional request failed"}).encode()


def serve_update_item_directly():
    """Replaces moto's request stack (moto.moto_server.werkzeug_app.DomainDispatcherApplication,
    Flask routing, moto.dynamodb.responses.DynamoHandler.update_item, the generic parser and
    serializer) for one request shape: a single-item UpdateItem of the simple shape (see
    apply_simple_updates_directly), an optional condition, no ReturnValues, on a table without indexes
    or streams. Through moto's stack one costs ~1.5 ms of the emulator's core, ten times the update
    itself, and a folded batch's marked writes are one per sink item. It is applied with the same
    functions and answered as moto answers it (its body, a ConditionalCheckFailedException for a
    failed condition); anything else, and any error but a failed condition, goes through moto's
    stack, which also words every error. Answers carry `x-emulator-path: direct` (common.DIRECT_HEADER).
    Checked: the first 256 such requests of a run, then one in 16, through moto's stack too."""
    common.set_layer("direct_update", _direct_layer(_direct_update))


def _direct_layer(serve):
    """A WSGI layer answering what `serve(environ)` applies directly (checked against moto's stack when
    verification samples it), and passing anything it leaves (None) to moto's stack."""

    def wrap(app):
        def wsgi(environ, start_response):
            direct = serve(environ)
            if direct is None:
                return app(environ, start_response)
            if verification.verify_direct():
                return verification.verified(app, environ, start_response, direct)
            return common.answer(direct, start_response)

        return wsgi

    return wrap


def _direct_update(environ):
    """The answer (common.Direct) of a simple UpdateItem applied directly, or None for moto's stack."""
    request = common.direct_request(environ, _UPDATE_ITEM)
    if request is None:
        return None
    req, backend = request
    if not set(req) <= _DIRECT_FIELDS or req.get("ReturnValues", "NONE") != "NONE":
        return None
    table = backend.tables.get(req.get("TableName"))
    key = req.get("Key")
    if table is None or not isinstance(key, dict) or not common.key_matches(table, key):
        return None
    apply = _simple_update(table, key, req.get("UpdateExpression"), req.get("ExpressionAttributeNames"),
                           req.get("ExpressionAttributeValues"), condition_expression=req.get("ConditionExpression"))
    if apply is None:
        return None
    where = common.item_key(table, key)
    before = verification.copy_before(table, where, verification.VERIFY)
    try:
        apply()
    except _ConditionalCheckFailed:
        return common.Direct("400 Bad Request", "ConditionalCheckFailedException", "application/json", _CONDITION_FAILED, ((table, where, before),))
    except Exception:  # noqa: BLE001 - nothing was stored; moto's stack raises and words it
        return None
    body = _json.dumps({"ConsumedCapacity": {"TableName": table.name, "CapacityUnits": 0.5}}).encode()
    return common.Direct("200 OK", None, "application/x-amz-json-1.0", body, ((table, where, before),))


# --- Transactions of updates without moto's request stack -----------------------------------------------
_TRANSACT_WRITE_ITEMS = "DynamoDB_20120810.TransactWriteItems"
_TRANSACT_FIELDS = {"TransactItems", "ClientRequestToken"}  # moto ignores the token, as here
# What a failed condition returns matters only to a refusal, which moto's stack answers.
_TRANSACT_UPDATE_FIELDS = _DIRECT_FIELDS - {"ReturnValues"} | {"ReturnValuesOnConditionCheckFailure"}
_TRANSACT_DONE = _json.dumps({"ConsumedCapacity": [], "ItemCollectionMetrics": {}}).encode()


def serve_transactions_directly():
    """Replaces moto's request stack (as serve_update_item_directly) and
    `moto.dynamodb.models.DynamoDBBackend.transact_write_items` for one request shape: a
    TransactWriteItems of Update actions only, each on an item of its own, on tables without indexes
    or streams, every placeholder given used and every one used given: the exactly-once sink's
    batches (an update per key and the ledger's group item). Through moto's stack each action's
    expressions are parsed three times and a 46-action batch cost the emulator's core ~7 ms, the
    bulk of its time in the continuous exactly-once benchmark. Simple updates are applied as
    apply_simple_updates_directly applies them, any other update by moto's own update_item (the
    function moto's transaction calls), one after the other as moto does.

    Only a transaction that succeeds is answered here: when any action fails (a condition, a
    validation, anything), the touched items are put back as they were and moto's stack serves the
    request from that state, so every refusal (TransactionCanceledException and its reasons,
    ValidationException) is moto's own. Answers carry `x-emulator-path: direct`. Checked: the first
    256 direct requests of a run (updates and transactions), then one in 16, through moto's stack too."""
    common.set_layer("direct_transact", _direct_layer(_direct_transact))


def _direct_transact(environ):
    """The answer (common.Direct) of a transaction of updates applied directly, or None for moto's stack."""
    request = common.direct_request(environ, _TRANSACT_WRITE_ITEMS)
    if request is None:
        return None
    req, backend = request
    actions = req.get("TransactItems")
    if not set(req) <= _TRANSACT_FIELDS or not isinstance(actions, list) or not 1 <= len(actions) <= 100:
        return None
    planned = [_transact_update(backend, action) for action in actions]
    if any(p is None for p in planned) or len({(t.name, w) for t, w, _ in planned}) != len(planned):
        return None  # another shape, or two actions on one item (DynamoDB refuses it): moto's stack
    touched = []
    try:
        for table, where, apply in planned:
            current = table.get_item(*where)
            # A simple update stores a new item object; moto's changes the one stored in place.
            touched.append((table, where, current if apply.plan is not None else _copy.deepcopy(current)))
            apply()
    except Exception:  # noqa: BLE001 - put back what was written; moto's stack answers, refusal and wording its own
        for table, where, before in reversed(touched):
            common.restore(table, *where, before)
        return None
    return common.Direct("200 OK", None, "application/x-amz-json-1.0", _TRANSACT_DONE, tuple(touched))


def _transact_update(backend, action):
    """(table, item key, apply) for a transaction's Update action the direct path takes, or None.
    `apply.plan` is the simple update's plan, or None for moto's own update_item."""
    if not isinstance(action, dict) or list(action) != ["Update"] or not isinstance(action["Update"], dict):
        return None
    op = action["Update"]
    if not set(op) <= _TRANSACT_UPDATE_FIELDS or not isinstance(op.get("UpdateExpression"), str):
        return None
    table = backend.tables.get(op.get("TableName"))
    key = op.get("Key")
    if table is None or not common.plain_table(table) or not isinstance(key, dict) or not common.key_matches(table, key):
        return None
    if any(not next(iter(v.values())) for v in key.values()):
        return None  # an empty key value: moto's validation words it
    expression, condition = op["UpdateExpression"], op.get("ConditionExpression")
    names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
    if values == {} or names == {} or condition == "":
        return None
    used = set(_PLACEHOLDER.findall(expression)) | set(_PLACEHOLDER.findall(condition or ""))
    if used != set(names or {}) | set(values or {}):
        return None  # an unused or missing placeholder: moto's validation words it
    apply = _simple_update(table, key, expression, names, values, condition_expression=condition)
    if apply is None:

        def apply():
            backend.update_item(table.name, key, update_expression=expression, expression_attribute_names=names,
                                expression_attribute_values=values, condition_expression=condition)

        apply.plan = None
    return table, common.item_key(table, key), apply


# --- The HTTP server --------------------------------------------------------------------------------------
_SERVER_THREADS = 4
_IDLE_CONNECTION_S = 3600  # clients keep sockets open between bursts; do not close them under them
_MAX_CONNECTIONS = 1000  # many in-process processors, each with its own pool of sockets


def serve_with_waitress():
    """Replaces `moto.server.run_simple` (werkzeug's development server): werkzeug answers every
    request with `Connection: close`, so each request costs a new TCP connection on both sides and a
    new thread here (about as much of the emulator's core as a simple update itself), and a client
    sending thousands of single-item writes a second runs out of ephemeral ports in TIME_WAIT.
    waitress (pure Python, HTTP/1.1 keep-alive) serves the same WSGI app, wrapped in the layers the
    other patches set (common.LAYERS: request log, lock, direct paths). Like werkzeug, it drops
    request headers spelled with an underscore (moto's own werkzeug handler kept those for S3
    metadata; the project's clients send none)."""
    import moto.server as server

    def run_simple(hostname, port, application, *args, **kwargs):
        import waitress

        waitress.serve(
            common.wrapped(application),
            host=hostname,
            port=port,
            threads=_SERVER_THREADS,
            channel_timeout=_IDLE_CONNECTION_S,
            connection_limit=_MAX_CONNECTIONS,
        )

    common.replace(server, "run_simple", run_simple)


# --- The interpreter -----------------------------------------------------------------------------------
def freeze_survivors_of_full_collections():
    """CPython's cyclic garbage collector (not moto): a full (generation 2) collection walks every
    tracked object, and the emulator holds millions (each stored item's attribute values), so it
    paused every request for up to 1.5 s at a time (2.4 million objects, 22 pauses over 20 ms in one
    exactly-once latency bench, 11 s in all); DynamoDB has no such pauses. After each full collection
    its survivors are frozen (gc.freeze: the permanent generation), so the next walks only what was
    allocated since. Answers are unchanged. Reference cycles among frozen objects are never collected:
    stored items hold none (they are freed by reference counting when their table goes), and a
    request's own cycles are collected young."""
    import gc

    def after(phase, info):
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()

    gc.callbacks.append(after)
