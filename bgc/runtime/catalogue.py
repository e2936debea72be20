"""Commands decided by what they touch: one table of inspection and file programs.

``cat src/app.py`` reads one file, exactly as the Read tool does; a rule about its argv
(``proc:exec:cat/src∕app.py``) says nothing of that, so a policy that denies reading ``.env``
only asked for ``cat .env``. This module reads the argv of the programs in :data:`PROGRAMS` as
each program reads it — its options (flags, options that take a value, in every spelling its
parser accepts), which operands it reads, lists or writes, what no operand means — and says
which files the command touches (:class:`Touch`). :mod:`bgc.runtime.shell` turns them into
``fs`` needs relative to the directory the command runs in, and
:meth:`bgc.runtime.calls.CallDecider.decide_shell` decides them beside the argv's own atom
(docs/agents.md, "Commands decided by what they touch", says how the two combine).

A reading is exact or it is refused, never guessed: an option the row does not list, an option
that runs code or writes somewhere the row cannot say (``find -exec``, ``sed -i`` with a backup
elsewhere, ``sort --compress-program``, ``rg --pre``), a glob where the program would see a
different number of words, a ``sed`` script or ``jq`` filter this module does not read fully:
each makes the command *not understood*, and it is decided by its argv alone, as before. Each
row names the manual its options were read from; ``tests/runtime/test_catalogue_manuals.py``
checks every long option against the installed program's manual.

What "touch" means: ``read`` is a file's content, or a directory's listing and its entries'
metadata (``ls``, ``find``, ``stat``: what the Read, Glob and LS tools need, ``fs:read:DIR``);
``write`` is creating, changing, moving or removing. A *tree* is the path and every file below
it. Runtime layer: pure data and functions of an argv (patterns written with the glob
dialect's escape).
"""

from __future__ import annotations

import posixpath
import re
from typing import NamedTuple, Union

from bgc.core.patterns.glob import escape

__all__ = ["NAMES", "PROGRAMS", "GIT_COMMANDS", "GlobWord", "Option", "Program", "Reading", "Touch", "Word", "read_command"]


class GlobWord(NamedTuple):
    """A word bash expands before the program sees it: a glob (``src/*.py``), or a path after
    ``~`` (the home directory). ``written`` is the word with quotes removed and wildcards kept
    (what the argv atom shows); ``pattern`` is glob text for what it may expand to, relative to
    the working directory (or, when ``home``, to the home directory), quoted parts escaped;
    ``leading`` says the word starts with a wildcard (so it may expand to ``-rf``)."""

    written: str
    pattern: str
    home: bool
    leading: bool


Word = Union[str, GlobWord]
"""An argv word: its text, or a word bash expands (:class:`GlobWord`)."""


class Touch(NamedTuple):
    """A file a command touches: ``action`` (``read`` or ``write``) on ``word`` (as the program
    receives it, relative to its working directory unless absolute).

    ``tree``: everything below it too, and how that is decided: ``files`` (the files there now:
    what a search reads, what ``rm -r`` removes), ``copied`` (the files of ``source``, which a
    copy or move puts there), ``any`` (files that need not exist: git's history). ``repository``:
    ``word`` names a path in the git repository that holds the working directory (relative to
    its top; ``.`` the top itself), not in the working directory.
    """

    action: str
    word: Word
    tree: str = ""
    source: Word | None = None
    repository: bool = False
    fresh: bool = False
    """``word`` is a glob of files that do not exist yet (a temporary file's name): decided by
    the policy alone, never on the files there."""


class Reading(NamedTuple):
    """A command the catalogue understood: the row's name and the files it touches (none:
    it touches nothing, as ``cat`` reading its standard input). ``unless``: globs that begin
    with a wildcard (``*.py``) before any ``--``, which the reading holds for only while none
    expands to a word that begins with ``-`` (which the program would read as an option)."""

    program: str
    touches: tuple[Touch, ...]
    unless: tuple[GlobWord, ...] = ()


class Option(NamedTuple):
    """One option of a program: its spellings, whether it takes a value (``required``: the rest
    of the word or the next word; ``optional``: only attached, ``-iSUF`` or ``--opt=VAL``;
    ``two``: the next two words), and what it does to the files the command touches
    (:data:`EFFECTS`); ``why``: why an option that is refused is."""

    names: tuple[str, ...]
    value: str = ""
    does: tuple[str, ...] = ()
    why: str = ""


class Program(NamedTuple):
    """A program's row: how its argv is read (:data:`SYNTAXES`), its options, its operands
    (:data:`LAYOUTS`), what its first operand is when not a file (``pattern``, ``script``,
    ``filter``; an option may give it instead), what no file operand means (:data:`EMPTY`),
    whether ``-`` is standard input (or a file of that name), whether its operands are trees
    whatever its options (``rg`` searches a directory; ``diff`` compares the files of two), at
    most how many operands it takes (0: any number), and the manual its options were read
    from."""

    names: tuple[str, ...]
    manual: str
    operands: str
    options: tuple[Option, ...] = ()
    syntax: str = "gnu"
    first: str = ""
    empty: str = ""
    dash: bool = True
    tree: bool = False
    at_most: int = 0


# ---- what an option does ----------------------------------------------------------------------

RECURSIVE = "recursive"  # operands are trees (grep -r, rm -r, cp -r, diff -r)
READS = "reads"  # its value is a file read (grep -f FILE)
LISTS = "lists"  # its value is a file whose listing or metadata is read (touch -r FILE)
WRITES = "writes"  # its value is a file written (sort -o FILE)
TARGET = "target"  # its value is the directory the sources go into (cp -t DIR)
NO_TARGET = "no-target"  # the last operand is the destination itself (cp -T)
GIVES_FIRST = "gives-first"  # it gives the pattern, script or filter: no operand is one (grep -e)
CHECKED = "checked"  # its value is a sed script: read as the first operand would be
IN_PLACE = "in-place"  # operands are rewritten (sed -i); its value is a backup suffix
LISTING = "listing"  # operands are listed, not read (rg --files)
ARGS = "args"  # later operands are strings, not files (jq --args)
DIRECTORIES = "directories"  # grep -d ACTION: recursive when ACTION is recurse
PARENTS = "parents"  # rmdir -p: every directory the operand names is removed
AGAINST = "against"  # diff --from-file/--to-file: the value is compared with every operand
CONTENT = "content"  # git: shows the content of files (a patch)
SUMMARY = "summary"  # git: shows names and counts, not content (--stat)
NO_INDEX = "no-index"  # git diff --no-index: two paths on disk compared
REFUSE = "refuse"  # the command is not understood (why says why)

EFFECTS = {
    RECURSIVE: "operands are trees",
    READS: "its value is a file it reads",
    LISTS: "its value is a file whose metadata it reads",
    WRITES: "its value is a file it writes",
    TARGET: "its value is the directory it writes into",
    NO_TARGET: "the last operand is the destination itself",
    GIVES_FIRST: "no operand is the {first}: every operand is a file",
    CHECKED: "its value is a script, read as the first operand is",
    IN_PLACE: "operands are written (a backup suffix: written too)",
    LISTING: "operands are listed, not read",
    ARGS: "later operands are strings, not files",
    DIRECTORIES: "recursive when its value is recurse",
    PARENTS: "every directory the operand names is written",
    AGAINST: "its value is a file it reads; any number of operands",
    CONTENT: "shows the content of files",
    SUMMARY: "shows names and counts only",
    NO_INDEX: "compares two paths on disk",
}
"""What each effect means, in the words of the docs table."""

SYNTAXES = {
    "gnu": "getopt_long: options anywhere before `--`, short flags combined (`-rn`), values attached or next (`-n5`, `-n 5`, `--lines=5`, `--lines 5`), long options by a unique prefix",
    "clap": "options anywhere before `--`, short flags combined, values attached or next (`-A3`, `--context=3`); no prefixes",
    "jq": "options anywhere, short flags combined, long options exact; `--arg NAME VALUE` takes two words; no `--`",
    "builtin": "bash's builtin: options before the first operand only",
    "find": "`[-H|-L|-P] [-D opts] [-Olevel] [start…] [expression]`: start points, then tests, operators and actions",
    "gnu-count": "as gnu, and `-NUM` as the first word is the obsolete count (`head -5`)",
    "tree": "options anywhere before `--`, short flags combined, a short option's value is the next word, long options exact",
    "words": "no options read: every word is text",
    "git": "git's parse-options after the subcommand: options before `--`, values attached or next, no prefixes; `-NUM` is a count",
}

