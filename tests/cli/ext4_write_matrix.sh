#!/usr/bin/env bash
# nostall-test: release-only (it reruns release test binaries and scripts on another filesystem; the sanitizers see them on ext3)
# Issue 39's write-path test matrix on the Debian 12 ext4 default feature set at 4 KiB and 1 KiB blocks:
# tests/lib/write_matrix.sh ext4-4k ext4-1k (what runs, what is scaled for
# CI, and how a combination the library does not write yet is skipped: one
# "SKIP:" line, found by trying). One of three entries, each under
# tests/run.sh's 600 s per test.
exec bash "$(dirname "$0")/../lib/write_matrix.sh" ext4-4k ext4-1k
