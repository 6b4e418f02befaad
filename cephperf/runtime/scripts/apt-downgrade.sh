#!/bin/bash
# A downgrade through apt between two versions our repository holds, run by
# tests/root/test_upgrade.py inside a throwaway overlay of the runtime root.
# $REPO's apt-line.txt is the only source; $PACKAGE=$NEWER is installed, then
# $OLDER, each step printing the installed version.
set -eu
export DEBIAN_FRONTEND=noninteractive
list=$(mktemp)
cat "$REPO/apt-line.txt" > "$list"
APT=(-q -o "Dir::Etc::SourceList=$list" -o Dir::Etc::SourceParts=/dev/null)
apt-get "${APT[@]}" update
apt-cache "${APT[@]}" madison "$PACKAGE"
apt-get "${APT[@]}" install -y --no-install-recommends "$PACKAGE=$NEWER"
echo "installed: $(dpkg-query -W -f='${Version}' "$PACKAGE")"
apt-get "${APT[@]}" install -y --allow-downgrades "$PACKAGE=$OLDER"
echo "installed: $(dpkg-query -W -f='${Version}' "$PACKAGE")"