EMPTY = {
    "": "standard input",
    ".": "the working directory",
    "input or .": "standard input when it is a pipe or a file, else the working directory",
}

LAYOUTS = {
    "read": "every operand is read",
    "list": "every operand is listed (a directory's names, a file's metadata)",
    "write": "every operand is written",
    "text": "operands are text, not files",
    "input output": "`[INPUT [OUTPUT]]`: INPUT read, OUTPUT written",
    "copy": "`SOURCE… DEST`: sources read, `DEST` (or `DEST/NAME`) written",
    "move": "`SOURCE… DEST`: sources read and written (removed), `DEST` (or `DEST/NAME`) written",
    "expression": "start points listed; `-delete` writes their trees",
    "git": "by subcommand (below)",
}


def flag(*names: str, does: tuple[str, ...] = ()) -> Option:
    return Option(names, "", does)


def takes(*names: str, does: tuple[str, ...] = ()) -> Option:
    return Option(names, "required", does)


def may_take(*names: str, does: tuple[str, ...] = ()) -> Option:
    return Option(names, "optional", does)


def refuse(*names: str, value: str = "", why: str) -> Option:
    return Option(names, value, (REFUSE,), why)


_HELP = (flag("--help"), flag("--version"))
_LISTS_FILES = "it reads a list of file names from a file"


# ---- the table --------------------------------------------------------------------------------

