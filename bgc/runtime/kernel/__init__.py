"""The kernel's check (DESIGN §6): keys, signed capability tokens and their attenuation,
``authorization_conflict``, execution nonces and :func:`bgc.runtime.kernel.authorize.authorize`.

A plan is what may happen; a capability token is a plan someone with authority signed. This
package is the runtime layer: it imports the core (plans, patterns, values) and the store, and
nothing above it. docs/kernel.md is the user's reference.
"""
