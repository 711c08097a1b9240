#!/usr/bin/env python3
"""Every example of README.md, docs/**/*.md and sim/*.md runs as written.

An example is a line of a ```sh fenced block (a line ending in a backslash
continues on the next; blank lines and lines starting with '#' are not
commands). Plain ``` blocks (file formats, the set-up commands, output) are
not run. A trailing comment can mark a line:
  # exit N       the example shows a refusal: it must exit N, not 0
  # not run: WHY it is not run here (minutes of work, a cluster, a GPU);
                 counted and listed
A line naming ../shared/ (in its command, or in its comment where a file it
reads does: `# needs ../shared/data`) is skipped, counted and listed, where
../shared/data is absent beside the repository (a fresh clone with nothing
beside it).

Each file's examples run in order (a later one may read what an earlier one
wrote) from the root of a fresh copy of the repository in a temporary
directory (no .git, no build directories, no results database: results/
holds only the committed baseline), whose build/ is a link to the build
directory of the simbatch under test (so build/simbatch is that binary) and
whose ../shared is a link to the real one. So every file an example writes,
the default results/simbatch.db included, lands in the temporary directory.
Each must exit 0 (or its marked status) within 300 s.
Under the sanitizer build (ASAN_OPTIONS set, as scripts/test sets it) the
test is skipped (exit 77): the examples check the docs, which the plain
build's run already did, and live runs, searches and figures at -O0 under
ASan would take many minutes.
Usage: test_doc_examples.py PATH/TO/simbatch SOURCE_ROOT"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE_OPEN = re.compile(r"^\s*```sh\s*$")
FENCE_CLOSE = re.compile(r"^\s*```\s*$")
EXIT_MARK = re.compile(r"#.*\bexit (\d+)\b")
NOT_RUN_MARK = re.compile(r"#\s*not run\b:?\s*(.*)$")
TIMEOUT_S = 300


def examples(text):
    """(line number, command) of every example in a markdown text."""
    found = []
    in_block = False
    pending, pending_line = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not in_block:
            in_block = bool(FENCE_OPEN.match(line))
            continue
        if FENCE_CLOSE.match(line):
            if pending:
                raise ValueError(f"line {number}: a block ends inside a continued command")
            in_block = False
            continue
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            pending_line = number
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        found.append((pending_line, pending + stripped))
        pending = ""
    if in_block:
        raise ValueError("a ```sh block is never closed")
    return found


def self_check():
    """The extraction on a text whose examples are known, so a parser that
    finds nothing (or too much) fails here rather than passing vacuously."""
    text = ("```\nbuild/simbatch --not-sh\n```\nprose\n```sh\n# a comment\n\n"
            "build/simbatch --a=1   # exit 2\nbuild/simbatch --b \\\n    --c=2\n```\n"
            "```sh\nscripts/figures   # not run: minutes\n```\n")
    got = examples(text)
    want = [(8, "build/simbatch --a=1   # exit 2"), (9, "build/simbatch --b --c=2"),
            (13, "scripts/figures   # not run: minutes")]
    assert got == want, got
    assert EXIT_MARK.search(got[0][1]).group(1) == "2"
    assert NOT_RUN_MARK.search(got[2][1]).group(1) == "minutes"
    assert not EXIT_MARK.search(got[1][1]) and not NOT_RUN_MARK.search(got[0][1])


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    files += sorted(glob.glob(os.path.join(root, "sim", "*.md")))
    return [f for f in files if os.path.isfile(f)]


def sandbox(root, build_dir, parent):
    """A copy of the repository under parent/repo, as described above."""
    repo = os.path.join(parent, "repo")

    def ignore(directory, names):
        if os.path.abspath(directory) == root:
            return [n for n in names if n == ".git" or n.startswith("build")]
        if os.path.abspath(directory) == os.path.join(root, "results"):
            return [n for n in names if n != "baseline"]
        return []
    shutil.copytree(root, repo, ignore=ignore, symlinks=True)
    os.symlink(build_dir, os.path.join(repo, "build"))
    shared = os.path.join(os.path.dirname(root), "shared")
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(parent, "shared"))
    return repo


def run_file(path, commands, root, build_dir, have_data, tally):
    rel = os.path.relpath(path, root)
    runnable = []
    for number, command in commands:
        where = f"{rel}:{number}"
        not_run = NOT_RUN_MARK.search(command)
        if not_run:
            tally["not_run"].append(f"{where}: {not_run.group(1) or 'marked not run'}")
        elif "../shared/" in command and not have_data:
            tally["skipped"].append(f"{where}: needs ../shared/data, absent beside the repository")
        else:
            runnable.append((where, command))
    if not runnable:
        return
    with tempfile.TemporaryDirectory(prefix="simbatch-doc-") as parent:
        repo = sandbox(root, build_dir, parent)
        for where, command in runnable:
            expect = EXIT_MARK.search(command)
            expect = int(expect.group(1)) if expect else 0
            start = time.monotonic()
            try:
                done = subprocess.run(["bash", "-c", command], cwd=repo, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      timeout=TIMEOUT_S)
                rc, out = done.returncode, done.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                rc, out = f"killed after {TIMEOUT_S} s", (e.stdout or b"").decode(errors="replace")
            took = time.monotonic() - start
            ok = rc == expect
            print(f"{'ok  ' if ok else 'FAIL'} {took:6.2f} s  {where}: {command}")
            tally["run"] += 1
            if not ok:
                tally["failed"].append(where)
                print(f"     exit {rc}, expected {expect}; its output's end:")
                print("     " + "\n     ".join(out.rstrip().splitlines()[-15:]))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: test_doc_examples.py PATH/TO/simbatch SOURCE_ROOT")
    simbatch, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    build_dir = os.path.dirname(simbatch)
    self_check()
    if os.environ.get("ASAN_OPTIONS"):
        print("skipped under the sanitizer build (ASAN_OPTIONS): the plain build runs the doc examples")
        sys.exit(77)
    have_data = os.path.isdir(os.path.join(os.path.dirname(root), "shared", "data"))
    tally = {"run": 0, "failed": [], "skipped": [], "not_run": []}
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            try:
                commands = examples(f.read())
            except ValueError as e:
                print(f"FAIL {os.path.relpath(path, root)}: {e}")
                tally["failed"].append(path)
                continue
        run_file(path, commands, root, build_dir, have_data, tally)
    for kind in ("skipped", "not_run"):
        for line in tally[kind]:
            print(f"{kind.replace('_', ' ')}: {line}")
    print(f"doc examples: {tally['run']} run, {len(tally['failed'])} failed, "
          f"{len(tally['skipped'])} skipped (no ../shared/data), {len(tally['not_run'])} marked not run")
    if tally["run"] == 0:
        sys.exit("no example ran: the docs lost their ```sh blocks, or this test its parser")
    sys.exit(1 if tally["failed"] else 0)


if __name__ == "__main__":
    main()
