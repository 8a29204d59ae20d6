#!/usr/bin/env python3
"""Where the time of a ctest run went: per label against its budget, and the
slowest tests. Run by tests/run.sh after ctest, from the build directory:

    time_report.py JUNIT_XML TESTS_JSON BUDGETS [--slowest N]

JUNIT_XML is ctest's --output-junit file, TESTS_JSON is
`ctest --show-only=json-v1` (each test's labels), BUDGETS is
"label=seconds label=seconds ...". A label whose tests took longer than its
budget is reported with "OVER BUDGET"; the exit status is 0 either way (the
run's status is ctest's), except 2 when the inputs cannot be read.
"""
import json
import sys
import xml.etree.ElementTree as ET


def parse_budgets(text):
    out = {}
    for item in text.split():
        label, _, seconds = item.partition("=")
        out[label] = float(seconds)
    return out


def test_times(junit_path):
    """{test name: (seconds, status)} from ctest's JUnit file."""
    out = {}
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        out[case.get("name")] = (float(case.get("time") or 0.0), case.get("status") or "")
    return out


def test_labels(tests_json):
    """{test name: [labels]} from `ctest --show-only=json-v1`."""
    out = {}
    for t in tests_json.get("tests", []):
        labels = []
        for prop in t.get("properties", []):
            if prop.get("name") == "LABELS":
                labels = list(prop.get("value") or [])
        out[t["name"]] = labels
    return out


def minutes(seconds):
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def report(times, labels, budgets, slowest=10):
    lines = []
    per_label, counts = {}, {}
    for name, (seconds, _) in times.items():
        for label in labels.get(name) or ["(no label)"]:
            per_label[label] = per_label.get(label, 0.0) + seconds
            counts[label] = counts.get(label, 0) + 1
    total = sum(s for s, _ in times.values())
    over = []
    lines.append("== where the time went (tests/run.sh; budgets in tests/run.sh)")
    for label in sorted(set(per_label) | set(budgets), key=lambda l: -per_label.get(l, 0.0)):
        spent = per_label.get(label, 0.0)
        budget = budgets.get(label)
        if label not in per_label:
            lines.append(f"  {label:<12} not run{'' if budget is None else f' (budget {minutes(budget)})'}")
            continue
        verdict = ""
        if budget is None:
            verdict = "  (no budget)"
        elif spent > budget:
            verdict = f"  OVER BUDGET by {minutes(spent - budget)}"
            over.append(label)
        lines.append(f"  {label:<12} {minutes(spent):>14}  {counts[label]:4d} tests"
                     + ("" if budget is None else f"  budget {minutes(budget)}") + verdict)
    lines.append(f"  {'all tests':<12} {minutes(total):>14}  {len(times):4d} tests")
    lines.append(f"== the {min(slowest, len(times))} slowest tests")
    for name, (seconds, status) in sorted(times.items(), key=lambda kv: -kv[1][0])[:slowest]:
        shown = {"run": "", "": "", "notrun": " (skipped)", "fail": " (failed)"}.get(status, f" ({status})")
        lines.append(f"  {minutes(seconds):>14}  {name}{shown}")
    skipped = sorted(name for name, (_, status) in times.items() if status == "notrun")
    if skipped:
        lines.append(f"== skipped by ctest (each printed its reason above): {', '.join(skipped)}")
    if over:
        lines.append(f"== OVER BUDGET: {', '.join(over)}")
    return lines, over


def main(argv):
    args = list(argv[1:])
    slowest = 10
    if "--slowest" in args:
        i = args.index("--slowest")
        slowest = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    junit, tests_json, budgets = args
    try:
        times = test_times(junit)
        with open(tests_json) as f:
            labels = test_labels(json.load(f))
    except (OSError, ValueError, ET.ParseError) as e:
        print(f"time_report: cannot read the run's times: {e}", file=sys.stderr)
        return 2
    lines, _ = report(times, labels, parse_budgets(budgets), slowest)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
