"""The benchmark workloads, generated from fixed seeds so that runs compare (issue 10, item 4).

Everything here is text: policies (``.bgp``), work orders (JSON) and concrete atoms. Nothing
imports bgc, so a workload cannot change when the code under test does.
"""

from __future__ import annotations

import json
import random

WORDS = ["src", "lib", "app", "core", "api", "util", "models", "views", "docs", "config"]


# --- workload W: N rules in groups of four per project -----------------------------------------


def w_rules(n: int) -> list[tuple[str, str, str, str]]:
    """``(effect, resource, action, pattern)`` for rule i = 0..n-1; project g = i // 4."""
    rules = []
    for i in range(n):
        g = i // 4
        rules.append(
            [
                ("allow", "fs", "write", f"/p{g}/src/**"),
                ("deny", "fs", "write", f"/p{g}/src/secrets/**"),
                ("allow", "fs", "read", f"/p{g}/**"),
                ("allow", "net", "connect", f"https://api{g}.example.com/*"),
            ][i % 4]
        )
    return rules


def w_groups(n: int) -> int:
    return (n + 3) // 4


def w_policy(n: int) -> str:
    return "".join(f"{effect} {resource}:{action}:{pattern}\n" for effect, resource, action, pattern in w_rules(n))


def order(requests: list[str], seed: int = 0) -> str:
    """A work order (JSON) asking for ``requests``, with no calls."""
    return json.dumps(
        {
            "intent": {"kind": "bench", "payload": seed},
            "requests": requests,
            "calls": [],
            "origin": {"model": "bench", "parents": [], "prompt": "sha256:" + f"{seed:064x}"},
        }
    )


def w_order(n: int) -> str:
    """The order behind the gate's plan: each project's tree, for writing and reading, and its API."""
    requests = []
    for g in range(w_groups(n)):
        requests += [f"fs:write:/p{g}/**", f"fs:read:/p{g}/**", f"net:connect:https://api{g}.example.com/**"]
    return order(requests)


def w_requests(n: int, count: int, seed: int) -> list[str]:
    """``count`` distinct concrete atoms over the projects of W(n); about half are allowed.

    Every set has the same mix at every N (the project is drawn from those the policy has, a
    tenth from outside it), so a bigger policy changes only how many rules stand by.
    """
    rnd = random.Random(seed)
    groups = w_groups(n)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        g = rnd.randrange(groups) if rnd.random() < 0.9 else groups + rnd.randrange(1000)
        mod = rnd.choice(WORDS) + str(rnd.randrange(1000))
        name = f"f{rnd.randrange(10**6)}"
        atom = rnd.choices(
            [
                f"fs:write:/p{g}/src/{mod}/{name}.py",  # allow
                f"fs:write:/p{g}/src/secrets/{name}.key",  # deny (the project's deny)
                f"fs:write:/p{g}/src/secrets",  # allow: the directory itself is not below it
                f"fs:write:/p{g}/{mod}/{name}.md",  # deny: not under src
                f"fs:read:/p{g}/{mod}/{name}.py",  # allow
                f"fs:read:/q{g}/{mod}/{name}",  # deny: outside every project
                f"net:connect:https://api{g}.example.com/{name}",  # allow: one segment
                f"net:connect:https://api{g}.example.com/{mod}/{name}",  # deny: two segments
                f"net:connect:https://evil{g}.example.com/{name}",  # deny: another host
            ],
            weights=[20, 8, 2, 10, 20, 10, 15, 8, 7],
        )[0]
        if atom not in seen:
            seen.add(atom)
            out.append(atom)
    return out


def w_orders(count: int, seed: int = 1, groups: int = 250) -> list[str]:
    """``count`` orders of 10 requested atoms each over projects 0..groups-1 (the same at every N)."""
    rnd = random.Random(seed)
    orders = []
    for index in range(count):
        atoms: set[str] = set()
        while len(atoms) < 10:
            g = rnd.randrange(groups)
            mod = rnd.choice(WORDS) + str(rnd.randrange(100))
            atoms.add(
                rnd.choice(
                    [
                        f"fs:write:/p{g}/src/**",
                        f"fs:write:/p{g}/src/{mod}/*.py",
                        f"fs:write:/p{g}/**",
                        f"fs:write:/p{g}/src/secrets/k{rnd.randrange(100)}.key",
                        f"fs:read:/p{g}/docs/**",
                        f"fs:read:/p{g}/{mod}/f{rnd.randrange(100)}.py",
                        f"net:connect:https://api{g}.example.com/v1",
                        f"net:connect:https://api{g}.example.com/*",
                    ]
                )
            )
        orders.append(order(sorted(atoms), index))
    return orders


# --- compile workloads ----------------------------------------------------------------------------

FLOATING = [
    "/**/secrets/**", "/**/secrets", "/**/.ssh/**", "/**/.aws/**", "/**/.gnupg/**", "/**/credentials/**",
    "/**/private/**", "/**/.git/**", "/**/.git", "/**/.github/**", "/**/.ci/**", "/**/node_modules/**",
    "/**/*.key", "/**/*.pem", "/**/*.p12", "/**/*.pfx", "/**/*.crt", "/**/*.der", "/**/*.kdbx", "/**/*.jks",
    "/**/.env", "/**/.env.*", "/**/id_rsa", "/**/id_rsa.*", "/**/id_ed25519", "/**/id_ed25519.*",
    "/**/id_ecdsa", "/**/.netrc", "/**/.npmrc", "/**/.pypirc", "/**/*.sqlite", "/**/*.db", "/**/dump.sql",
    "/**/*.tfstate", "/**/*.tfvars", "/**/kubeconfig",
]  # fmt: skip


def realistic_policy() -> str:
    """1,000 rules: 36 floating denies, 100 asks, 864 directory allows (288 projects × 3)."""
    lines = [f'deny fs:*:{pattern} because "never"' for pattern in FLOATING]
    lines += [f'ask fs:write:/p{k * 3}/**/migrations/** because "schema"' for k in range(100)]
    for g in range(288):
        lines += [f"allow fs:write:/p{g}/src/**", f"allow fs:write:/p{g}/**/tests/**", f"allow fs:read:/p{g}/**"]
    assert len(lines) == 1000
    return "\n".join(lines) + "\n"


def broad_order() -> str:
    return order(["fs:write:/**", "fs:read:/**"])


def pathological_policy(count: int = 300) -> str:
    """``**`` on both sides of ``count`` allows and ``count`` denies."""
    lines = [f"allow fs:write:/**/a{i}/**" for i in range(count)]
    lines += [f"deny fs:write:/**/d{i}/**" for i in range(count)]
    return "\n".join(lines) + "\n"


def primer_order() -> str:
    """An order no timed command asks: compiling it warms the parser tables and the parsed
    policy in a cache, and leaves no answer a timed command could reuse."""
    return order(["proc:exec:bench-primer"], seed=424242)


# --- growth workloads -----------------------------------------------------------------------------


def over_budget_order(count: int = 750) -> str:
    """``count`` requests ``fs:write:/**/*a?????????????????/**/xI``: against the realistic policy
    the order's work budget is spent within the first, and the rest are answered unknown."""
    return order([f"fs:write:/**/*a{'?' * 17}/**/x{i}" for i in range(count)], seed=750)