PROGRAMS: tuple[Program, ...] = (
    Program(("cat",), "GNU coreutils 9.1, cat(1)", "read", (
        flag("-A", "--show-all"), flag("-b", "--number-nonblank"), flag("-e"), flag("-E", "--show-ends"),
        flag("-n", "--number"), flag("-s", "--squeeze-blank"), flag("-t"), flag("-T", "--show-tabs"), flag("-u"),
        flag("-v", "--show-nonprinting"), *_HELP)),
    Program(("head",), "GNU coreutils 9.1, head(1)", "read", (
        takes("-c", "--bytes"), takes("-n", "--lines"), flag("-q", "--quiet", "--silent"), flag("-v", "--verbose"),
        flag("-z", "--zero-terminated"), *_HELP), syntax="gnu-count"),
    Program(("tail",), "GNU coreutils 9.1, tail(1)", "read", (
        takes("-c", "--bytes"), flag("-f"), may_take("--follow"), flag("-F"), takes("-n", "--lines"),
        takes("--max-unchanged-stats"), takes("--pid"), flag("-q", "--quiet", "--silent"), flag("--retry"),
        takes("-s", "--sleep-interval"), flag("-v", "--verbose"), flag("-z", "--zero-terminated"), *_HELP),
        syntax="gnu-count"),
    Program(("wc",), "GNU coreutils 9.1, wc(1)", "read", (
        flag("-c", "--bytes"), flag("-m", "--chars"), flag("-l", "--lines"), flag("-L", "--max-line-length"),
        flag("-w", "--words"), refuse("--files0-from", value="required", why=_LISTS_FILES), *_HELP)),
    Program(("ls",), "GNU coreutils 9.1, ls(1)", "list", (
        flag("-a", "--all"), flag("-A", "--almost-all"), flag("--author"), flag("-b", "--escape"), takes("--block-size"),
        flag("-B", "--ignore-backups"), flag("-c"), flag("-C"), may_take("--color"), flag("-d", "--directory"),
        flag("-D", "--dired"), flag("-f"), flag("-F"), may_take("--classify"), flag("--file-type"), takes("--format"),
        flag("--full-time"), flag("-g"), flag("--group-directories-first"), flag("-G", "--no-group"),
        flag("-h", "--human-readable"), flag("--si"), flag("-H", "--dereference-command-line"),
        flag("--dereference-command-line-symlink-to-dir"), takes("--hide"), may_take("--hyperlink"),
        takes("--indicator-style"), flag("-i", "--inode"), takes("-I", "--ignore"), flag("-k", "--kibibytes"), flag("-l"),
        flag("-L", "--dereference"), flag("-m"), flag("-n", "--numeric-uid-gid"), flag("-N", "--literal"), flag("-o"),
        flag("-p"), flag("-q", "--hide-control-chars"), flag("--show-control-chars"), flag("-Q", "--quote-name"),
        takes("--quoting-style"), flag("-r", "--reverse"), flag("-R", "--recursive"), flag("-s", "--size"), flag("-S"),
        takes("--sort"), takes("--time"), takes("--time-style"), flag("-t"), takes("-T", "--tabsize"), flag("-u"),
        flag("-U"), flag("-v"), takes("-w", "--width"), flag("-x"), flag("-X"), flag("-Z", "--context"), flag("--zero"),
        flag("-1"), *_HELP), empty="."),
    Program(("grep", "egrep", "fgrep"), "GNU grep 3.8, grep(1)", "read", (
        flag("-E", "--extended-regexp"), flag("-F", "--fixed-strings"), flag("-G", "--basic-regexp"),
        flag("-P", "--perl-regexp"), takes("-e", "--regexp", does=(GIVES_FIRST,)),
        takes("-f", "--file", does=(GIVES_FIRST, READS)), flag("-i", "--ignore-case"), flag("--no-ignore-case"),
        flag("-w", "--word-regexp"), flag("-x", "--line-regexp"), flag("-z", "--null-data"), flag("-s", "--no-messages"),
        flag("-v", "--invert-match"), flag("-V", "--version"), flag("--help"), takes("-m", "--max-count"),
        flag("-b", "--byte-offset"), flag("-n", "--line-number"), flag("--line-buffered"), flag("-H", "--with-filename"),
        flag("-h", "--no-filename"), takes("--label"), flag("-o", "--only-matching"), flag("-q", "--quiet", "--silent"),
        takes("--binary-files"), flag("-a", "--text"), flag("-I"), takes("-d", "--directories", does=(DIRECTORIES,)),
        takes("-D", "--devices"), flag("-r", "--recursive", does=(RECURSIVE,)),
        flag("-R", "--dereference-recursive", does=(RECURSIVE,)), takes("--include"), takes("--exclude"),
        takes("--exclude-from", does=(READS,)), takes("--exclude-dir"), flag("-L", "--files-without-match"),
        flag("-l", "--files-with-matches"), flag("-c", "--count"), flag("-T", "--initial-tab"), flag("-Z", "--null"),
        takes("-B", "--before-context"), takes("-A", "--after-context"), takes("-C", "--context"),
        takes("--group-separator"), flag("--no-group-separator"),
        may_take("--color", "--colour"), flag("-U", "--binary")), first="pattern"),
    Program(("rg",), "ripgrep 13.0.0, rg(1)", "read", (
        takes("-A", "--after-context"), flag("--auto-hybrid-regex"), takes("-B", "--before-context"), flag("--binary"),
        flag("--block-buffered"), flag("-b", "--byte-offset"), flag("-s", "--case-sensitive"), takes("--color"),
        takes("--colors"), flag("--column"), takes("-C", "--context"), takes("--context-separator"),
        flag("--no-context-separator"), flag("-c", "--count"), flag("--count-matches"), flag("--crlf"), flag("--debug"),
        takes("--dfa-size-limit"), takes("-E", "--encoding"), takes("--engine"), takes("--field-context-separator"),
        takes("--field-match-separator"), takes("-f", "--file", does=(GIVES_FIRST, READS)), flag("--files", does=(LISTING, GIVES_FIRST)),
        flag("-l", "--files-with-matches"), flag("--files-without-match"), flag("-F", "--fixed-strings"),
        flag("-L", "--follow"), takes("-g", "--glob"), flag("--glob-case-insensitive"), flag("--help"),
        flag("--heading"), flag("-.", "--hidden"), takes("--iglob"), flag("-i", "--ignore-case"),
        takes("--ignore-file", does=(READS,)), flag("--ignore-file-case-insensitive"), flag("--include-zero"),
        flag("-v", "--invert-match"), flag("--json"), flag("--line-buffered"), flag("-n", "--line-number"),
        flag("-x", "--line-regexp"), takes("-M", "--max-columns"), flag("--max-columns-preview"),
        takes("-m", "--max-count"), takes("--max-depth"), takes("--max-filesize"), flag("--mmap"),
        flag("-U", "--multiline"), flag("--multiline-dotall"), flag("--no-config"), flag("-I", "--no-filename"),
        flag("--no-heading"), flag("--no-ignore"), flag("--no-ignore-dot"), flag("--no-ignore-exclude"),
        flag("--no-ignore-files"), flag("--no-ignore-global"), flag("--no-ignore-messages"), flag("--no-ignore-parent"),
        flag("--no-ignore-vcs"), flag("-N", "--no-line-number"), flag("--no-messages"), flag("--no-mmap"),
        flag("--no-pcre2-unicode"), flag("--no-require-git"), flag("--no-unicode"), flag("-0", "--null"),
        flag("--null-data"), flag("--one-file-system"), flag("-o", "--only-matching"), flag("--passthru"),
        takes("--path-separator"), flag("-P", "--pcre2"), flag("--pcre2-version", does=(GIVES_FIRST,)), flag("-p", "--pretty"),
        flag("-q", "--quiet"), takes("--regex-size-limit"), takes("-e", "--regexp", does=(GIVES_FIRST,)),
        takes("-r", "--replace"), flag("-S", "--smart-case"), takes("--sort"), takes("--sortr"), flag("--stats"),
        flag("-a", "--text"), takes("-j", "--threads"), flag("--trim"), takes("-t", "--type"), takes("--type-add"),
        takes("--type-clear"), flag("--type-list", does=(GIVES_FIRST,)), takes("-T", "--type-not"), flag("-u", "--unrestricted"),
        flag("--version"), flag("--vimgrep"), flag("-H", "--with-filename"), flag("-w", "--word-regexp"),
        refuse("--pre", value="required", why="it runs a program on every file it searches"),
        refuse("--pre-glob", value="required", why="it chooses the files --pre runs a program on"),
        refuse("-z", "--search-zip", why="it runs decompression programs found on PATH"),
    ), syntax="clap", first="pattern", empty="input or .", tree=True),
    Program(("sed",), "GNU sed 4.9, sed(1) and info sed", "read", (
        flag("-n", "--quiet", "--silent"), flag("--debug"), takes("-e", "--expression", does=(GIVES_FIRST, CHECKED)),
        refuse("-f", "--file", value="required", why="its script is in a file bgc does not read"),
        flag("--follow-symlinks"), may_take("-i", "--in-place", does=(IN_PLACE,)), takes("-l", "--line-length"),
        flag("--posix"), flag("-E", "-r", "--regexp-extended"), flag("-s", "--separate"), flag("--sandbox"),
        flag("-u", "--unbuffered"), flag("-z", "--null-data"), *_HELP), first="script"),
    Program(("jq",), "jq 1.6, jq(1)", "read", (
        flag("-c", "--compact-output"), flag("-n", "--null-input"), flag("-e", "--exit-status"), flag("-s", "--slurp"),
        flag("-r", "--raw-output"), flag("-j", "--join-output"), flag("-a", "--ascii-output"), flag("-R", "--raw-input"),
        flag("-C", "--color-output"), flag("-M", "--monochrome-output"), flag("-S", "--sort-keys"), flag("--tab"),
        takes("--indent"), flag("--unbuffered"), flag("--stream"), flag("--seq"), Option(("--arg",), "two"),
        Option(("--argjson",), "two"), Option(("--slurpfile",), "two", (READS,)), Option(("--rawfile",), "two", (READS,)),
        Option(("--argfile",), "two", (READS,)), flag("--args", does=(ARGS,)), flag("--jsonargs", does=(ARGS,)),
        flag("--version"),
        refuse("-f", "--from-file", why="its filter is in a file bgc does not read"),
        refuse("-L", value="required", why="it loads modules from a directory"),
        refuse("--run-tests", why="it reads test cases from a file"),
    ), syntax="jq", first="filter"),
    Program(("stat",), "GNU coreutils 9.1, stat(1)", "list", (
        flag("-L", "--dereference"), flag("-f", "--file-system"), takes("--cached"), takes("-c", "--format"),
        takes("--printf"), flag("-t", "--terse"), *_HELP)),
    Program(("tree",), "tree 2.1, tree(1)", "list", (
        flag("-a"), flag("-d"), flag("-l"), flag("-f"), flag("-x"), takes("-L"), takes("-P"), takes("-I"),
        flag("--gitignore"), flag("--ignore-case"), flag("--matchdirs"), flag("--metafirst"), flag("--prune"),
        flag("--info"), flag("--noreport"), takes("--charset"), takes("--filelimit"), flag("-q"), flag("-N"), flag("-Q"),
        flag("-p"), flag("-u"), flag("-g"), flag("-s"), flag("-h"), flag("--si"), flag("--du"), flag("-D"),
        takes("--timefmt"), flag("-F"), flag("--inodes"), flag("--device"), flag("-v"), flag("-t"), flag("-c"),
        flag("-U"), flag("-r"), flag("--dirsfirst"), flag("--filesfirst"), takes("--sort"), flag("-i"), flag("-A"),
        flag("-S"), flag("-n"), flag("-C"), flag("-X"), flag("-J"), *_HELP,
        refuse("-o", value="required", why="it writes its output to a file"),
        refuse("-R", why="it writes a listing file into every directory"),
        refuse("-H", value="required", why="with -R it writes files"),
        refuse("--fromfile", "--fromtabfile", why=_LISTS_FILES),
    ), syntax="tree", empty="."),
    Program(("diff",), "GNU diffutils 3.8, diff(1)", "read", (
        flag("--normal"), flag("-q", "--brief"), flag("-s", "--report-identical-files"), flag("-c"), takes("-C"),
        may_take("--context"), flag("-u"), takes("-U"), may_take("--unified"), flag("-e", "--ed"), flag("-n", "--rcs"),
        flag("-y", "--side-by-side"), takes("-W", "--width"), flag("--left-column"), flag("--suppress-common-lines"),
        flag("-p", "--show-c-function"), takes("-F", "--show-function-line"), takes("--label"),
        flag("-t", "--expand-tabs"), flag("-T", "--initial-tab"), takes("--tabsize"), flag("--suppress-blank-empty"),
        flag("-r", "--recursive", does=(RECURSIVE,)), flag("--no-dereference"), flag("-N", "--new-file"),
        flag("--unidirectional-new-file"), flag("--ignore-file-name-case"), flag("--no-ignore-file-name-case"),
        takes("-x", "--exclude"), takes("-X", "--exclude-from", does=(READS,)), takes("-S", "--starting-file"),
        takes("--from-file", "--to-file", does=(AGAINST,)), flag("-i", "--ignore-case"),
        flag("-E", "--ignore-tab-expansion"), flag("-Z", "--ignore-trailing-space"), flag("-b", "--ignore-space-change"),
        flag("-w", "--ignore-all-space"), flag("-B", "--ignore-blank-lines"), takes("-I", "--ignore-matching-lines"),
        flag("-a", "--text"), flag("--strip-trailing-cr"), takes("-D", "--ifdef"),
        *(takes(f"--{kind}-group-format") for kind in ("old", "new", "unchanged", "changed")),
        *(takes(f"--{kind}-line-format") for kind in ("old", "new", "unchanged")), takes("--line-format"),
        flag("-d", "--minimal"), takes("--horizon-lines"), flag("--speed-large-files"), may_take("--color"),
        takes("--palette"), flag("--help"), flag("-v", "--version"),
        refuse("-l", "--paginate", why="it runs pr on its output"),
    ), tree=True),
    Program(("du",), "GNU coreutils 9.1, du(1)", "list", (
        flag("-0", "--null"), flag("-a", "--all"), flag("--apparent-size"), takes("-B", "--block-size"),
        flag("-b", "--bytes"), flag("-c", "--total"), flag("-D", "--dereference-args"), takes("-d", "--max-depth"),
        flag("-H"), flag("-h", "--human-readable"), flag("--inodes"), flag("-k"), flag("-L", "--dereference"),
        flag("-l", "--count-links"), flag("-m"), flag("-P", "--no-dereference"), flag("-S", "--separate-dirs"),
        flag("--si"), flag("-s", "--summarize"), takes("-t", "--threshold"), may_take("--time"), takes("--time-style"),
        takes("-X", "--exclude-from", does=(READS,)), takes("--exclude"), flag("-x", "--one-file-system"), *_HELP,
        refuse("--files0-from", value="required", why=_LISTS_FILES),
    ), empty="."),
    Program(("sort",), "GNU coreutils 9.1, sort(1)", "read", (
        flag("-b", "--ignore-leading-blanks"), flag("-d", "--dictionary-order"), flag("-f", "--ignore-case"),
        flag("-g", "--general-numeric-sort"), flag("-i", "--ignore-nonprinting"), flag("-M", "--month-sort"),
        flag("-h", "--human-numeric-sort"), flag("-n", "--numeric-sort"), flag("-R", "--random-sort"),
        takes("--random-source", does=(READS,)), flag("-r", "--reverse"), takes("--sort"), flag("-V", "--version-sort"),
        takes("--batch-size"), flag("-c"), may_take("--check"), flag("-C"), flag("--debug"), takes("-k", "--key"),
        flag("-m", "--merge"), takes("-o", "--output", does=(WRITES,)), flag("-s", "--stable"),
        takes("-S", "--buffer-size"), takes("-t", "--field-separator"), takes("--parallel"), flag("-u", "--unique"),
        flag("-z", "--zero-terminated"), *_HELP,
        refuse("-T", "--temporary-directory", value="required", why="it writes temporary files in a directory"),
        refuse("--compress-program", value="required", why="it runs a program"),
        refuse("--files0-from", value="required", why=_LISTS_FILES),
    )),
    Program(("uniq",), "GNU coreutils 9.1, uniq(1)", "input output", (
        flag("-c", "--count"), flag("-d", "--repeated"), flag("-D"), may_take("--all-repeated"),
        takes("-f", "--skip-fields"), may_take("--group"), flag("-i", "--ignore-case"), takes("-s", "--skip-chars"),
        flag("-u", "--unique"), flag("-z", "--zero-terminated"), takes("-w", "--check-chars"), *_HELP)),
    Program(("cut",), "GNU coreutils 9.1, cut(1)", "read", (
        takes("-b", "--bytes"), takes("-c", "--characters"), takes("-d", "--delimiter"), takes("-f", "--fields"),
        flag("-n"), flag("--complement"), flag("-s", "--only-delimited"), takes("--output-delimiter"),
        flag("-z", "--zero-terminated"), *_HELP)),
    Program(("nl",), "GNU coreutils 9.1, nl(1)", "read", (
        takes("-b", "--body-numbering"), takes("-d", "--section-delimiter"), takes("-f", "--footer-numbering"),
        takes("-h", "--header-numbering"), takes("-i", "--line-increment"), takes("-l", "--join-blank-lines"),
        takes("-n", "--number-format"), flag("-p", "--no-renumber"), takes("-s", "--number-separator"),
        takes("-v", "--starting-line-number"), takes("-w", "--number-width"), *_HELP)),
    Program(("tac",), "GNU coreutils 9.1, tac(1)", "read", (
        flag("-b", "--before"), flag("-r", "--regex"), takes("-s", "--separator"), *_HELP)),
    Program(("md5sum", "sha1sum", "sha256sum", "sha512sum"), "GNU coreutils 9.1, sha256sum(1)", "read", (
        flag("-b", "--binary"), flag("--tag"), flag("-t", "--text"), flag("-z", "--zero"), *_HELP,
        refuse("-c", "--check", why="it reads the files a checksum list names"),
    )),
    Program(("realpath",), "GNU coreutils 9.1, realpath(1)", "list", (
        flag("-e", "--canonicalize-existing"), flag("-m", "--canonicalize-missing"), flag("-L", "--logical"),
        flag("-P", "--physical"), flag("-q", "--quiet"), takes("--relative-to", "--relative-base", does=(LISTS,)),
        flag("-s", "--strip", "--no-symlinks"), flag("-z", "--zero"), *_HELP), dash=False),
    Program(("readlink",), "GNU coreutils 9.1, readlink(1)", "list", (
        flag("-f", "--canonicalize"), flag("-e", "--canonicalize-existing"), flag("-m", "--canonicalize-missing"),
        flag("-n", "--no-newline"), flag("-q", "--quiet"), flag("-s", "--silent"), flag("-v", "--verbose"),
        flag("-z", "--zero"), *_HELP), dash=False),
    Program(("basename",), "GNU coreutils 9.1, basename(1)", "text", (
        flag("-a", "--multiple"), takes("-s", "--suffix"), flag("-z", "--zero"), *_HELP)),
    Program(("dirname",), "GNU coreutils 9.1, dirname(1)", "text", (flag("-z", "--zero"), *_HELP)),
    Program(("echo", "true", "false"), "bash 5.2, bash(1), SHELL BUILTIN COMMANDS", "text", syntax="words"),
    Program(("pwd",), "bash 5.2, bash(1), SHELL BUILTIN COMMANDS", "text", (flag("-L"), flag("-P")), syntax="builtin"),
    Program(("cd",), "bash 5.2, bash(1), SHELL BUILTIN COMMANDS", "list", syntax="builtin", dash=False, at_most=1),
    Program(("tee",), "GNU coreutils 9.1, tee(1)", "write", (
        flag("-a", "--append"), flag("-i", "--ignore-interrupts"), flag("-p"), may_take("--output-error"), *_HELP),
        dash=False),
    Program(("mkdir",), "GNU coreutils 9.1, mkdir(1)", "write", (
        takes("-m", "--mode"), flag("-p", "--parents"), flag("-v", "--verbose"), flag("-Z"), may_take("--context"),
        *_HELP), dash=False),
    Program(("rmdir",), "GNU coreutils 9.1, rmdir(1)", "write", (
        flag("--ignore-fail-on-non-empty"), flag("-p", "--parents", does=(PARENTS,)), flag("-v", "--verbose"), *_HELP),
        dash=False),
    Program(("touch",), "GNU coreutils 9.1, touch(1)", "write", (
        flag("-a"), flag("-c", "--no-create"), takes("-d", "--date"), flag("-f"), flag("-h", "--no-dereference"),
        flag("-m"), takes("-r", "--reference", does=(LISTS,)), takes("-t"), takes("--time"), *_HELP)),
    Program(("rm",), "GNU coreutils 9.1, rm(1)", "write", (
        flag("-f", "--force"), flag("-i"), flag("-I"), may_take("--interactive"), flag("--one-file-system"),
        flag("--no-preserve-root"), may_take("--preserve-root"), flag("-r", "-R", "--recursive", does=(RECURSIVE,)),
        flag("-d", "--dir"), flag("-v", "--verbose"), *_HELP), dash=False),
    Program(("cp",), "GNU coreutils 9.1, cp(1)", "copy", (
        flag("-a", "--archive", does=(RECURSIVE,)), flag("--attributes-only"), flag("--copy-contents"), flag("-d"),
        flag("-f", "--force"), flag("-i", "--interactive"), flag("-H"), flag("-l", "--link"), flag("-L", "--dereference"),
        flag("-n", "--no-clobber"), flag("-P", "--no-dereference"), flag("-p"), may_take("--preserve"),
        takes("--no-preserve"), flag("-R", "-r", "--recursive", does=(RECURSIVE,)), may_take("--reflink"),
        flag("--remove-destination"), takes("--sparse"), flag("--strip-trailing-slashes"), flag("-s", "--symbolic-link"),
        takes("-t", "--target-directory", does=(TARGET,)), flag("-T", "--no-target-directory", does=(NO_TARGET,)),
        flag("-u", "--update"), flag("-v", "--verbose"), flag("-x", "--one-file-system"), flag("-Z"),
        may_take("--context"), *_HELP,
        refuse("--backup", value="optional", why="it writes backup files under other names"),
        refuse("-b", why="it writes backup files under other names"),
        refuse("-S", "--suffix", value="required", why="it writes backup files under other names"),
        refuse("--parents", why="it writes each source's whole path below the directory"),
    ), dash=False),
    Program(("mv",), "GNU coreutils 9.1, mv(1)", "move", (
        flag("-f", "--force"), flag("-i", "--interactive"), flag("-n", "--no-clobber"), flag("--strip-trailing-slashes"),
        takes("-t", "--target-directory", does=(TARGET,)), flag("-T", "--no-target-directory", does=(NO_TARGET,)),
        flag("-u", "--update"), flag("-v", "--verbose"), flag("-Z", "--context"), *_HELP,
        refuse("--backup", value="optional", why="it writes backup files under other names"),
        refuse("-b", why="it writes backup files under other names"),
        refuse("-S", "--suffix", value="required", why="it writes backup files under other names"),
    ), dash=False),
    Program(("find",), "GNU findutils 4.9.0, find(1)", "expression", syntax="find", empty="."),
    Program(("git",), "git 2.39, git(1)", "git", syntax="git"),
)  # fmt: skip
"""One row per program (a row may serve several names that read their argv alike)."""


