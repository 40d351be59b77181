"""``moot eval``: does a deliberation beat one model, or a majority of its answers, at the same cost?

:mod:`moot.eval.run` runs a task set (:mod:`moot.eval.tasks`) under several strategies
(:mod:`moot.eval.strategies`), moot's own protocols among them, run by their real drivers; it records every
call as it returns (:mod:`moot.eval.store`, so a killed eval resumes) with its cost (:mod:`moot.eval.costs`),
and reports each deliberation against ``single``, its best member, its round-0 vote and the self-consistency
matched to its cost, as paired differences (:mod:`moot.eval.report`, :mod:`moot.eval.stats`).
"""
