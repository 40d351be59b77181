"""The web viewer of records: ``moot serve`` (:mod:`moot.web.app`) and ``moot export --html``, both drawing pages
with :mod:`moot.web.page`. Needs the ``web`` extra (Starlette, uvicorn, sse-starlette, Jinja2)."""
