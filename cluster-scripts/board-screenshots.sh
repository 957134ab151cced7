#!/usr/bin/env bash
# Regenerates the board's screenshots in docs/images/: board-upgrade.png (a
# rolling upgrade half done: two versions side by side) and
# board-rollout.png (a rolling update of game rooms under way). It runs the
# board's browser test (tests/board/board_test.py) on a fresh local cluster
# with --screenshots, so the pictures are of a board that passed the test.
# Installs Chromium, its WebDriver and Selenium first (setup.sh --browser).
#
#   cluster-scripts/board-screenshots.sh
# Environment: BUILD_DIR (default ./build).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
[[ $# -eq 0 ]] || help_or_bad "$1"
"$ts_root/cluster-scripts/setup.sh" --browser --no-build >&2
build_programs
python3 "$ts_root/tests/board/board_test.py" "$(ts_build_dir)" --screenshots "$ts_root/docs/images" ||
  die "the board's test failed; no screenshots written"
say "wrote docs/images/board-upgrade.png and docs/images/board-rollout.png"