# ---- git: one row per subcommand --------------------------------------------------------------

_DIFF_OUTPUT = (
    flag("-p", "-u", "--patch", does=(CONTENT,)), may_take("-U", "--unified", does=(CONTENT,)),
    flag("-s", "--no-patch", does=(SUMMARY,)), flag("--raw", does=(SUMMARY,)), may_take("--stat", does=(SUMMARY,)),
    flag("--numstat", does=(SUMMARY,)), flag("--shortstat", does=(SUMMARY,)), flag("--compact-summary", does=(SUMMARY,)),
    may_take("--dirstat", does=(SUMMARY,)), flag("--summary", does=(SUMMARY,)), flag("--name-only", does=(SUMMARY,)),
    flag("--name-status", does=(SUMMARY,)), flag("--patch-with-stat", does=(CONTENT,)),
    flag("--patch-with-raw", does=(CONTENT,)), may_take("--word-diff", does=(CONTENT,)),
    may_take("--color-words", does=(CONTENT,)), flag("-W", "--function-context", does=(CONTENT,)),
    flag("--check", does=(CONTENT,)), flag("-z"), may_take("--color"), flag("--no-color"), flag("--minimal"),
    flag("--patience"), flag("--histogram"), takes("--diff-algorithm"), may_take("--abbrev"), flag("--full-index"),
    flag("--binary"), flag("--no-renames"), may_take("-M", "--find-renames"), may_take("-C", "--find-copies"),
    may_take("-B", "--break-rewrites"), takes("--diff-filter"), flag("-R"), may_take("--relative"), flag("--no-relative"),
    flag("-a", "--text"), flag("-b", "--ignore-space-change"), flag("-w", "--ignore-all-space"),
    flag("--ignore-space-at-eol"), flag("--ignore-cr-at-eol"), flag("--ignore-blank-lines"),
    takes("--inter-hunk-context"), flag("--exit-code"), flag("--no-ext-diff"), flag("--no-textconv"),
    may_take("--ignore-submodules"), flag("--no-prefix"), takes("--src-prefix"), takes("--dst-prefix"),
    takes("--output", does=(WRITES,)),
    refuse("--ext-diff", why="it runs the external diff program"),
    refuse("-S", "-G", value="required", why="it searches content, which its output then reveals"),
    refuse("--pickaxe-regex", "--pickaxe-all", why="it searches content, which its output then reveals"),
)  # fmt: skip

