"""``moot eval``: does a deliberation beat one answer, or a majority of answers, at the same token cost?

:mod:`moot.eval.run` runs a task set (:mod:`moot.eval.tasks`) under several strategies
(:mod:`moot.eval.strategies`), records every call as it returns (:mod:`moot.eval.store`, so a killed eval
resumes), and summarises accuracy with Wilson intervals, tokens, time, flips and McNemar's test against
self-consistency (:mod:`moot.eval.report`, :mod:`moot.eval.stats`).
"""
