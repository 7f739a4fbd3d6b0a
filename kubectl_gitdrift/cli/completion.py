"""Shell completion for `kubectl gitdrift` and `argocd gitdrift`.

One engine, `complete(args)`, answers in the protocol of Cobra's hidden `__complete` command (one
candidate per line, optionally `candidate<TAB>description`, then `:<directive>`), because that is
what kubectl (>= 1.26) expects from a plugin's completion helper: for `kubectl gitdrift a<TAB>`,
kubectl runs the executable `kubectl_complete-gitdrift` from PATH with the words after the plugin
name (`a`, or `""` for a new word) and reads that output. Three ways in:

- `kubectl_complete-gitdrift ARGS...` (`kubectl_complete()`): the kubectl helper;
- `kubectl-gitdrift completion __complete ARGS...` (`main()`): the same, for the shell scripts;
- `kubectl-gitdrift completion bash|zsh|fish` (`main()` → `script()`): a script to `source` that
  completes the commands typed directly (`kubectl-gitdrift`, `argocd-gitdrift`) and `argocd
  gitdrift` (argocd's own completion does not reach plugins; the script wraps it when loaded).

The flags come from the real argparse parsers in `cli`, so they never drift from `--help`.
Application names come from `--snapshot` when one is on the line, else from the current kube
context via `kubectl get applications` (2 s timeout; nothing on failure); `preview --base` and
`--head` revisions from the branches and tags of its `--repo-root` (`git for-each-ref`).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Sequence
from enum import IntFlag
from pathlib import Path
from typing import TextIO

from kubectl_gitdrift.cli import parser as grammar

__all__ = ["Directive", "complete", "kubectl_complete", "main", "script"]

SHELLS = ("bash", "zsh", "fish")
OUTPUT_FORMATS = ("text", "json", "yaml", "diff", "markdown", "openmetrics")
"""The built-in -o formats (a plugin may add more; `kubectl gitdrift plugins` lists them)."""
_KUBECTL_TIMEOUT = 2.0


class Directive(IntFlag):
    """Cobra's ShellCompDirective bits."""

    DEFAULT = 0  # the shell may complete file names
    ERROR = 1
    NO_SPACE = 2
    NO_FILE_COMP = 4
    FILTER_FILE_EXT = 8
    FILTER_DIRS = 16
    KEEP_ORDER = 32


Candidates = tuple[list[str], Directive]


# --------------------------------------------------------------------------- the engine


def complete(args: Sequence[str], prog: str = "kubectl gitdrift") -> Candidates:
    """Candidates for the last word of `args` (the words after `gitdrift`; the last one is the
    word being typed, `""` for a new one)."""

    words = list(args) or [""]
    prior, current = words[:-1], words[-1]
    if prior and prior[0] in (*grammar.SUBCOMMANDS, "completion"):
        command = prior[0]
        if command == "completion":
            shells = [s for s in SHELLS if s.startswith(current)] if len(prior) == 1 else []
            return shells, Directive.NO_FILE_COMP
        return _complete_parser(grammar.build_subparser(command, prog), prior[1:], current, None)
    if not prior and not current.startswith("-"):
        found = [c for c in _subcommands(grammar.SUBCOMMANDS) if c.startswith(current)]
        apps, _ = _complete_parser(grammar.build_parser(prog), prior, current, [])
        return found + apps, Directive.NO_FILE_COMP
    return _complete_parser(grammar.build_parser(prog), prior, current, prior)


def _subcommands(names: Sequence[str]) -> list[str]:
    docs = {
        "snapshot": "export what offline mode needs",
        "preview": "what a git change does to the Applications it touches",
        "plugins": "list the loaded plugins",
        "rules": "list the diagnosis rules",
        "version": "print the version",
        "completion": "print a bash, zsh or fish completion script",
    }
    unique = dict.fromkeys((*names, "completion"))
    return [f"{name}\t{docs[name]}" if name in docs else name for name in unique]


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: action for action in parser._actions for opt in action.option_strings}


def _complete_parser(
    parser: argparse.ArgumentParser,
    prior: Sequence[str],
    current: str,
    app_words: Sequence[str] | None,
) -> Candidates:
    options = _options(parser)
    if current.startswith("--") and "=" in current:
        flag, _, value = current.partition("=")
        action = options.get(flag)
        if action is None or action.nargs == 0:
            return [], Directive.NO_FILE_COMP
        values, directive = _values(action, value, prior)
        return [f"{flag}={v}" for v in values], directive
    if prior and _takes_value(prior[-1], options):
        return _values(options[prior[-1]], current, prior)
    if current.startswith("-"):
        found = []
        for opt, action in sorted(options.items()):
            if (
                opt.startswith(current)
                and action.help != argparse.SUPPRESS
                and (opt.startswith("--") or current == "-")
            ):
                found.append(f"{opt}\t{action.help}" if action.help else opt)
        return found, Directive.NO_FILE_COMP
    if app_words is not None and not _has_positional(prior, options):
        return _applications(prior, current), Directive.NO_FILE_COMP
    return [], Directive.NO_FILE_COMP