_LOG_OPTIONS = (
    takes("-n", "--max-count"), takes("--skip"), takes("--since", "--after", "--until", "--before"),
    takes("--author"), takes("--committer"), takes("--grep"), flag("--all-match"), flag("--invert-grep"),
    flag("-i", "--regexp-ignore-case"), flag("-E", "--extended-regexp"), flag("-F", "--fixed-strings"),
    flag("--merges"), flag("--no-merges"), flag("--first-parent"), flag("--all"), may_take("--branches"),
    may_take("--tags"), may_take("--remotes"), flag("--oneline"), takes("--format"), may_take("--pretty"),
    flag("--abbrev-commit"), flag("--no-abbrev-commit"), flag("--graph"), may_take("--decorate"), flag("--no-decorate"),
    takes("--date"), flag("--relative-date"), flag("--reverse"), flag("--topo-order"), flag("--date-order"),
    flag("--author-date-order"), flag("--follow"), may_take("--no-walk"), flag("--left-right"), flag("--cherry-pick"),
    flag("--cherry-mark"), flag("--boundary"), flag("--source"), flag("--parents"), flag("--children"),
    flag("--full-history"), flag("--simplify-by-decoration"), flag("-c", "--cc", "-m", does=(CONTENT,)),
    flag("--full-diff"), flag("-g", "--walk-reflogs"), flag("--no-notes"),
    refuse("-L", value="required", why="it shows the history of lines, read from the files"),
    refuse("--show-signature", why="it runs gpg to verify signatures"),
)  # fmt: skip

_SHOW_ALSO = frozenset(("--oneline", "--format", "--pretty", "--abbrev-commit", "--no-abbrev-commit", "--decorate",
                        "--date", "--follow", "--source", "--first-parent", "-c", "-g", "--no-notes", "--show-signature"))
"""The options of git log's that git-show(1) documents for git show too (git show takes more,
which the catalogue leaves to the argv's rules)."""

GIT_GLOBAL = (flag("--no-pager", "-P"), flag("--no-optional-locks"))
"""The options before git's subcommand that change nothing it touches (any other asks: ``-C``
and ``--git-dir`` move it, ``-c`` sets its configuration)."""

GIT_COMMANDS: dict[str, Program] = {
    "status": Program(("git status",), "git 2.39, git-status(1)", "git", (
        flag("-s", "--short"), flag("-b", "--branch"), flag("--show-stash"), may_take("--porcelain"), flag("--long"),
        flag("-v", "--verbose", does=(CONTENT,)), may_take("-u", "--untracked-files"), may_take("--ignore-submodules"),
        may_take("--ignored"), flag("-z"), may_take("--column"), flag("--no-column"), flag("--ahead-behind"),
        flag("--no-ahead-behind"), flag("--renames"), flag("--no-renames"), may_take("--find-renames"),
    ), syntax="git"),
    "log": Program(("git log",), "git 2.39, git-log(1)", "git", (*_LOG_OPTIONS, *_DIFF_OUTPUT), syntax="git"),
    "show": Program(("git show",), "git 2.39, git-show(1)", "git", (
        *(option for option in _LOG_OPTIONS if option.names[0] in _SHOW_ALSO), *_DIFF_OUTPUT), syntax="git"),
    "diff": Program(("git diff",), "git 2.39, git-diff(1)", "git", (
        *_DIFF_OUTPUT, flag("--cached", "--staged"), flag("--merge-base"), flag("--no-index", does=(NO_INDEX,)),
        flag("-1", "--base"), flag("-2", "--ours"), flag("-3", "--theirs"), flag("-0"), flag("--quiet"),
    ), syntax="git"),
    "branch": Program(("git branch",), "git 2.39, git-branch(1)", "git", (
        flag("-a", "--all"), flag("-r", "--remotes"), flag("-v", "--verbose"), flag("-l", "--list"), flag("--show-current"),
        takes("--format"), takes("--sort"), takes("--points-at"), may_take("--contains"), may_take("--no-contains"),
        may_take("--merged"), may_take("--no-merged"), may_take("--color"), flag("--no-color"), may_take("--column"),
        flag("--no-column"), flag("-i", "--ignore-case"), may_take("--abbrev"), flag("--no-abbrev"),
    ), syntax="git"),
    "blame": Program(("git blame",), "git 2.39, git-blame(1)", "git", (
        takes("-L"), flag("-l"), flag("-t"), takes("-S", does=(READS,)), flag("--reverse"), flag("--first-parent"),
        flag("-p", "--porcelain"), flag("--line-porcelain"), flag("--incremental"), takes("--encoding"),
        takes("--contents", does=(READS,)), takes("--date"), flag("--progress"),
        may_take("-M"), may_take("-C"), flag("-w"), takes("--ignore-rev"), takes("--ignore-revs-file", does=(READS,)),
        flag("--color-lines"), flag("--color-by-age"), flag("--score-debug"), flag("-f", "--show-name"),
        flag("-n", "--show-number"), flag("-s"), flag("-e", "--show-email"), flag("-c"), flag("-b"), flag("--root"),
        flag("--show-stats"), may_take("--abbrev"),
    ), syntax="git"),
}  # fmt: skip
"""git's subcommands the catalogue reads: ``status``, ``log`` and ``branch`` show names (``-v``,
``-p`` and the like: content), ``diff`` and ``show`` content, ``blame`` one file's content. What they read
of git's own metadata (``.git``) is not a file of the project's in this sense: the commands
that show it (``git config``, ``git cat-file``…) are not in the catalogue. Any other
subcommand is not understood."""


# ---- find's expression ------------------------------------------------------------------------

