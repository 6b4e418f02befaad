#!/bin/bash
# Inside the build root: lintian on a .dsc (ci/build-debs --source-only) or a
# .changes (ci/build-release), failing on any error-level tag.
set -eu
cd "$WORK"
lintian --fail-on error --no-tag-display-limit "$TARGET"
