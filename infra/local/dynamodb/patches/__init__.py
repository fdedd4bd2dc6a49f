"""The changes the emulator launcher (../moto_server.py) makes to moto 5.2.5 before serving, by purpose:

- correctness.py: where moto answers differently from DynamoDB (concurrent conditional writes, the
  ledger's PartiQL statements);
- speed.py: faster paths that give moto's own answers (transactions, parsers, the update path, the
  HTTP server);
- verification.py: the checks and diagnostics the tests rely on (MOTO_VERIFY_FAST, the request log).

common.py holds what they share (key helpers, directly served answers, the WSGI layers around moto's
app). Each patch is a function without arguments whose docstring names the moto function it replaces
and what DynamoDB does; the launcher applies them in the order of its PATCHES list.
"""