FIND_PRIMARIES: dict[str, tuple[int, str]] = {
    **dict.fromkeys(("-daystart", "-follow", "-depth", "-d", "-ignore_readdir_race", "-noignore_readdir_race",
                     "-mount", "-noleaf", "-xdev", "-warn", "-nowarn", "-help", "--help", "-version", "--version",
                     "-empty", "-executable", "-false", "-nogroup", "-nouser", "-readable", "-true", "-writable",
                     "-ls", "-print", "-print0", "-prune", "-quit", "-not", "!", "-a", "-and", "-o", "-or", ",",
                     "(", ")"), (0, "")),
    **dict.fromkeys(("-regextype", "-maxdepth", "-mindepth", "-amin", "-atime", "-cmin", "-ctime", "-fstype", "-gid",
                     "-group", "-ilname", "-iname", "-inum", "-ipath", "-iregex", "-iwholename", "-links", "-lname",
                     "-mmin", "-mtime", "-name", "-path", "-perm", "-regex", "-size", "-type", "-uid", "-used",
                     "-user", "-wholename", "-xtype", "-context", "-printf"), (1, "")),
    **dict.fromkeys(("-anewer", "-cnewer", "-newer", "-samefile"), (1, LISTS)),
    **dict.fromkeys(("-fls", "-fprint", "-fprint0"), (1, WRITES)),
    "-fprintf": (2, WRITES),
    "-delete": (0, RECURSIVE),
}  # fmt: skip
"""find's tests, operators and actions: how many words each takes, and what its first word is
(a file whose metadata it reads, a file it writes); ``-delete`` removes what it finds. Not
listed, so not understood: ``-exec``, ``-execdir``, ``-ok``, ``-okdir`` (they run commands) and
``-files0-from`` (start points read from a file)."""

_FIND_NEWER = re.compile(r"-newer[aBcm][aBcmt]")


# ---- reading an argv --------------------------------------------------------------------------

_BY_NAME = {name: program for program in PROGRAMS for name in program.names}
NAMES = frozenset(_BY_NAME)
"""Every program name the catalogue holds."""


def read_command(words: list[Word], *, stdin: bool = False) -> Reading | str | None:
    """The files the command ``words`` (its program a bare name, every word as bash passes it)
    touches; a reason (text) when it is a catalogued program's argv read otherwise than the
    catalogue can be sure of; None when the program is not in the catalogue. ``stdin``: the
    command's standard input is a pipe or a file (a later part of a pipeline, ``<``), which
    ``rg`` searches when it is given no path."""
    program = _BY_NAME.get(words[0]) if isinstance(words[0], str) else None
    if program is None:
        return None
    if program.syntax == "words":
        reading: Reading | str = Reading(program.names[0], ())
    elif program.syntax == "find":
        reading = _find(words)
    elif program.syntax == "git":
        reading = _git(words)
    else:
        parsed = _options(program, words, 1)
        reading = parsed if isinstance(parsed, str) else _touches(program, parsed, stdin)
    if isinstance(reading, str):
        return reading
    # bash lists the directory a glob names to expand it: the names there are shown (`echo src/*`)
    listed = tuple(Touch("read", _listed(word)) for word in words[1:] if isinstance(word, GlobWord))
    return reading._replace(touches=reading.touches + listed) if listed else reading


_WILDCARD = re.compile(r"(?<!\\)(?:\\\\)*[*?[]")


def _listed(word: GlobWord) -> GlobWord:
    """The directory bash lists to expand a glob: its segments before the first with a wildcard."""
    segments = word.pattern.split("/")
    fixed = next((index for index, segment in enumerate(segments) if _WILDCARD.search(segment)), len(segments))
    directory = "/".join(segments[:fixed]) or ("/" if word.pattern.startswith("/") else "" if word.home else ".")
    return GlobWord(directory, directory, word.home, False)


class _Parsed(NamedTuple):
    options: list[tuple[Option, Word | None, Word | None]]
    operands: list[Word]
    after_dashes: int
    """How many operands came after ``--`` (they are the last ones)."""
    leading: list[GlobWord]
    """The globs before ``--`` that begin with a wildcard (:attr:`Reading.unless`)."""


def _index(program: Program) -> dict[str, Option]:
    return {name: option for option in program.options for name in option.names}


_INDEXES: dict[tuple[str, ...], dict[str, Option]] = {}


def _options(program: Program, words: list[Word], start: int) -> _Parsed | str:
    """The options and operands of ``words[start:]`` as the program's parser reads them."""
    index = _INDEXES.get(program.names)
    if index is None:
        index = _INDEXES[program.names] = _index(program)
    name = program.names[0]
    options: list[tuple[Option, Word | None, Word | None]] = []
    operands: list[Word] = []
    leading: list[GlobWord] = []
    permute = program.syntax != "builtin"
    only_operands = False
    after = 0
    position = start
    while position < len(words):
        word = words[position]
        position += 1
        if isinstance(word, GlobWord) and word.written.startswith("-") and not only_operands:
            return f"{name} {word.written}: an option with a glob, which bash may expand to other words"
        if only_operands or isinstance(word, GlobWord) or word == "-" or not word.startswith("-"):
            if isinstance(word, GlobWord) and word.leading and not only_operands:
                leading.append(word)
            operands.append(word)
            after += only_operands
            if not permute:
                only_operands = True
            continue
        if word == "--":
            if program.syntax == "jq":
                return "jq 1.6 reads '--' as an unknown option, later versions as the end of options"
            only_operands = True
            continue
        if program.syntax == "gnu-count" and position == start + 1 and re.fullmatch(r"-[0-9]+", word):
            continue  # head -5, tail -5: the obsolete count, read only as the first word
        if word.startswith("--"):
            found = _long(program, index, word)
            if isinstance(found, str):
                return found
            option, attached = found
            value: Word | None = attached
            second: Word | None = None
            if option.value == "" and attached is not None:
                return f"{name} {option.names[0]} takes no value"
            if option.value in ("required", "two") and attached is None:
                if position >= len(words):
                    return f"{name} {word} without its value"
                value = words[position]
                position += 1
            if option.value == "two":
                if attached is not None or position >= len(words):
                    return f"{name} {word} takes two words"
                second = words[position]
                position += 1
            if isinstance(value, GlobWord) or isinstance(second, GlobWord):
                return f"a glob as the value of {name} {word}: bash may make it several words"
            options.append((option, value, second))
            continue
        cluster = _cluster(program, index, word, words, position)
        if isinstance(cluster, str):
            return cluster
        found_options, position = cluster
        options.extend(found_options)
    for option, _, _ in options:
        if REFUSE in option.does:
            return f"{name} {option.names[0]}: {option.why}"
    if program.at_most and len(operands) > program.at_most:
        return f"{name} with more than {program.at_most} operand"
    if program.at_most and any(isinstance(word, GlobWord) for word in operands):
        return f"{name} with a glob, which may expand to several words"
    return _Parsed(options, operands, after, leading)


def _long(program: Program, index: dict[str, Option], word: str) -> tuple[Option, str | None] | str:
    """A long option: exact, or (getopt_long) the one long option it is a unique prefix of."""
    spelled, equals, attached = word.partition("=")
    option = index.get(spelled)
    if option is None and program.syntax in ("gnu", "gnu-count"):
        candidates = {index[name] for name in index if name.startswith(spelled) and name.startswith("--")}
        if len(candidates) == 1:
            option = candidates.pop()
        elif candidates:
            return f"{program.names[0]} {spelled} is a prefix of several options"
    if option is None:
        return f"{program.names[0]} {spelled}: an option the catalogue does not know"
    if program.syntax == "jq" and equals:
        return f"jq reads {word!r} as one unknown option"
    return option, (attached if equals else None)


def _cluster(
    program: Program, index: dict[str, Option], word: str, words: list[Word], position: int
) -> tuple[list[tuple[Option, Word | None, Word | None]], int] | str:
    """Short options in one word (``-rn``, ``-n5``, ``-rnA 3``): each letter's option, the value
    of the one that takes it (the rest of the word, or the next word)."""
    name = program.names[0]
    found: list[tuple[Option, Word | None, Word | None]] = []
    at = 1
    while at < len(word):
        option = index.get("-" + word[at])
        if option is None:
            return f"{name} -{word[at]}: an option the catalogue does not know"
        rest = word[at + 1 :]
        if option.value == "":
            found.append((option, None, None))
            at += 1
            continue
        if option.value == "two" or program.syntax == "jq":
            return f"{name} -{word[at]} in a group of options"
        if program.syntax == "clap" and rest.startswith("="):
            return f"{name} -{word[at]}{rest}: ripgrep versions read the '=' differently"
        if program.syntax == "tree" and rest:
            return f"tree -{word[at]} takes its value as the next word"
        if rest or option.value == "optional":
            found.append((option, rest or None, None))
            return found, position
        if position >= len(words):
            return f"{name} -{word[at]} without its value"
        value = words[position]
        if isinstance(value, GlobWord):
            return f"a glob as the value of {name} -{word[at]}: bash may make it several words"
        found.append((option, value, None))
        return found, position + 1
    return found, position


