"""The package's shape: `import vramplan` and the commonest commands load none of the heavy
libraries (each function imports what it uses), and the modules import one another in layers,
with no cycle, counting the imports inside functions too."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "vramplan"
HEAVY = ("pandas", "numpy", "matplotlib", "rich", "huggingface_hub")
MODEL = "meta-llama/Llama-3.1-8B-Instruct"

# Run in a fresh interpreter: prints the heavy top-level modules loaded, one per line.
_LOADED = (
    "import sys\n"
    "heavy = {heavy!r}\n"
    "{body}\n"
    "print('\\n'.join(sorted({{m.split('.')[0] for m in sys.modules}} & set(heavy))))\n"
)


def _heavy_loaded(body: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    code = _LOADED.format(heavy=heavy, body=body)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_import_vramplan_loads_no_heavy_library() -> None:
    assert _heavy_loaded("import vramplan") == []


def test_plan_and_breakdown_from_python_load_no_heavy_library() -> None:
    body = (
        "import vramplan\n"
        f"p = vramplan.plan({MODEL!r}, 'H100-80GB')\n"
        "assert p.fits and p.to_json()\n"
        f"assert vramplan.breakdown({MODEL!r}, 'L4').to_json()"
    )
    assert _heavy_loaded(body) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["flags", MODEL, "--gpu", "H100-80GB"],
        ["plan", MODEL, "--gpu", "H100-80GB", "--json"],
        ["plan", MODEL, "--gpu", "A100-80GB", "--context", "auto", "--concurrency", "64"],
    ],
    ids=["flags", "plan --json", "plan (terminal text)"],
)
def test_cli_plan_and_flags_load_no_heavy_library(argv: list[str]) -> None:
    body = (
        "import contextlib, io\n"
        "from vramplan.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({argv!r}) in (0, 1)"
    )
    # Piped text (here a StringIO) is written without rich: only a terminal loads it.
    assert _heavy_loaded(body) == []


# Standard-library modules the CLI's `plan` and `flags` start without: the start is mostly
# imports, and `dataclasses` (with the `inspect`, `ast`, `dis` and `tokenize` it loads) was
# over a quarter of what `plan` adds to `python -c pass` under callgrind.
STARTUP_FREE = ("dataclasses", "inspect", "difflib", "csv")


@pytest.mark.parametrize(
    "argv",
    [
        ["flags", MODEL, "--gpu", "H100-80GB"],
        ["plan", MODEL, "--gpu", "H100-80GB"],
        ["plan", MODEL, "--gpu", "L4", "--num-gpus", "2"],
        ["fit", "--gpu", "L4", "--num-gpus", "2", "--no-hf-cache", "--json"],
    ],
    ids=["flags", "plan", "plan searching splits", "fit --gpu --json"],
)
def test_cli_commands_start_without_dataclasses(argv: list[str]) -> None:
    body = (
        "import contextlib, io\n"
        "from vramplan.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({argv!r}) in (0, 1)"
    )
    assert _heavy_loaded(body, STARTUP_FREE) == []


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (["fit", MODEL, "--context", "8192", "--concurrency", "2", "--gpus", "L4", "--json"], []),
        (["fit", MODEL, "--context", "8192", "--concurrency", "2", "--gpus", "L4"], ["rich"]),
        (["fit", "--gpu", "L4", "--no-hf-cache", "--json"], []),
        (["colocate", MODEL, MODEL, "--gpu", "H100-80GB", "--num-gpus", "2", "--json"], []),
        (["colocate", MODEL, MODEL, "--gpu", "H100-80GB", "--num-gpus", "2"], ["rich"]),
    ],
    ids=["fit --json", "fit (terminal text)", "fit --gpu --json", "colocate --json", "colocate"],
)
def test_cli_fit_and_colocate_load_no_pandas(argv: list[str], allowed: list[str]) -> None:
    # pandas only for a DataFrame (vramplan.fit, --out); the table is rich's.
    body = (
        "import contextlib, io\n"
        "from vramplan.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({argv!r}) in (0, 1)"
    )
    loaded = _heavy_loaded(body)
    assert set(loaded) <= set(allowed), loaded


def test_a_command_run_imports_no_other_command() -> None:
    # main() builds the parser of the command it runs only: `plan` loads neither fit's nor
    # calibrate's module (fit, colocate, calibrate, probe, diagnose, validate).
    code = (
        "import contextlib, io, sys\n"
        "from vramplan.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['plan', {MODEL!r}, '--json']) == 0\n"
        "others = ('fit', 'colocate', 'cli_fit', 'calibrate', 'probe', 'diagnose', 'validate')\n"
        "print(' '.join(m for m in others if 'vramplan.' + m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def _local_imports(path: Path, modules: set[str], submodules: set[str]) -> set[str]:
    """The package's modules `path` imports, at module level or inside functions (imports
    that only type checkers see are not executed and are left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_checking_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            type_checking_only.update(id(n) for child in node.body for n in ast.walk(child))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_checking_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            # `from . import name`: a submodule, else a name the package itself defines.
            found.update(n if n in submodules else "__init__" for n in names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] == path.parent.name:
                found.add(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == path.parent.name and len(parts) > 1:
                    found.add(parts[1])
    return {name for name in found if name in modules and name != path.stem}


def import_cycles(package: Path) -> list[list[str]]:
    """Every cycle of imports among the package's modules (each once, from its smallest
    name), by a depth-first search over the import graph."""
    modules = {p.stem for p in package.glob("*.py")}
    submodules = {p.name.split(".")[0] for p in package.iterdir()}  # _core's .so included
    graph = {p.stem: sorted(_local_imports(p, modules, submodules)) for p in package.glob("*.py")}
    cycles: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()

    def walk(start: str, node: str, path: list[str]) -> None:
        for target in graph[node]:
            if target == start:
                cycle = tuple(path)
                smallest = cycle.index(min(cycle))
                rotated = cycle[smallest:] + cycle[:smallest]
                if rotated not in seen:
                    seen.add(rotated)
                    cycles.append([*rotated, rotated[0]])
            elif target not in path and target > start:
                walk(start, target, [*path, target])

    for start in sorted(graph):
        walk(start, start, [start])
    return cycles


def test_the_package_has_no_import_cycle() -> None:
    assert import_cycles(PACKAGE) == []


def test_the_cycle_check_finds_cycles_inside_functions_and_through_the_package(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import A\n")
    (package / "a.py").write_text("A = 1\n\ndef f():\n    from . import b\n    return b\n")
    (package / "b.py").write_text("from .c import C\n")
    (package / "c.py").write_text("import pkg.a\nC = 2\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import e\n"
    )
    (package / "e.py").write_text("from . import d\n")  # d -> e only for type checkers
    (package / "f.py").write_text("from . import A\n")  # the package itself: __init__ -> a
    assert import_cycles(package) == [["a", "b", "c", "a"]]
    (package / "a.py").write_text("A = 1\n\ndef f():\n    from . import f\n    return f\n")
    assert import_cycles(package) == [["__init__", "a", "f", "__init__"]]


@pytest.mark.parametrize("command", ["plan", "flags", "breakdown", "check", "sweep", "fit"])
def test_a_parser_built_for_one_command_parses_it_as_the_whole_parser_does(command: str) -> None:
    """main() builds the knob flags of the subcommand it runs only; that subcommand's help
    and parse are the whole parser's."""
    import contextlib
    import io

    from vramplan import cli

    def help_of(parser: Any) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            parser.parse_args([command, "-h"])
        return out.getvalue()

    whole, alone = cli.build_parser(), cli.build_parser(command)
    assert help_of(alone) == help_of(whole)
    assert "--kv-cache-dtype" in help_of(alone)
    words = [command, "--kv-cache-dtype", "fp8", "--max-num-seqs", "8"]
    assert vars(alone.parse_known_args(words)[0]) == vars(whole.parse_known_args(words)[0])


def test_a_parser_built_for_one_command_keeps_the_whole_usage_and_help() -> None:
    """The usage line of a top-level error (`vramplan models --foo`) lists every command, and
    each command's help is the whole parser's, for every command."""
    import contextlib
    import io

    from vramplan import cli

    whole = cli.build_parser()
    commands = whole._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(commands) == list(cli._COMMANDS)
    for command, sub in commands.items():
        alone = cli.build_parser(command)
        assert alone.format_usage() == whole.format_usage()
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            alone.parse_args([command, "-h"])
        assert out.getvalue() == sub.format_help(), command