def _takes_value(word: str, options: dict[str, argparse.Action]) -> bool:
    """The next word is this flag's value (not so for `--progress`, whose value is attached)."""
    return word in options and options[word].nargs != 0 and word not in grammar.BARE


def _has_positional(prior: Sequence[str], options: dict[str, argparse.Action]) -> bool:
    skip = False
    for word in prior:
        if skip:
            skip = False
        elif word in options:
            skip = _takes_value(word, options)
        elif not word.startswith("-"):
            return True
    return False


def _values(action: argparse.Action, current: str, prior: Sequence[str]) -> Candidates:
    dest = action.dest
    if action.choices:
        values = [str(c) for c in action.choices]
    elif dest == "output" and action.type is not Path:  # snapshot's -o is a file
        values = list(OUTPUT_FORMATS)
    elif dest in ("disable_rule", "disable_plugin"):
        values = _plugin_names(rules=dest == "disable_rule")
    elif dest == "context":
        values = _kubectl(prior, ["config", "get-contexts", "-o", "name"], context=False)
    elif dest in ("base", "head"):  # preview's revisions: the branches and tags of --repo-root
        values = _git_refs(_flag_value(prior, "--repo-root") or ".")
    elif dest == "repo_root":
        return [], Directive.FILTER_DIRS
    elif action.metavar in ("PATH", "FILE", "PATH|MODULE", "DIR") or action.type is Path:
        return [], Directive.DEFAULT
    else:
        return [], Directive.NO_FILE_COMP
    return [v for v in values if v.startswith(current)], Directive.NO_FILE_COMP


def _plugin_names(*, rules: bool) -> list[str]:
    try:
        from kubectl_gitdrift import hookcalls, plugins
        from kubectl_gitdrift.settings import Settings

        pm = plugins.make_plugin_manager(
            entry_points=not Settings.from_environ().autoload_disabled()
        )
        if rules:
            return sorted(r.id for r in hookcalls.collect_rules(pm))
        return sorted(i.name for i in plugins.describe(pm))
    except Exception:  # noqa: BLE001 -- completion must never fail loudly
        return []


def _git_refs(root: str) -> list[str]:
    """The branches, remote branches and tags of the clone at `root` (nothing on failure)."""
    git = shutil.which("git")
    if git is None:
        return []
    argv = [git, "-C", str(Path(root).expanduser()), "for-each-ref", "--format=%(refname:short)"]
    lines = _output_lines([*argv, "refs/heads", "refs/remotes", "refs/tags"], _KUBECTL_TIMEOUT)
    return sorted(set(lines))


def _output_lines(argv: list[str], timeout: float) -> list[str]:
    """The non-blank lines `argv` prints, stripped; none when it cannot run, times out or
    fails (a candidate list is best effort)."""
    try:
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if result.returncode != 0:
        return []
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def _flag_value(prior: Sequence[str], *flags: str) -> str | None:
    for i, word in enumerate(prior):
        for flag in flags:
            if word == flag and i + 1 < len(prior):
                return prior[i + 1]
            if word.startswith(flag + "="):
                return word.partition("=")[2]
    return None


def _applications(prior: Sequence[str], current: str) -> list[str]:
    snapshot_path = _flag_value(prior, "--snapshot")
    if snapshot_path:
        try:
            from kubectl_gitdrift.live import snapshot

            state = snapshot.load(Path(snapshot_path).expanduser())
            names = state.application_names()
        except Exception:  # noqa: BLE001 -- a broken snapshot just gives no candidates
            return []
        namespace = _flag_value(prior, "--app-namespace") or "argocd"
        short = [n.partition("/")[2] for n in names if n.startswith(namespace + "/")]
        found = sorted({*short, *names})
    else:
        namespace = _flag_value(prior, "--app-namespace") or "argocd"
        found = _kubectl(
            prior,
            ["get", "applications.argoproj.io", "-n", namespace, "-o", "name"],
            context=True,
        )
        found = [n.rpartition("/")[2] for n in found]
    return [n for n in found if n.startswith(current)]