def _touches(program: Program, parsed: _Parsed, stdin: bool) -> Reading | str:
    """The files a parsed command of a row touches."""
    reading = _touched(program, parsed, stdin)
    return reading if isinstance(reading, str) else reading._replace(unless=tuple(parsed.leading))


def _touched(program: Program, parsed: _Parsed, stdin: bool) -> Reading | str:
    name = program.names[0]
    does = {effect for option, _, _ in parsed.options for effect in option.does}
    touches: list[Touch] = []
    for option, value, second in parsed.options:
        for effect, action in ((READS, "read"), (LISTS, "read"), (WRITES, "write"), (AGAINST, "read")):
            if effect in option.does:
                file = second if option.value == "two" else value
                if file is not None and not (program.dash and file == "-"):
                    touches.append(Touch(action, file))
    recursive = RECURSIVE in does
    for option, value, _ in parsed.options:
        if DIRECTORIES in option.does:
            if isinstance(value, str) and len(value) >= 3 and "recurse".startswith(value):
                recursive = True
            elif value not in ("read", "skip"):
                return f"{name} {option.names[0]} {value}: an action the catalogue does not know"
    operands = list(parsed.operands)
    if program.first and GIVES_FIRST not in does:
        if not operands:
            return f"{name} without its {program.first}"
        first = operands.pop(0)
        if isinstance(first, GlobWord):
            return f"a glob as the {program.first} of {name}"
        checked = _check_first(program, first)
        if checked:
            return checked
    for option, value, _ in parsed.options:
        if CHECKED in option.does and isinstance(value, str):
            checked = _check_first(program, value)
            if checked:
                return checked
    if ARGS in does:
        operands = []  # jq --args: the words after the filter are strings
    layout = program.operands
    if layout == "text":
        return Reading(name, tuple(touches))
    if layout in ("copy", "move"):
        return _copy(program, parsed, does, recursive, touches)
    if layout == "input output":
        if len(operands) > 2 or any(isinstance(word, GlobWord) for word in operands):
            return f"{name} with a glob or more than two operands"
        if operands and operands[0] != "-":
            touches.append(Touch("read", operands[0]))
        if len(operands) == 2 and operands[1] != "-":
            touches.append(Touch("write", operands[1]))
        return Reading(name, tuple(touches))
    action = "write" if layout == "write" else "read"
    if not operands and (
        program.empty == "."
        or (program.empty == "input or ." and (LISTING in does or not stdin))
        or (not program.empty and recursive and layout == "read")
    ):
        operands = ["."]  # grep -r with no file searches the working directory
    recursive = (recursive or program.tree) and LISTING not in does
    in_place = next(((value,) for option, value, _ in parsed.options if IN_PLACE in option.does), None)
    if in_place is not None:
        suffix = in_place[0]
        if suffix is not None and (not isinstance(suffix, str) or "/" in suffix or "*" in suffix):
            return f"sed -i{suffix}: a backup written elsewhere than beside the file"
    for word in operands:
        if program.dash and word == "-":
            continue
        tree = ("files" if recursive and layout in ("read", "write") else "")
        touches.append(Touch(action, word, tree))
        if in_place is not None:
            touches.append(Touch("write", word))
            touches.append(_sed_temporary(word))
            if in_place[0]:
                if isinstance(word, GlobWord):
                    return "sed -i with a backup suffix on a glob"
                touches.append(Touch("write", word + in_place[0]))
        if PARENTS in does:
            if isinstance(word, GlobWord):
                return "rmdir -p on a glob"
            parent = posixpath.dirname(word.rstrip("/"))
            while parent not in ("", "/", ".", ".."):
                touches.append(Touch("write", parent))
                parent = posixpath.dirname(parent)
    return Reading(name, tuple(touches))


def _copy(
    program: Program, parsed: _Parsed, does: set[str], recursive: bool, touches: list[Touch]
) -> Reading | str:
    """``cp`` and ``mv``: every source read (``mv`` also writes it: the name is removed), and
    the destination written. Without ``-t`` or ``-T`` the last operand is the destination: a
    file of that name, or (a directory) the source's name inside it; both are written. A
    directory copied or moved puts its files below the destination (:attr:`Touch.tree`
    ``copied``)."""
    name = program.names[0]
    moving = program.operands == "move"
    operands = parsed.operands
    target = next((value for option, value, _ in parsed.options if TARGET in option.does), None)
    if any(isinstance(word, GlobWord) for word in operands):
        return f"{name} with a glob: the destination depends on what it expands to"
    if target is not None:
        sources, into, itself = operands, target, False
    else:
        if len(operands) < 2:
            return f"{name} with fewer than two operands"
        sources, into, itself = operands[:-1], operands[-1], NO_TARGET not in does and len(operands) == 2
        if NO_TARGET in does:
            if len(operands) != 2:
                return f"{name} -T with other than two operands"
            itself = True
    tree = "files" if recursive or moving else ""
    for source in sources:
        base = posixpath.basename(source.rstrip("/"))  # type: ignore[union-attr]
        if base in ("", ".", ".."):
            return f"{name} of {source!r}: its name inside the destination is not a plain name"
        touches.append(Touch("read", source, tree))
        if moving:
            touches.append(Touch("write", source, tree))
        copied = "copied" if recursive or moving else ""
        if itself:
            touches.append(Touch("write", into, copied, source if copied else None))
        if NO_TARGET not in does:
            inside = into.rstrip("/") + "/" + base if into.rstrip("/") else "/" + base  # type: ignore[union-attr]
            touches.append(Touch("write", inside, copied, source if copied else None))
    return Reading(name, tuple(touches))


_SED_TEMPORARY = "sed" + "[A-Za-z0-9]" * 6
"""The name of the file ``sed -i`` writes beside the one it edits, then renames over it
(``ck_mkstemp`` with the template ``sedXXXXXX``)."""


def _sed_temporary(word: Word) -> Touch:
    if isinstance(word, GlobWord):
        directory = posixpath.dirname(word.pattern)
        written = posixpath.join(posixpath.dirname(word.written), "sedXXXXXX")
        return Touch("write", GlobWord(written, posixpath.join(directory, _SED_TEMPORARY), word.home, False), fresh=True)
    pattern = posixpath.join(escape(posixpath.dirname(word)), _SED_TEMPORARY)
    return Touch("write", GlobWord(posixpath.join(posixpath.dirname(word), "sedXXXXXX"), pattern, False, False), fresh=True)


def _check_first(program: Program, word: str) -> str | None:
    """Why a program's own language in a word (a sed script, a jq filter) is not read fully."""
    if program.first == "script":
        return _sed_script(word)
    if program.first == "filter":
        return _jq_filter(word)
    return None


# ---- sed scripts ------------------------------------------------------------------------------

_SED_PLAIN = frozenset("pPlq=QdDnNgGhHxz")
"""sed commands that only print, move or drop text (``q`` and ``Q`` may take an exit code)."""


def _sed_script(script: str) -> str | None:
    """Why a sed script is not read as one that only reads its input and writes standard
    output: every command must be one of :data:`_SED_PLAIN`, ``s`` (flags among ``gpiImM`` and
    digits: not ``w`` (writes a file) or ``e`` (runs it)), ``y``, ``{``, ``}``, ``!``, or a
    comment; ``r``/``R``/``w``/``W`` (files), ``e`` (runs a command), ``a``/``i``/``c`` and
    labels are refused. Read left to right once, as GNU sed's compiler reads it."""
    at, size = 0, len(script)
    while at < size:
        char = script[at]
        if char in " \t\n;}":
            at += 1
            continue
        if char == "#":
            newline = script.find("\n", at)
            at = size if newline < 0 else newline + 1
            continue
        at = _sed_address(script, at)
        if at < 0:
            return "a sed address the catalogue does not read"
        while at < size and script[at] in " \t":
            at += 1
        if at < size and script[at] == ",":
            at = _sed_address(script, at + 1)
            if at < 0:
                return "a sed address the catalogue does not read"
        while at < size and script[at] in " \t!":
            at += 1
        if at >= size:
            return "a sed address without its command"
        command = script[at]
        at += 1
        if command == "{":
            continue
        if command in _SED_PLAIN:
            if command in "qQ":
                while at < size and script[at].isdigit():
                    at += 1
        elif command in "sy":
            at = _sed_delimited(script, at, 2)
            if at < 0:
                return f"a sed {command} command the catalogue does not read"
            if command == "s":
                while at < size and (script[at] in "gpiImM" or script[at].isdigit()):
                    at += 1
        else:
            return f"the sed command {command!r} (it reads or writes files, runs commands, or takes text bgc does not read)"
        while at < size and script[at] in " \t":
            at += 1
        if at < size and script[at] not in ";\n}#":
            return f"sed: {script[at]!r} after a command"
    return None


