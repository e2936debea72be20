"""Benchmarks for bgc.core.patterns.glob, run on demand: ``python tests/bench/bench_glob.py``.

1. Matching adversarial patterns against texts of 256…4,096 characters: bgc must grow
   linearly. Compared, as ratios, with ``fnmatch``, a naive regex translation of the
   dialect and ``pathspec`` (if installed); each competitor runs in a subprocess with a
   time limit, because a backtracking engine may not come back.
2. One pattern set of 10…5,000 policy-shaped patterns against path-like texts (the gate's
   shape): time per text on the first pass (states being built) and warm.
3. The algebra on a policy-shaped workload (intersections, inclusions, emptiness), cold and
   warm, and the same inclusion questions answered by interegular, greenery and automata-lib
   (if installed) on regex translations: the measurement behind the choice of hand-written
   automata (docs/patterns.md).

Figures go to docs/patterns.md by hand; this script only prints them.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bgc.core.patterns import glob  # noqa: E402
from bgc.core.patterns._syntax import NOSLASH, DStar, Star  # noqa: E402

SIZES = (256, 512, 1024, 2048, 4096)
LIMIT_S = 10.0


def adversarial_cases() -> dict[str, tuple[str, callable]]:
    """Pattern and a text maker: texts that almost match, the worst case for backtracking."""
    return {
        "/**/a/**/b/**/c/**/d": ("/**/a/**/b/**/c/**/d", lambda n: ("/a/b/c" * n)[:n]),
        "*a*a*a*a*a*b": ("*a*a*a*a*a*b", lambda n: "a" * n),
    }


# --- competitors -------------------------------------------------------------------------


def naive_regex(pattern: str) -> str:
    """The obvious translation: '**/' -> '(?:.*/)?', '*' -> '[^/]*' (backtracks)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _run_competitor(name: str, pattern: str, text: str, reps: int, queue: mp.Queue) -> None:
    if name == "fnmatch":
        import fnmatch

        match = lambda: fnmatch.fnmatchcase(text, pattern)  # noqa: E731
    elif name == "naive regex":
        compiled = re.compile(naive_regex(pattern), re.S)
        match = lambda: compiled.fullmatch(text)  # noqa: E731
    else:
        import pathspec

        spec = pathspec.PathSpec.from_lines("gitwildmatch", [pattern])
        match = lambda: spec.match_file(text)  # noqa: E731
    queue.put(_time(match, reps))


def competitor(name: str, pattern: str, text: str, reps: int = 3) -> float | None:
    """Seconds per match, or None when it did not finish within LIMIT_S."""
    queue: mp.Queue = mp.Queue()
    proc = mp.Process(target=_run_competitor, args=(name, pattern, text, reps, queue))
    proc.start()
    proc.join(LIMIT_S)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return None
    return queue.get()


def _time(fn, reps: int) -> float:
    runs = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def bench_matching(with_competitors: bool) -> None:
    names = ["fnmatch", "naive regex"] if with_competitors else []
    if with_competitors:
        try:
            import pathspec  # noqa: F401

            names.append("pathspec")
        except ImportError:
            print("(pathspec not installed: skipped)")
    for label, (pattern, make) in adversarial_cases().items():
        print(f"\n## {label}\n")
        print("| n | bgc cold µs | bgc warm µs | µs per 1k chars (warm) |" + "".join(f" {name} |" for name in names))
        print("|---" * (4 + len(names)) + "|")
        for n in SIZES:
            text = make(n)
            cold = _time(lambda: glob.Pattern(pattern).matches(text), 5)
            compiled = glob.parse(pattern)
            compiled.matches(text)
            warm = _time(lambda: compiled.matches(text), 20)
            cells = []
            if with_competitors:
                for name in names:
                    t = competitor(name, pattern, text)
                    cells.append(f"> {LIMIT_S:.0f} s (killed)" if t is None else f"{t * 1e6:,.0f} µs ({t / warm:,.1f}×)")
            print(f"| {n} | {cold * 1e6:,.0f} | {warm * 1e6:,.0f} | {warm * 1e9 / n:,.1f} |" + "".join(f" {c} |" for c in cells))


