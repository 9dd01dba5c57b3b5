"""gpulab.course: teaching support, at the top of the library.

What it owns: the lab checks a learner runs (``labs``; the learner copies and the exercises'
rules are authoring code, in the repository's ``tools/authoring``), chapter 5's slow
training loop, its fixes and their grading, and its profiling (``slowloop``,
``slowloop_grading``, ``slowloop_profile``), the text corpus and the tiny language model
trained on it (``textdata``), and the fact-check: the claims' registry of derivations
(``derivations``, ``claims_hardware``, ``claims_buying``, ``claims_models``, ``claims_speed``),
its rubric (``factcheck_rubric``: a claim's parts give its verdict), its loader
(``factcheck_claims``) and page renderer (``factcheck``).

What it may import: every layer below (``ui``, ``bench``, ``estimate``, ``machine``,
``reference``, ``core``). Nothing in the library imports it.
"""
