"""``bgc test``: policy tests, the policies' inline ``expect``s, and rule coverage.

A policy is code that decides what an agent may touch; a change to it deserves the same safety
net as code. Test files (``*.bgt.yaml``, documented in docs/ci.md) give a work order (inline or
by path), optionally a mode, and what must come of it::

    policy: ../../policies/default.bgp        # relative to this file; default: the configured one
    mode: edit                                # optional, for every test in the file
    tests:
      - name: a bug fix is granted as asked
        order: ../../examples/orders/fix-bug.yaml
        verdicts: {"fs:write:/src/parse.py": granted}
        calls: [covered, covered, covered]
      - name: writing everywhere is narrowed to the source tree
        order: {intent: {kind: refactor.rename}, requests: ["fs:write:/**"]}
        plan:
          requests: [{verdict: narrowed, granted: [{atom: "fs:write:/src/**"}]}]

``plan`` is an excerpt of the plan data (``bgc compile --format json``), matched the way jest's
``toMatchObject`` does: a map matches when every key it lists matches (others are ignored), a
list when it has the same length and each item matches in order, anything else by equality.

Each test and each inline ``expect`` is one case; a case fails with located findings (the line
of the expectation that did not hold). A test file that is malformed is bad input (exit 2),
not a failing test. Coverage counts the rules that decided some part of some plan or some
expect (a rule is *exercised* when it is among the deciding rules), and lists the others.
"""
