#!/bin/bash
# ci/build-debs --source-only, inside the build root: lintian on the .dsc.
set -eu
cd "$WORK"
lintian --fail-on error --no-tag-display-limit "$DSC"
