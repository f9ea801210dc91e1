"""Text written for another program to read back: each function quotes for one consumer so
that it gives the value back exactly, or refuses the value with a named error naming the format
that can carry it. Control characters are written as escapes, never raw, so that printing the
text on a terminal cannot move the cursor or set the window title.

Consumers: bash's unquoted `$(...)` (word splitting and pathname expansion, no quote removal),
bash's `eval`, `KEY=value` lines read alike by docker's --env-file, `env $(...)` and a shell's
`.`, YAML (PyYAML, Go's yaml) and the `$` interpolation docker compose and Kubernetes apply to
the strings of a service / container."""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Iterable, Mapping

from . import _core

# What changes a word of unquoted `$(...)` output: IFS whitespace splits it, `*?[` (and
# extglob's `+(`, `@(`, `!(`, on in interactive bash) make it a pattern matched against the
# working directory, and a backslash is a pattern quote to bash 5.0.
_SUBSTITUTION_UNSAFE = re.compile(r"[ \t\n*?\[\\]|[+@!]\(")
# The characters shlex leaves unquoted: a `KEY=value` line made of them reads the same to
# docker's --env-file (no quote removal), `env $(...)` (word splitting) and a shell.
_ENV_SAFE = re.compile(r"[\w@%+=:,./-]*", re.ASCII)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_VALUE_SHOWN = 80


def _invisible(char: str) -> bool:
    """Control, format, private-use, unassigned and surrogate characters and the line and
    paragraph separators: what a terminal or a YAML reader does not show as itself."""
    category = unicodedata.category(char)
    return category[0] == "C" or category in ("Zl", "Zp")


def _escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every invisible character written as its escape (`\\x1b`), so a terminal
    shows it instead of obeying it; newlines kept where the text is several lines by design."""
    # Printable text (no C* category, line or paragraph separator) has nothing to escape: the
    # CLI's output passes here whole, and the test is one C call instead of one per character.
    if (text.replace("\n", " ") if keep_newlines else text).isprintable():
        return text
    return "".join(
        _escape(c) if _invisible(c) and not (keep_newlines and c == "\n") else c for c in text
    )


def shown(value: str) -> str:
    """A value quoted for an error message: visible, and cut to a readable length."""
    text = visible(value)
    return repr(text if len(text) <= _VALUE_SHOWN else text[:_VALUE_SHOWN] + "...")


def check_text(value: str, what: str) -> None:
    """Refuse what no argv word or environment value can hold: a NUL, or a lone surrogate
    (bytes that were not UTF-8, which no generated file can hold as text)."""
    if "\0" in value:
        msg = f"{what} {shown(value)} holds a NUL character, which no argument can carry"
        raise _core.ConfigError(msg)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        msg = f"{what} {shown(value)} is not valid UTF-8 text"
        raise _core.ConfigError(msg) from None


# Names bash sets or rewrites itself as it runs (`_` is the previous command's last argument,
# SHLVL counts nested shells, ...): a value written for one is not the value the launch sees.
_SHELL_MANAGED = frozenset(
    {
        "_", "BASHPID", "BASH_ARGV0", "EPOCHREALTIME", "EPOCHSECONDS", "EUID", "FUNCNAME",
        "GROUPS", "HISTCMD", "IFS", "LINENO", "OLDPWD", "OPTIND", "PPID", "PWD", "RANDOM",
        "SECONDS", "SHLVL", "SRANDOM", "UID",
    }
)  # fmt: skip


def check_env_name(name: str) -> None:
    if not _ENV_NAME.fullmatch(name):
        msg = (
            f"environment variable name {shown(name)}: not a shell name "
            "(letters, digits and _, not starting with a digit)"
        )
        raise _core.ConfigError(msg)
    if name in _SHELL_MANAGED:
        msg = f"environment variable name {name}: the shell sets it itself, so no launch sees it"
        raise _core.ConfigError(msg)


def substitution_words(words: Iterable[str]) -> str:
    """Words joined by spaces for bash's unquoted `$(...)`; a word that splitting or pathname
    expansion would change, or that is empty or invisible on a terminal, is refused naming
    --format shell, which quotes it."""
    words = list(words)
    for index, word in enumerate(words):
        if word and not _SUBSTITUTION_UNSAFE.search(word) and not any(map(_invisible, word)):
            continue
        flag = words[index - 1] if index and words[index - 1].startswith("-") else None
        what = f"the value of {flag}" if flag else f"the word {shown(word)}"
        reason = (
            "empty"
            if not word
            else "whitespace, glob characters, backslashes or control characters"
        )
        msg = (
            f"--format args cannot carry {what} ({reason}: `$(...)` would split or expand "
            "it): use --format shell (or --json, whose vllm_argv holds every word)"
        )
        raise _core.ConfigError(msg)
    return " ".join(words)


def shell_word(word: str) -> str:
    """A word for bash's `eval`: single-quoted as shlex does, or `$'...'` with escapes when it
    holds invisible characters (so the line printed on a terminal shows them)."""
    if word.isprintable() or not any(map(_invisible, word)):  # isprintable: one C call
        return shlex.quote(word)
    body = "".join(
        "".join(f"\\x{byte:02x}" for byte in c.encode("utf-8"))
        if _invisible(c)
        else "\\" + c
        if c in "\\'"
        else c
        for c in word
    )
    return f"$'{body}'"


def shell_join(words: Iterable[str]) -> str:
    return " ".join(shell_word(w) for w in words)


def env_line(name: str, value: str) -> str:
    """`NAME=value`, read alike by docker's --env-file, `env $(...)` and a shell's `.`; a value
    that would need quoting is refused naming --format shell."""
    check_env_name(name)
    if not _ENV_SAFE.fullmatch(value):
        msg = (
            f"--format env cannot carry {name}={shown(value)} (docker's --env-file takes no "
            "quotes and `env $(...)` splits words): use --format shell"
        )
        raise _core.ConfigError(msg)
    return f"{name}={value}"


def yaml_string(text: str, *, interpolated: bool = True) -> str:
    """A double-quoted YAML scalar giving `text` back: UTF-8 as itself (never JSON's surrogate
    pairs), invisible characters as escapes, and with `interpolated`, `$` doubled, which is
    how docker compose and Kubernetes read a literal `$` in a service's / container's
    strings."""
    out = ['"']
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "$" and interpolated:
            out.append("$$")
        elif _invisible(c):
            out.append(_escape(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def yaml_list(items: Iterable[str], *, interpolated: bool = True) -> str:
    return "[" + ", ".join(yaml_string(i, interpolated=interpolated) for i in items) + "]"


def yaml_map(pairs: Mapping[str, str], *, interpolated: bool = True) -> str:
    """A flow mapping; keys are never interpolated, values are."""
    body = ", ".join(
        f"{yaml_string(k, interpolated=False)}: {yaml_string(v, interpolated=interpolated)}"
        for k, v in pairs.items()
    )
    return "{" + body + "}"


def yaml_comment(text: str) -> str:
    """A YAML comment line: one line whatever `text` holds."""
    return "# " + visible(text)
