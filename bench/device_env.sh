# Source on the GPU machine after .device/setup.sh: header-only packages the kit lacks
# (CLI11, nlohmann-json), staged from this machine's Debian packages into .device/extra.
export CPATH="$PWD/.device/extra/include${CPATH:+:$CPATH}"
