#!/usr/bin/env bash
# failure-lines.sh LOG N: the last N lines of LOG that say what failed (a task's fatal result, a
# failed test, an error, a traceback, a stage that wrote into HOME), cut to 300 columns. Task and
# handler titles, molecule's retry countdowns and the lines scripts/molecule.sh and test.sh print
# themselves ("--- ...", indented) are not failure lines. Used by scripts/molecule.sh for a failed
# scenario and by scripts/test.sh for a failed stage.
set -uo pipefail
grep -E 'fatal:|FAILED|ERROR|CRITICAL|Error|Traceback|failed[:;,]|did not|wrote into HOME|left in HOME' "$1" |
  grep -v -E '^(---|    |TASK \[|RUNNING HANDLER \[|FAILED - RETRYING)' | tail -n "$2" | cut -c1-300
exit 0
