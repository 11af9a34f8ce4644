"""The markdown report: a view of results, built from results alone (no model calls).

- Policies appear in the order the run declared them (then runs in the order given, then
  models). Nothing is scored, nor ordered by an outcome.
- Every figure says what it is (estimate, tiktoken, provider-reported); an unknown figure says
  `unknown`, never 0. With repetitions, cells count (k/n) and sizes show their min–max spread.
- Chronology text is data: it reaches the markdown only through `harness.report.markdown`.
- Same results, same bytes: no clock is read and every order is explicit. The only times shown
  are the run's own (started, ended, resumed in "What ran"); latencies and facts' `recorded_at` are left out.
"""
