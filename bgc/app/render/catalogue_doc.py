"""The catalogue's tables in docs/agents.md, written from the one table
(:mod:`bgc.runtime.catalogue`): what each program's operands are, what no operand means, the
options that change what it touches, the options that make a command not understood, and every
option read. tests/app/render/test_catalogue_doc.py checks the page holds exactly this text
between its markers; after changing the table, regenerate it with
``python -m bgc.app.render.catalogue_doc`` and paste it there."""

from __future__ import annotations

from bgc.app.render.codes_doc import table_cell as _cell
from bgc.runtime import catalogue
from bgc.runtime.catalogue import EFFECTS, EMPTY, FIND_PRIMARIES, GIT_COMMANDS, GIT_GLOBAL, LAYOUTS, PROGRAMS, SYNTAXES

START = "<!-- the catalogue's tables: python -m bgc.app.render.catalogue_doc -->"
END = "<!-- end of the catalogue's tables -->"


def catalogue_markdown() -> str:
    """The text between :data:`START` and :data:`END` in docs/agents.md."""
    lines = [START, "", "| program | operands | no operand | options that change what it touches | not understood with |",
             "|---|---|---|---|---|"]  # fmt: skip
    rows = [*(program for program in PROGRAMS if program.syntax not in ("find", "git")), *GIT_COMMANDS.values()]
    find = next(program for program in PROGRAMS if program.syntax == "find")
    lines += [_row(program) for program in rows]
    lines.append(
        "| `find` | start points listed (names and metadata below them); `-delete` writes their trees | "
        f"{_cell(EMPTY['.'])} | {_find_effects()} | `-exec`, `-execdir`, `-ok`, `-okdir` (they run commands), "
        "`-files0-from` (start points read from a file), any test or action not listed below |"
    )
    lines += ["", "How each program's argv is read:", "", "| syntax | read as |", "|---|---|"]
    lines += [f"| {name} | {_cell(text)} |" for name, text in SYNTAXES.items()]
    lines += ["", "Every option each row reads (any other makes the command not understood):", ""]
    for program in rows:
        names = " ".join(f"`{name}`" for option in program.options for name in option.names) or "none"
        lines.append(f"- {_names(program)} ({program.manual}; {program.syntax}): {names}")
    git_global = " ".join(f"`{name}`" for option in GIT_GLOBAL for name in option.names)
    lines.append(f"- `git`, before its subcommand: {git_global}")
    primaries = " ".join(f"`{name}`" for name in FIND_PRIMARIES)
    lines.append(f"- `find` ({find.manual}): `-H` `-L` `-P` `-D` `-O…`, then {primaries} `-newerXY`")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def _row(program: catalogue.Program) -> str:
    layout = LAYOUTS[program.operands] if program.operands != "git" else _git_layout(program)
    if program.first:
        layout += f"; the first is its {program.first} (unless an option gives it)"
    if program.tree:
        layout += "; each a tree (it and everything below)"
    if program.at_most:
        layout += f"; at most {program.at_most}"
    grouped: dict[str, list[str]] = {}
    for option in program.options:
        for effect in option.does:
            if effect != catalogue.REFUSE:
                grouped.setdefault(EFFECTS[effect].format(first=program.first), []).append(_spelled(option))
    effects = "; ".join(f"{', '.join(spelled)}: {text}" for text, spelled in grouped.items())
    refused = "; ".join(f"{_spelled(option)} ({option.why})" for option in program.options if catalogue.REFUSE in option.does)
    return f"| {_names(program)} | {_cell(layout)} | {_cell(_empty(program))} | {_cell(effects) or '—'} | {_cell(refused) or '—'} |"


def _empty(program: catalogue.Program) -> str:
    """What a command of the row with no file operand touches."""
    if program.operands in ("text", "git", "copy", "move") or program.empty:
        return EMPTY[program.empty] if program.empty else "—"
    if program.operands != "read":
        return "nothing"
    recursive = any(catalogue.RECURSIVE in option.does or catalogue.DIRECTORIES in option.does for option in program.options)
    return EMPTY[""] + ("; with a recursive option, the working directory" if recursive else "")


def _git_layout(program: catalogue.Program) -> str:
    """What a git subcommand shows of the repository that holds the working directory."""
    return {
        "git status": "names in the repository (its top listed); pathspecs listed",
        "git log": "names and messages of the repository's history (its top listed); pathspecs listed",
        "git diff": "content of the repository's files and history (its top and everything below, by the policy "
        "alone); `REV:PATH` that path; pathspecs and words before `--` read (and below them)",
        "git show": "content of the repository's files and history, as `git diff`",
        "git blame": "the content of the file it blames (every operand read)",
        "git branch": "names of branches (the repository's top listed); an operand only with `--list`",
    }[program.names[0]]


def _find_effects() -> str:
    effects = {"": None, catalogue.LISTS: "its value's metadata is read", catalogue.WRITES: "its value is written",
               catalogue.RECURSIVE: "every start point's tree is written"}  # fmt: skip
    spelled = [f"`{name}`: {effects[effect]}" for name, (_, effect) in FIND_PRIMARIES.items() if effects[effect]]
    return _cell("; ".join([*spelled, "`-newerXY FILE` (Y not `t`): its value's metadata is read"]))


def _names(program: catalogue.Program) -> str:
    return ", ".join(f"`{name}`" for name in program.names)


def _spelled(option: catalogue.Option) -> str:
    value = {"": "", "required": " VALUE", "optional": "[=VALUE]", "two": " NAME VALUE"}[option.value]
    return ", ".join(f"`{name}{value}`" for name in option.names)


if __name__ == "__main__":  # pragma: no cover - the documented way to regenerate the tables
    print(catalogue_markdown(), end="")
