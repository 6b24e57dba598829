"""What every benchmark shares; a bench module (``bench/NAME.py``) holds only its measurement code
and one :class:`Bench` declaration.

- :mod:`~bench.harness.bench`: :class:`Bench` (how to run a benchmark, its quick mode, how its
  result becomes its section), :class:`Measured`, :class:`Unavailable` and the one ``main``
- :mod:`~bench.harness.options`: a bench's command line, read from its options dataclass
- :mod:`~bench.harness.report`: the one report writer (:func:`publish`, ``write_section``) and :class:`Figure`
- :mod:`~bench.harness.runner`: ``python -m bench.run``: repeats, medians and spreads
- :mod:`~bench.harness.session`: a bench's embedded PostgreSQL, machine and memory; ``on_one_fable``
- :mod:`~bench.harness.machine`, :mod:`~bench.harness.stats`, :mod:`~bench.harness.memory`:
  the machine's speed and normalisation, latency summaries, peak PSS
- :mod:`~bench.harness.corpus`: synthetic notes; :mod:`~bench.harness.loadgen`: the Python HTTP
  load generator; :mod:`~bench.harness.serving`: the app under test in processes of its own;
  :mod:`~bench.harness.starts`: start times of ``fable mcp`` and ``fable serve``;
  :mod:`~bench.harness.postgres`, :mod:`~bench.harness.standby`: the bench's PostgreSQL and a
  streaming replica of it

The harness never imports a bench; the fakes of the outside world are the tests'
(``tests.support``), imported as a package from the repository root.
"""

from __future__ import annotations

from bench.harness.bench import SKIPPED, Bench, Measured, Unavailable
from bench.harness.options import option
from bench.harness.report import Figure, publish, write_section

__all__ = ["SKIPPED", "Bench", "Figure", "Measured", "Unavailable", "option", "publish", "write_section"]
