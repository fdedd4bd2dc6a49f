"""moto's DynamoDB server with the changes the ledger's tests and benchmarks need. Hand-written because no
emulator with transactions offers them (dynalite has no transactions; DynamoDB Local is not open source).

This file is the launcher: it refuses any moto but the one the patches were written for, applies the
patches in the order of PATCHES below, and runs moto's server (`moto.server.main`, the same arguments:
`-H host -p port`). The patches live in patches/, one module per purpose, each patch a function whose
docstring names the moto internal it replaces and what DynamoDB does:

| purpose | module | what it holds |
| --- | --- | --- |
| correctness | patches/correctness.py | where moto answers differently from DynamoDB |
| speed | patches/speed.py | faster paths giving moto's own answers |
| verification | patches/verification.py | MOTO_VERIFY_FAST checks of the faster paths; the request log |

patches/common.py holds what they share, including the fixed order of the WSGI layers around moto's
app (request log, lock, verification budget, direct UpdateItem, direct transactions, direct statements:
common.LAYERS).

Setting MOTO_VERIFY_FAST=1 (the test suite does) runs moto's generic code beside the faster paths on
a sample (the first 64 AttributeValue maps of each request and response, the first 8 direct updates
of each request, the first 256 direct UpdateItem and TransactWriteItems requests and PartiQL statements
of a run and one in 16 after) and fails a request whose answer or stored item differs.

These are moto internals, so the launcher refuses any moto version other than the one it was written
for (the pin in requirements.txt beside it), before importing moto.
"""
import sys
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

# The patches are imported from beside this file (sys.path[0]); no __pycache__ is written into the
# engine's package (a clone's work tree, an installed node_modules).
_wrote_bytecode = sys.dont_write_bytecode
sys.dont_write_bytecode = True
from patches import correctness, speed, verification  # noqa: E402

sys.dont_write_bytecode = _wrote_bytecode

# Applied in this order, before moto's server starts. The order matters only where two patches touch
# one moto function (none do) or one WSGI app (their layers' order is common.LAYERS, not this list).
PATCHES = (
    # correctness: where moto answers differently from DynamoDB
    correctness.serialise_requests,
    correctness.serve_ledger_statements,
    # speed: moto's answers, faster
    speed.transactions_snapshot_touched_items,
    speed.cache_condition_expressions,
    speed.cache_update_expressions,
    speed.pickle_validator_copies,
    speed.check_item_size_once,
    speed.traverse_with_class_maps,
    speed.find_clauses_memoised,
    speed.serialize_attribute_values_directly,
    speed.parse_attribute_values_directly,
    speed.read_module_list_once,
    speed.apply_simple_updates_directly,
    speed.serve_update_item_directly,
    speed.serve_transactions_directly,
    speed.serve_with_waitress,
    speed.freeze_survivors_of_full_collections,
    # verification: the checks and diagnostics the tests rely on
    verification.reset_verify_budget_per_request,
    verification.log_refused_requests,
    verification.rotating_log_file,
)


def apply_patches():
    for patch in PATCHES:
        patch()


if __name__ == "__main__":
    apply_patches()
    import moto.server

    moto.server.main(sys.argv[1:])