def _kubectl(prior: Sequence[str], command: list[str], *, context: bool) -> list[str]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return []
    argv = [kubectl, *command, f"--request-timeout={int(_KUBECTL_TIMEOUT)}s"]
    kubeconfig = _flag_value(prior, "--kubeconfig")
    if kubeconfig:
        argv.append(f"--kubeconfig={kubeconfig}")
    ctx = _flag_value(prior, "--context")
    if context and ctx:
        argv.append(f"--context={ctx}")
    return sorted(_output_lines(argv, _KUBECTL_TIMEOUT + 1))


def format_candidates(candidates: Candidates) -> str:
    values, directive = candidates
    return "".join(f"{v}\n" for v in values) + f":{int(directive)}\n"


# --------------------------------------------------------------------------- entry points


def kubectl_complete() -> None:
    """The `kubectl_complete-gitdrift` executable: kubectl >= 1.26 runs it for
    `kubectl gitdrift <TAB>` with the words after `gitdrift`."""
    sys.stdout.write(format_candidates(complete(sys.argv[1:])))
    sys.exit(0)


def main(argv: Sequence[str], out: TextIO, err: TextIO, prog: str = "kubectl gitdrift") -> int:
    """`<prog> completion bash|zsh|fish`, and the hidden `<prog> completion __complete ARGS...`."""
    if argv and argv[0] == "__complete":
        out.write(format_candidates(complete(argv[1:], prog)))
        return 0
    if len(argv) != 1 or argv[0] not in SHELLS:
        if argv and argv[0] in ("-h", "--help"):
            out.write(_usage(prog))
            return 0
        err.write(f"error: {prog} completion: pick a shell: bash, zsh or fish\n")
        err.write(_usage(prog).replace("usage", "  hint: usage", 1))
        return 2
    out.write(script(argv[0], prog))
    return 0


def _usage(prog: str) -> str:
    return (
        f"usage: {prog} completion bash|zsh|fish\n\n"
        f"  source <({prog} completion bash)    # in ~/.bashrc, after argocd/kubectl's own\n"
        f"  source <({prog} completion zsh)     # in ~/.zshrc, after compinit\n"
        f"  {prog} completion fish | source     # in ~/.config/fish/config.fish\n\n"
        "For `kubectl gitdrift <TAB>`, kubectl >= 1.26 runs kubectl_complete-gitdrift from "
        "PATH.\n"
    )


def script(shell: str, prog: str) -> str:
    """The completion script for `shell`, loaded with `source <(PROG completion SHELL)`."""
    if shell == "bash":
        return _BASH.replace("@PROG@", prog)
    if shell == "zsh":
        return _ZSH.replace("@PROG@", prog)
    if shell == "fish":
        return _FISH.replace("@PROG@", prog)
    raise ValueError(f"unsupported shell {shell!r}: choose one of {', '.join(SHELLS)}")


_BASH = r"""# bash completion for @PROG@: kubectl-gitdrift, argocd-gitdrift and `argocd gitdrift`.
# Load it with: source <(@PROG@ completion bash)   (after argocd's own completion, if any)
# `kubectl gitdrift <TAB>` needs kubectl >= 1.26 and kubectl_complete-gitdrift on PATH.

# _gitdrift_complete CMD SKIP: complete the current line with `CMD completion __complete`,
# passing the words after the first SKIP ones.
_gitdrift_complete() {
    local cmd=$1 skip=$2 line out entry directive=0 cur prefix=""
    local -a words=()
    line=${COMP_LINE:0:COMP_POINT}
    read -r -a words <<< "$line"
    [[ $line == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=("")
    cur=${words[${#words[@]}-1]}
    COMPREPLY=()
    out=$("$cmd" completion __complete "${words[@]:skip}" 2>/dev/null) || return 0
    while IFS= read -r entry; do
        if [[ $entry =~ ^:[0-9]+$ ]]; then
            directive=${entry#:}
        elif [[ -n $entry ]]; then
            COMPREPLY+=("${entry%%$'\t'*}")
        fi
    done <<< "$out"
    # bash splits `--flag=value` at `=`: hand back only the part after it
    if [[ $cur == *=* && $COMP_WORDBREAKS == *=* ]]; then
        prefix=${cur%%=*}=
        COMPREPLY=("${COMPREPLY[@]#"$prefix"}")
        cur=${cur#"$prefix"}
    fi
    if (( ${#COMPREPLY[@]} == 0 )); then
        if (( directive & 16 )); then
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        elif (( ! (directive & 4) && ! (directive & 1) )); then
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
    fi
    (( directive & 2 )) && compopt -o nospace 2>/dev/null
    return 0
}

_gitdrift_direct() { _gitdrift_complete "${COMP_WORDS[0]}" 1; }
complete -F _gitdrift_direct kubectl-gitdrift argocd-gitdrift

# argocd's completion does not reach CLI plugins: wrap it for `argocd gitdrift ...`.
if _gitdrift_spec=$(complete -p argocd 2>/dev/null) && [[ $_gitdrift_spec == *" -F "* ]]; then
    _gitdrift_argocd_next=${_gitdrift_spec##* -F }
    _gitdrift_argocd_next=${_gitdrift_argocd_next%% *}
    if [[ $_gitdrift_argocd_next != _gitdrift_argocd ]]; then
        _gitdrift_argocd() {
            if (( COMP_CWORD >= 2 )) && [[ ${COMP_WORDS[1]} == gitdrift ]]; then
                _gitdrift_complete argocd-gitdrift 2
            else
                "$_gitdrift_argocd_next" "$@"
            fi
        }
        eval "${_gitdrift_spec/ -F $_gitdrift_argocd_next / -F _gitdrift_argocd }"
    fi
fi
unset _gitdrift_spec
"""

