"""Benchmark of the kernel's check, run on demand: ``python tests/bench/bench_kernel.py``.

In-process ``Kernel.authorize_line`` of valid ToolCallRequests (JSON lines, each allowed), and
what signature verification costs per message:

1. session token: one token for every message (the usual case: an agent presents its token on
   each call); its chain is verified on first sight and kept by its bytes, so the per-message
   work is reading the message, the conflict rules, the time/audience/scope checks and the gate;
2. cold token: a fresh kernel per message, so every message pays the whole chain verification
   (decode, one Ed25519 verify per link, the proof's public key) - the cost of a new token;
3. nonce per message: every message carries its own execution nonce (preflighted before the
   clock starts), so each pays one Ed25519 verify of the nonce and one SQLite transaction;
4. session token with the ledger: (1), each decision also appended to the ledger in a SQLite
   store, as ``bgc authorize`` does by default;
5. the bare Ed25519 verify of ``cryptography`` (and PyNaCl's, when installed) on this machine.

The target (issue 13) is at least 5,000 messages/s for (1). Figures go to docs/kernel.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bgc.runtime.kernel.authorize import Kernel  # noqa: E402
from bgc.runtime.kernel.messages import read_message  # noqa: E402
from bgc.runtime.store.sqlite import SqliteStore  # noqa: E402
from tests.kernel_support import ISSUER, KERNEL, NOW, make_token, request  # noqa: E402


def lines(token, count: int) -> list[str]:  # type: ignore[no-untyped-def]
    paths = ["/src/parse.py", "/src/pkg/mod.py", "/tests/test_parse.py", "/src/a/b/c/d.py"]
    return [
        json.dumps(request(token, id=f"0190a3b4-{i:08d}", tool="fs.write", params={"path": paths[i % len(paths)]}))
        for i in range(count)
    ]


def timed(kernel_for, messages: list[str]) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for line in messages:
        decision = kernel_for().authorize_line(line)
        if decision.decision != "allow":
            sys.exit(f"bench: a valid message was refused: {decision.to_data()}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5000, help="messages per workload")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best is reported")
    args = parser.parse_args()
    clock = lambda: NOW + 10  # noqa: E731
    token = make_token()
    nonce_token = make_token(nonce=True)
    store_dir = tempfile.mkdtemp()
    results: dict[str, list[float]] = {
        "session token": [], "cold token": [], "nonce per message": [], "session token + ledger": [],
    }  # fmt: skip
    for _ in range(args.rounds):
        session = Kernel([ISSUER.public], clock=clock)
        results["session token"].append(timed(lambda: session, lines(token, args.n)) / args.n)
        cold_n = max(1, args.n // 10)
        results["cold token"].append(timed(lambda: Kernel([ISSUER.public], clock=clock), lines(token, cold_n)) / cold_n)
        store = SqliteStore(os.path.join(store_dir, f"k{time.perf_counter_ns()}.db"))
        nonced = Kernel([ISSUER.public], KERNEL, store, clock=clock)
        prepared = []
        for line in lines(nonce_token, args.n // 5):
            decision, nonce = nonced.preflight(read_message(line))
            data = json.loads(line)
            data["ToolCallRequest"]["execution_nonce"] = nonce
            prepared.append(json.dumps(data))
        results["nonce per message"].append(timed(lambda: nonced, prepared) / len(prepared))
        store.close()
        ledger_store = SqliteStore(os.path.join(store_dir, f"l{time.perf_counter_ns()}.db"))
        recorded = Kernel([ISSUER.public], store=ledger_store, clock=clock, ledger=True)
        results["session token + ledger"].append(timed(lambda: recorded, lines(token, args.n)) / args.n)
        ledger_store.close()
    verify = {"cryptography Ed25519 verify": bare_verify("cryptography")}
    try:
        verify["PyNaCl Ed25519 verify"] = bare_verify("nacl")
    except ImportError:
        pass
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; best of {args.rounds} rounds")
    print(f"{'workload':<28}{'per message':>14}{'messages/s':>14}")
    for name, samples in results.items():
        best = min(samples)
        print(f"{name:<28}{best * 1e6:>11.1f} us{1 / best:>14,.0f}")
    for name, cost in verify.items():
        print(f"{name:<28}{cost * 1e6:>11.1f} us{1 / cost:>14,.0f}")
    session, cold = min(results["session token"]), min(results["cold token"])
    print(f"verifying a new token costs {cold - session:.6f} s more per message ({(cold - session) / session:.1f}x the warm message)")
    print(f"target >= 5,000 messages/s with a session token: {'met' if 1 / session >= 5000 else 'NOT met'}")


def bare_verify(library: str, count: int = 2000) -> float:
    data = os.urandom(600)
    if library == "nacl":
        import nacl.signing

        signing = nacl.signing.SigningKey.generate()
        signature = signing.sign(data).signature
        check = nacl.signing.VerifyKey(bytes(signing.verify_key))
        run = lambda: check.verify(data, signature)  # noqa: E731
    else:
        signature = ISSUER.sign(data)
        run = lambda: ISSUER.public.verify(signature, data)  # noqa: E731
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(count):
            run()
        best = min(best, (time.perf_counter() - started) / count)
    return best


if __name__ == "__main__":
    main()