def _sed_address(script: str, at: int) -> int:
    """Past an optional address at ``at`` (a line number, ``N~M``, ``$``, ``+N``, ``~N``, or a
    ``/regex/`` or ``\\cregexc`` with ``I``/``M`` flags); -1 for one this does not read."""
    size = len(script)
    if at < size and script[at] in "+~":
        at += 1
    if at < size and script[at].isdigit():
        while at < size and (script[at].isdigit() or script[at] == "~"):
            at += 1
        return at
    if at < size and script[at] == "$":
        return at + 1
    if at < size and script[at] in "/\\":
        if script[at] == "\\":
            at += 1
        at = _sed_delimited(script, at, 1)
        while 0 <= at < size and script[at] in "IM":
            at += 1
    return at


def _sed_delimited(script: str, at: int, parts: int) -> int:
    """Past ``parts`` pieces delimited by the character at ``at`` (``/re/``, ``s/re/to/``): a
    backslash escapes the next character, the delimiter included (GNU sed's ``match_slash``);
    -1 when they do not close, or the delimiter is a newline or a backslash."""
    size = len(script)
    if at >= size or script[at] in "\n\\":
        return -1
    delimiter = script[at]
    at += 1
    for _ in range(parts):
        while at < size and script[at] != delimiter:
            at += 2 if script[at] == "\\" else 1
        if at >= size:
            return -1
        at += 1
    return at


# ---- jq filters -------------------------------------------------------------------------------

_JQ_OUTSIDE = re.compile(r"\b(?:env|ENV|import|include|modulemeta|get_search_list|input_filename)\b")
"""What a jq filter can name that reaches outside its input: the environment (``env``,
``$ENV``: tokens and keys live there), modules and data files (``import``, ``include``)."""


def _jq_filter(text: str) -> str | None:
    found = _JQ_OUTSIDE.search(text)
    return f"the jq filter names {found.group()!r}, which reaches outside its input" if found else None


# ---- find ---------------------------------------------------------------------------------------


def _find(words: list[Word]) -> Reading | str:
    """``find``: its leading options, its start points (listed; none is ``.``), then its
    expression word by word (:data:`FIND_PRIMARIES`); ``-delete`` makes each start point a
    tree it writes."""
    at = 1
    while at < len(words) and isinstance(words[at], str) and words[at] in ("-H", "-L", "-P"):
        at += 1
    while at < len(words) and isinstance(words[at], str) and (words[at] == "-D" or str(words[at]).startswith("-O")):
        at += 2 if words[at] == "-D" else 1
    starts: list[Word] = []
    leading: list[GlobWord] = []
    while at < len(words):
        word = words[at]
        if isinstance(word, str) and (word.startswith("-") and word != "-" or word in ("(", "!", ")", ",")):
            break
        if isinstance(word, GlobWord) and word.written.startswith("-"):
            return f"find {word.written}: a glob bash may expand to words find reads as its expression"
        if isinstance(word, GlobWord) and word.leading:
            leading.append(word)
        starts.append(word)
        at += 1
    touches: list[Touch] = []
    deletes = False
    while at < len(words):
        word = words[at]
        if isinstance(word, GlobWord):
            return f"a glob in find's expression ({word.written!r}): bash expands it first"
        primary = FIND_PRIMARIES.get(word)
        if primary is None and _FIND_NEWER.fullmatch(word):
            primary = (1, "" if word.endswith("t") else LISTS)
        if primary is None:
            return f"find {word}: a test or action the catalogue does not know (-exec and -ok run commands)"
        count, effect = primary
        values = words[at + 1 : at + 1 + count]
        if len(values) < count or any(isinstance(value, GlobWord) for value in values):
            return f"find {word} without its value, or with a glob"
        if effect == RECURSIVE:
            deletes = True
        elif effect in (LISTS, WRITES):
            touches.append(Touch("read" if effect == LISTS else "write", values[0]))
        at += 1 + count
    for start in starts or ["."]:
        touches.append(Touch("read", start))
        if deletes:
            touches.append(Touch("write", start, "files"))
    return Reading("find", tuple(touches), tuple(leading))


# ---- git ----------------------------------------------------------------------------------------


def _git(words: list[Word]) -> Reading | str:
    """``git [--no-pager] SUBCOMMAND …`` for a subcommand of :data:`GIT_COMMANDS`: what it shows
    of the repository that holds the working directory (:attr:`Touch.repository`)."""
    at = 1
    global_options = {name for option in GIT_GLOBAL for name in option.names}
    while at < len(words) and isinstance(words[at], str) and str(words[at]).startswith("-"):
        if words[at] not in global_options:
            return f"git {words[at]}: an option before the subcommand the catalogue does not read"
        at += 1
    if at >= len(words) or not isinstance(words[at], str) or words[at] not in GIT_COMMANDS:
        return "a git subcommand the catalogue does not read"
    command = str(words[at])
    program = GIT_COMMANDS[command]
    rest = [word for word in words[at + 1 :]]
    counts = [word for word in rest if isinstance(word, str) and command in ("log", "show") and re.fullmatch(r"-[0-9]+", word)]
    parsed = _options(program, [words[at], *(word for word in rest if word not in counts)], 1)
    if isinstance(parsed, str):
        return parsed
    if any(isinstance(word, GlobWord) for word in parsed.operands):
        return f"a glob in git {command}'s operands: git reads pathspecs as patterns of its own"
    does = {effect for option, _, _ in parsed.options for effect in option.does}
    touches = [Touch("read" if READS in option.does else "write", value) for option, value, _ in parsed.options
               if {READS, WRITES} & set(option.does) and value is not None]  # fmt: skip
    operands: list[str] = [str(word) for word in parsed.operands]
    paths = operands[len(operands) - parsed.after_dashes :] if parsed.after_dashes else []
    before = operands[: len(operands) - parsed.after_dashes]
    for word in operands:
        if word.startswith(":") and word in paths:
            return f"git pathspec magic ({word!r})"
    if command == "branch":  # names of branches; with a name and no --list it makes one
        if operands and not any("--list" in option.names for option, _, _ in parsed.options):
            return "git branch NAME makes a branch"
        return Reading("git branch", (Touch("read", ".", repository=True),))
    if command == "blame":
        return Reading("git blame", (*touches, *(Touch("read", word) for word in before + paths if ":" not in word)))
    if command == "diff" and NO_INDEX in does:
        if len(operands) != 2:
            return "git diff --no-index compares two paths"
        return Reading("git diff", (*touches, *(Touch("read", word, "files") for word in operands)))
    content = CONTENT in does or (command in ("diff", "show") and SUMMARY not in does)
    if command == "show":
        content = True  # a blob is shown whole, whatever the diff options
    for word in before:
        revision, colon, path = word.partition(":")
        if colon:
            if command == "log" or not path:
                return f"git {command} {word!r}: a tree or a path of a revision"
            path = re.sub(r"\A[0-3]:", "", path) if not revision else path
            if path.startswith(("./", "../")):
                touches.append(Touch("read", path))
            else:
                touches.append(Touch("read", path, repository=True))
            continue
        # a word before `--` is a revision, or a path when it is not one: read both ways
        touches.append(_git_path(word, content))
    touches.extend(_git_path(word, content) for word in paths)
    touches.append(Touch("read", ".", "any" if content else "", repository=True))
    return Reading(f"git {command}", tuple(touches))


_GIT_WILDCARD = re.compile(r"[*?[]")


def _git_path(word: str, content: bool) -> Touch:
    """What a git pathspec (or a word that may be one) shows: its path, below it too when git
    shows content (history may hold a directory there). git matches a pathspec with a wildcard
    as a pattern of its own (``*`` crosses ``/``: ``*.env`` is every ``.env``), so such a word
    stands for the whole tree of the directory before its first wildcard."""
    wildcard = _GIT_WILDCARD.search(word)
    if wildcard is None:
        return Touch("read", word, "any" if content else "")
    directory = posixpath.dirname(word[: wildcard.start()]) or "."
    return Touch("read", directory, "any" if content else "")
