"""case_log: the ok/FAIL lines of an end-to-end test, counted (tests/test_cli_refusals.py,
tests/test_tool_contract.py): check() prints one line a case; finish() prints the count and exits 1
when any failed."""
import sys

failures, cases = [], [0]


def check(name, cond, detail=""):
    cases[0] += 1
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:400]))
    if not cond:
        failures.append(name)


def finish():
    print(f"{cases[0]} cases, {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)
