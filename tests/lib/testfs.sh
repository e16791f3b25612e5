# The filesystem the write-path tests make, chosen in one place (the shell
# side of tests/lib/testfs.h; sourced, not run). The same variables:
#   NOSTALL_TEST_FS          ext2, ext3 or ext4: mke2fs -t (default ext3)
#   NOSTALL_TEST_MKFS_OPTS   more mke2fs options after the test's own
#                            (e.g. "-O ^metadata_csum,uninit_bg")
#   NOSTALL_TEST_BLOCK_SIZE  a test that runs several block sizes runs only
#                            this one; one with a single block size runs it
# Unset, every script makes the ext3 image it made before.
# tests/cli/ext4_write_matrix.sh runs the tests over ext2 and the ext4 sets.
TESTFS_TYPE=${NOSTALL_TEST_FS:-ext3}
TESTFS_OPTS=${NOSTALL_TEST_MKFS_OPTS:-}

# testfs_mke2fs [mke2fs options...] IMAGE [SIZE]: mke2fs -q -F -t TYPE,
# the caller's options, then NOSTALL_TEST_MKFS_OPTS (word-split).
testfs_mke2fs() {
	local n=$#
	local args=("$@")
	# the options before IMAGE [SIZE]: IMAGE is the first word that is not
	# an option or an option's value; simplest is to put ours just before
	# the last one or two positional words: callers pass IMAGE [SIZE] last
	local tail=1
	[ $n -ge 2 ] && [[ ${args[$((n - 1))]} =~ ^[0-9]+[kKmMgG]?$ ]] && [[ ${args[$((n - 2))]} != -* ]] && tail=2
	# shellcheck disable=SC2086
	mke2fs -q -F -t "$TESTFS_TYPE" "${args[@]:0:$((n - tail))}" $TESTFS_OPTS "${args[@]:$((n - tail))}"
}

# testfs_kernel_type: the kernel's filesystem type for the images (-t).
testfs_kernel_type() { echo "$TESTFS_TYPE"; }

# testfs_bs_wanted BS: does this run include block size BS?
testfs_bs_wanted() { [ -z "${NOSTALL_TEST_BLOCK_SIZE:-}" ] || [ "$NOSTALL_TEST_BLOCK_SIZE" = "$1" ]; }

# testfs_has_journal: not ext2, no ^has_journal.
testfs_has_journal() { [ "$TESTFS_TYPE" != ext2 ] && [[ $TESTFS_OPTS != *^has_journal* ]]; }

# testfs_mount_opts OPTS: OPTS, or without a journal OPTS less its data= and
# data_err= (refused there, as by the kernel's ext4 driver).
testfs_mount_opts() {
	if testfs_has_journal; then echo "$1"; return; fi
	local o out=() IFS=,
	for o in $1; do
		case $o in data=* | data_err=*) ;; *) out+=("$o") ;; esac
	done
	echo "${out[*]}"
}

# testfs_label: "ext3" or e.g. "ext4 -O ^metadata_csum,uninit_bg" (messages).
testfs_label() { echo "$TESTFS_TYPE${TESTFS_OPTS:+ $TESTFS_OPTS}"; }