_ZSH = r"""#compdef kubectl-gitdrift argocd-gitdrift
# zsh completion for @PROG@: kubectl-gitdrift, argocd-gitdrift and `argocd gitdrift`.
# Load it with: source <(@PROG@ completion zsh)   (after compinit and argocd's completion)
# `kubectl gitdrift <TAB>` needs kubectl >= 1.26 and kubectl_complete-gitdrift on PATH.

# _gitdrift_complete CMD WORDS...: complete the last word with `CMD completion __complete`.
_gitdrift_complete() {
    local cmd=$1 out entry directive=0
    local -a candidates
    shift
    out=$("$cmd" completion __complete "$@" 2>/dev/null) || return 1
    for entry in "${(@f)out}"; do
        if [[ $entry == :<-> ]]; then
            directive=${entry#:}
        elif [[ -n $entry ]]; then
            candidates+=("${entry%%$'\t'*}")
        fi
    done
    if (( ${#candidates} )); then
        if (( directive & 2 )); then
            compadd -Q -S '' -- "${candidates[@]}"
        else
            compadd -Q -- "${candidates[@]}"
        fi
    elif (( directive & 16 )); then
        _path_files -/
    elif (( ! (directive & 4) && ! (directive & 1) )); then
        _files
    fi
}

_gitdrift() { _gitdrift_complete "${words[1]}" "${(@)words[2,CURRENT]}"; }
compdef _gitdrift kubectl-gitdrift argocd-gitdrift

# argocd's completion does not reach CLI plugins: wrap it for `argocd gitdrift ...`.
if (( $+functions[_argocd] )) && (( ! $+functions[_gitdrift_argocd] )); then
    _gitdrift_argocd() {
        if (( CURRENT > 2 )) && [[ ${words[2]} == gitdrift ]]; then
            _gitdrift_complete argocd-gitdrift "${(@)words[3,CURRENT]}"
        else
            _argocd "$@"
        fi
    }
    compdef _gitdrift_argocd argocd
fi
"""

_FISH = r"""# fish completion for @PROG@: kubectl-gitdrift, argocd-gitdrift and `argocd gitdrift`.
# Load it with: @PROG@ completion fish | source   (in ~/.config/fish/config.fish)
# `kubectl gitdrift <TAB>` needs kubectl >= 1.26 and kubectl_complete-gitdrift on PATH.

# __gitdrift_complete CMD SKIP: candidates for the current token from `CMD completion
# __complete`, given the words after the first SKIP ones; fish reads `value<TAB>description`.
function __gitdrift_complete --argument-names cmd skip
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -a words "$cur"
    set -l out ($cmd completion __complete $words[(math $skip + 1)..-1] 2>/dev/null); or return
    set -l directive 0
    set -l found 0
    for entry in $out
        if string match -qr '^:[0-9]+$' -- $entry
            set directive (string sub -s 2 -- $entry)
        else if test -n "$entry"
            printf '%s\n' $entry
            set found 1
        end
    end
    if test $found -eq 0
        if test (math "bitand($directive, 16)") -ne 0
            __fish_complete_directories "$cur"
        else if test (math "bitand($directive, 5)") -eq 0
            __fish_complete_path "$cur"
        end
    end
end

complete -c kubectl-gitdrift -f -a '(__gitdrift_complete kubectl-gitdrift 1)'
complete -c argocd-gitdrift -f -a '(__gitdrift_complete argocd-gitdrift 1)'
# argocd's completion does not reach CLI plugins: add `argocd gitdrift ...`.
complete -c argocd -n '__fish_seen_subcommand_from gitdrift' -f \
    -a '(__gitdrift_complete argocd-gitdrift 2)'
"""