def bench_sets() -> None:
    """One PatternSet of many policy-shaped patterns (some repeated, as a gate's plans repeat
    them) against path-like texts: the first pass builds the states, the second runs on them."""
    words = ["src", "tests", "docs", "lib", "app", "core", "api", "util"]
    shapes = ["/{a}{i}/**", "/{a}/{b}{i}/*.py", "/{a}{i}/{b}", "/**/{b}{i}/*.json", "/{a}/**/{b}{i}"]
    rnd = random.Random(0)
    texts = [
        "/" + "/".join(rnd.choice(words) + str(rnd.randrange(300)) for _ in range(rnd.randint(1, 4)))
        + rnd.choice([".py", ".json", ""])
        for _ in range(20_000)
    ]
    size = sum(map(len, texts)) / len(texts)
    print(f"\n## pattern sets ({len(texts):,} texts of {size:.0f} characters on average)\n")
    print("| patterns (distinct) | first pass µs/text | warm µs/text |")
    print("|---|---|---|")
    for count in (10, 100, 1000, 5000):
        patterns = [
            glob.parse(shapes[i % 5].format(a=words[i % 8], b=words[(i // 8) % 8], i=(i * 7) % max(count // 4, 1)))
            for i in range(count)
        ]
        pset = glob.PatternSet(patterns)
        first = _time(lambda: [pset.matching(t) for t in texts], 1)
        warm = _time(lambda: [pset.matching(t) for t in texts], 3)
        print(f"| {count:,} ({len(set(patterns)):,}) | {first / len(texts) * 1e6:.2f} | {warm / len(texts) * 1e6:.2f} |")


# --- algebra ---------------------------------------------------------------------------------

REQUESTS = [
    "/**", "/src/**", "/src/**/*.py", "/home/*/.ssh/**", "/tmp/*", "/src/*/test_*.py", "**/*.env",
    "/etc/**", "/repo/**/*.[ch]", "/var/log/*.log",
]  # fmt: skip
ALLOWS = ["/src/**", "/**/*.py", "/tmp/**", "/home/*/projects/**", "/src/**/test_*", "/repo/**", "/var/**"]
DENIES = ["**/.env", "**/*.key", "/home/*/.ssh/**", "**/secrets/**", "**/.git/**"]


def workload() -> int:
    """A compiler-shaped run: request ∩ allow, then each part minus the denies."""
    questions = 0
    for r in REQUESTS:
        rp = glob.parse(r)
        for a in ALLOWS:
            for part in glob.intersect(rp, glob.parse(a)):
                glob.is_empty(part, [glob.parse(d) for d in DENIES])
                questions += 2
        glob.is_subset(rp, [glob.parse(a) for a in ALLOWS])
        questions += 1
    return questions


def _clear_caches() -> None:
    glob.parse.cache_clear()
    glob._intersect.cache_clear()
    glob._counterexample.cache_clear()


def to_regex(pattern: str, sym=lambda c: re.escape(c), anychar: str = ".", noslash: str = "[^/\\n]") -> str:
    """A regex with the same language (newline aside) for the automata libraries.

    ``sym``/``anychar``/``noslash`` let automata-lib, which only knows a finite alphabet and
    no escapes, get its own spelling.
    """
    elems = glob.parse(pattern)._elems
    parts = []
    for k, e in enumerate(elems):
        last = k == len(elems) - 1
        if isinstance(e, DStar):
            parts.append(f"{anychar}*" if last else (f"({anychar}*{sym('/')})?" if e.min == 0 else f"{anychar}*{sym('/')}"))
            continue
        for it in e.items:
            if isinstance(it, Star):
                parts.append(noslash + "*")
            elif it.chars == NOSLASH:
                parts.append(noslash)
            elif it.chars.single() is not None:
                parts.append(sym(chr(it.chars.single())))
            else:  # the workload's classes are small sets of ASCII letters
                members = [chr(c) for lo, hi in it.chars.spans for c in range(lo, hi + 1)]
                parts.append("(" + "|".join(sym(c) for c in members) + ")")
        if not last:
            parts.append(sym("/"))
    return "".join(parts)


def library_subset(lib: str, pairs: list[tuple[str, str]]) -> tuple[float, list[bool]]:
    if lib == "interegular":
        import interegular

        fsm = lambda p: interegular.parse_pattern(to_regex(p)).to_fsm()  # noqa: E731
    elif lib == "greenery":
        import greenery

        fsm = lambda p: greenery.parse(to_regex(p)).to_fsm()  # noqa: E731
    else:
        from automata.fa.dfa import DFA
        from automata.fa.nfa import NFA

        # a finite alphabet: each character the workload spells gets a letter, 'Z' is "any other"
        chars = sorted(set("".join(REQUESTS + ALLOWS)) - set("*?[]"))
        letters = dict(zip(chars, "abcdefghijklmnopqrstuvwxy0123456789ABCDEFGHIJ"))
        symbols = set(letters.values()) | {"Z"}
        anychar = "(" + "|".join(sorted(symbols)) + ")"
        noslash = "(" + "|".join(sorted(symbols - {letters["/"]})) + ")"

        def fsm(p: str):  # noqa: ANN202 - a library object
            regex = to_regex(p, sym=letters.__getitem__, anychar=anychar, noslash=noslash)
            return DFA.from_nfa(NFA.from_regex(regex, input_symbols=symbols))

    start = time.perf_counter()
    answers = []
    for a, b in pairs:
        fa, fb = fsm(a), fsm(b)
        answers.append(bool(fa.issubset(fb)))
    return time.perf_counter() - start, answers


def bench_algebra() -> None:
    print("\n## algebra\n")
    _clear_caches()
    start = time.perf_counter()
    n = workload()
    cold = time.perf_counter() - start
    start = time.perf_counter()
    workload()
    warm = time.perf_counter() - start
    print(f"policy-shaped workload: {n} questions, cold {cold * 1e3:.1f} ms "
          f"({cold / n * 1e6:.0f} µs/question), warm {warm * 1e3:.2f} ms")  # fmt: skip

    pairs = [(r, a) for r in REQUESTS for a in ALLOWS]
    _clear_caches()
    start = time.perf_counter()
    ours = [glob.is_subset(glob.parse(a), [glob.parse(b)]) for a, b in pairs]
    mine = time.perf_counter() - start
    print(f"\n{len(pairs)} inclusion questions (cold caches): bgc {mine * 1e3:.1f} ms")
    for lib in ("interegular", "greenery", "automata-lib"):
        try:
            took, answers = library_subset(lib, pairs)
        except ImportError:
            print(f"  {lib}: not installed")
            continue
        except Exception as error:  # noqa: BLE001 - a benchmark reports, it does not crash
            print(f"  {lib}: failed ({type(error).__name__}: {error})")
            continue
        agree = sum(x == y for x, y in zip(answers, ours))
        print(f"  {lib}: {took * 1e3:.1f} ms ({took / mine:.0f}× bgc), agrees on {agree}/{len(pairs)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-competitors", action="store_true", help="time bgc only (fast)")
    args = parser.parse_args()
    bench_matching(not args.no_competitors)
    bench_sets()
    bench_algebra()


if __name__ == "__main__":
    main()
